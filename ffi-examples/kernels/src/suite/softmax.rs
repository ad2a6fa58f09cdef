//! Softmax over the rows of a matrix: one block per row, an online (max, sum) pass, a
//! reduction across the block, then a write pass.

use super::{BLOCK, block_sync, exp_approx};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::{math, thread, warp};

/// Combines two online-softmax partials (running maximum, sum of `e^(x - max)`); an empty
/// partial is `(-inf, 0)`. Written with selects, not branches: LLVM keeps an `if`/`else` here
/// as divergent branches (a `BSSY`/`BSYNC` pair each in SASS), where NVVM if-converts the CUDA
/// C twin's early returns.
#[inline(always)]
fn softmax_combine((m1, s1): (f32, f32), (m2, s2): (f32, f32)) -> (f32, f32) {
    let m = if m1 > m2 { m1 } else { m2 };
    let t1 = s1 * exp_approx(m1 - m);
    let t2 = s2 * exp_approx(m2 - m);
    // An empty side contributes nothing (its -inf - -inf would be NaN).
    let s = if s1 == 0.0 { 0.0 } else { t1 } + if s2 == 0.0 { 0.0 } else { t2 };
    let m = if s2 == 0.0 {
        m1
    } else if s1 == 0.0 {
        m2
    } else {
        m
    };
    (m, s)
}

/// `out[r][j] = e^(x[r][j] - max_r) / Σ_j e^(x[r][j] - max_r)` for each row of a
/// `rows × cols` matrix: one block per row, an online (max, sum) pass, then a write pass.
/// Launch with blocks of [`BLOCK`] threads and `rows` blocks.
#[kernel]
pub fn softmax_rows(x: &[f32], cols: u32, out: DisjointSlice<f32>) {
    softmax_body::<false>(x, cols, out);
}

/// [`softmax_rows`] with an aligned barrier (see [`histogram256_aligned`](super::histogram256_aligned)).
#[kernel]
pub fn softmax_rows_aligned(x: &[f32], cols: u32, out: DisjointSlice<f32>) {
    softmax_body::<true>(x, cols, out);
}

#[inline(always)]
fn softmax_body<const ALIGNED: bool>(x: &[f32], cols: u32, out: DisjointSlice<'_, f32>) {
    let cols = cols as usize;
    let row = thread::block_idx_x() as usize;
    assert!(thread::block_dim_x() == BLOCK && out.len() >= x.len());
    let t = thread::thread_idx_x() as usize;
    let base = row * cols;
    // One bounds check per block, hoisted out of the loops: the row is inside `x` and `out`.
    assert!(base + cols <= x.len());
    // SAFETY: checked just above.
    let row_x = unsafe { x.get_unchecked(base..base + cols) };
    let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
    // One exponential per element, the branches as selects (see `softmax_combine`).
    let mut update = |v: f32| {
        let gt = v > m;
        let e = exp_approx(if gt { m - v } else { v - m });
        s = if gt { math::fmaf(s, e, 1.0) } else { s + e };
        m = if gt { v } else { m };
    };
    // Plain loops: ptxas unrolls them by four itself, with the four loads of the first pass
    // issued together (as nvcc's unrolled loop does).
    const B: usize = BLOCK as usize;
    let mut j = t;
    while j < cols {
        update(row_x[j]);
        j += B;
    }
    let mut offset = 16;
    while offset > 0 {
        let other = (
            warp::shfl_xor_sync(warp::FULL_MASK, m, offset),
            warp::shfl_xor_sync(warp::FULL_MASK, s, offset),
        );
        (m, s) = softmax_combine((m, s), other);
        offset /= 2;
    }
    const WARPS: usize = B / 32;
    let part = shared_array!(f32, 2 * WARPS);
    // `t / 32`, not `thread::warp_id()`: with the block size checked above, `t < 256` is
    // known, so the slot's bounds check folds away.
    let (lane, w) = (thread::lane_id() as usize, t / 32);
    if lane == 0 {
        // SAFETY: lane 0 of warp `w` alone writes slots 2w, 2w + 1; read after the barrier.
        unsafe {
            part.write(2 * w, m);
            part.write(2 * w + 1, s);
        }
    }
    // SAFETY: every thread of the block reaches the barrier: the asserts above fail in all
    // threads or none, and the loops end in every thread.
    unsafe { block_sync::<ALIGNED>() };
    // SAFETY: written before the barrier, not after.
    let mut acc = unsafe { (part.read(0), part.read(1)) };
    for k in 1..WARPS {
        // SAFETY: as above.
        acc = softmax_combine(acc, unsafe { (part.read(2 * k), part.read(2 * k + 1)) });
    }
    let (m, inv) = (acc.0, 1.0 / acc.1);
    // The write pass as a plain loop too: ptxas's unrolled body loads, exponentiates and
    // stores one element at a time, as the CUDA C twin's does. Loading four elements before
    // the first store (a hand-unrolled body) ran at 0.90x CUDA C: more of the row's second
    // reads missed L2 (575 MB of DRAM traffic, not the 537 MB of one read and one write).
    let mut j = t;
    while j < cols {
        // SAFETY: row `row` belongs to this block, column `j` to this thread.
        unsafe { out.write(base + j, exp_approx(row_x[j] - m) * inv) };
        j += B;
    }
}
