//! Block collectives: reduce, inclusive and exclusive scan and broadcast over every thread of
//! the block (CUB's `BlockReduce`, `BlockScan`), generic over the value type (the
//! [`ShuffleValue`] numbers) and the operator ([`crate::ops`]).
//!
//! # Every thread of the block calls each collective
//!
//! A collective is a warp collective in each warp ([`crate::warp::reduce`] & co.), then an
//! exchange of one value per warp through shared memory between two block barriers
//! ([`sync_threads`]). Every thread of the block must call it, in the same order as the other
//! collectives it calls; a thread that skips one leaves the others waiting at its barrier (a
//! hang on the GPU, an error naming the thread in the simulator), and threads that reach
//! different collectives at the same time exchange each other's values (wrong results).
//! Threads that have returned are not waited for by a GPU barrier: the first barrier of each
//! collective counts the threads that reach it ([`sync_threads_count`](crate::sync::sync_threads_count)),
//! and a collective that some threads of the block returned before traps (a launch failure at
//! the next synchronization; in the simulator, an error naming the thread) instead of reading
//! slots those threads never wrote.
//!
//! # The scratch memory is the library's
//!
//! The collectives share one small shared-memory array (33 slots of 8 bytes per block,
//! declared inside this module with [`shared_array!`](crate::shared::shared_array), so no
//! kernel can name it), and every access to it is a relaxed atomic load or store of a whole
//! slot. A misuse such as the one above can therefore give a wrong value, never undefined
//! behaviour: there is no data race, and every bit pattern is a value of the shuffled types.
//! Each collective ends with a barrier, so a following collective (of any kind) may reuse the
//! slots at once: unlike CUB's `TempStorage`, there is nothing to declare, share or
//! synchronize by hand.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{block, ops::{Max, Sum}, thread};
//!
//! /// Each block's sum and maximum, written by its first thread (any block size).
//! #[kernel]
//! pub fn block_stats(x: &[f32], sums: DisjointSlice<f32>, maxes: DisjointSlice<f32>) {
//!     let v = x.get(thread::index().get()).copied();
//!     let s = block::reduce(v.unwrap_or(0.0), Sum);
//!     let m = block::reduce(v.unwrap_or(f32::NEG_INFINITY), Max);
//!     let b = thread::block_idx_x() as usize;
//!     if thread::thread_idx_x() == 0 && b < sums.len() && b < maxes.len() {
//!         // SAFETY: only the block's first thread writes the block's slots.
//!         unsafe { sums.write(b, s); maxes.write(b, m) };
//!     }
//! }
//! ```

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

mod radix;
#[doc(hidden)]
pub use radix::__radix_rank_match_any;
pub use radix::{EXCHANGE_WORDS, RANK_MAX_WARPS, RadixRanks, radix_rank, scatter_to_striped};

use crate::ops::ReduceOp;
use crate::shared::SharedArray;
use crate::sync::sync_threads;
use crate::thread::{lane_id, linear_thread_idx, threads_per_block, warp_id};
use crate::warp::{self, ShuffleValue};

/// Slots 0..32: one value per warp; slot 32: a broadcast value.
const SLOTS: usize = 33;
const BROADCAST: usize = 32;

/// The collectives' scratch: one array per block, for every collective of the module.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn scratch() -> SharedArray<u64, SLOTS> {
    crate::shared_array!(u64, SLOTS)
}

#[inline(always)]
fn store<T: ShuffleValue>(s: SharedArray<u64, SLOTS>, slot: usize, v: T) {
    debug_assert!(slot < SLOTS);
    // SAFETY: `slot < SLOTS` (a warp index below 32, or `BROADCAST`), so the pointer is inside
    // the block's array, aligned for `u64`; every access to the array is atomic.
    unsafe { AtomicU64::from_ptr(s.as_mut_ptr().add(slot)) }.store(v.__to_bits(), Relaxed);
}

#[inline(always)]
fn load<T: ShuffleValue>(s: SharedArray<u64, SLOTS>, slot: usize) -> T {
    debug_assert!(slot < SLOTS);
    // SAFETY: as in `store`.
    T::__from_bits(unsafe { AtomicU64::from_ptr(s.as_mut_ptr().add(slot)) }.load(Relaxed))
}

/// The barrier after the slots are written, which also counts the threads that reach it: on
/// the GPU a block barrier does not wait for threads that have exited, so a collective that
/// whole warps of the block returned before would read slots of this launch that no thread
/// wrote (whatever an earlier kernel left in shared memory). It traps instead, a launch
/// failure reported at the next synchronization. (The simulator reports the missing threads
/// at the barrier itself.)
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn sync_all_arrived() {
    let arrived = crate::sync::sync_threads_count(true);
    let block = threads_per_block();
    if arrived != block {
        left_by_exited_threads(arrived, block);
    }
}

#[cold]
#[inline(never)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn left_by_exited_threads(arrived: u32, block: u32) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (arrived, block);
        // SAFETY: `trap` has no preconditions; it aborts the kernel.
        unsafe { core::arch::nvptx::trap() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    panic!(
        "a block collective was reached by {arrived} of the block's {block} threads (the others \
         returned before it): every thread of the block must call it"
    )
}

/// The number of warps of the block (at most 32).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn warps() -> u32 {
    threads_per_block().div_ceil(32)
}

/// The reduction of `value` over every thread of the block, in thread order (linear thread
/// index), returned to every thread (CUB's `BlockReduce::Reduce`, followed by a broadcast).
/// Every thread of the block must call it (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, ops::Min, thread};
///
/// /// Each element minus its block's minimum.
/// #[kernel]
/// pub fn minus_block_min(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let v = x.get(i.get()).copied().unwrap_or(u32::MAX);
///     let m = block::reduce(v, Min);
///     out.set(&i, v - m);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn reduce<T: ShuffleValue, Op: ReduceOp<T>>(value: T, op: Op) -> T {
    let v = warp::reduce(value, op);
    let warps = warps();
    if warps == 1 {
        return v;
    }
    let s = scratch();
    if lane_id() == 0 {
        store(s, warp_id() as usize, v);
    }
    sync_all_arrived();
    let mut total: T = load(s, 0);
    for k in 1..warps as usize {
        total = op.combine(total, load(s, k));
    }
    sync_threads();
    total
}

/// The inclusive scan of `value` over the block in thread order (CUB's
/// `BlockScan::InclusiveScan`): thread `i` gets `v_0 ⊕ … ⊕ v_i`, and every thread also gets
/// the block's total `v_0 ⊕ … ⊕ v_{n-1}`. Every thread of the block must call it.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, ops::Sum, thread};
///
/// /// Running totals within each block.
/// #[kernel]
/// pub fn block_running(x: &[i64], mut out: DisjointSlice<i64>) {
///     let i = thread::index();
///     let (running, _total) = block::inclusive_scan(x.get(i.get()).copied().unwrap_or(0), Sum);
///     out.set(&i, running);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn inclusive_scan<T: ShuffleValue, Op: ReduceOp<T>>(value: T, op: Op) -> (T, T) {
    let incl = warp::inclusive_scan(value, op);
    let (prefix, total) = warp_prefix(incl, op);
    match prefix {
        Some(p) => (op.combine(p, incl), total),
        None => (incl, total),
    }
}

/// The exclusive scan of `value` over the block in thread order, seeded with `initial` (CUB's
/// `BlockScan::ExclusiveScan`): thread 0 gets `initial`, thread `i` gets
/// `initial ⊕ v_0 ⊕ … ⊕ v_{i-1}`; every thread also gets the block's total of the values
/// (without `initial`). Every thread of the block must call it.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, ops::Sum, thread};
///
/// /// Where each thread's items start in its block's packed output.
/// #[kernel]
/// pub fn block_offsets(counts: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let (start, _items) = block::exclusive_scan(counts.get(i.get()).copied().unwrap_or(0), 0, Sum);
///     out.set(&i, start);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn exclusive_scan<T: ShuffleValue, Op: ReduceOp<T>>(value: T, initial: T, op: Op) -> (T, T) {
    let incl = warp::inclusive_scan(value, op);
    let mask = warp::warp_lanes();
    // SAFETY: `mask` is the warp's existing lanes, which contain the caller.
    let before = unsafe { warp::shfl_up_sync_unchecked(mask, incl, 1) };
    let (prefix, total) = warp_prefix(incl, op);
    let seed = match prefix {
        Some(p) => op.combine(initial, p),
        None => initial,
    };
    let result = if lane_id() == 0 {
        seed
    } else {
        op.combine(seed, before)
    };
    (result, total)
}

/// Given each lane's inclusive warp scan, the combination of the warps before the caller's
/// (`None` in warp 0) and the block's total.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn warp_prefix<T: ShuffleValue, Op: ReduceOp<T>>(incl: T, op: Op) -> (Option<T>, T) {
    let mask = warp::warp_lanes();
    let last = 31 - mask.leading_zeros();
    let warps = warps();
    if warps == 1 {
        return (None, warp::broadcast(incl, last));
    }
    let s = scratch();
    let w = warp_id() as usize;
    if lane_id() == last {
        store(s, w, incl);
    }
    sync_all_arrived();
    let mut prefix = None;
    let mut acc: T = load(s, 0);
    for k in 1..warps as usize {
        if k == w {
            prefix = Some(acc);
        }
        acc = op.combine(acc, load(s, k));
    }
    sync_threads();
    (prefix, acc)
}

/// `value` as passed by thread `src_thread` (linear index in the block) to every thread of
/// the block (CUB's `BlockScan`/`cub::ShuffleIndex` broadcast). Every thread must call it with
/// the same `src_thread`; one that is not a thread of the block gives each caller its own
/// `value`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, thread};
///
/// /// Every element of a block scaled by the block's first element.
/// #[kernel]
/// pub fn scale_by_first(x: &[f32], mut out: DisjointSlice<f32>) {
///     let i = thread::index();
///     let v = x.get(i.get()).copied().unwrap_or(1.0);
///     let first = block::broadcast(v, 0);
///     out.set(&i, v / first);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn broadcast<T: ShuffleValue>(value: T, src_thread: u32) -> T {
    if src_thread >= threads_per_block() {
        return value;
    }
    let s = scratch();
    if linear_thread_idx() == src_thread {
        store(s, BROADCAST, value);
    }
    sync_all_arrived();
    let v = load(s, BROADCAST);
    sync_threads();
    v
}
