//! The device-wide reduce against the host, for every element type and operator, at odd
//! sizes and misaligned views, on the simulator (and CUDA device 0 with the `gpu` feature).

use gpukernel_algorithms::{Algorithms, DeviceReduceOp, Item, Max, Min, Sum};
use gpukernel_runtime::{Context, Device, DeviceCopy, Error};

mod common;
use common::{devices, values};

fn check<T, Op>(ctx: &Context, algs: &Algorithms, dev: &str, xs: &[T], op: Op, want: T)
where
    T: Item + DeviceCopy + PartialEq + std::fmt::Debug,
    Op: DeviceReduceOp<T> + std::fmt::Debug,
{
    let stream = ctx.default_stream();
    let x = stream.htod_copy(xs).expect("copy in");
    // The whole buffer, and views starting 1..3 elements in (misaligned for 16-byte loads).
    for skip in 0..3.min(xs.len() + 1) {
        let view = x.slice(skip..).expect("view");
        let want = if skip == 0 {
            want
        } else {
            xs[skip..]
                .iter()
                .fold(op.identity(), |a, &b| op.combine(a, b))
        };
        let got = algs.reduce_to_host(&stream, view, op).expect("reduce");
        assert_eq!(
            got,
            want,
            "{dev}: {op:?} of {} {} (from element {skip})",
            xs.len() - skip,
            std::any::type_name::<T>()
        );
    }
}

fn all_ops<T>(ctx: &Context, algs: &Algorithms, dev: &str, xs: &[T])
where
    T: Item + DeviceCopy + PartialEq + std::fmt::Debug,
    Sum: DeviceReduceOp<T>,
    Min: DeviceReduceOp<T>,
    Max: DeviceReduceOp<T>,
{
    for (op_name, want) in [
        (
            "sum",
            xs.iter().fold(Sum.identity(), |a, &b| Sum.combine(a, b)),
        ),
        (
            "min",
            xs.iter().fold(Min.identity(), |a, &b| Min.combine(a, b)),
        ),
        (
            "max",
            xs.iter().fold(Max.identity(), |a, &b| Max.combine(a, b)),
        ),
    ] {
        match op_name {
            "sum" => check(ctx, algs, dev, xs, Sum, want),
            "min" => check(ctx, algs, dev, xs, Min, want),
            _ => check(ctx, algs, dev, xs, Max, want),
        }
    }
}

use gpukernel_algorithms::{Identity, ReduceOp};

/// Sizes around the kernels' boundaries: empty, one element, less than a vector, a block's
/// tile (256 threads × 4 vectors), several tiles plus odd tails, more than one grid pass.
const SIZES: &[usize] = &[0, 1, 3, 7, 255, 1024 * 4 + 5, 16_411, 70_001];

#[test]
fn reduce_every_type_and_operator_matches_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        for (i, &n) in SIZES.iter().enumerate() {
            let seed = 7 + i as u64;
            // Integer-valued floats: every order of summation gives the same exact sum.
            all_ops(&ctx, &algs, &dev, &values(n, seed, 1000, |v| v as f32));
            all_ops(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 1000, |v| v as f64 * 0.5),
            );
            all_ops(&ctx, &algs, &dev, &values(n, seed, 1000, |v| v as i32));
            all_ops(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 1000, |v| {
                    ((v + 1000) as u32).wrapping_mul(4_000_000)
                }),
            );
            all_ops(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 1000, |v| v * 1_000_000_007),
            );
            all_ops(
                &ctx,
                &algs,
                &dev,
                &values(n, seed, 1000, |v| {
                    ((v + 1000) as u64).wrapping_mul(3_000_000_000_000_000)
                }),
            );
        }
    }
}

#[test]
fn reduce_writes_only_the_first_element_of_the_output() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        let x = stream.htod_copy(&[2u32, 5, 1]).expect("copy in");
        let mut out = stream.htod_copy(&[9u32; 4]).expect("copy in");
        algs.reduce(&stream, &x, Max, out.slice_mut(1..).expect("view"))
            .expect("reduce");
        assert_eq!(out.to_host_vec().expect("copy out"), [9, 5, 9, 9], "{dev}");
    }
}

#[test]
fn reduce_refuses_an_empty_output() {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1.0f32]).expect("copy in");
    let mut out = stream.alloc_zeros::<f32>(0).expect("alloc");
    match algs.reduce(&stream, &x, Sum, &mut out) {
        Err(Error::LengthMismatch { operation, .. }) => {
            assert!(operation.contains("Algorithms::reduce"), "{operation}")
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
}

/// The second pass reads four partials per thread before combining them: with more partials
/// than four per thread (1100 for 256 threads: two rounds, the second partial), every one is
/// combined once. The values are small integers, so any order of addition is exact.
#[test]
fn the_second_pass_combines_every_partial_of_a_large_first_pass() {
    let n = 5000;
    let xs: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let want: f32 = xs.iter().sum();
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("algorithms");
        let stream = ctx.default_stream();
        let x = stream.htod_copy(&xs).expect("copy in");
        let mut out = stream.alloc_zeros::<f32>(1).expect("out");
        // Partials allocated by the caller: the default count, and 1100 (most blocks past
        // the input write the identity).
        for blocks in [algs.reduce_partials::<f32>(n), 1100] {
            let mut partials = stream.alloc_zeros::<f32>(blocks).expect("partials");
            algs.sum_f32_stages(&stream, &x, &mut partials, &mut out, true)
                .expect("both passes");
            assert_eq!(
                out.to_host_vec().expect("out")[0],
                want,
                "{dev}: {blocks} partials"
            );
            let parts = partials.to_host_vec().expect("partials");
            assert_eq!(parts.iter().sum::<f32>(), want, "{dev}: {blocks} partials");
        }
    }
}
