//! Reductions that combine the elements strictly in index order (an associative operator need
//! not be commutative): of a range by one warp, of a range by one block, by segments (CUB's
//! `DeviceSegmentedReduce`) and by rows, and the device-wide reduce of a user's operator.
//!
//! A warp walks its range in units of 32 × 16 bytes: lane `l` loads the `l`-th 16-byte vector
//! of the unit (coalesced, `V` units in flight), folds its elements in order, and a warp
//! reduction in lane order gives the unit's total, added after the totals before it. The few
//! elements before the first 16-byte boundary come first, the partial unit at the end last.
//! A block splits its range into one contiguous part per warp, then combines the warps' totals
//! in warp order.

use gpukernel_device::ops::Identity;
use gpukernel_device::prelude::*;
use gpukernel_device::{sync, thread, warp};

use crate::{Item, ld16};

/// Words of shared memory each warp transposes through: `32 × 4 × ORDERED_VECS` words and
/// one pad word per 32 (so that neither the striped writes nor the contiguous reads meet in a
/// bank).
const WARP_WORDS: usize = 32 * 4 * ORDERED_VECS + 4 * ORDERED_VECS;
/// The transposition buffers of the block's warps.
const SHARED_WORDS: usize = (ORDERED_BLOCK as usize / 32) * WARP_WORDS;

/// The reduction, in index order, of `units` units of 32 16-byte vectors from unit
/// `first_unit` of the aligned elements starting at `body`, by the calling warp (every lane
/// calls it; the warp is whole), returned to every lane.
///
/// `V` (≤ [`ORDERED_VECS`]) units at a time: each lane loads one vector of each (coalesced),
/// the warp transposes them through shared memory so that each lane holds `4 × V`
/// consecutive words, each lane folds its elements in order, and one warp reduction in lane
/// order adds the batch after the batches before: about one combine per element, not the
/// six of a warp reduction per unit.
#[inline(always)]
// Index loops over the const-sized arrays keep them in registers once unrolled.
#[allow(clippy::needless_range_loop)]
fn warp_reduce_units<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    first_unit: usize,
    units: usize,
    body: usize,
    op: Op,
) -> T {
    let per = T::PER;
    let lane = thread::lane_id() as usize;
    let sh = gpukernel_device::shared::shared_array!(u32, SHARED_WORDS);
    let region = thread::warp_id() as usize * WARP_WORDS;
    let pad = |q: usize| region + q + q / 32;
    // SAFETY: `body` is the index of a 16-byte aligned element of `input` (or its end).
    let vp = unsafe { input.as_ptr().add(body) }.cast::<[u32; 4]>();
    let mut acc = op.identity();
    let mut u = first_unit;
    let end = first_unit + units;
    if V <= ORDERED_VECS && thread::block_dim_x() <= ORDERED_BLOCK {
        while u + V <= end {
            let mut w = [[0u32; 4]; V];
            for j in 0..V {
                // SAFETY: unit `u + j < end` lies inside the range, whose vectors are inside
                // `input` (a `&[T]`, never written during the launch), 16-byte aligned.
                w[j] = unsafe { ld16(vp.add((u + j) * 32 + lane)) };
            }
            for j in 0..V {
                for c in 0..4 {
                    // SAFETY: `pad(q) < region + WARP_WORDS <= SHARED_WORDS` (`q < 128 V`, a
                    // warp index below the block's warps); each word of the warp's region is
                    // written by one lane, read after the warp barrier below.
                    unsafe { sh.write(pad(j * 128 + 4 * lane + c), w[j][c]) };
                }
            }
            gpukernel_device::sync::sync_warp(warp::FULL_MASK);
            let mut x = op.identity();
            for k in 0..V {
                let mut wd = [0u32; 4];
                for c in 0..4 {
                    // SAFETY: as above; written before the warp barrier.
                    wd[c] = unsafe { sh.read(pad(lane * 4 * V + 4 * k + c)) };
                }
                for e in 0..per {
                    x = op.combine(x, T::lane16(wd, e));
                }
            }
            acc = op.combine(acc, warp::reduce(x, op));
            // The next batch overwrites the region: every lane has read its words.
            gpukernel_device::sync::sync_warp(warp::FULL_MASK);
            u += V;
        }
    }
    while u < end {
        // SAFETY: as above.
        let wj = unsafe { ld16(vp.add(u * 32 + lane)) };
        let mut x = T::lane16(wj, 0);
        for e in 1..per {
            x = op.combine(x, T::lane16(wj, e));
        }
        acc = op.combine(acc, warp::reduce(x, op));
        u += 1;
    }
    acc
}

/// `(head end, aligned body start, whole units, tail start)` of `input[lo..hi]`: the elements
/// before the first 16-byte boundary, the units of `32 × 16` bytes, the rest.
#[inline(always)]
fn split<T: Item>(input: &[T], lo: usize, hi: usize) -> (usize, usize, usize) {
    let size = core::mem::size_of::<T>();
    let per = T::PER;
    let mis = (input.as_ptr() as usize + lo * size) % 16;
    let head = if mis == 0 {
        0
    } else {
        ((16 - mis) / size).min(hi - lo)
    };
    let body = lo + head;
    let units = (hi - body) / (32 * per);
    (body, units, body + units * 32 * per)
}

/// The reduction, in order, of the up to `32 × per` elements `input[lo..hi]` by the warp.
#[inline(always)]
fn warp_reduce_short<T: Item, Op: Identity<T>>(input: &[T], lo: usize, hi: usize, op: Op) -> T {
    let per = T::PER;
    let lane = thread::lane_id() as usize;
    let mut x = op.identity();
    for e in 0..per {
        let i = lo + per * lane + e;
        if i < hi {
            x = op.combine(x, input[i]);
        }
    }
    warp::reduce(x, op)
}

/// The reduction of `input[lo..hi]` in index order by the calling warp alone, in every lane.
/// Panics (traps) when `hi > input.len()`; `lo >= hi` is the identity.
#[inline(always)]
pub fn warp_reduce_range<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    lo: usize,
    hi: usize,
    op: Op,
) -> T {
    if lo >= hi {
        return op.identity();
    }
    if hi > input.len() {
        gpukernel_device::__trap_out_of_bounds(hi - 1, input.len());
    }
    let (body, units, tail) = split(input, lo, hi);
    let head = warp_reduce_short(input, lo, body, op);
    let mid = warp_reduce_units::<T, Op, V>(input, 0, units, body, op);
    op.combine(
        op.combine(head, mid),
        warp_reduce_short(input, tail, hi, op),
    )
}

/// The reduction of `input[lo..hi]` in index order by the whole block (every thread calls
/// it with the same range; `TB` threads, whole warps), valid in thread 0. One barrier; the
/// caller must not call it twice without a barrier between.
#[inline(always)]
pub fn block_reduce_range<T: Item, Op: Identity<T>, const TB: u32, const V: usize>(
    input: &[T],
    lo: usize,
    hi: usize,
    op: Op,
) -> T {
    let shared = gpukernel_device::shared::shared_array!(u64, 32);
    let warps = TB as usize / 32;
    let (lane, w) = (thread::lane_id() as usize, thread::warp_id() as usize);
    let mut acc = op.identity();
    if lo < hi {
        if hi > input.len() {
            gpukernel_device::__trap_out_of_bounds(hi - 1, input.len());
        }
        let (body, units, tail) = split(input, lo, hi);
        if w == 0 {
            acc = warp_reduce_short(input, lo, body, op);
        }
        let (a, b) = (w * units / warps, (w + 1) * units / warps);
        acc = op.combine(
            acc,
            warp_reduce_units::<T, Op, V>(input, a, b - a, body, op),
        );
        if w == warps - 1 {
            acc = op.combine(acc, warp_reduce_short(input, tail, hi, op));
        }
    }
    if lane == 0 {
        // SAFETY: lane 0 of warp `w` (< 32) alone writes slot `w`, before the barrier.
        unsafe { shared.write(w, acc.to_bits64()) };
    }
    sync::sync_threads();
    let mut total = op.identity();
    if thread::thread_idx_x() == 0 {
        for k in 0..warps {
            // SAFETY: written before the barrier.
            total = op.combine(total, T::from_bits64(unsafe { shared.read(k) }));
        }
    }
    total
}

/// Threads per block of the segmented and ordered reductions.
pub const ORDERED_BLOCK: u32 = 256;
/// 16-byte vectors in flight per lane in the ordered reductions.
pub const ORDERED_VECS: usize = 8;

/// Segment `s`: `offsets[s]..offsets[s + 1]`, or with no offsets row `s` of `row_len`.
#[inline(always)]
fn segment(offsets: &[u32], row_len: u64, s: usize) -> (usize, usize) {
    if offsets.is_empty() {
        let r = row_len as usize;
        (s * r, (s + 1) * r)
    } else {
        (offsets[s] as usize, offsets[s + 1] as usize)
    }
}

/// `out[s]` = the reduction of segment `s` in index order, the identity for an empty one
/// (`end <= begin`). Segments from `offsets` (`out.len() + 1` entries) or, when `offsets` is
/// empty, the rows of `row_len` elements. With `per_warp` != 0 each warp reduces whole
/// segments (grid-stride over them), else each block one segment (grid-stride).
#[inline(always)]
pub fn segmented<T: Item, Op: Identity<T>>(
    input: &[T],
    offsets: &[u32],
    row_len: u64,
    per_warp: u32,
    out: DisjointSlice<'_, T>,
    op: Op,
) {
    let segments = out.len();
    assert!(
        thread::block_dim_x() == ORDERED_BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && (offsets.is_empty() || offsets.len() == segments + 1)
    );
    if per_warp != 0 {
        let warps = ORDERED_BLOCK as usize / 32;
        let mut s = thread::block_idx_x() as usize * warps + thread::warp_id() as usize;
        let stride = thread::grid_dim_x() as usize * warps;
        while s < segments {
            let (lo, hi) = segment(offsets, row_len, s);
            let v = warp_reduce_range::<T, Op, ORDERED_VECS>(input, lo, hi, op);
            if thread::lane_id() == 0 {
                // SAFETY: segment `s` is this warp's alone; `s < out.len()`.
                unsafe { out.write(s, v) };
            }
            s += stride;
        }
    } else {
        let mut s = thread::block_idx_x() as usize;
        while s < segments {
            let (lo, hi) = segment(offsets, row_len, s);
            let v = block_reduce_range::<T, Op, ORDERED_BLOCK, ORDERED_VECS>(input, lo, hi, op);
            if thread::thread_idx_x() == 0 {
                // SAFETY: segment `s` is this block's alone; `s < out.len()`.
                unsafe { out.write(s, v) };
            }
            // The next segment's block reduction reuses the shared slots.
            sync::sync_threads();
            s += thread::grid_dim_x() as usize;
        }
    }
}

/// The in-order device-wide reduce in one launch: block `b` of `G` reduces the `b`-th of `G`
/// contiguous parts of `input`, and the last block to finish reduces the `G` partials in
/// block order into `out[0]` ([`last_block`](crate::last_block); `scratch`: at least
/// [`scratch_words`](crate::last_block::scratch_words) words, the first zero). Blocks of
/// [`ORDERED_BLOCK`] threads, any one-dimensional grid.
#[inline(always)]
pub fn ordered_reduce<T: Item, Op: Identity<T>>(
    input: &[T],
    out: DisjointSlice<'_, T>,
    scratch: DisjointSlice<'_, u64>,
    op: Op,
) {
    crate::last_block::check_launch(&scratch, &out);
    assert!(thread::block_dim_x() == ORDERED_BLOCK);
    let (b, g, n) = (
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
        input.len(),
    );
    let (lo, hi) = (
        (b as u128 * n as u128 / g as u128) as usize,
        ((b + 1) as u128 * n as u128 / g as u128) as usize,
    );
    let v = block_reduce_range::<T, Op, ORDERED_BLOCK, ORDERED_VECS>(input, lo, hi, op);
    crate::last_block::finish(v, &scratch, &out, op);
}
