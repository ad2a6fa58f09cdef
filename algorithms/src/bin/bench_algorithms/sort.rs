//! The radix sort rows of `bench_algorithms`: `Algorithms::sort_keys` / `sort_pairs` against
//! `cub::DeviceRadixSort::SortKeys` / `SortPairs` on the same stream, u32 keys from 2^16 to
//! 2^28, u64 keys and u32 pairs at 2^24 and 2^28. Each size is checked first: ours element
//! for element against CUB's, CUB's against the host's order (non-decreasing, the same key
//! sum), and at 2^20 and below both against the host's sort.

use std::ffi::c_void;

use gpukernel_algorithms::Algorithms;
use gpukernel_algorithms_kernels::sort::SORT_PAIRS_TUNING;
use gpukernel_runtime::{Context, DeviceBuffer, Stream};

use super::{BoxError, Cub, CubPrepare, per_call_ms};

type CubPairs =
    unsafe extern "C" fn(*const u32, *mut u32, *const u32, *mut u32, i32, *mut c_void) -> i32;

fn keys<T>(n: usize, seed: u64, f: impl Fn(u64) -> T) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f(s)
        })
        .collect()
}

/// Ours and CUB's sorted keys against each other and the host.
fn check_sorted<T: Ord + Copy + std::fmt::Debug + Into<u128>>(
    what: &str,
    input: &[T],
    ours: &[T],
    cub: &[T],
) -> Result<(), BoxError> {
    if let Some(i) = (0..ours.len()).find(|&i| ours[i] != cub[i]) {
        return Err(format!("{what}: element {i}: ours {:?}, CUB {:?}", ours[i], cub[i]).into());
    }
    let sum = |x: &[T]| x.iter().map(|&v| v.into()).fold(0u128, u128::wrapping_add);
    if !cub.is_sorted() || sum(cub) != sum(input) {
        return Err(format!("{what}: CUB's output is not the sorted input").into());
    }
    if input.len() <= 1 << 20 {
        let mut want = input.to_vec();
        want.sort_unstable();
        if want != ours {
            return Err(format!("{what}: differs from the host's sort").into());
        }
    }
    Ok(())
}

fn row(what: &str, n: usize, ours: f64, cubm: f64) {
    println!(
        "{:>10} | {:>9.4} {:>8.2} | {:>9.4} {:>8.2} | {:>6.3}   {what}",
        format!("2^{}", n.trailing_zeros()),
        ours,
        n as f64 / ours / 1e6,
        cubm,
        n as f64 / cubm / 1e6,
        cubm / ours
    );
}

/// Keys only, against `cub_sort_<sym>`.
fn keys_rows<T>(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sym: &str,
    xs: &[T],
    sizes: &[usize],
) -> Result<(), BoxError>
where
    T: gpukernel_algorithms::DeviceSortKey + Ord + std::fmt::Debug + Into<u128>,
{
    let name = std::any::type_name::<T>();
    let max = *sizes.last().expect("sizes");
    let x_all = stream.htod_copy(&xs[..max])?;
    let mut y = stream.alloc_zeros::<T>(max)?;
    let mut y_cub = stream.alloc_zeros::<T>(max)?;
    for &n in sizes {
        let x = x_all.slice(..n)?;
        let run = cub.func::<T>(sym, n)?;
        let cub_call = |y: &mut DeviceBuffer<T>| -> Result<(), BoxError> {
            // SAFETY: live buffers of at least `n` keys of this context, on our stream.
            let r = unsafe {
                run(
                    x_all.as_raw() as *const T,
                    y.as_raw() as *mut T,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(
                    format!("cub::DeviceRadixSort::SortKeys returned CUDA error {r}").into(),
                );
            }
            Ok(())
        };
        algs.sort_keys(stream, x, y.slice_mut(..n)?)?;
        cub_call(&mut y_cub)?;
        stream.synchronize()?;
        check_sorted(
            &format!("{name} sort of {n}"),
            &xs[..n],
            &y.slice(..n)?.to_host_vec()?,
            &y_cub.slice(..n)?.to_host_vec()?,
        )?;
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.sort_keys(stream, x, y.slice_mut(..n)?)?)
        })?;
        let cubm = per_call_ms(ctx, stream, || cub_call(&mut y_cub))?;
        row(&format!("{name} keys"), n, ms, cubm);
    }
    Ok(())
}

/// u32 keys with u32 values, against `cub_sort_pairs_u32`.
fn pairs_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    xs: &[u32],
    sizes: &[usize],
) -> Result<(), BoxError> {
    let max = *sizes.last().expect("sizes");
    let k_all = stream.htod_copy(&xs[..max])?;
    let idx: Vec<u32> = (0..max as u32).collect();
    let v_all = stream.htod_copy(&idx)?;
    let (mut ko, mut vo) = (
        stream.alloc_zeros::<u32>(max)?,
        stream.alloc_zeros::<u32>(max)?,
    );
    let (kc, vc) = (
        stream.alloc_zeros::<u32>(max)?,
        stream.alloc_zeros::<u32>(max)?,
    );
    for &n in sizes {
        // SAFETY: the symbols have these C signatures in cub_ref.cu.
        let run: CubPairs = unsafe {
            let prepare: libloading::Symbol<'_, CubPrepare> =
                cub.lib.get(b"cub_sort_pairs_u32_prepare\0")?;
            let r = prepare(n as i32);
            if r != 0 {
                return Err(
                    format!("cub_sort_pairs_u32_prepare({n}) returned CUDA error {r}").into(),
                );
            }
            *cub.lib.get::<CubPairs>(b"cub_sort_pairs_u32\0")?
        };
        let mut cub_call = || -> Result<(), BoxError> {
            // SAFETY: live buffers of at least `n` elements of this context, on our stream.
            let r = unsafe {
                run(
                    k_all.as_raw() as *const u32,
                    kc.as_raw() as *mut u32,
                    v_all.as_raw() as *const u32,
                    vc.as_raw() as *mut u32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(
                    format!("cub::DeviceRadixSort::SortPairs returned CUDA error {r}").into(),
                );
            }
            Ok(())
        };
        let (k, v) = (k_all.slice(..n)?, v_all.slice(..n)?);
        algs.sort_pairs(stream, k, v, ko.slice_mut(..n)?, vo.slice_mut(..n)?)?;
        cub_call()?;
        stream.synchronize()?;
        // Both stable: the same keys and the same values, element for element.
        check_sorted(
            &format!("u32 pairs of {n} (keys)"),
            &xs[..n],
            &ko.slice(..n)?.to_host_vec()?,
            &kc.slice(..n)?.to_host_vec()?,
        )?;
        if vo.slice(..n)?.to_host_vec()? != vc.slice(..n)?.to_host_vec()? {
            return Err(format!("u32 pairs of {n}: the values differ from CUB's").into());
        }
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.sort_pairs(stream, k, v, ko.slice_mut(..n)?, vo.slice_mut(..n)?)?)
        })?;
        let cubm = per_call_ms(ctx, stream, &mut cub_call)?;
        row("u32 keys + u32 values", n, ms, cubm);
        // The pairs' pass in other shapes (`Algorithms::sort_pairs_u32_tuned`), checked first.
        let want = (kc.slice(..n)?.to_host_vec()?, vc.slice(..n)?.to_host_vec()?);
        for (i, (threads, items)) in SORT_PAIRS_TUNING.into_iter().enumerate() {
            let variant = i as u32 + 1;
            let call = |ko: &mut DeviceBuffer<u32>, vo: &mut DeviceBuffer<u32>| {
                algs.sort_pairs_u32_tuned(
                    stream,
                    (k, v),
                    (ko.slice_mut(..n)?, vo.slice_mut(..n)?),
                    variant,
                )
            };
            call(&mut ko, &mut vo)?;
            if (ko.slice(..n)?.to_host_vec()?, vo.slice(..n)?.to_host_vec()?) != want {
                return Err(
                    format!("u32 pairs of {n}, variant {variant}: differ from CUB's").into(),
                );
            }
            let ms = per_call_ms(ctx, stream, || Ok(call(&mut ko, &mut vo)?))?;
            row(
                &format!("u32 keys + u32 values, {threads} threads x {items} keys"),
                n,
                ms,
                cubm,
            );
        }
    }
    Ok(())
}

/// The u32 keys-only sort's onesweep shapes (`Algorithms::sort_keys_u32_tuned`).
fn tuning_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    xs: &[u32],
    sizes: &[usize],
) -> Result<(), BoxError> {
    let mut names = vec!["256 threads x 28 keys, counts early (default)".to_string()];
    for (early, threads, items) in gpukernel_algorithms_kernels::sort::SORT_TUNING {
        let how = if early {
            "counts early"
        } else {
            "block::radix_rank (before)"
        };
        names.push(format!("{threads} threads x {items} keys, {how}"));
    }
    for &n in sizes {
        let x = stream.htod_copy(&xs[..n])?;
        let mut y = stream.alloc_zeros::<u32>(n)?;
        let y_cub = stream.alloc_zeros::<u32>(n)?;
        let run = cub.func::<u32>("cub_sort_u32", n)?;
        let mut cub_call = || -> Result<(), BoxError> {
            // SAFETY: live buffers of `n` keys of this context, on our stream.
            let r = unsafe {
                run(
                    x.as_raw() as *const u32,
                    y_cub.as_raw() as *mut u32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(
                    format!("cub::DeviceRadixSort::SortKeys returned CUDA error {r}").into(),
                );
            }
            Ok(())
        };
        cub_call()?;
        stream.synchronize()?;
        let want = y_cub.to_host_vec()?;
        let cubm = per_call_ms(ctx, stream, &mut cub_call)?;
        for (v, name) in names.iter().enumerate() {
            algs.sort_keys_u32_tuned(stream, x.slice(..)?, y.slice_mut(..)?, v as u32)?;
            if y.to_host_vec()? != want {
                return Err(
                    format!("u32 sort of {n}, variant {v} ({name}): differs from CUB's").into(),
                );
            }
            let ms = per_call_ms(ctx, stream, || {
                Ok(algs.sort_keys_u32_tuned(stream, x.slice(..)?, y.slice_mut(..)?, v as u32)?)
            })?;
            row(name, n, ms, cubm);
        }
    }
    Ok(())
}

/// Every sort row.
pub fn sort_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
) -> Result<(), BoxError> {
    println!(
        "\n{:>10} | {:>9} {:>8} | {:>9} {:>8} | {:>6}",
        "sort n", "ours ms", "Gkeys/s", "CUB ms", "Gkeys/s", "/CUB"
    );
    let sizes: Vec<usize> = [16, 18, 20, 22, 24, 26, 28]
        .iter()
        .map(|p| 1usize << p)
        .collect();
    let max = *sizes.last().expect("sizes");
    let x32 = keys(max, 0x5851_f42d_4c95_7f2d, |s| (s >> 16) as u32);
    keys_rows(ctx, stream, algs, cub, "cub_sort_u32", &x32, &sizes)?;
    tuning_rows(ctx, stream, algs, cub, &x32, &[1 << 24, max])?;
    let few = [1usize << 24, 1 << 28];
    pairs_rows(ctx, stream, algs, cub, &x32, &few)?;
    drop(x32);
    let x64 = keys(max, 0x1405_7b7e_f767_814f, |s| {
        s.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    });
    keys_rows(ctx, stream, algs, cub, "cub_sort_u64", &x64, &few)?;
    Ok(())
}

/// `bench_algorithms sort-profile`: 2^28 u32 keys sorted 3 times by CUB, by `sort_keys` and
/// by each tuning variant, one after another and nothing else: for a profiler's per-kernel
/// times (`nsys profile --stats=true`), each variant's onesweep pass being a kernel of its own.
pub fn sort_profile(stream: &Stream, algs: &Algorithms, cub: &Cub) -> Result<(), BoxError> {
    let n = 1usize << 28;
    let xs = keys(n, 0x5851_f42d_4c95_7f2d, |s| (s >> 16) as u32);
    let x = stream.htod_copy(&xs)?;
    let mut y = stream.alloc_zeros::<u32>(n)?;
    let y_cub = stream.alloc_zeros::<u32>(n)?;
    let run = cub.func::<u32>("cub_sort_u32", n)?;
    for _ in 0..3 {
        // SAFETY: live buffers of `n` keys of this context, on our stream.
        let r = unsafe {
            run(
                x.as_raw() as *const u32,
                y_cub.as_raw() as *mut u32,
                n as i32,
                stream.raw() as *mut c_void,
            )
        };
        if r != 0 {
            return Err(format!("cub::DeviceRadixSort::SortKeys returned CUDA error {r}").into());
        }
    }
    stream.synchronize()?;
    let want = y_cub.to_host_vec()?;
    for v in 0..=gpukernel_algorithms_kernels::sort::SORT_TUNING.len() as u32 {
        for _ in 0..3 {
            algs.sort_keys_u32_tuned(stream, x.slice(..)?, y.slice_mut(..)?, v)?;
        }
        stream.synchronize()?;
        if y.to_host_vec()? != want {
            return Err(format!("u32 sort of {n}, variant {v}: differs from CUB's").into());
        }
    }
    println!(
        "sort-profile: CUB and variants 0..={} of 2^28 u32 keys, 3 calls each, checked",
        gpukernel_algorithms_kernels::sort::SORT_TUNING.len()
    );
    Ok(())
}
