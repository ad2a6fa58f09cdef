//! Sum reductions, four ways: a block-wide tree in static shared memory, the same in dynamic
//! shared memory, a warp-wide shuffle reduction, and a grid-wide sum with atomics.
//!
//! All of them accept any input length: threads past the end contribute 0. Every thread of a
//! block reaches every barrier (no early return before `sync_threads`), as CUDA requires.
//!
//! Two variants exist to measure what the safe forms cost (`bench_runtime` times each next to
//! its safe original): [`block_reduce_sum_aligned`] uses the aligned barrier
//! (`sync_threads_aligned`, CUDA's `__syncthreads()`), and [`warp_reduce_sum_unchecked`] the
//! shuffles that skip the check that the calling lane is in the mask.

use gpukernel_device::prelude::*;
use gpukernel_device::shared::{dynamic_shared, shared_array};
use gpukernel_device::{atomic, sync, thread, warp};

/// The most threads per block [`block_reduce_sum`] supports (the size of its shared array).
pub const REDUCE_MAX_BLOCK: u32 = 256;

/// `out[b]` = the sum of the inputs of block `b`'s threads (`input[b * block_dim_x ..][..block_dim_x]`).
///
/// Launch with one-dimensional blocks of at most [`REDUCE_MAX_BLOCK`] threads (any count, not
/// only powers of two) and `out.len() >= grid_dim_x`. A larger block traps.
// ANCHOR: block_reduce_sum
#[kernel]
pub fn block_reduce_sum(input: &[f32], out: DisjointSlice<f32>) {
    // A condition every thread of the block evaluates alike: a larger block traps in every
    // thread, before any barrier.
    assert!(thread::block_dim_x() <= REDUCE_MAX_BLOCK);
    let tile = shared_array!(f32, REDUCE_MAX_BLOCK as usize);
    let t = thread::thread_idx_x() as usize;
    let i = thread::global_index_x();
    let v = if i < input.len() { input[i] } else { 0.0 };
    // SAFETY: each thread writes only slot `t`; `tree_sum` separates the rounds with barriers.
    unsafe { tile.write(t, v) };
    let total = tree_sum(
        // SAFETY: `tree_sum` reads a slot only after a barrier that follows its last write.
        |k| unsafe { tile.read(k) },
        // SAFETY: in each round, slot `k` is written by thread `k` only.
        |k, x| unsafe { tile.write(k, x) },
    );
    if t == 0 {
        // SAFETY: only thread 0 of each block writes, to its block's own slot.
        unsafe { out.write(thread::block_idx_x() as usize, total) };
    }
}
// ANCHOR_END: block_reduce_sum

/// Like [`block_reduce_sum`], with the block's scratch space in dynamic shared memory: launch
/// with at least `block_dim_x * 4` bytes of dynamic shared memory (less traps) and any block
/// size up to 1024.
#[kernel]
pub fn block_reduce_sum_dynamic(input: &[f32], out: DisjointSlice<f32>) {
    let tile = dynamic_shared::<f32>();
    let t = thread::thread_idx_x() as usize;
    let i = thread::global_index_x();
    let v = if i < input.len() { input[i] } else { 0.0 };
    // SAFETY: as in `block_reduce_sum`.
    unsafe { tile.write(t, v) };
    let total = tree_sum(
        // SAFETY: `tree_sum` reads a slot only after a barrier that follows its last write.
        |k| unsafe { tile.read(k) },
        // SAFETY: in each round, slot `k` is written by thread `k` only.
        |k, x| unsafe { tile.write(k, x) },
    );
    if t == 0 {
        // SAFETY: only thread 0 of each block writes, to its block's own slot.
        unsafe { out.write(thread::block_idx_x() as usize, total) };
    }
}

/// [`block_reduce_sum`] with the aligned barrier (`bar.sync 0`, what CUDA's `__syncthreads()`
/// emits) in place of the safe non-aligned one (`barrier.sync 0`): the same result, for
/// measuring what the safe barrier costs. Launch as [`block_reduce_sum`].
#[kernel]
pub fn block_reduce_sum_aligned(input: &[f32], out: DisjointSlice<f32>) {
    // As in `block_reduce_sum`; here it also keeps the barriers aligned: no thread can trap
    // at the shared-array write while others wait.
    assert!(thread::block_dim_x() <= REDUCE_MAX_BLOCK);
    let tile = shared_array!(f32, REDUCE_MAX_BLOCK as usize);
    let t = thread::thread_idx_x() as usize;
    let i = thread::global_index_x();
    let v = if i < input.len() { input[i] } else { 0.0 };
    // SAFETY: each thread writes only slot `t`; `tree_sum_with` separates the rounds with
    // barriers.
    unsafe { tile.write(t, v) };
    let total = tree_sum_with(
        // SAFETY: `tree_sum_with` calls the barrier from two places, each the same number of
        // times in every thread of the block (the trip count depends only on the block size),
        // and every thread of the block calls `tree_sum_with` (nothing before it returns or
        // traps in only some threads: the block size was checked above in every thread).
        || unsafe { sync::sync_threads_aligned() },
        // SAFETY: `tree_sum_with` reads a slot only after a barrier that follows its last write.
        |k| unsafe { tile.read(k) },
        // SAFETY: in each round, slot `k` is written by thread `k` only.
        |k, x| unsafe { tile.write(k, x) },
    );
    if t == 0 {
        // SAFETY: only thread 0 of each block writes, to its block's own slot.
        unsafe { out.write(thread::block_idx_x() as usize, total) };
    }
}

/// The block-wide tree with the safe barrier, [`sync::sync_threads`].
#[inline(always)]
fn tree_sum(read: impl Fn(usize) -> f32, write: impl Fn(usize, f32)) -> f32 {
    tree_sum_with(sync::sync_threads, read, write)
}

/// The block-wide tree: after the first barrier, round `s` has thread `t < s` add slot `t + s`
/// into slot `t`; returns slot 0 (meaningful in thread 0). Every thread must call it.
///
/// `barrier` is the block barrier; `read`/`write` access the block's scratch; each slot `t`
/// was written by thread `t` before.
// ANCHOR: tree_sum_with
#[inline(always)]
fn tree_sum_with(
    barrier: impl Fn(),
    read: impl Fn(usize) -> f32,
    write: impl Fn(usize, f32),
) -> f32 {
    let t = thread::thread_idx_x() as usize;
    let n = thread::block_dim_x() as usize;
    let mut stride = n.next_power_of_two() / 2;
    while stride > 0 {
        barrier();
        if t < stride && t + stride < n {
            // Slots `t` and `t + stride` are touched by thread `t` only in this round.
            write(t, read(t) + read(t + stride));
        }
        stride /= 2;
    }
    barrier();
    read(0)
}
// ANCHOR_END: tree_sum_with

/// The sum of the calling warp's `v`s, valid in lane 0; lanes past the end of a partial warp
/// (a block size that is not a multiple of 32) are left out. Every lane of the warp must call
/// it, before any lane diverges.
#[inline(always)]
pub fn warp_sum(v: f32) -> f32 {
    warp_sum_with(v, warp::shfl_down_sync)
}

/// [`warp_sum`] with the shuffles that skip the mask check ([`warp::shfl_down_sync_unchecked`]).
#[inline(always)]
pub fn warp_sum_unchecked(v: f32) -> f32 {
    warp_sum_with(v, |mask, v, offset| {
        // SAFETY: `warp_sum_with` passes `active_mask()`, which contains the calling lane.
        unsafe { warp::shfl_down_sync_unchecked(mask, v, offset) }
    })
}

/// The warp tree of [`warp_sum`], with `shfl_down(mask, value, delta)` as the shuffle.
#[inline(always)]
fn warp_sum_with(v: f32, shfl_down: impl Fn(u32, f32, u32) -> f32) -> f32 {
    let mask = warp::active_mask();
    let lanes = mask.count_ones();
    let lane = thread::lane_id();
    let mut v = v;
    let mut offset = warp::FULL_MASK.count_ones() / 2;
    while offset > 0 {
        let other = shfl_down(mask, v, offset);
        if lane + offset < lanes {
            v += other;
        }
        offset /= 2;
    }
    v
}

/// `out[w]` = the sum of the inputs of warp `w`'s threads, where `w = block_idx_x *
/// warps_per_block + warp_id` and `warps_per_block = ceil(block_dim_x / 32)`. Launch with
/// one-dimensional blocks of any size and `out.len() >= grid_dim_x * warps_per_block`.
#[kernel]
pub fn warp_reduce_sum(input: &[f32], out: DisjointSlice<f32>) {
    let i = thread::global_index_x();
    let v = if i < input.len() { input[i] } else { 0.0 };
    let total = warp_sum(v);
    if thread::lane_id() == 0 {
        let warps_per_block = thread::block_dim_x().div_ceil(thread::WARP_SIZE) as usize;
        let w = thread::block_idx_x() as usize * warps_per_block + thread::warp_id() as usize;
        // SAFETY: only lane 0 of each warp writes, to its warp's own slot.
        unsafe { out.write(w, total) };
    }
}

/// [`warp_reduce_sum`] with [`warp_sum_unchecked`]: the same result, for measuring what the
/// shuffles' mask check costs. Launch as [`warp_reduce_sum`].
#[kernel]
pub fn warp_reduce_sum_unchecked(input: &[f32], out: DisjointSlice<f32>) {
    let i = thread::global_index_x();
    let v = if i < input.len() { input[i] } else { 0.0 };
    let total = warp_sum_unchecked(v);
    if thread::lane_id() == 0 {
        let warps_per_block = thread::block_dim_x().div_ceil(thread::WARP_SIZE) as usize;
        let w = thread::block_idx_x() as usize * warps_per_block + thread::warp_id() as usize;
        // SAFETY: only lane 0 of each warp writes, to its warp's own slot.
        unsafe { out.write(w, total) };
    }
}

/// Adds the sum of `input` to `*out` (which the caller zeroes first): each thread sums a
/// grid-stride slice, each warp combines its lanes with shuffles, and lane 0 adds the warp's
/// total with one `atomicAdd`. Any launch configuration works (one-dimensional).
///
/// # Safety
/// `out` must point to an `f32` in device memory that nothing else accesses during the launch
/// except atomically.
#[kernel]
pub unsafe fn atomic_sum(input: &[f32], out: *mut f32) {
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    let mut v = 0.0f32;
    while i < input.len() {
        v += input[i];
        i += stride;
    }
    let total = warp_sum(v);
    if thread::lane_id() == 0 {
        // SAFETY: the caller's contract: `out` is valid and only accessed atomically.
        unsafe { atomic::add(out, total) };
    }
}

/// The elements of [`shared_40k_static`]'s static shared array: 40 KiB of `u32`.
pub const STATIC_40K_ELEMENTS: usize = 10 * 1024;

/// Uses 40 KiB of static shared memory and every byte of the launch's dynamic shared memory:
/// with more than 8 KiB of dynamic shared memory a block needs more than the 48 KiB a kernel
/// gets without opting in (`Function::set_max_dynamic_shared_bytes`), and the launch is
/// refused, on the GPU and in the simulator alike.
///
/// `out[i]` = `STATIC_40K_ELEMENTS - 1 - t` (read back from the static array, `t` the thread
/// in its block) plus the number of `u32`s of dynamic shared memory (each set to 1 and summed
/// by thread 0 of the block, which adds it to its own element only).
#[kernel]
pub fn shared_40k_static(mut out: DisjointSlice<u32>) {
    let tile = shared_array!(u32, STATIC_40K_ELEMENTS);
    let dynamic = dynamic_shared::<u32>();
    let (t, n) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    let mut i = t;
    while i < tile.len() {
        // SAFETY: slot `i` is this thread's (strided by the block size); read after the barrier.
        unsafe { tile.write(i, i as u32) };
        i += n;
    }
    let mut j = t;
    while j < dynamic.len() {
        // SAFETY: as above.
        unsafe { dynamic.write(j, 1) };
        j += n;
    }
    sync::sync_threads();
    // SAFETY: no writes after the barrier; every slot was written before it.
    let mut v = unsafe { tile.read(tile.len() - 1 - t % tile.len()) };
    if t == 0 {
        // SAFETY: as above.
        v += (0..dynamic.len())
            .map(|k| unsafe { dynamic.read(k) })
            .sum::<u32>();
    }
    out.set(thread::index(), v);
}
