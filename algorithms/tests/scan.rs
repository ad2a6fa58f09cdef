//! The device-wide scans (one pass, decoupled look-back) against the host, for every element
//! type, at sizes around the tile (3072 32-bit or 1536 64-bit elements) and past 500 tiles, with misaligned views (the per-element
//! path), on the simulator (and CUDA device 0 with the `gpu` feature).

use gpukernel_algorithms::{Algorithms, DeviceScanOp, Item, Sum};
use gpukernel_runtime::{Context, Device, DeviceCopy, Error};

mod common;
use common::{devices, values};

fn check<T>(ctx: &Context, algs: &Algorithms, dev: &str, xs: &[T])
where
    T: Item + DeviceCopy + PartialEq + std::fmt::Debug,
    Sum: DeviceScanOp<T>,
{
    use gpukernel_algorithms::{Identity, ReduceOp};
    let stream = ctx.default_stream();
    let x = stream.htod_copy(xs).expect("copy in");
    for skip in [0usize, 1] {
        if skip > xs.len() {
            continue;
        }
        let src = &xs[skip..];
        let mut incl = Vec::with_capacity(src.len());
        let mut excl = Vec::with_capacity(src.len());
        let mut acc: T = Sum.identity();
        for &v in src {
            excl.push(acc);
            acc = Sum.combine(acc, v);
            incl.push(acc);
        }
        let view = x.slice(skip..).expect("view");
        let mut out = stream.alloc_zeros::<T>(src.len() + 1).expect("alloc");
        // Into a view starting one element in: the output misaligned as well.
        algs.inclusive_scan(&stream, view, Sum, out.slice_mut(1..).expect("view"))
            .expect("inclusive scan");
        let got = out.to_host_vec().expect("copy out");
        let what = format!(
            "{dev}: scan of {} {} from {skip}",
            src.len(),
            std::any::type_name::<T>()
        );
        if let Some(i) = (0..src.len()).find(|&i| got[i + 1] != incl[i]) {
            panic!(
                "{what}: inclusive element {i}: got {:?}, want {:?}",
                got[i + 1],
                incl[i]
            );
        }
        let mut out = stream.alloc_zeros::<T>(src.len()).expect("alloc");
        algs.exclusive_scan(&stream, view, Sum, &mut out)
            .expect("exclusive scan");
        let got = out.to_host_vec().expect("copy out");
        if let Some(i) = (0..src.len()).find(|&i| got[i] != excl[i]) {
            panic!(
                "{what}: exclusive element {i}: got {:?}, want {:?}",
                got[i], excl[i]
            );
        }
    }
}

const SIZES: &[usize] = &[
    0,
    1,
    5,
    1535,
    1536,
    1537,
    3071,
    3072,
    3073,
    3 * 3072 + 1000,
    40 * 3072 + 17,
];

#[test]
fn scans_match_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        for (i, &n) in SIZES.iter().enumerate() {
            let seed = 11 + i as u64;
            check(&ctx, &algs, &dev, &values(n, seed, 10, |v| v as f32));
            check(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 10, |v| v as i32 * 100_003),
            );
            check(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 10, |v| ((v + 10) as u32).wrapping_mul(300_000_007)),
            );
            check(&ctx, &algs, &dev, &values(n, seed, 10, |v| v as f64 * 0.5));
            check(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 10, |v| v * 1_000_000_000_007),
            );
            check(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 10, |v| {
                    (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                }),
            );
        }
    }
}

/// More than 500 tiles: warp 0 sleeps before its look-back (one packed and one three-word
/// status type).
#[test]
fn long_scans_match_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let n = 501 * 3072 + 3;
        check(&ctx, &algs, &dev, &values(n, 5, 10, |v| v as u32));
        check(&ctx, &algs, &dev, &values(n, 6, 10, |v| v as u64));
    }
}

#[test]
fn scan_refuses_an_output_of_another_length() {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1u32, 2, 3]).expect("copy in");
    let mut out = stream.alloc_zeros::<u32>(2).expect("alloc");
    match algs.inclusive_scan(&stream, &x, Sum, &mut out) {
        Err(Error::LengthMismatch {
            destination: 2,
            source_len: 3,
            operation,
        }) => {
            assert!(operation.contains("scan"), "{operation}")
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
}
