//! Block radix rank and exchange: what a radix sort does inside one block (CUB's
//! `BlockRadixRank` with its per-warp counters, and `BlockExchange::ScatterToStriped`).
//!
//! [`radix_rank`] gives each item of the block its place in the block's items ordered by a
//! digit of up to 8 bits, stably; [`scatter_to_striped`] then moves the items (keys, and
//! values with the same ranks) to those places, so that thread `t` holds places `t`,
//! `t + threads`, `t + 2 × threads`, …: consecutive threads hold consecutive places, which
//! makes their stores to global memory coalesced.
//!
//! # The scratch memory is the library's, as for the other block collectives
//!
//! Both use shared memory declared inside this module (the rank's counters: 12 KiB; the
//! exchange's buffer: [`EXCHANGE_WORDS`] 32-bit words, 32 KiB), which no kernel can name, and
//! every access to it is an atomic load, store or add of one 32-bit word. A misuse (threads
//! calling them with different arguments, ranks that repeat) gives wrong values, never
//! undefined behaviour; a rank outside the block's items stops the kernel (a trap, an error in
//! the simulator) like any out-of-bounds index. Each call ends with a block barrier, so calls
//! may follow each other at once. Every thread of the block must make the same calls, as for
//! [`reduce`](super::reduce).
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{block, thread};
//!
//! /// Sorts each block's 4 × 256 keys by their low byte (stably); blocks of 256 threads.
//! #[kernel]
//! pub fn sort_by_low_byte(keys: &[u32], out: DisjointSlice<u32>) {
//!     let (lane, warp) = (thread::lane_id() as usize, thread::warp_id() as usize);
//!     let base = thread::block_idx_x() as usize * 1024 + warp * 128;
//!     // Warp-striped: item j of a lane is element `base + 32 j + lane` (the ranks' order).
//!     let k: [u32; 4] = core::array::from_fn(|j| keys[base + 32 * j + lane]);
//!     let ranked = block::radix_rank::<8, 4>(k.map(|x| x & 0xff));
//!     let sorted = block::scatter_to_striped(k, ranked.ranks);
//!     let t = thread::thread_idx_x() as usize;
//!     let start = thread::block_idx_x() as usize * 1024;
//!     for (j, &x) in sorted.iter().enumerate() {
//!         // SAFETY: place `t + 256 j` of the block is this thread's alone.
//!         unsafe { out.write(start + t + 256 * j, x) };
//!     }
//! }
//! ```

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::shared::SharedArray;
use crate::sync::sync_threads;
use crate::thread::{lane_id, linear_thread_idx, threads_per_block, warp_id};
use crate::warp::{self, FULL_MASK, ShuffleValue};

/// The most warps a block may have for [`radix_rank`] (blocks of up to 384 threads).
pub const RANK_MAX_WARPS: usize = 12;
/// The most bins (`2^BITS`) of [`radix_rank`].
const RANK_MAX_BINS: usize = 256;
const COUNTERS: usize = RANK_MAX_WARPS * RANK_MAX_BINS;

/// The 32-bit words of [`scatter_to_striped`]'s buffer: `threads × ITEMS` items of 32 bits,
/// or half as many of 64 bits (e.g. 256 threads × 32 `u32`s, or × 16 `u64`s).
pub const EXCHANGE_WORDS: usize = 8192;

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn counters() -> SharedArray<u32, COUNTERS> {
    crate::shared_array!(u32, COUNTERS)
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn exchange_buffer() -> SharedArray<u32, EXCHANGE_WORDS> {
    crate::shared_array!(u32, EXCHANGE_WORDS)
}

/// `f(0)`, `f(1)`, …, `f(N - 1)` as straight-line code (at most 32 calls): constant indices,
/// so that per-item arrays stay in registers instead of local memory.
#[inline(always)]
fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    const { assert!(N <= 32, "unroll: at most 32 items") };
    macro_rules! calls {
        ($($i:literal)*) => { $( if $i < N { f($i); } )* };
    }
    calls!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

/// Word `i` of `s` as an atomic (bounds-checked: a trap, an error in the simulator).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn word<const N: usize>(s: SharedArray<u32, N>, i: usize) -> &'static AtomicU32 {
    if i >= N {
        crate::__trap_out_of_bounds(i, N);
    }
    // SAFETY: `i < N`: inside the block's array, aligned for `u32`; every access to the
    // module's arrays is atomic, and the array lives as long as the block.
    unsafe { AtomicU32::from_ptr(s.as_mut_ptr().add(i)) }
}

/// What [`radix_rank`] gives each thread.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, thread};
///
/// /// Per block of 64 threads: how many of its 64 bits are set (thread 1 holds bin 1).
/// #[kernel]
/// pub fn ones(bits: &[u32], mut out: DisjointSlice<u32>) {
///     let r: block::RadixRanks<1> = block::radix_rank::<1, 1>([bits[thread::index().get()] & 1]);
///     if thread::thread_idx_x() == 1 {
///         out.set(thread::index(), r.bin_count);
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RadixRanks<const ITEMS: usize> {
    /// Each item's place among the block's items ordered by digit, stably: items with equal
    /// digits keep the block's warp-striped order (see [`radix_rank`]). A permutation of
    /// `0..threads × ITEMS` over the block.
    pub ranks: [u32; ITEMS],
    /// In thread `t < 2^BITS`: how many of the block's items have digit `t` (0 in the others).
    pub bin_count: u32,
    /// In thread `t < 2^BITS`: the first place of digit `t`, the number of items with a smaller
    /// digit (0 in the others).
    pub bin_start: u32,
}

/// Ranks the block's `threads × ITEMS` items by their `BITS`-bit digits (`BITS` ≤ 8, each
/// digit below `2^BITS`): the place of each item in the block's items ordered by digit, items
/// of equal digits in the block's *warp-striped* order, where item `j` of lane `l` of warp `w`
/// comes at `w × 32 × ITEMS + 32 j + l` (a warp that loads item `j` of each lane from
/// `warp_start + 32 j + lane` reads coalesced, and these ranks then sort the block stably).
/// CUB's `BlockRadixRankMatch`: per-warp counters, the peers of a digit in a warp found with
/// `BITS` ballots.
///
/// The block must be whole warps, at most [`RANK_MAX_WARPS`] of them, and every digit below
/// `2^BITS`; otherwise the kernel stops (a trap, an error in the simulator). Every thread of
/// the block must call it (see the [`block`](crate::block) module): when some returned
/// before, it stops the kernel too.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, thread};
///
/// /// Each thread's 2 items' places by their 4-bit digit, and each bin's count.
/// #[kernel]
/// pub fn ranks(digits: &[u32], mut places: DisjointSlice<[u32; 2]>, mut counts: DisjointSlice<u32>) {
///     let (lane, warp) = (thread::lane_id() as usize, thread::warp_id() as usize);
///     let d = [digits[warp * 64 + lane], digits[warp * 64 + 32 + lane]];
///     let r = block::radix_rank::<4, 2>(d);
///     let i = thread::index();
///     places.set(&i, r.ranks);
///     counts.set(&i, r.bin_count);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn radix_rank<const BITS: u32, const ITEMS: usize>(digits: [u32; ITEMS]) -> RadixRanks<ITEMS> {
    rank::<BITS, ITEMS, false>(digits)
}

/// [`radix_rank`] with the peers of a digit found by one `match.any.sync` per item instead of
/// `BITS` ballots (the same ranks; in the simulator, the ballots): for comparing the two.
#[doc(hidden)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn __radix_rank_match_any<const BITS: u32, const ITEMS: usize>(
    digits: [u32; ITEMS],
) -> RadixRanks<ITEMS> {
    rank::<BITS, ITEMS, true>(digits)
}

/// The lanes of the warp whose `digit` equals the caller's (all 32 lanes call it together).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn peers<const BITS: u32, const MATCH_ANY: bool>(d: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    if MATCH_ANY {
        let m: u32;
        // SAFETY: `match.any.sync` over the whole warp, which every caller's block is made of
        // (checked by `rank`); it reads and writes registers only.
        unsafe {
            core::arch::asm!(
                "match.any.sync.b32 {0}, {1}, 0xffffffff;",
                out(reg32) m, in(reg32) d, options(nomem, nostack),
            );
        }
        return m;
    }
    let mut peers = FULL_MASK;
    for b in 0..BITS {
        let set = (d >> b) & 1 != 0;
        // SAFETY: the block is whole warps (checked by `rank`), so every lane is in the mask.
        let votes = unsafe { warp::ballot_sync_unchecked(FULL_MASK, set) };
        peers &= if set { votes } else { !votes };
    }
    peers
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn rank<const BITS: u32, const ITEMS: usize, const MATCH_ANY: bool>(
    digits: [u32; ITEMS],
) -> RadixRanks<ITEMS> {
    const { assert!(BITS >= 1 && BITS <= 8, "radix_rank: BITS must be 1 to 8") };
    let bins = 1usize << BITS;
    let threads = threads_per_block() as usize;
    // The same in every thread, so no barrier is left waiting.
    assert!(
        threads.is_multiple_of(32) && threads <= 32 * RANK_MAX_WARPS,
        "block::radix_rank: the block must be whole warps, at most 384 threads"
    );
    let warps = threads / 32;
    // `min`: the warp is below the checked maximum, which lets the compiler drop the bounds
    // checks of the counters (`w × bins + d < RANK_MAX_WARPS × 256`).
    let (t, lane, w) = (
        linear_thread_idx() as usize,
        lane_id(),
        (warp_id() as usize).min(RANK_MAX_WARPS - 1),
    );
    let c = counters();
    let mut i = t;
    while i < warps * bins {
        word(c, i).store(0, Relaxed);
        i += threads;
    }
    // Counts the threads that reach it, and traps when some returned before (as the other
    // block collectives): a GPU barrier does not wait for them, and their lanes would be
    // named in the warps' ballots and shuffles, their counters left as an earlier kernel
    // wrote them.
    super::sync_all_arrived();

    // Per item: the peers with the same digit in the warp; the lowest of them adds their
    // number to the warp's counter for the digit and hands the old count to the others.
    let below_me = (1u32 << lane) - 1;
    // Per item: its place among its warp's items of its digit, and the digit, in one word
    // (`place << BITS | digit`: the digits need no registers of their own after this loop).
    let mut local = [0u32; ITEMS];
    unroll::<ITEMS>(|j| {
        let d = digits[j];
        if d as usize >= bins {
            crate::__trap_out_of_bounds(d as usize, bins);
        }
        let peers = peers::<BITS, MATCH_ANY>(d);
        let leader = peers.trailing_zeros();
        let mut before = 0;
        if lane == leader {
            before = word(c, w * bins + d as usize).fetch_add(peers.count_ones(), Relaxed);
        }
        // SAFETY: as above.
        let before = unsafe { warp::shfl_sync_unchecked(FULL_MASK, before, leader) };
        local[j] = (before + (peers & below_me).count_ones()) << BITS | d;
    });
    sync_threads();

    // The counters become places: bin by bin, warp by warp. Each thread takes a run of
    // consecutive bins; a block scan of the runs' totals gives each run's start.
    let per = bins.div_ceil(threads);
    let first = (t * per).min(bins);
    let last = (first + per).min(bins);
    let mut run = 0u32;
    for bin in first..last {
        for v in 0..warps {
            run += word(c, v * bins + bin).load(Relaxed);
        }
    }
    let (mut at, _) = super::exclusive_scan(run, 0, crate::ops::Sum);
    for bin in first..last {
        for v in 0..warps {
            let cell = word(c, v * bins + bin);
            let n = cell.load(Relaxed);
            cell.store(at, Relaxed);
            at += n;
        }
    }
    sync_threads();

    let mut ranks = [0u32; ITEMS];
    unroll::<ITEMS>(|j| {
        let d = (local[j] & (bins as u32 - 1)) as usize;
        ranks[j] = word(c, w * bins + d).load(Relaxed) + (local[j] >> BITS);
    });
    let (bin_count, bin_start) = if t < bins {
        let start = word(c, t).load(Relaxed);
        let end = if t + 1 < bins {
            word(c, t + 1).load(Relaxed)
        } else {
            (threads * ITEMS) as u32
        };
        (end - start, start)
    } else {
        (0, 0)
    };
    sync_threads();
    RadixRanks {
        ranks,
        bin_count,
        bin_start,
    }
}

/// Moves the block's items to the places `ranks` names (a permutation of `0..threads ×
/// ITEMS`, such as [`radix_rank`]'s) and returns thread `t`'s places `t + threads × j` (CUB's
/// `BlockExchange::ScatterToStriped`). Items of 32 or 64 bits ([`ShuffleValue`]); the block's
/// items must fit [`EXCHANGE_WORDS`] 32-bit words and each rank be below `threads × ITEMS`,
/// otherwise the kernel stops (a trap, an error in the simulator). A rank named twice leaves
/// one of the items there, and a place named by no rank gives an unspecified value of `T`.
/// Every thread of the block must call it (see the [`block`](crate::block) module): when some
/// returned before, it stops the kernel.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{block, thread};
///
/// /// Each block's 2 × 64 values reversed (blocks of 64 threads).
/// #[kernel]
/// pub fn reverse(x: &[f64], out: DisjointSlice<f64>) {
///     let (t, base) = (thread::thread_idx_x() as usize, thread::block_idx_x() as usize * 128);
///     let v = [x[base + 2 * t], x[base + 2 * t + 1]];
///     let r = [127 - 2 * t as u32, 126 - 2 * t as u32];
///     let got = block::scatter_to_striped(v, r);
///     // SAFETY: places `t` and `t + 64` of the block are this thread's alone.
///     unsafe { out.write(base + t, got[0]); out.write(base + t + 64, got[1]) };
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn scatter_to_striped<T: ShuffleValue, const ITEMS: usize>(
    items: [T; ITEMS],
    ranks: [u32; ITEMS],
) -> [T; ITEMS] {
    let wide = core::mem::size_of::<T>() == 8;
    let threads = threads_per_block() as usize;
    let places = threads * ITEMS;
    assert!(
        places * if wide { 2 } else { 1 } <= EXCHANGE_WORDS,
        "block::scatter_to_striped: threads × ITEMS items do not fit the exchange buffer"
    );
    let s = exchange_buffer();
    unroll::<ITEMS>(|j| {
        let r = ranks[j] as usize;
        if r >= places {
            crate::__trap_out_of_bounds(r, places);
        }
        let bits = items[j].__to_bits();
        word(s, r).store(bits as u32, Relaxed);
        if wide {
            // The high halves after all the low ones: consecutive ranks, consecutive banks.
            word(s, places + r).store((bits >> 32) as u32, Relaxed);
        }
    });
    // Counts the threads that reach it and traps when some returned before: their places
    // would hold whatever an earlier kernel left in shared memory.
    super::sync_all_arrived();
    let t = linear_thread_idx() as usize;
    let mut out = items;
    unroll::<ITEMS>(|j| {
        let p = t + threads * j;
        let mut bits = word(s, p).load(Relaxed) as u64;
        if wide {
            bits |= (word(s, places + p).load(Relaxed) as u64) << 32;
        }
        out[j] = T::__from_bits(bits);
    });
    sync_threads();
    out
}
