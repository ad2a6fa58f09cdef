//! The general histogram (even bins, CUB's `HistogramEven`) against the host, for f32, f64,
//! i32 and u32 samples: edge samples (the lower level counts, the upper does not, NaN
//! nowhere), bins in shared memory and more bins than fit there, and the refused levels.

use gpukernel_algorithms::{Algorithms, HistogramSample};
use gpukernel_runtime::{Context, DeviceCopy, Error};

mod common;
use common::{devices, values};

#[allow(clippy::too_many_arguments)]
fn check<T>(
    ctx: &Context,
    algs: &Algorithms,
    what: &str,
    xs: &[T],
    lower: T,
    upper: T,
    bins: usize,
    bin: impl Fn(T) -> Option<usize>,
) where
    T: HistogramSample + DeviceCopy,
{
    let stream = ctx.default_stream();
    let x = stream.htod_copy(xs).expect("copy in");
    let mut want = vec![0u32; bins];
    for &s in xs {
        if let Some(b) = bin(s) {
            want[b] += 1;
        }
    }
    for skip in [0usize, 1] {
        if skip > xs.len() {
            continue;
        }
        let mut w = want.clone();
        if skip == 1
            && let Some(b) = bin(xs[0])
        {
            w[b] -= 1;
        }
        // Bins already counted into: the call zeroes them first.
        let mut out = stream.htod_copy(&vec![7u32; bins]).expect("alloc");
        algs.histogram_even(
            &stream,
            x.slice(skip..).expect("view"),
            lower,
            upper,
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            out.to_host_vec().expect("copy out"),
            w,
            "{what} (skip {skip})"
        );
    }
}

#[test]
fn histograms_match_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        for (n, bins) in [
            (0usize, 1usize),
            (1, 3),
            (1000, 10),
            (100_003, 256),
            (50_001, 3000),
        ] {
            // f32 in [-1.25, 1.25) with the levels [-1, 1): samples outside on both sides,
            // the edges themselves and NaNs.
            let mut xf = values(n, 21, 1 << 20, |v| v as f32 / (1 << 20) as f32 * 1.25);
            for (i, e) in [-1.0f32, 1.0, f32::NAN, -1.0 + 1e-7, 1.0 - 1e-7]
                .iter()
                .enumerate()
            {
                let len = xf.len();
                if i < len {
                    xf[i * 7 % len] = *e;
                }
            }
            let (lo, hi) = (-1.0f32, 1.0f32);
            let r = bins as f32 / (hi - lo);
            check(
                &ctx,
                &algs,
                &format!("{dev}: f32 {n} into {bins}"),
                &xf,
                lo,
                hi,
                bins,
                |s| (s >= lo && s < hi).then(|| (((s - lo) * r) as usize).min(bins - 1)),
            );
            let xd: Vec<f64> = xf.iter().map(|&v| v as f64 * 3.0).collect();
            let (lo, hi) = (-2.5f64, 3.5f64);
            let r = bins as f64 / (hi - lo);
            check(
                &ctx,
                &algs,
                &format!("{dev}: f64 {n} into {bins}"),
                &xd,
                lo,
                hi,
                bins,
                |s| (s >= lo && s < hi).then(|| (((s - lo) * r) as usize).min(bins - 1)),
            );
            let xi = values(n, 22, 1 << 30, |v| v as i32);
            let (lo, hi) = (-(1i32 << 29), 1i32 << 30);
            let range = (hi as i64 - lo as i64) as u64;
            check(
                &ctx,
                &algs,
                &format!("{dev}: i32 {n} into {bins}"),
                &xi,
                lo,
                hi,
                bins,
                |s| {
                    (s >= lo && s < hi)
                        .then(|| ((s as i64 - lo as i64) as u64 * bins as u64 / range) as usize)
                },
            );
            let xu = values(n, 23, 1 << 30, |v| (v + (1 << 30)) as u32 * 2);
            let (lo, hi) = (5u32, u32::MAX);
            let range = (hi - lo) as u64;
            check(
                &ctx,
                &algs,
                &format!("{dev}: u32 {n} into {bins}"),
                &xu,
                lo,
                hi,
                bins,
                |s| (s >= lo && s < hi).then(|| ((s - lo) as u64 * bins as u64 / range) as usize),
            );
        }
    }
}

#[test]
fn bad_levels_and_bins_are_errors() {
    let ctx = gpukernel_runtime::Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1.0f32, 2.0]).expect("copy in");
    let mut bins = stream.alloc_zeros::<u32>(4).expect("alloc");
    for (lo, hi) in [(1.0f32, 1.0f32), (2.0, 1.0), (f32::NAN, 1.0)] {
        match algs.histogram_even(&stream, &x, lo, hi, &mut bins) {
            Err(Error::InvalidArgument { argument, .. }) => assert_eq!(argument, "lower, upper"),
            other => panic!("levels {lo}..{hi}: expected InvalidArgument, got {other:?}"),
        }
    }
    let mut none = stream.alloc_zeros::<u32>(0).expect("alloc");
    match algs.histogram_even(&stream, &x, 0.0, 1.0, &mut none) {
        Err(Error::InvalidArgument { argument, .. }) => assert_eq!(argument, "bins"),
        other => panic!("no bins: expected InvalidArgument, got {other:?}"),
    }
}
