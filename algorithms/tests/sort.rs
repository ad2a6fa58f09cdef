//! The device-wide radix sort (`Algorithms::sort_keys`, `sort_pairs`, ascending and
//! descending) against the host's stable sort, for u32, i32, f32 (IEEE total order: signed
//! zeros, infinities, NaNs of both signs) and u64 keys: random, all equal, already sorted,
//! reversed, few distinct keys (stability of the pairs), at sizes 0, 1, around the tile and
//! above 2^20; the refusals of mismatched lengths. On the simulator (and CUDA device 0 with
//! the `gpu` feature, where the sizes go up to 2^24).

use gpukernel_algorithms::{Algorithms, DeviceSortKey, SortKey};
use gpukernel_runtime::{Context, DeviceCopy, Error};

mod common;
use common::{devices, values};

/// A key type with its host order (the sort's documented order) and exact comparison.
trait Key: DeviceSortKey + DeviceCopy + std::fmt::Debug {
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering;
    fn same(a: &Self, b: &Self) -> bool;
    fn from_u64(v: u64) -> Self;
}

impl Key for u32 {
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}
impl Key for i32 {
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
    fn from_u64(v: u64) -> Self {
        v as i32
    }
}
impl Key for u64 {
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
    fn from_u64(v: u64) -> Self {
        v.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}
impl Key for f32 {
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.total_cmp(b)
    }
    fn same(a: &Self, b: &Self) -> bool {
        a.to_bits() == b.to_bits()
    }
    fn from_u64(v: u64) -> Self {
        // Every class of float: the bits themselves, so NaNs, infinities, zeros, subnormals.
        match v % 16 {
            0 => f32::NAN,
            1 => -f32::NAN,
            2 => f32::INFINITY,
            3 => f32::NEG_INFINITY,
            4 => 0.0,
            5 => -0.0,
            6 => f32::from_bits(1),
            _ => f32::from_bits((v >> 8) as u32),
        }
    }
}

/// The inputs of one size: random, all equal, sorted, reversed, few distinct keys.
fn inputs<K: Key>(n: usize, seed: u64) -> Vec<(&'static str, Vec<K>)> {
    let random: Vec<K> = values(n, seed, i64::MAX / 4, |v| K::from_u64(v as u64));
    let mut sorted = random.clone();
    sorted.sort_by(K::order);
    let reversed: Vec<K> = sorted.iter().rev().copied().collect();
    let few: Vec<K> = values(n, seed + 1, 3, |v| K::from_u64((v + 3) as u64 * 1_000_003));
    vec![
        ("random", random),
        ("all equal", vec![K::from_u64(12_345_678_901); n]),
        ("sorted", sorted),
        ("reversed", reversed),
        ("few distinct", few),
    ]
}

fn check_keys<K: Key>(ctx: &Context, algs: &Algorithms, dev: &str, n: usize, seed: u64) {
    let stream = ctx.default_stream();
    for (what, xs) in inputs::<K>(n, seed) {
        // Descending: the inputs whose order differs the most (the simulator is slow).
        let orders: &[bool] = match what {
            "random" | "few distinct" => &[false, true],
            _ => &[false],
        };
        for &descending in orders {
            let mut want = xs.clone();
            want.sort_by(K::order);
            if descending {
                want.sort_by(|a, b| K::order(b, a));
            }
            let x = stream.htod_copy(&xs).expect("copy in");
            let mut out = stream.alloc_zeros::<K>(n).expect("alloc");
            if descending {
                algs.sort_keys_descending(&stream, &x, &mut out)
            } else {
                algs.sort_keys(&stream, &x, &mut out)
            }
            .unwrap_or_else(|e| panic!("{dev}: sort of {n} {what}: {e}"));
            let got = out.to_host_vec().expect("copy out");
            let name = std::any::type_name::<K>();
            if let Some(i) = (0..n).find(|&i| !K::same(&got[i], &want[i])) {
                panic!(
                    "{dev}: sort_keys{} of {n} {what} {name}: element {i}: got {:?}, want {:?}",
                    if descending { "_descending" } else { "" },
                    got[i],
                    want[i]
                );
            }
            // The input is left as it was.
            assert!(
                x.to_host_vec()
                    .expect("input")
                    .iter()
                    .zip(&xs)
                    .all(|(a, b)| K::same(a, b)),
                "{dev}: the input changed"
            );
        }
    }
}

fn check_pairs<K: Key>(ctx: &Context, algs: &Algorithms, dev: &str, n: usize, seed: u64) {
    let stream = ctx.default_stream();
    for (what, xs) in inputs::<K>(n, seed) {
        for descending in [false, true] {
            // Stable: the values (the input positions) of equal keys stay in input order.
            let mut want: Vec<(K, u32)> = xs.iter().copied().zip(0..).collect();
            if descending {
                want.sort_by(|a, b| K::order(&b.0, &a.0));
            } else {
                want.sort_by(|a, b| K::order(&a.0, &b.0));
            }
            let x = stream.htod_copy(&xs).expect("copy in");
            let idx: Vec<u32> = (0..n as u32).collect();
            let v = stream.htod_copy(&idx).expect("copy in");
            let mut ko = stream.alloc_zeros::<K>(n).expect("alloc");
            let mut vo = stream.alloc_zeros::<u32>(n).expect("alloc");
            if descending {
                algs.sort_pairs_descending(&stream, &x, &v, &mut ko, &mut vo)
            } else {
                algs.sort_pairs(&stream, &x, &v, &mut ko, &mut vo)
            }
            .unwrap_or_else(|e| panic!("{dev}: sort_pairs of {n} {what}: {e}"));
            let (gk, gv) = (
                ko.to_host_vec().expect("keys"),
                vo.to_host_vec().expect("values"),
            );
            let name = std::any::type_name::<K>();
            if let Some(i) = (0..n).find(|&i| !K::same(&gk[i], &want[i].0) || gv[i] != want[i].1) {
                panic!(
                    "{dev}: sort_pairs{} of {n} {what} {name}: element {i}: got ({:?}, {}), want ({:?}, {})",
                    if descending { "_descending" } else { "" },
                    gk[i],
                    gv[i],
                    want[i].0,
                    want[i].1
                );
            }
        }
    }
}

/// 0, 1, a few, one tile, one tile and one, two tiles and a part (the tiles of 32-bit keys are
/// 7168 keys, those of 64-bit keys 4096).
fn sizes() -> Vec<usize> {
    let (t32, t64) = (u32::TILE, u64::TILE);
    vec![0, 1, 7, t64, t32, t32 + 1, 2 * t32 + 1000]
}

#[test]
fn sort_keys_matches_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        for (i, n) in sizes().into_iter().enumerate() {
            let seed = 100 + i as u64;
            check_keys::<u32>(&ctx, &algs, &dev, n, seed);
            check_keys::<i32>(&ctx, &algs, &dev, n, seed);
            check_keys::<f32>(&ctx, &algs, &dev, n, seed);
            check_keys::<u64>(&ctx, &algs, &dev, n, seed);
        }
    }
}

#[test]
fn sort_pairs_matches_the_host_stable_sort() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        // Fewer sizes than the keys: the simulator runs each kernel thread by thread.
        let t = u32::PAIRS_TILE;
        let sizes = [0, 1, t + 1, 2 * t + 1000];
        for (i, n) in sizes.into_iter().enumerate() {
            let seed = 200 + i as u64;
            check_pairs::<u32>(&ctx, &algs, &dev, n, seed);
            check_pairs::<i32>(&ctx, &algs, &dev, n, seed);
            check_pairs::<f32>(&ctx, &algs, &dev, n, seed);
            check_pairs::<u64>(&ctx, &algs, &dev, n, seed);
        }
    }
}

/// Above 2^20 keys (hundreds of tiles in flight, the look-back over many): u32 keys on every
/// device; on the GPU also u32 pairs and u64 keys, and 2^24 + 123 keys.
#[test]
fn sort_of_more_than_2_pow_20_keys() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        let mut ns = vec![(1usize << 20) + 4321];
        if dev != "simulator" {
            ns.push((1 << 24) + 123);
        }
        for n in ns {
            let xs: Vec<u32> = values(n, 7, i64::MAX / 4, |v| v as u32);
            let mut want = xs.clone();
            want.sort_unstable();
            let x = stream.htod_copy(&xs).expect("copy in");
            let mut out = stream.alloc_zeros::<u32>(n).expect("alloc");
            algs.sort_keys(&stream, &x, &mut out).expect("sort");
            assert!(
                out.to_host_vec().expect("out") == want,
                "{dev}: u32 sort of {n}"
            );
            if dev == "simulator" {
                continue;
            }

            let idx: Vec<u32> = (0..n as u32).collect();
            let v = stream.htod_copy(&idx).expect("copy in");
            let mut vo = stream.alloc_zeros::<u32>(n).expect("alloc");
            algs.sort_pairs(&stream, &x, &v, &mut out, &mut vo)
                .expect("pairs");
            let mut wantp: Vec<(u32, u32)> = xs.iter().copied().zip(0..).collect();
            wantp.sort_by_key(|p| p.0);
            let (gk, gv) = (out.to_host_vec().expect("k"), vo.to_host_vec().expect("v"));
            assert!(
                gk.iter()
                    .zip(&gv)
                    .map(|(&a, &b)| (a, b))
                    .eq(wantp.iter().copied()),
                "{dev}: u32 pairs of {n}"
            );

            let xs: Vec<u64> = values(n, 9, i64::MAX / 4, |v| u64::from_u64(v as u64));
            let mut want = xs.clone();
            want.sort_unstable();
            let x = stream.htod_copy(&xs).expect("copy in");
            let mut out = stream.alloc_zeros::<u64>(n).expect("alloc");
            algs.sort_keys(&stream, &x, &mut out).expect("sort");
            assert!(
                out.to_host_vec().expect("out") == want,
                "{dev}: u64 sort of {n}"
            );
        }
    }
}

#[test]
fn sort_refuses_mismatched_lengths() {
    let (_, ctx) = devices().remove(0);
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[3u32, 1, 2]).expect("copy in");
    let mut short = stream.alloc_zeros::<u32>(2).expect("alloc");
    match algs.sort_keys(&stream, &x, &mut short) {
        Err(Error::LengthMismatch {
            operation,
            destination: 2,
            source_len: 3,
        }) => assert!(operation.contains("sort_keys"), "{operation}"),
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let v = stream.htod_copy(&[0u32, 1]).expect("copy in");
    let mut ko = stream.alloc_zeros::<u32>(3).expect("alloc");
    let mut vo = stream.alloc_zeros::<u32>(3).expect("alloc");
    match algs.sort_pairs(&stream, &x, &v, &mut ko, &mut vo) {
        Err(Error::LengthMismatch { operation, .. }) => {
            assert!(operation.contains("values"), "{operation}")
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let v = stream.htod_copy(&[0u32, 1, 2]).expect("copy in");
    match algs.sort_pairs(&stream, &x, &v, &mut ko, &mut short) {
        Err(Error::LengthMismatch { operation, .. }) => {
            assert!(operation.contains("sort_pairs"), "{operation}")
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    // Nothing was written by the refused calls.
    assert_eq!(ko.to_host_vec().expect("k"), [0, 0, 0]);
}

/// Every tuning variant of the u32 keys-only pass (`Algorithms::sort_keys_u32_tuned`: the
/// former block rank, the counts-early pass in other shapes, with `match.any`, with the
/// look-back before the ranks) and of the u32 pairs' pass (`sort_pairs_u32_tuned`) sorts like
/// the host: several whole tiles and a partial one.
#[test]
fn sort_tuning_variants_match_the_host() {
    let variants = gpukernel_algorithms_kernels::sort::SORT_TUNING.len() as u32;
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        let n = 3 * u32::TILE + 1000;
        let xs: Vec<u32> = values(n, 11, i64::MAX / 4, |v| v as u32);
        let mut want = xs.clone();
        want.sort_unstable();
        let x = stream.htod_copy(&xs).expect("copy in");
        let mut out = stream.alloc_zeros::<u32>(n).expect("alloc");
        for v in 0..=variants {
            algs.sort_keys_u32_tuned(
                &stream,
                x.slice(..).expect("view"),
                out.slice_mut(..).expect("view"),
                v,
            )
            .expect("sort");
            assert!(
                out.to_host_vec().expect("out") == want,
                "{dev}: u32 sort of {n}, tuning variant {v}"
            );
        }
        // The pairs' pass in its other shapes (stable: the values in input order).
        let idx: Vec<u32> = (0..n as u32).collect();
        let vals = stream.htod_copy(&idx).expect("copy in");
        let mut wantp: Vec<(u32, u32)> = xs.iter().copied().zip(0..).collect();
        wantp.sort_by_key(|p| p.0);
        let mut vo = stream.alloc_zeros::<u32>(n).expect("alloc");
        for v in 0..=gpukernel_algorithms_kernels::sort::SORT_PAIRS_TUNING.len() as u32 {
            algs.sort_pairs_u32_tuned(
                &stream,
                (x.slice(..).expect("view"), vals.slice(..).expect("view")),
                (
                    out.slice_mut(..).expect("view"),
                    vo.slice_mut(..).expect("view"),
                ),
                v,
            )
            .expect("pairs");
            let (k, vv) = (out.to_host_vec().expect("k"), vo.to_host_vec().expect("v"));
            assert!(
                k.into_iter().zip(vv).eq(wantp.iter().copied()),
                "{dev}: u32 pairs of {n}, tuning variant {v}"
            );
        }
    }
}
