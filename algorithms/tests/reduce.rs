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

/// The one-launch reduce's last block gathers up to four partials per thread per round: grids
/// of one block, of fewer and more blocks than its 256 threads, and of more than four per
/// thread (1100: two rounds) each give the exact sum (blocks past the input add zero). The
/// values are small integers, so any order of addition is exact.
#[test]
fn the_last_block_combines_every_partial_of_any_grid() {
    let n = 5000;
    let xs: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let want: f32 = xs.iter().sum();
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("algorithms");
        let stream = ctx.default_stream();
        let x = stream.htod_copy(&xs).expect("copy in");
        let mut out = stream.alloc_zeros::<f32>(1).expect("out");
        for blocks in [1, 2, 255, 256, 257, 1024, 1025, 1100] {
            algs.sum_f32_grid(&stream, &x, &mut out, blocks)
                .expect("one launch");
            assert_eq!(
                out.to_host_vec().expect("out")[0],
                want,
                "{dev}: {blocks} blocks"
            );
        }
        // Back to the default grid, on the grown scratch.
        assert_eq!(algs.reduce_to_host(&stream, &x, Sum).expect("reduce"), want);
    }
}

/// Inputs longer than one grid's worth (each block loops over several tiles), for every type,
/// whatever the number of SMs (the default grid is asked for).
#[test]
fn reduce_inputs_longer_than_one_grid() {
    fn one<T>(ctx: &Context, algs: &Algorithms, dev: &str, f: impl Fn(i64) -> T)
    where
        T: Item + DeviceCopy + PartialEq + std::fmt::Debug,
        Sum: DeviceReduceOp<T>,
        Min: DeviceReduceOp<T>,
        Max: DeviceReduceOp<T>,
    {
        let grid = algs.reduce_partials::<T>(usize::MAX);
        // A tile is 4096 32-bit or 2048 64-bit elements: at least two tiles per block, and an
        // odd tail.
        let n = grid * 2 * 4096 + 13;
        all_ops(ctx, algs, dev, &values(n, 99, 1000, f));
    }
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        one(&ctx, &algs, &dev, |v| v as f32);
        one(&ctx, &algs, &dev, |v| v as f64);
        one(&ctx, &algs, &dev, |v| v as i32);
        one(&ctx, &algs, &dev, |v| (v + 1000) as u32);
        one(&ctx, &algs, &dev, |v| v * 1_000_000_007);
        one(&ctx, &algs, &dev, |v| (v + 1000) as u64);
    }
}

/// Reduces of different types and operators back to back on one stream, with no
/// synchronization between them, share the `Algorithms`' scratch: each gives its own result
/// (the ticket is back to zero after each launch, and a grown scratch keeps working).
#[test]
fn back_to_back_reduces_on_one_stream() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.new_stream().expect("stream");
        let n = 70_001;
        let xf = values(n, 3, 1000, |v| v as f32);
        let xd = values(n, 4, 1000, |v| v as f64);
        let xu = values(n, 5, 1000, |v| (v + 1000) as u32);
        let (df, dd, du) = (
            stream.htod_copy(&xf).expect("copy"),
            stream.htod_copy(&xd).expect("copy"),
            stream.htod_copy(&xu).expect("copy"),
        );
        let mut of: Vec<_> = (0..4)
            .map(|_| stream.alloc_zeros::<f32>(1).expect("alloc"))
            .collect();
        let mut od = stream.alloc_zeros::<f64>(1).expect("alloc");
        let mut ou = stream.alloc_zeros::<u32>(2).expect("alloc");
        algs.reduce(&stream, &df, Sum, &mut of[0]).expect("reduce");
        algs.reduce(&stream, &dd, Min, &mut od).expect("reduce");
        algs.reduce(&stream, &du, Max, ou.slice_mut(0..1).expect("view"))
            .expect("reduce");
        // More blocks than the scratch was made for: it grows, stream-ordered.
        algs.sum_f32_grid(&stream, &df, &mut of[1], 3000)
            .expect("reduce");
        algs.reduce(&stream, df.slice(1..).expect("view"), Sum, &mut of[2])
            .expect("reduce");
        algs.reduce(&stream, &du, Sum, ou.slice_mut(1..2).expect("view"))
            .expect("reduce");
        algs.reduce(&stream, &df, Max, &mut of[3]).expect("reduce");
        let sum = |x: &[f32]| x.iter().sum::<f32>();
        let got: Vec<f32> = of
            .iter()
            .map(|o| o.to_host_vec().expect("out")[0])
            .collect();
        let maxf = xf.iter().copied().fold(f32::MIN, f32::max);
        assert_eq!(got, [sum(&xf), sum(&xf), sum(&xf[1..]), maxf], "{dev}");
        let mind = xd.iter().copied().fold(f64::MAX, f64::min);
        assert_eq!(od.to_host_vec().expect("out"), [mind], "{dev}");
        let maxu = *xu.iter().max().expect("not empty");
        let sumu = xu.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(ou.to_host_vec().expect("out"), [maxu, sumu], "{dev}");
    }
}

/// One `Algorithms` on two streams: calls alternating between them with no synchronization,
/// and two host threads reducing at the same time on a stream each. The runtime orders the
/// scratch's uses like any buffer's, so every call gives its own result.
#[test]
fn reduces_on_two_streams_share_one_algorithms() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let (s1, s2) = (
            ctx.new_stream().expect("stream"),
            ctx.new_stream().expect("stream"),
        );
        let inputs: Vec<Vec<i64>> = (0..6)
            .map(|i| values(50_000 + 999 * i, 11 + i as u64, 1_000_000, |v| v))
            .collect();
        let bufs: Vec<_> = inputs
            .iter()
            .map(|x| s1.htod_copy(x).expect("copy"))
            .collect();
        s1.synchronize().expect("copies");
        let mut outs: Vec<_> = (0..6)
            .map(|_| s1.alloc_zeros::<i64>(1).expect("alloc"))
            .collect();
        s1.synchronize().expect("zeroed");
        for (i, (x, o)) in bufs.iter().zip(outs.iter_mut()).enumerate() {
            let s = if i % 2 == 0 { &s1 } else { &s2 };
            algs.reduce(s, x, Sum, o).expect("reduce");
        }
        for (i, (x, o)) in inputs.iter().zip(&outs).enumerate() {
            assert_eq!(
                o.to_host_vec().expect("out"),
                [x.iter().sum::<i64>()],
                "{dev}: call {i} on stream {}",
                1 + i % 2
            );
        }
        // Two host threads, a stream each, 20 reduces each.
        std::thread::scope(|sc| {
            for (t, s) in [&s1, &s2].into_iter().enumerate() {
                let (algs, inputs, bufs, dev) = (&algs, &inputs, &bufs, &dev);
                sc.spawn(move || {
                    let mut out = s.alloc_zeros::<i64>(1).expect("alloc");
                    for r in 0..20 {
                        let i = (t + 2 * r) % inputs.len();
                        let got = {
                            algs.reduce(s, &bufs[i], Sum, &mut out).expect("reduce");
                            out.to_host_vec().expect("out")[0]
                        };
                        assert_eq!(got, inputs[i].iter().sum::<i64>(), "{dev}: thread {t}");
                    }
                });
            }
        });
    }
}

/// The benchmark's tuning shapes of the f32 sum (loads in flight, blocks per SM) are exact at
/// every size class, including views that start off a 16-byte boundary and inputs of several
/// tiles per block.
#[test]
fn every_tuning_shape_of_the_f32_sum_is_exact() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        let grid = algs.reduce_partials::<f32>(usize::MAX);
        let big = grid * 3 * 4096 + 4099;
        let xs = values(big, 5, 1000, |v| v as f32);
        let x = stream.htod_copy(&xs).expect("copy in");
        let mut out = stream.alloc_zeros::<f32>(1).expect("out");
        for vecs in [2, 4, 8] {
            for bps in [1u32, 3, 4] {
                for (lo, hi) in [(0, 0), (0, 1), (1, 8), (0, 4101), (3, 70_001), (1, big)] {
                    let view = x.slice(lo..hi).expect("view");
                    algs.sum_f32_tuned(&stream, view, &mut out, bps, vecs)
                        .expect("sum");
                    assert_eq!(
                        out.to_host_vec().expect("out")[0],
                        xs[lo..hi].iter().sum::<f32>(),
                        "{dev}: vecs {vecs} blocks/SM {bps}, elements {lo}..{hi}"
                    );
                }
            }
        }
    }
}
