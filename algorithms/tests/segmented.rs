//! The segmented reduce (CUB's `DeviceSegmentedReduce` semantics: an empty segment gives the
//! identity) and the reduce by rows, against the host: empty segments, one huge segment, many
//! tiny ones, misaligned views, and the errors of bad shapes and offsets.

use gpukernel_algorithms::{Algorithms, DeviceSegmentedOp, Identity, Item, Max, Min, Sum};
use gpukernel_runtime::{Context, DeviceCopy, Error};

mod common;
use common::{devices, values};

/// The host's reduction of each segment, in order.
fn host<T: Copy, Op: Identity<T>>(xs: &[T], offsets: &[u32], op: Op) -> Vec<T> {
    offsets
        .windows(2)
        .map(|w| {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            if hi <= lo {
                op.identity()
            } else {
                xs[lo..hi]
                    .iter()
                    .fold(op.identity(), |a, &b| op.combine(a, b))
            }
        })
        .collect()
}

fn check<T, Op>(ctx: &Context, algs: &Algorithms, what: &str, xs: &[T], offsets: &[u32], op: Op)
where
    T: Item + DeviceCopy + PartialEq + std::fmt::Debug,
    Op: DeviceSegmentedOp<T>,
{
    let stream = ctx.default_stream();
    // One element in: the input misaligned for the 16-byte loads.
    let mut padded = vec![op.identity()];
    padded.extend_from_slice(xs);
    let x = stream.htod_copy(&padded).expect("copy in");
    let o = stream.htod_copy(offsets).expect("copy offsets");
    for skip in [0usize, 1] {
        let input = if skip == 1 {
            x.slice(1..).expect("view")
        } else {
            x.slice(..xs.len()).expect("view")
        };
        let src = if skip == 1 { xs } else { &padded[..xs.len()] };
        let want = host(src, offsets, op);
        let mut out = stream
            .alloc_zeros::<T>(offsets.len().saturating_sub(1))
            .expect("alloc");
        algs.segmented_reduce(&stream, input, &o, op, &mut out)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = out.to_host_vec().expect("copy out");
        if let Some(s) = (0..want.len()).find(|&s| got[s] != want[s]) {
            panic!(
                "{what} (skip {skip}): segment {s} ({}..{}): got {:?}, want {:?}",
                offsets[s],
                offsets[s + 1],
                got[s],
                want[s]
            );
        }
    }
}

/// Offsets of `count` segments with lengths from `len(i)`.
fn offsets_of(count: usize, len: impl Fn(usize) -> usize) -> Vec<u32> {
    let mut o = vec![0u32];
    for i in 0..count {
        let last = *o.last().expect("one offset");
        o.push(last + len(i) as u32);
    }
    o
}

#[test]
fn segments_match_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        // Many tiny segments, every fourth empty (the warp-per-segment path).
        let tiny = offsets_of(3000, |i| if i % 4 == 0 { 0 } else { i % 7 });
        let n = *tiny.last().expect("offsets") as usize;
        let xi = values(n, 3, 1000, |v| v * 1_000_003);
        check(
            &ctx,
            &algs,
            &format!("{dev}: tiny i64 sum"),
            &xi,
            &tiny,
            Sum,
        );
        check(
            &ctx,
            &algs,
            &format!("{dev}: tiny i64 min"),
            &xi,
            &tiny,
            Min,
        );
        let xf = values(n, 4, 100, |v| v as f32);
        check(
            &ctx,
            &algs,
            &format!("{dev}: tiny f32 max"),
            &xf,
            &tiny,
            Max,
        );
        // One huge segment between empty ones (the block-per-segment path).
        let n = 200_003;
        let huge = vec![0u32, 0, n as u32, n as u32];
        let xu = values(n, 5, 1000, |v| (v + 1000) as u32 * 4001);
        check(
            &ctx,
            &algs,
            &format!("{dev}: huge u32 sum"),
            &xu,
            &huge,
            Sum,
        );
        let xd = values(n, 6, 1000, |v| v as f64);
        check(
            &ctx,
            &algs,
            &format!("{dev}: huge f64 max"),
            &xd,
            &huge,
            Max,
        );
        // Mixed lengths around the vector and unit sizes, and a segment that ends before it
        // begins (empty, as in CUB).
        let mut mixed = offsets_of(40, |i| [0, 1, 3, 4, 5, 127, 128, 129, 1000, 5000][i % 10]);
        mixed.insert(5, mixed[4] + 2);
        mixed[5] = mixed[4].saturating_sub(1);
        let n = *mixed.iter().max().expect("offsets") as usize;
        let xi = values(n, 7, 1 << 20, |v| v as i32);
        check(
            &ctx,
            &algs,
            &format!("{dev}: mixed i32 sum"),
            &xi,
            &mixed,
            Sum,
        );
        let xu = values(n, 8, 1 << 20, |v| (v + (1 << 20)) as u64);
        check(
            &ctx,
            &algs,
            &format!("{dev}: mixed u64 min"),
            &xu,
            &mixed,
            Min,
        );
    }
}

#[test]
fn rows_match_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        for (rows, cols) in [
            (0usize, 5usize),
            (3, 0),
            (1, 1),
            (7, 33),
            (300, 5),
            (2, 40_000),
        ] {
            let xs = values(rows * cols, 9, 1000, |v| v as f32);
            let x = stream.htod_copy(&xs).expect("copy in");
            let mut out = stream.alloc_zeros::<f32>(rows).expect("alloc");
            algs.reduce_rows(&stream, &x, cols, Sum, &mut out)
                .unwrap_or_else(|e| panic!("{dev}: rows {rows}×{cols}: {e}"));
            let want: Vec<f32> = (0..rows)
                .map(|r| xs[r * cols..(r + 1) * cols].iter().sum())
                .collect();
            assert_eq!(
                out.to_host_vec().expect("copy out"),
                want,
                "{dev}: {rows}×{cols}"
            );
        }
    }
}

#[test]
fn bad_shapes_and_offsets_are_errors() {
    let ctx = gpukernel_runtime::Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1u32, 2, 3, 4, 5, 6]).expect("copy in");
    let mut out = stream.alloc_zeros::<u32>(2).expect("alloc");
    // Three offsets for two segments: fine; four: the output is one short.
    let o = stream.htod_copy(&[0u32, 2, 6, 6]).expect("copy");
    match algs.segmented_reduce(&stream, &x, &o, Sum, &mut out) {
        Err(Error::LengthMismatch { operation, .. }) => assert!(operation.contains("segment")),
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let none = stream.alloc_zeros::<u32>(0).expect("alloc");
    assert!(matches!(
        algs.segmented_reduce(&stream, &x, &none, Sum, &mut out),
        Err(Error::LengthMismatch { .. })
    ));
    // Rows that do not tile the input; an output of another row count.
    assert!(matches!(
        algs.reduce_rows(&stream, &x, 4, Sum, &mut out),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        algs.reduce_rows(&stream, &x, 2, Sum, &mut out),
        Err(Error::LengthMismatch { .. })
    ));
    // An offset past the input's end: the launch fails, nothing reads past the buffer.
    let bad = stream.htod_copy(&[0u32, 2, 7]).expect("copy");
    let r = algs
        .segmented_reduce(&stream, &x, &bad, Sum, &mut out)
        .and_then(|()| stream.synchronize());
    assert!(
        r.is_err(),
        "an offset past the end must fail the launch: {r:?}"
    );
}
