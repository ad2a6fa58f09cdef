//! The device library's warp and block collectives (`warp::reduce`, `warp::inclusive_scan`,
//! `warp::exclusive_scan`, `block::reduce`, `block::inclusive_scan`, `block::exclusive_scan`,
//! `block::broadcast`) against host references, for f32, f64, i32, u32 and a user's
//! non-commutative operator, with block sizes that leave partial warps, on every test device.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::collectives::{self as c, compose_affine};
use gpukernel_device::ops::{Max, Min, Number, ReduceOp, Sum};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Kernel, LaunchConfig, Module};
use gpukernel_tests::devices;

fn module(ctx: &Context) -> Module {
    let names = [
        c::warp_collectives_f32::NAME,
        c::warp_collectives_f64::NAME,
        c::warp_collectives_i32::NAME,
        c::warp_collectives_u32::NAME,
        c::block_collectives_f32::NAME,
        c::block_collectives_f64::NAME,
        c::block_collectives_i32::NAME,
        c::block_collectives_u32::NAME,
        c::collectives_user_op::NAME,
    ];
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", &names)
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking the collective kernels failed: {e}"))
}

/// Block sizes: one warp, two, a partial last warp (101, 1000), a full 1024.
const BLOCKS: &[u32] = &[32, 64, 101, 256, 1000, 1024];
const GRID: u32 = 3;

/// The groups of `len` threads (blocks of `block`, or their warps) as index ranges.
fn groups(len: usize, block: usize, warps: bool) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for b in (0..len).step_by(block) {
        if warps {
            for w in (b..b + block).step_by(32) {
                out.push(w..(w + 32).min(b + block));
            }
        } else {
            out.push(b..b + block);
        }
    }
    out
}

/// Per element: the reduction of its group, the inclusive scan, the exclusive scan from `init`.
fn reference<T: Copy>(
    x: &[T],
    gs: &[std::ops::Range<usize>],
    op: impl ReduceOp<T>,
    init: T,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (mut red, mut incl, mut excl) = (x.to_vec(), x.to_vec(), x.to_vec());
    for g in gs {
        let mut acc: Option<T> = None;
        let mut ex = init;
        for i in g.clone() {
            excl[i] = ex;
            ex = op.combine(ex, x[i]);
            acc = Some(acc.map_or(x[i], |a| op.combine(a, x[i])));
            incl[i] = acc.expect("set");
        }
        for i in g.clone() {
            red[i] = acc.expect("non-empty group");
        }
    }
    (red, incl, excl)
}

/// Small integers, so that every order of float addition is exact.
fn inputs<T>(n: usize, seed: u64, f: impl Fn(i64) -> T) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f((s % 201) as i64 - 100)
        })
        .collect()
}

macro_rules! typed_test {
    ($name:ident, $t:ty, $warp_k:ident, $block_k:ident, $conv:expr) => {
        #[test]
        fn $name() {
            for (dev, ctx) in devices() {
                let m = module(&ctx);
                let (wk, bk) = (
                    m.kernel(c::$warp_k).unwrap(),
                    m.kernel(c::$block_k).unwrap(),
                );
                let s = ctx.default_stream();
                for &block in BLOCKS {
                    let total = (GRID * block) as usize;
                    // The last 7 threads read past the end: they contribute 0.
                    let n = total - 7;
                    let mut x: Vec<$t> = inputs(n, block as u64, $conv);
                    let xd = s.htod_copy(&x).unwrap();
                    x.resize(total, <$t as Number>::ZERO);
                    let cfg = LaunchConfig::new(GRID, block);
                    let mut o: Vec<_> = (0..5)
                        .map(|_| s.alloc_zeros::<$t>(total).unwrap())
                        .collect();
                    let [o0, o1, o2, o3, o4] = &mut o[..] else {
                        unreachable!()
                    };
                    s.launch(&wk, cfg, (&xd, &mut *o0, &mut *o1, &mut *o2, &mut *o3))
                        .unwrap();
                    let three = 3 as $t;
                    let wg = groups(total, block as usize, true);
                    let (sum, incl, excl) = reference(&x, &wg, Sum, three);
                    let (max, _, _) = reference(&x, &wg, Max, three);
                    let what = format!(
                        "{dev}: warp collectives of {} with blocks of {block}",
                        stringify!($t)
                    );
                    assert_eq!(o0.to_host_vec().unwrap(), sum, "{what}: reduce(Sum)");
                    assert_eq!(o1.to_host_vec().unwrap(), max, "{what}: reduce(Max)");
                    assert_eq!(o2.to_host_vec().unwrap(), incl, "{what}: inclusive_scan");
                    // The exclusive scan from 3: `reference` seeds every group with 3.
                    assert_eq!(o3.to_host_vec().unwrap(), excl, "{what}: exclusive_scan");

                    s.launch(
                        &bk,
                        cfg,
                        (&xd, &mut *o0, &mut *o1, &mut *o2, &mut *o3, &mut *o4),
                    )
                    .unwrap();
                    let bg = groups(total, block as usize, false);
                    let (sum, incl, excl) = reference(&x, &bg, Sum, three);
                    let (min, _, _) = reference(&x, &bg, Min, three);
                    let last: Vec<$t> = (0..total)
                        .map(|i| x[(i / block as usize + 1) * block as usize - 1])
                        .collect();
                    let what = format!(
                        "{dev}: block collectives of {} with blocks of {block}",
                        stringify!($t)
                    );
                    assert_eq!(o0.to_host_vec().unwrap(), sum, "{what}: reduce(Sum)");
                    assert_eq!(o1.to_host_vec().unwrap(), min, "{what}: reduce(Min)");
                    assert_eq!(o2.to_host_vec().unwrap(), incl, "{what}: inclusive_scan");
                    assert_eq!(o3.to_host_vec().unwrap(), excl, "{what}: exclusive_scan");
                    assert_eq!(o4.to_host_vec().unwrap(), last, "{what}: broadcast");
                }
            }
        }
    };
}

typed_test!(
    collectives_f32,
    f32,
    warp_collectives_f32,
    block_collectives_f32,
    |v| v as f32
);
typed_test!(
    collectives_f64,
    f64,
    warp_collectives_f64,
    block_collectives_f64,
    |v| v as f64 * 0.25
);
typed_test!(
    collectives_i32,
    i32,
    warp_collectives_i32,
    block_collectives_i32,
    |v| v as i32 * 1_000_003
);
typed_test!(
    collectives_u32,
    u32,
    warp_collectives_u32,
    block_collectives_u32,
    |v| ((v + 100) as u32).wrapping_mul(40_000_000)
);

#[test]
fn collectives_keep_the_order_of_a_non_commutative_operator() {
    let op = |p: u64, q: u64| compose_affine(p, q);
    let identity = 1u64 << 32;
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let k = m.kernel(c::collectives_user_op).unwrap();
        let s = ctx.default_stream();
        for &block in BLOCKS {
            let total = (GRID * block) as usize;
            let n = total - 7;
            let mut x: Vec<u64> = inputs(n, 99 + block as u64, |v| {
                let a = (v as u32).wrapping_mul(2_654_435_761) | 1;
                let b = (v as u32).wrapping_mul(40_503);
                (a as u64) << 32 | b as u64
            });
            let xd = s.htod_copy(&x).unwrap();
            x.resize(total, identity);
            let mut o: Vec<_> = (0..5)
                .map(|_| s.alloc_zeros::<u64>(total).unwrap())
                .collect();
            let [o0, o1, o2, o3, o4] = &mut o[..] else {
                unreachable!()
            };
            s.launch(
                &k,
                LaunchConfig::new(GRID, block),
                (&xd, &mut *o0, &mut *o1, &mut *o2, &mut *o3, &mut *o4),
            )
            .unwrap();
            let (wred, wincl, _) =
                reference(&x, &groups(total, block as usize, true), op, identity);
            let (bred, bincl, bexcl) =
                reference(&x, &groups(total, block as usize, false), op, identity);
            let what = format!("{dev}: affine composition with blocks of {block}");
            assert_eq!(o0.to_host_vec().unwrap(), wred, "{what}: warp::reduce");
            assert_eq!(
                o1.to_host_vec().unwrap(),
                wincl,
                "{what}: warp::inclusive_scan"
            );
            assert_eq!(o2.to_host_vec().unwrap(), bred, "{what}: block::reduce");
            assert_eq!(
                o3.to_host_vec().unwrap(),
                bincl,
                "{what}: block::inclusive_scan"
            );
            assert_eq!(
                o4.to_host_vec().unwrap(),
                bexcl,
                "{what}: block::exclusive_scan"
            );
        }
    }
}
