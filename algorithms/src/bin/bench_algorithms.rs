//! `bench_algorithms`: the device-wide algorithms of `gpukernel-algorithms` against CUB (and
//! Numba-CUDA's `cuda.reduce` where Numba has the operation: the f32 sum), side by side on
//! one GPU, from 2^16 to 2^28 elements, after checking every result against the host: the
//! f32 sum (and its grid shapes, and what its time is made of), the inclusive and exclusive f32 scans (and the scan's
//! tile shapes), the 256-bin byte histogram, the 1024-bin f32 `HistogramEven`, the segmented
//! f32 sum (segments of 64 and of 16384 elements) and, with the `example-op` feature, a
//! user's operator (2×2 matrix products modulo 2^16 in u64) against `DeviceReduce::Reduce` and
//! `DeviceScan::InclusiveScan` with the same functor (CUB's reduce assumes a commutative
//! operator: its result is reported when it differs from the host's).
//!
//! CUB comes from `bench/cub_ref.cu`, compiled with nvcc (`$CUDA_HOME/bin/nvcc`, else
//! `/usr/local/cuda/bin/nvcc`; `-O3 -arch=sm_<the GPU's>`) into a shared library that this
//! process opens, unless `GPUKERNEL_CUB_LIB` names one built before. Both run on the same
//! CUDA stream and context. Numba runs in a child `python3` (`GPUKERNEL_PYTHON` to choose
//! another), on the same GPU, timed the same way; its rows are left out, with the reason,
//! when it cannot run.
//!
//! Timing: each figure is the median over 7 batches of 20 back-to-back calls, timed by two
//! events around the batch, divided by 20: per-call throughput including launch costs, so
//! small sizes show where a call is launch-bound. Our calls include their stream-ordered
//! temporary allocation (the reduce has none: its scratch is the `Algorithms`' own, allocated
//! at its first call); CUB's temporary storage is allocated once, before timing.
//!
//! `bench_algorithms reduce`: the f32 sum's rows alone (no Numba), then exits.

use std::error::Error;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;

use gpukernel_algorithms::{Algorithms, Sum};
use gpukernel_runtime::{Context, Device, DeviceBuffer, Stream};

#[path = "bench_algorithms/sort.rs"]
mod sort;

type BoxError = Box<dyn Error>;

const CUB_SOURCE: &str = include_str!("../../bench/cub_ref.cu");
const BATCH: usize = 20;
const BATCHES: usize = 7;

type CubPrepare = unsafe extern "C" fn(i32) -> i32;
type CubRun<T> = unsafe extern "C" fn(*const T, *mut T, i32, *mut c_void) -> i32;

/// The CUB library, opened.
struct Cub {
    lib: libloading::Library,
    how: String,
}

impl Cub {
    fn open(cc: (u32, u32)) -> Result<Cub, BoxError> {
        let (path, how) = match std::env::var_os("GPUKERNEL_CUB_LIB") {
            Some(p) => {
                let p = PathBuf::from(p);
                let how = format!("prebuilt {}", p.display());
                (p, how)
            }
            None => compile_cub(cc)?,
        };
        // SAFETY: the library is ours (cub_ref.cu); its initializers are the CUDA runtime's.
        let lib = unsafe { libloading::Library::new(&path) }
            .map_err(|e| format!("opening the CUB library {}: {e}", path.display()))?;
        Ok(Cub { lib, how })
    }

    /// `name_prepare(n)` then a closure that runs `name(in, out, n, stream)`.
    fn func<T>(&self, name: &str, n: usize) -> Result<CubRun<T>, BoxError> {
        // SAFETY: the symbols have these C signatures in cub_ref.cu.
        unsafe {
            let prepare: libloading::Symbol<'_, CubPrepare> =
                self.lib.get(format!("{name}_prepare\0").as_bytes())?;
            let r = prepare(n as i32);
            if r != 0 {
                return Err(format!("{name}_prepare({n}) returned CUDA error {r}").into());
            }
            let run: libloading::Symbol<'_, CubRun<T>> =
                self.lib.get(format!("{name}\0").as_bytes())?;
            Ok(*run)
        }
    }
}

fn compile_cub(cc: (u32, u32)) -> Result<(PathBuf, String), BoxError> {
    let home = std::env::var_os("CUDA_HOME").map(PathBuf::from);
    let nvcc = home
        .map(|h| h.join("bin/nvcc"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("/usr/local/cuda/bin/nvcc"));
    if !nvcc.exists() {
        return Err(format!(
            "no nvcc at {} to compile CUB's reference: set CUDA_HOME, or GPUKERNEL_CUB_LIB to a \
             library built from algorithms/bench/cub_ref.cu",
            nvcc.display()
        )
        .into());
    }
    let dir = std::env::temp_dir().join(format!("gpukernel-cub-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let src = dir.join("cub_ref.cu");
    std::fs::write(&src, CUB_SOURCE)?;
    let lib = dir.join("libcubref.so");
    let arch = format!("-arch=sm_{}{}", cc.0, cc.1);
    let out = Command::new(&nvcc)
        .args(["-O3", &arch, "-shared", "-Xcompiler", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{} failed on cub_ref.cu:\n{}",
            nvcc.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok((lib, format!("{} -O3 {arch}", nvcc.display())))
}

/// Per-call milliseconds: the median over [`BATCHES`] batches of [`BATCH`] calls of `f`.
fn per_call_ms(
    ctx: &Context,
    stream: &Stream,
    mut f: impl FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    for _ in 0..3 {
        f()?;
    }
    stream.synchronize()?;
    let mut v = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        start.record(stream)?;
        for _ in 0..BATCH {
            f()?;
        }
        end.record(stream)?;
        end.synchronize()?;
        v.push(start.elapsed_ms(&end)? as f64 / BATCH as f64);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Deterministic values in [-1, 1).
fn values(n: usize) -> Vec<f32> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn check(what: &str, got: f64, want: f64, scale: f64) -> Result<(), BoxError> {
    // f32 sums of n values of either sign in another order: a relative error against the sum
    // of magnitudes.
    if !got.is_finite() || (got - want).abs() > 1e-5 * scale.max(1.0) {
        return Err(format!("{what}: got {got}, want {want} (scale {scale})").into());
    }
    Ok(())
}

/// Numba's `cuda.reduce` per-call milliseconds by size, from a child Python.
fn numba(sizes: &[usize]) -> Result<Vec<(usize, f64)>, String> {
    let script = r#"
import sys, numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # numba-cuda's cuda.reduce still calls it; NumPy 2.x removed it
from numba import cuda
sizes = [int(s) for s in sys.argv[1:]]
red = cuda.reduce(lambda a, b: a + b)
out = cuda.device_array(1, dtype=np.float32)
for n in sizes:
    x = cuda.to_device(((np.arange(n, dtype=np.float64) % 7) - 3).astype(np.float32))
    red(x, res=out)
    cuda.synchronize()
    if abs(float(out.copy_to_host()[0]) - float(((np.arange(n) % 7) - 3).sum())) > 1e-3 * n:
        print("numba sum wrong", n, file=sys.stderr); sys.exit(2)
    s, e = cuda.event(), cuda.event()
    ts = []
    for _ in range(7):
        s.record()
        for _ in range(20):
            red(x, res=out)
        e.record(); e.synchronize()
        ts.append(cuda.event_elapsed_time(s, e) / 20)
    ts.sort()
    print(n, ts[len(ts) // 2], flush=True)
"#;
    let py = std::env::var("GPUKERNEL_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&py)
        .arg("-c")
        .arg(script)
        .args(sizes.iter().map(|n| n.to_string()))
        .output()
        .map_err(|e| format!("{py}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
        return Err(format!("{py} exited with {}: {last}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect())
}

fn gbs(bytes: f64, ms: f64) -> f64 {
    bytes / ms / 1e6
}

fn main() -> Result<(), BoxError> {
    let dev = Device::get(0)?;
    let props = dev.properties()?;
    let cc = props.compute_capability;
    let ctx = dev.primary_context()?;
    let stream = ctx.new_stream()?;
    let algs = Algorithms::new(&ctx)?;
    let cub = Cub::open(cc)?;
    println!(
        "# bench_algorithms on {} (sm_{}{}, {} SMs); CUB: {}",
        dev.name()?,
        cc.0,
        cc.1,
        props.multiprocessor_count,
        cub.how
    );
    // `bench_algorithms sort`: the radix sort rows alone.
    if std::env::args().nth(1).as_deref() == Some("sort") {
        return sort::sort_rows(&ctx, &stream, &algs, &cub);
    }
    // `bench_algorithms sort-profile`: a few 2^28 sorts for a profiler (see `sort_profile`).
    if std::env::args().nth(1).as_deref() == Some("sort-profile") {
        return sort::sort_profile(&stream, &algs, &cub);
    }
    let sizes: Vec<usize> = [16, 18, 20, 22, 24, 26, 27, 28]
        .iter()
        .map(|p| 1usize << p)
        .collect();
    let reduce_only = std::env::args().nth(1).as_deref() == Some("reduce");
    let numba_rows = if reduce_only {
        Err("`bench_algorithms reduce` leaves them out".to_string())
    } else {
        numba(&sizes)
    };
    if let Err(e) = &numba_rows {
        println!("# Numba rows left out: {e}");
    }
    println!(
        "\n{:>10} | {:>9} {:>8} | {:>9} {:>8} | {:>6} | {:>9} {:>8} | {:>6}",
        "f32 sum n", "ours ms", "GB/s", "CUB ms", "GB/s", "/CUB", "Numba ms", "GB/s", "/Numba"
    );
    let all = values(*sizes.last().expect("sizes"));
    let x_all = stream.htod_copy(&all)?;
    let mut out = stream.alloc_zeros::<f32>(1)?;
    let mut out_cub = stream.alloc_zeros::<f32>(1)?;
    for &n in &sizes {
        let x = x_all.slice(..n)?;
        let want: f64 = all[..n].iter().map(|&v| v as f64).sum();
        let scale: f64 = all[..n].iter().map(|&v| v.abs() as f64).sum();
        let cub_sum = cub.func::<f32>("cub_sum_f32", n)?;
        let run_cub = |out: &mut DeviceBuffer<f32>| -> Result<(), BoxError> {
            // SAFETY: live buffers of `n` and 1 f32s of this context; the stream is ours.
            let r = unsafe {
                cub_sum(
                    x_all.as_raw() as *const f32,
                    out.as_raw() as *mut f32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(format!("cub::DeviceReduce::Sum returned CUDA error {r}").into());
            }
            Ok(())
        };
        algs.reduce(&stream, x, Sum, &mut out)?;
        check("ours", out.to_host_vec()?[0] as f64, want, scale)?;
        run_cub(&mut out_cub)?;
        stream.synchronize()?;
        check("CUB", out_cub.to_host_vec()?[0] as f64, want, scale)?;
        let ours = per_call_ms(
            &ctx,
            &stream,
            || Ok(algs.reduce(&stream, x, Sum, &mut out)?),
        )?;
        let cubm = per_call_ms(&ctx, &stream, || run_cub(&mut out_cub))?;
        let bytes = 4.0 * n as f64;
        let nb = numba_rows
            .as_ref()
            .ok()
            .and_then(|r| r.iter().find(|(m, _)| *m == n).map(|(_, ms)| *ms));
        let (nbs, nbg, nbr) = match nb {
            Some(ms) => (
                format!("{ms:.4}"),
                format!("{:.0}", gbs(bytes, ms)),
                format!("{:.2}", ms / ours),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:>10} | {:>9.4} {:>8.0} | {:>9.4} {:>8.0} | {:>6.3} | {:>9} {:>8} | {:>6}",
            format!("2^{}", n.trailing_zeros()),
            ours,
            gbs(bytes, ours),
            cubm,
            gbs(bytes, cubm),
            cubm / ours,
            nbs,
            nbg,
            nbr
        );
    }

    // Tuning at 2^28: the one-launch reduce's grid and loads in flight.
    let n = x_all.len();
    let cub_sum = cub.func::<f32>("cub_sum_f32", n)?;
    let cubm = per_call_ms(&ctx, &stream, || {
        // SAFETY: as above.
        let r = unsafe {
            cub_sum(
                x_all.as_raw() as *const f32,
                out_cub.as_raw() as *mut f32,
                n as i32,
                stream.raw() as *mut c_void,
            )
        };
        if r != 0 {
            return Err(format!("cub::DeviceReduce::Sum returned CUDA error {r}").into());
        }
        Ok(())
    })?;
    println!(
        "\n2^{} f32 sum, one launch, grid shapes (CUB {cubm:.4} ms, {:.0} GB/s):",
        n.trailing_zeros(),
        gbs(4.0 * n as f64, cubm)
    );
    let want: f64 = all.iter().map(|&v| v as f64).sum();
    let scale: f64 = all.iter().map(|&v| v.abs() as f64).sum();
    let shapes = [2usize, 4, 8]
        .into_iter()
        .flat_map(|v| [2u32, 3, 4, 5, 6, 8, 12, 16].map(|b| (v, b)));
    for (vecs, bps) in shapes {
        algs.sum_f32_tuned(&stream, x_all.slice(..)?, &mut out, bps, vecs)?;
        check(
            &format!("ours vecs {vecs} blocks/SM {bps}"),
            out.to_host_vec()?[0] as f64,
            want,
            scale,
        )?;
        let ms = per_call_ms(&ctx, &stream, || {
            Ok(algs.sum_f32_tuned(&stream, x_all.slice(..)?, &mut out, bps, vecs)?)
        })?;
        println!(
            "  vecs {vecs} blocks/SM {bps:>2}: {ms:.4} ms {:>6.0} GB/s  {:.3}x CUB",
            gbs(4.0 * n as f64, ms),
            cubm / ms
        );
    }

    // What the default reduce's time is made of at 2^28: one launch (the reduce), two launches
    // (a first pass into partials allocated once, then one block), and the first pass alone.
    let mut partials = stream.alloc_zeros::<f32>(algs.reduce_partials::<f32>(n))?;
    algs.sum_f32_stages(&stream, &x_all, &mut partials, &mut out, true)?;
    check(
        "ours, partials allocated once",
        out.to_host_vec()?[0] as f64,
        want,
        scale,
    )?;
    let ours = per_call_ms(&ctx, &stream, || {
        Ok(algs.reduce(&stream, &x_all, Sum, &mut out)?)
    })?;
    let both = per_call_ms(&ctx, &stream, || {
        Ok(algs.sum_f32_stages(&stream, &x_all, &mut partials, &mut out, true)?)
    })?;
    let first = per_call_ms(&ctx, &stream, || {
        Ok(algs.sum_f32_stages(&stream, &x_all, &mut partials, &mut out, false)?)
    })?;
    println!(
        "  reduce (one launch) {ours:.4} ms ({:.3}x CUB); two launches {both:.4} ms ({:.3}x \
         CUB); first pass alone {first:.4} ms ({:.3}x CUB)",
        cubm / ours,
        cubm / both,
        cubm / first
    );

    // Ours and CUB's in turn, five times each: the ratio without the drift of a GPU's clock
    // between two rows measured apart.
    let mut ratios = Vec::new();
    for _ in 0..5 {
        let ours = per_call_ms(&ctx, &stream, || {
            Ok(algs.reduce(&stream, &x_all, Sum, &mut out)?)
        })?;
        let theirs = per_call_ms(&ctx, &stream, || {
            // SAFETY: as above.
            let r = unsafe {
                cub_sum(
                    x_all.as_raw() as *const f32,
                    out_cub.as_raw() as *mut f32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(format!("cub::DeviceReduce::Sum returned CUDA error {r}").into());
            }
            Ok(())
        })?;
        ratios.push((theirs / ours, ours, theirs));
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!(
        "  in turn, 5 times: CUB / ours {} (median {:.4}: ours {:.4} ms, CUB {:.4} ms)",
        ratios
            .iter()
            .map(|r| format!("{:.4}", r.0))
            .collect::<Vec<_>>()
            .join(" "),
        ratios[2].0,
        ratios[2].1,
        ratios[2].2
    );

    // `bench_algorithms reduce`: the sum rows and the grid shapes alone.
    if reduce_only {
        return Ok(());
    }
    scan_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    exclusive_scan_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    histogram_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    histogram_even_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    segmented_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    #[cfg(feature = "example-op")]
    user_op_rows(&ctx, &stream, &algs, &cub, &sizes)?;
    #[cfg(not(feature = "example-op"))]
    println!("\n# user-operator rows left out: build with --features example-op");
    sort::sort_rows(&ctx, &stream, &algs, &cub)?;

    // Other element types at 2^28 against CUB.
    println!();
    let xi: Vec<i32> = all.iter().map(|&v| (v * 1000.0) as i32).collect();
    let di = stream.htod_copy(&xi)?;
    let wanti = xi.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    type_row(&ctx, &stream, &algs, &cub, "i32", "cub_sum_i32", &di, wanti)?;
    drop(di);
    let xd: Vec<f64> = all.iter().map(|&v| (v * 1000.0).trunc() as f64).collect();
    let dd = stream.htod_copy(&xd)?;
    let wantd: f64 = xd.iter().sum();
    type_row(&ctx, &stream, &algs, &cub, "f64", "cub_sum_f64", &dd, wantd)?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn type_row<T>(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    name: &str,
    sym: &str,
    x: &DeviceBuffer<T>,
    want: T,
) -> Result<(), BoxError>
where
    T: gpukernel_algorithms::Item + gpukernel_runtime::DeviceCopy + PartialEq + std::fmt::Debug,
    Sum: gpukernel_algorithms::DeviceReduceOp<T>,
{
    let n = x.len();
    let mut out = stream.alloc_zeros::<T>(1)?;
    let mut out_cub = stream.alloc_zeros::<T>(1)?;
    let run = cub.func::<T>(sym, n)?;
    let run_cub = |out: &mut DeviceBuffer<T>| -> Result<(), BoxError> {
        // SAFETY: live buffers of `n` and 1 elements of this context.
        let r = unsafe {
            run(
                x.as_raw() as *const T,
                out.as_raw() as *mut T,
                n as i32,
                stream.raw() as *mut c_void,
            )
        };
        if r != 0 {
            return Err(format!("cub {sym} returned CUDA error {r}").into());
        }
        Ok(())
    };
    algs.reduce(stream, x, Sum, &mut out)?;
    run_cub(&mut out_cub)?;
    stream.synchronize()?;
    let (a, b) = (out.to_host_vec()?[0], out_cub.to_host_vec()?[0]);
    if a != want || b != want {
        return Err(format!("{name} sum: ours {a:?}, CUB {b:?}, want {want:?}").into());
    }
    let ours = per_call_ms(ctx, stream, || Ok(algs.reduce(stream, x, Sum, &mut out)?))?;
    let cubm = per_call_ms(ctx, stream, || run_cub(&mut out_cub))?;
    let bytes = (std::mem::size_of::<T>() * n) as f64;
    println!(
        "2^{} {name} sum: ours {ours:.4} ms {:.0} GB/s, CUB {cubm:.4} ms {:.0} GB/s, {:.3}x CUB",
        n.trailing_zeros(),
        gbs(bytes, ours),
        gbs(bytes, cubm),
        cubm / ours
    );
    Ok(())
}

/// The inclusive f32 sum against `cub::DeviceScan::InclusiveSum`, element for element.
fn scan_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    println!(
        "\n{:>10} | {:>9} {:>8} | {:>9} {:>8} | {:>6}",
        "f32 scan n", "ours ms", "GB/s", "CUB ms", "GB/s", "/CUB"
    );
    let max = *sizes.last().expect("sizes");
    // Small integers: every prefix is exact in f32, in any order of addition.
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let xs: Vec<f32> = (0..max)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 21) as f32 - 10.0
        })
        .collect();
    let x_all = stream.htod_copy(&xs)?;
    let mut y = stream.alloc_zeros::<f32>(max)?;
    let mut y_cub = stream.alloc_zeros::<f32>(max)?;
    for &n in sizes {
        let x = x_all.slice(..n)?;
        let run_cub = cub.func::<f32>("cub_scan_f32", n)?;
        let cub_call = |y: &mut DeviceBuffer<f32>| -> Result<(), BoxError> {
            // SAFETY: live buffers of at least `n` f32s of this context, on our stream.
            let r = unsafe {
                run_cub(
                    x_all.as_raw() as *const f32,
                    y.as_raw() as *mut f32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(
                    format!("cub::DeviceScan::InclusiveSum returned CUDA error {r}").into(),
                );
            }
            Ok(())
        };
        algs.inclusive_scan(stream, x, Sum, y.slice_mut(..n)?)?;
        cub_call(&mut y_cub)?;
        stream.synchronize()?;
        let (ours, theirs) = (
            y.slice(..n)?.to_host_vec()?,
            y_cub.slice(..n)?.to_host_vec()?,
        );
        let mut acc = 0.0f32;
        for i in 0..n {
            acc += xs[i];
            if ours[i] != acc || theirs[i] != acc {
                return Err(format!(
                    "scan of {n}: element {i}: ours {}, CUB {}, want {acc}",
                    ours[i], theirs[i]
                )
                .into());
            }
        }
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.inclusive_scan(stream, x, Sum, y.slice_mut(..n)?)?)
        })?;
        let cubm = per_call_ms(ctx, stream, || cub_call(&mut y_cub))?;
        let bytes = 8.0 * n as f64;
        println!(
            "{:>10} | {:>9.4} {:>8.0} | {:>9.4} {:>8.0} | {:>6.3}",
            format!("2^{}", n.trailing_zeros()),
            ms,
            gbs(bytes, ms),
            cubm,
            gbs(bytes, cubm),
            cubm / ms
        );
    }
    // Tuning at the largest size: threads, vectors per thread, tile claim and look-back sleeps.
    let n = max;
    let run_cub = cub.func::<f32>("cub_scan_f32", n)?;
    let cubm = per_call_ms(ctx, stream, || {
        // SAFETY: as above.
        let r = unsafe {
            run_cub(
                x_all.as_raw() as *const f32,
                y_cub.as_raw() as *mut f32,
                n as i32,
                stream.raw() as *mut c_void,
            )
        };
        if r != 0 {
            return Err(format!("cub::DeviceScan::InclusiveSum returned CUDA error {r}").into());
        }
        Ok(())
    })?;
    println!(
        "\n2^{} f32 inclusive scan, tile shapes (CUB {cubm:.4} ms, {:.0} GB/s):",
        n.trailing_zeros(),
        gbs(8.0 * n as f64, cubm)
    );
    let mut want = Vec::with_capacity(n);
    let mut acc = 0.0f32;
    for &v in &xs {
        acc += v;
        want.push(acc);
    }
    for (i, (name, shape)) in Algorithms::scan_tuning_shapes().enumerate() {
        y.memset_d8(0)?;
        algs.scan_f32_tuned(stream, x_all.slice(..)?, y.slice_mut(..)?, i)?;
        if y.to_host_vec()? != want {
            return Err(format!("scan tuning shape {name}: result differs from the host's").into());
        }
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.scan_f32_tuned(stream, x_all.slice(..)?, y.slice_mut(..)?, i)?)
        })?;
        println!(
            "  {name:<28} {shape:?}: {ms:.4} ms {:>6.0} GB/s  {:.3}x CUB",
            gbs(8.0 * n as f64, ms),
            cubm / ms
        );
    }
    Ok(())
}

type CubHist = unsafe extern "C" fn(*const u8, *mut u32, i32, *mut c_void) -> i32;

/// The 256-bin byte histogram against `cub::DeviceHistogram::HistogramEven`, bin for bin.
fn histogram_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    println!(
        "\n{:>10} | {:>9} {:>8} | {:>9} {:>8} | {:>6}",
        "bytes n", "ours ms", "GB/s", "CUB ms", "GB/s", "/CUB"
    );
    let max = *sizes.last().expect("sizes");
    let mut s = 0x1234_5678_9abc_def1u64;
    let data: Vec<u8> = (0..max)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect();
    let d_all = stream.htod_copy(&data)?;
    let mut bins = stream.alloc_zeros::<u32>(256)?;
    let mut bins_cub = stream.alloc_zeros::<u32>(256)?;
    for &n in sizes {
        let d = d_all.slice(..n)?;
        // SAFETY: the symbols have these C signatures in cub_ref.cu.
        let run: CubHist = unsafe {
            let prepare: libloading::Symbol<'_, CubPrepare> =
                cub.lib.get(b"cub_hist256_prepare\0")?;
            let r = prepare(n as i32);
            if r != 0 {
                return Err(format!("cub_hist256_prepare({n}) returned CUDA error {r}").into());
            }
            *cub.lib.get::<CubHist>(b"cub_hist256\0")?
        };
        let cub_call = |bins: &mut DeviceBuffer<u32>| -> Result<(), BoxError> {
            // CUB adds to the bins: zero them first, as ours does.
            bins.memset_d8(0)?;
            // SAFETY: live buffers of `n` bytes and 256 counters of this context.
            let r = unsafe {
                run(
                    d_all.as_raw() as *const u8,
                    bins.as_raw() as *mut u32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            };
            if r != 0 {
                return Err(
                    format!("cub::DeviceHistogram::HistogramEven returned CUDA error {r}").into(),
                );
            }
            Ok(())
        };
        algs.histogram256(stream, d, &mut bins)?;
        cub_call(&mut bins_cub)?;
        stream.synchronize()?;
        let mut want = vec![0u32; 256];
        for &b in &data[..n] {
            want[b as usize] += 1;
        }
        let (ours, theirs) = (bins.to_host_vec()?, bins_cub.to_host_vec()?);
        if ours != want || theirs != want {
            return Err(format!(
                "histogram of {n} bytes differs from the host's (ours ok: {}, CUB ok: {})",
                ours == want,
                theirs == want
            )
            .into());
        }
        let ms = per_call_ms(ctx, stream, || Ok(algs.histogram256(stream, d, &mut bins)?))?;
        let cubm = per_call_ms(ctx, stream, || cub_call(&mut bins_cub))?;
        let bytes = n as f64;
        println!(
            "{:>10} | {:>9.4} {:>8.0} | {:>9.4} {:>8.0} | {:>6.3}",
            format!("2^{}", n.trailing_zeros()),
            ms,
            gbs(bytes, ms),
            cubm,
            gbs(bytes, cubm),
            cubm / ms
        );
    }
    Ok(())
}

/// A CUB entry point of `cub_ref.cu`, after its `_prepare` with `prep` (sizes).
fn cub_sym<F: Copy>(cub: &Cub, name: &str, prep: &[i32]) -> Result<F, BoxError> {
    // SAFETY: the symbols have these C signatures in cub_ref.cu (checked by the callers'
    // types: one prepare per arity).
    unsafe {
        let r = match prep {
            [a] => {
                let p: libloading::Symbol<'_, unsafe extern "C" fn(i32) -> i32> =
                    cub.lib.get(format!("{name}_prepare\0").as_bytes())?;
                p(*a)
            }
            [a, b] => {
                let p: libloading::Symbol<'_, unsafe extern "C" fn(i32, i32) -> i32> =
                    cub.lib.get(format!("{name}_prepare\0").as_bytes())?;
                p(*a, *b)
            }
            _ => return Err(format!("{name}: no prepare of {} arguments", prep.len()).into()),
        };
        if r != 0 {
            return Err(format!("{name}_prepare{prep:?} returned CUDA error {r}").into());
        }
        Ok(*cub.lib.get::<F>(format!("{name}\0").as_bytes())?)
    }
}

fn cub_ok(what: &str, r: i32) -> Result<(), BoxError> {
    if r != 0 {
        return Err(format!("{what} returned CUDA error {r}").into());
    }
    Ok(())
}

fn row(n: usize, bytes: f64, ours: f64, cubm: f64) {
    println!(
        "{:>10} | {:>9.4} {:>8.0} | {:>9.4} {:>8.0} | {:>6.3}",
        format!("2^{}", n.trailing_zeros()),
        ours,
        gbs(bytes, ours),
        cubm,
        gbs(bytes, cubm),
        cubm / ours
    );
}

fn header(first: &str) {
    println!(
        "\n{:>10} | {:>9} {:>8} | {:>9} {:>8} | {:>6}",
        first, "ours ms", "GB/s", "CUB ms", "GB/s", "/CUB"
    );
}

/// Small integers in f32 (every prefix sum exact in any order).
fn small_ints(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 21) as f32 - 10.0
        })
        .collect()
}

/// The exclusive f32 sum against `cub::DeviceScan::ExclusiveSum`.
fn exclusive_scan_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    header("excl scan n");
    let max = *sizes.last().expect("sizes");
    let xs = small_ints(max, 0x51);
    let x_all = stream.htod_copy(&xs)?;
    let mut y = stream.alloc_zeros::<f32>(max)?;
    let mut y_cub = stream.alloc_zeros::<f32>(max)?;
    for &n in sizes {
        let x = x_all.slice(..n)?;
        let run: CubRun<f32> = cub_sym(cub, "cub_scan_excl_f32", &[n as i32])?;
        let cub_call = |y: &mut DeviceBuffer<f32>| {
            // SAFETY: live buffers of at least `n` f32s of this context, on our stream.
            cub_ok("cub::DeviceScan::ExclusiveSum", unsafe {
                run(
                    x_all.as_raw() as *const f32,
                    y.as_raw() as *mut f32,
                    n as i32,
                    stream.raw() as *mut c_void,
                )
            })
        };
        algs.exclusive_scan(stream, x, Sum, y.slice_mut(..n)?)?;
        cub_call(&mut y_cub)?;
        stream.synchronize()?;
        let (ours, theirs) = (
            y.slice(..n)?.to_host_vec()?,
            y_cub.slice(..n)?.to_host_vec()?,
        );
        let mut acc = 0.0f32;
        for i in 0..n {
            if ours[i] != acc || theirs[i] != acc {
                return Err(format!(
                    "exclusive scan of {n}: element {i}: ours {}, CUB {}, want {acc}",
                    ours[i], theirs[i]
                )
                .into());
            }
            acc += xs[i];
        }
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.exclusive_scan(stream, x, Sum, y.slice_mut(..n)?)?)
        })?;
        let cubm = per_call_ms(ctx, stream, || cub_call(&mut y_cub))?;
        row(n, 8.0 * n as f64, ms, cubm);
    }
    Ok(())
}

type CubHistEven =
    unsafe extern "C" fn(*const f32, *mut u32, i32, i32, f32, f32, *mut c_void) -> i32;

/// The even-bin f32 histogram (1024 bins, samples in and out of range) against
/// `cub::DeviceHistogram::HistogramEven`.
fn histogram_even_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    let bins = 1024usize;
    let (lo, hi) = (-0.9f32, 0.9f32);
    header(&format!("f32 hist{bins}"));
    let max = *sizes.last().expect("sizes");
    let xs = values(max);
    let x_all = stream.htod_copy(&xs)?;
    let mut out = stream.alloc_zeros::<u32>(bins)?;
    let mut out_cub = stream.alloc_zeros::<u32>(bins)?;
    for &n in sizes {
        let run: CubHistEven = cub_sym(cub, "cub_histeven_f32", &[n as i32, bins as i32 + 1])?;
        let cub_call = |b: &mut DeviceBuffer<u32>| -> Result<(), BoxError> {
            b.memset_d8(0)?;
            // SAFETY: live buffers of `n` samples and `bins` counters of this context.
            cub_ok("cub::DeviceHistogram::HistogramEven", unsafe {
                run(
                    x_all.as_raw() as *const f32,
                    b.as_raw() as *mut u32,
                    n as i32,
                    bins as i32 + 1,
                    lo,
                    hi,
                    stream.raw() as *mut c_void,
                )
            })
        };
        let x = x_all.slice(..n)?;
        algs.histogram_even(stream, x, lo, hi, &mut out)?;
        cub_call(&mut out_cub)?;
        stream.synchronize()?;
        let r = bins as f32 / (hi - lo);
        let mut want = vec![0u32; bins];
        for &s in &xs[..n] {
            if s >= lo && s < hi {
                want[(((s - lo) * r) as usize).min(bins - 1)] += 1;
            }
        }
        let (ours, theirs) = (out.to_host_vec()?, out_cub.to_host_vec()?);
        if ours != want || theirs != want {
            return Err(format!(
                "even histogram of {n}: differs from the host's (ours ok: {}, CUB ok: {})",
                ours == want,
                theirs == want
            )
            .into());
        }
        let ms = per_call_ms(ctx, stream, || {
            Ok(algs.histogram_even(stream, x, lo, hi, &mut out)?)
        })?;
        let cubm = per_call_ms(ctx, stream, || cub_call(&mut out_cub))?;
        row(n, 4.0 * n as f64, ms, cubm);
    }
    Ok(())
}

type CubSeg = unsafe extern "C" fn(*const f32, *mut f32, i32, *const u32, *mut c_void) -> i32;

/// The segmented f32 sum against `cub::DeviceSegmentedReduce::Sum`: segments of 64 elements
/// (a warp each) and of 16384 (a block each).
fn segmented_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    let max = *sizes.last().expect("sizes");
    let xs = small_ints(max, 0x77);
    let x_all = stream.htod_copy(&xs)?;
    for seg_len in [64usize, 16384] {
        header(&format!("seg{seg_len} n"));
        for &n in sizes {
            let segments = n / seg_len;
            let offsets: Vec<u32> = (0..=segments).map(|s| (s * seg_len) as u32).collect();
            let o = stream.htod_copy(&offsets)?;
            let mut out = stream.alloc_zeros::<f32>(segments)?;
            let mut out_cub = stream.alloc_zeros::<f32>(segments)?;
            let run: CubSeg = cub_sym(cub, "cub_segsum_f32", &[segments as i32])?;
            let cub_call = |out: &mut DeviceBuffer<f32>| {
                // SAFETY: live buffers of this context: `n` inputs, `segments` outputs and
                // `segments + 1` offsets.
                cub_ok("cub::DeviceSegmentedReduce::Sum", unsafe {
                    run(
                        x_all.as_raw() as *const f32,
                        out.as_raw() as *mut f32,
                        segments as i32,
                        o.as_raw() as *const u32,
                        stream.raw() as *mut c_void,
                    )
                })
            };
            let x = x_all.slice(..n)?;
            algs.segmented_reduce(stream, x, &o, Sum, &mut out)?;
            cub_call(&mut out_cub)?;
            stream.synchronize()?;
            let want: Vec<f32> = xs[..n].chunks(seg_len).map(|c| c.iter().sum()).collect();
            let (ours, theirs) = (out.to_host_vec()?, out_cub.to_host_vec()?);
            if ours != want || theirs != want {
                return Err(format!(
                    "segmented sum of {n} in {seg_len}s: differs from the host's (ours ok: {}, CUB ok: {})",
                    ours == want,
                    theirs == want
                )
                .into());
            }
            let ms = per_call_ms(ctx, stream, || {
                Ok(algs.segmented_reduce(stream, x, &o, Sum, &mut out)?)
            })?;
            let cubm = per_call_ms(ctx, stream, || cub_call(&mut out_cub))?;
            row(n, 4.0 * n as f64, ms, cubm);
        }
    }
    Ok(())
}

/// A user's operator (2×2 matrix products modulo 2^16 in u64, `MatMul2` of the example
/// operators crate and its CUDA twin) against `cub::DeviceReduce::Reduce` and
/// `cub::DeviceScan::InclusiveScan` with the same functor.
#[cfg(feature = "example-op")]
fn user_op_rows(
    ctx: &Context,
    stream: &Stream,
    algs: &Algorithms,
    cub: &Cub,
    sizes: &[usize],
) -> Result<(), BoxError> {
    use gpukernel_algorithms::{Identity, ReduceOp, UserKernels};
    use gpukernel_algorithms_example_op::{MatMul2, MatMul2Algorithms, PTX};
    let module = ctx.load_module(PTX.as_bytes())?;
    let kernels = UserKernels::<MatMul2Algorithms>::load(&module)?;
    let max = *sizes.last().expect("sizes");
    let mut s = 0x3141_5926u64;
    let xs: Vec<u64> = (0..max)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let k = (s % 7 + 1) as u16;
            if s & 8 == 0 {
                MatMul2::pack([1, k, 0, 1])
            } else {
                MatMul2::pack([1, 0, k, 1])
            }
        })
        .collect();
    let x_all = stream.htod_copy(&xs)?;
    let mut y = stream.alloc_zeros::<u64>(max)?;
    let mut y_cub = stream.alloc_zeros::<u64>(max)?;
    for what in ["reduce", "scan"] {
        header(&format!("2x2 {what} n"));
        for &n in sizes {
            let x = x_all.slice(..n)?;
            let sym = format!("cub_matmul2_{what}");
            let run: CubRun<u64> = cub_sym(cub, &sym, &[n as i32])?;
            let cub_call = |y: &mut DeviceBuffer<u64>| {
                // SAFETY: live buffers of at least `n` u64s of this context, on our stream.
                cub_ok(&sym, unsafe {
                    run(
                        x_all.as_raw() as *const u64,
                        y.as_raw() as *mut u64,
                        n as i32,
                        stream.raw() as *mut c_void,
                    )
                })
            };
            let ours = |y: &mut DeviceBuffer<u64>| -> Result<(), BoxError> {
                if what == "reduce" {
                    algs.reduce_user(stream, &kernels, x, y.slice_mut(..1)?)?;
                } else {
                    algs.inclusive_scan_user(stream, &kernels, x, y.slice_mut(..n)?)?;
                }
                Ok(())
            };
            ours(&mut y)?;
            cub_call(&mut y_cub)?;
            stream.synchronize()?;
            let len = if what == "reduce" { 1 } else { n };
            let (a, b) = (
                y.slice(..len)?.to_host_vec()?,
                y_cub.slice(..len)?.to_host_vec()?,
            );
            let mut acc = MatMul2.identity();
            let mut want = Vec::with_capacity(len);
            for &v in &xs[..n] {
                acc = MatMul2.combine(acc, v);
                if what == "scan" {
                    want.push(acc);
                }
            }
            if what == "reduce" {
                want.push(acc);
            }
            if a != want {
                return Err(format!("2x2 {what} of {n}: ours differs from the host's").into());
            }
            let cub_note = if b == want {
                ""
            } else {
                "  (CUB's result differs from the host's)"
            };
            let ms = per_call_ms(ctx, stream, || ours(&mut y))?;
            let cubm = per_call_ms(ctx, stream, || cub_call(&mut y_cub))?;
            let bytes = if what == "reduce" { 8.0 } else { 16.0 } * n as f64;
            row(n, bytes, ms, cubm);
            if !cub_note.is_empty() {
                println!("{cub_note}");
            }
        }
    }
    Ok(())
}
