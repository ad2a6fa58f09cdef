//! The device-wide reduce and scans of a user's operator, instantiated in the user's own
//! kernels crate (`gpukernel-algorithms-example-op`) by `device_algorithms!`: two associative
//! operators that are not commutative (2×2 matrix product modulo 2^16, (first, last) pairs),
//! against sequential host folds, at sizes around the scan tile (1536 64-bit elements), the
//! reduce's units and misaligned.

use gpukernel_algorithms::{Algorithms, Identity, ReduceOp, UserKernels, UserOp};
use gpukernel_algorithms_example_op::{
    FirstLast, FirstLastAlgorithms, MatMul2, MatMul2Algorithms, PTX,
};
use gpukernel_runtime::Context;

mod common;
use common::{devices, values};

fn check<U: UserOp<T = u64>, Op: Identity<u64>>(
    ctx: &Context,
    algs: &Algorithms,
    what: &str,
    xs: &[u64],
    op: Op,
) {
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(PTX.as_bytes())
        .expect("load the user's module");
    let kernels = UserKernels::<U>::load(&module).expect("the user's kernels");
    let x = stream.htod_copy(xs).expect("copy in");
    for skip in [0usize, 1] {
        if skip > xs.len() {
            continue;
        }
        let src = &xs[skip..];
        let view = x.slice(skip..).expect("view");
        let mut acc = op.identity();
        let (mut incl, mut excl) = (Vec::new(), Vec::new());
        for &v in src {
            excl.push(acc);
            acc = op.combine(acc, v);
            incl.push(acc);
        }
        let mut out = stream.alloc_zeros::<u64>(1).expect("alloc");
        algs.reduce_user(&stream, &kernels, view, &mut out)
            .expect("reduce");
        assert_eq!(
            out.to_host_vec().expect("copy out")[0],
            acc,
            "{what}: reduce of {} from {skip}",
            src.len()
        );
        let mut y = stream.alloc_zeros::<u64>(src.len()).expect("alloc");
        algs.inclusive_scan_user(&stream, &kernels, view, &mut y)
            .expect("scan");
        let got = y.to_host_vec().expect("copy out");
        if let Some(i) = (0..src.len()).find(|&i| got[i] != incl[i]) {
            panic!(
                "{what}: inclusive scan of {} from {skip}: element {i}: got {:#x}, want {:#x}",
                src.len(),
                got[i],
                incl[i]
            );
        }
        algs.exclusive_scan_user(&stream, &kernels, view, &mut y)
            .expect("scan");
        let got = y.to_host_vec().expect("copy out");
        if let Some(i) = (0..src.len()).find(|&i| got[i] != excl[i]) {
            panic!(
                "{what}: exclusive scan of {} from {skip}: element {i}: got {:#x}, want {:#x}",
                src.len(),
                got[i],
                excl[i]
            );
        }
    }
}

const SIZES: &[usize] = &[
    0,
    1,
    2,
    63,
    64,
    65,
    1535,
    1536,
    1537,
    5000,
    3 * 1536 + 77,
    200_001,
];

/// Random shears `[[1, k], [0, 1]]` and `[[1, 0], [k, 1]]` (determinant 1: their products
/// never collapse to a constant modulo 2^16, and shears of the two kinds do not commute), and
/// random non-zero (first, last) singletons.
fn inputs(n: usize, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let m = values(n, seed, 1000, |v| {
        let v = (v + 1000) as u16;
        let k = v / 2 % 7 + 1;
        if v.is_multiple_of(2) {
            MatMul2::pack([1, k, 0, 1])
        } else {
            MatMul2::pack([1, 0, k, 1])
        }
    });
    let fl = values(n, seed + 1, 1000, |v| {
        let v = (v + 1001) as u64;
        v | v << 32
    });
    (m, fl)
}

#[test]
fn user_operators_keep_the_order() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        for (i, &n) in SIZES.iter().enumerate() {
            let (m, fl) = inputs(n, 31 + i as u64);
            check::<MatMul2Algorithms, _>(&ctx, &algs, &format!("{dev}: 2×2 product"), &m, MatMul2);
            check::<FirstLastAlgorithms, _>(
                &ctx,
                &algs,
                &format!("{dev}: (first, last)"),
                &fl,
                FirstLast,
            );
        }
    }
}

/// The operators really are order-sensitive on these inputs: a fold in another order gives
/// another result, so the test above would catch a reordering.
#[test]
fn the_operators_are_not_commutative_on_the_inputs() {
    let (m, fl) = inputs(5000, 99);
    let fwd = m
        .iter()
        .fold(MatMul2.identity(), |a, &b| MatMul2.combine(a, b));
    let rev = m
        .iter()
        .rev()
        .fold(MatMul2.identity(), |a, &b| MatMul2.combine(a, b));
    assert_ne!(fwd, rev);
    let fwd = fl
        .iter()
        .fold(FirstLast.identity(), |a, &b| FirstLast.combine(a, b));
    let rev = fl
        .iter()
        .rev()
        .fold(FirstLast.identity(), |a, &b| FirstLast.combine(a, b));
    assert_ne!(fwd, rev);
}
