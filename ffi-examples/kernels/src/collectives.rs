//! The device library's warp and block collectives (`gpukernel_device::warp::reduce` & co.,
//! `gpukernel_device::block`), one kernel per value type, each writing every collective's
//! result per thread: what `tests/tests/collectives.rs` checks against the host on the
//! simulator and the GPU, for block sizes with partial warps.
//!
//! Threads past the end of `x` contribute 0.

use gpukernel_device::ops::{Max, Min, Number, Sum};
use gpukernel_device::prelude::*;
use gpukernel_device::{block, thread, warp};

macro_rules! collective_kernels {
    ($($t:ty: $warp_k:ident, $block_k:ident;)*) => { $(
        #[doc = concat!("Per thread, for `", stringify!($t), "`: its warp's sum and maximum, \
            the inclusive scan and the exclusive scan seeded with 3 of its warp.")]
        #[kernel]
        pub fn $warp_k(
            x: &[$t],
            mut sum: DisjointSlice<$t>,
            mut max: DisjointSlice<$t>,
            mut incl: DisjointSlice<$t>,
            mut excl: DisjointSlice<$t>,
        ) {
            let i = thread::index();
            let v = x.get(i.get()).copied().unwrap_or(<$t as Number>::ZERO);
            let three = 3 as $t;
            sum.set(&i, warp::reduce(v, Sum));
            max.set(&i, warp::reduce(v, Max));
            incl.set(&i, warp::inclusive_scan(v, Sum));
            excl.set(&i, warp::exclusive_scan(v, three, Sum));
        }

        #[doc = concat!("Per thread, for `", stringify!($t), "`: its block's sum and minimum, \
            the inclusive scan, the exclusive scan seeded with 3 (and the block's total), and \
            the block's last thread's value.")]
        #[kernel]
        pub fn $block_k(
            x: &[$t],
            mut sum: DisjointSlice<$t>,
            mut min: DisjointSlice<$t>,
            mut incl: DisjointSlice<$t>,
            mut excl: DisjointSlice<$t>,
            mut last: DisjointSlice<$t>,
        ) {
            let i = thread::index();
            let v = x.get(i.get()).copied().unwrap_or(<$t as Number>::ZERO);
            let three = 3 as $t;
            sum.set(&i, block::reduce(v, Sum));
            min.set(&i, block::reduce(v, Min));
            let (running, total) = block::inclusive_scan(v, Sum);
            let (before, total2) = block::exclusive_scan(v, three, Sum);
            // Both totals are the block's sum: a difference shows as a wrong scan.
            incl.set(&i, if total == total2 { running } else { <$t as Number>::HIGHEST });
            excl.set(&i, before);
            last.set(&i, block::broadcast(v, thread::threads_per_block() - 1));
        }
    )* };
}

collective_kernels! {
    f32: warp_collectives_f32, block_collectives_f32;
    f64: warp_collectives_f64, block_collectives_f64;
    i32: warp_collectives_i32, block_collectives_i32;
    u32: warp_collectives_u32, block_collectives_u32;
}

/// `p` then `q`, for affine maps `x ↦ a·x + b` on wrapping `u32`s packed as `a << 32 | b`:
/// associative, not commutative, so it shows any combination out of lane or thread order.
#[inline(always)]
pub fn compose_affine(p: u64, q: u64) -> u64 {
    let (a1, b1) = ((p >> 32) as u32, p as u32);
    let (a2, b2) = ((q >> 32) as u32, q as u32);
    let a = a2.wrapping_mul(a1);
    let b = a2.wrapping_mul(b1).wrapping_add(b2);
    (a as u64) << 32 | b as u64
}

/// Per thread, with a user's operator ([`compose_affine`], a closure): its warp's reduction
/// and inclusive scan, its block's reduction, inclusive scan and exclusive scan seeded with
/// the identity map.
#[kernel]
pub fn collectives_user_op(
    x: &[u64],
    mut warp_red: DisjointSlice<u64>,
    mut warp_incl: DisjointSlice<u64>,
    mut block_red: DisjointSlice<u64>,
    mut block_incl: DisjointSlice<u64>,
    mut block_excl: DisjointSlice<u64>,
) {
    let i = thread::index();
    let identity = 1u64 << 32;
    let v = x.get(i.get()).copied().unwrap_or(identity);
    let op = |p: u64, q: u64| compose_affine(p, q);
    warp_red.set(&i, warp::reduce(v, op));
    warp_incl.set(&i, warp::inclusive_scan(v, op));
    block_red.set(&i, block::reduce(v, op));
    block_incl.set(&i, block::inclusive_scan(v, op).0);
    block_excl.set(&i, block::exclusive_scan(v, identity, op).0);
}
