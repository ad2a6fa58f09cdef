//! Device-wide LSD radix sort, onesweep style (Adinets and Merrill, "Onesweep: A Faster
//! Least Significant Digit Radix Sort for GPUs", 2022; CUB's `DeviceRadixSort`).
//!
//! 1. [`sort_histogram_u32`] & co.: one pass over the keys counts every 8-bit digit of every
//!    sorting pass at once (`passes × 256` counters: per-block shared counters, then one
//!    global atomic per non-zero bin).
//! 2. [`sort_scan_bins`]: one block per pass turns its 256 counts into the bins' global
//!    starts (an exclusive scan).
//! 3. [`sort_onesweep_u32`] & co., one launch per 8-bit digit: each block claims a tile of
//!    `threads × ITEMS` keys in start order (an atomic counter), counts its keys' digits
//!    (per-warp counters in shared memory) and publishes its 256 digit counts at once, before
//!    ranking; it then ranks the keys by digit from those counts (CUB's
//!    `BlockRadixRankMatchEarlyCounts`) and writes each to its place in shared memory, while
//!    thread `d` looks back over the tiles before it for the keys of digit `d` they hold
//!    (decoupled look-back per digit), and writes each key to `bin start + keys of its digit
//!    in earlier tiles + its place in the tile`: stable, so the passes from the least
//!    significant digit up sort the keys. The former pass over
//!    [`block::radix_rank`] and [`block::scatter_to_striped`] stays as a
//!    tuning variant for comparison.
//!
//! Keys are compared through order-preserving bits ([`SortKey`]): signed integers with the
//! sign bit flipped, floats in IEEE total order (`f32::total_cmp`: -NaN < -∞ < … < -0.0 <
//! +0.0 < … < +∞ < +NaN), and all the bits flipped again for a descending sort.

use gpukernel_device::prelude::*;
use gpukernel_device::warp::ShuffleValue;
use gpukernel_device::{block, sync, thread};

use crate::BLOCK;

/// Bits per digit, one sorting pass per digit.
pub const RADIX_BITS: u32 = 8;
/// Bins per digit.
pub const RADIX: usize = 1 << RADIX_BITS;
/// Threads per block of the onesweep pass of 32-bit keys: 256 (three blocks per SM at 80
/// registers a thread).
pub const SORT_THREADS_32: u32 = 256;
/// Keys per thread per onesweep tile of 32-bit keys: 28 (tiles of 7168 keys).
pub const SORT_ITEMS_32: usize = 28;
/// Threads per block of the onesweep pass of 32-bit keys with values: 384 (two blocks per
/// SM at 80 registers a thread).
pub const SORT_THREADS_PAIRS_32: u32 = 384;
/// Threads per block of the onesweep pass of 64-bit keys, with or without values.
pub const SORT_THREADS_PAIRS: u32 = 256;
/// Keys per thread per onesweep tile of key-value pairs: 16 (tiles of 6144 pairs of 32-bit
/// keys, 4096 of 64-bit keys).
pub const SORT_ITEMS_PAIRS: usize = 16;
/// Keys per thread per onesweep tile of 64-bit keys: 16 (tiles of 4096 keys, which fill the
/// exchange buffer).
pub const SORT_ITEMS_64: usize = 16;
/// Keys per thread of the histogram's grid-stride steps.
pub const HIST_ITEMS: usize = 8;

/// Look-back status word: `flag << 30 | count` (so at most `2^30 - 1` keys).
const FLAG_AGGREGATE: u32 = 1 << 30;
const FLAG_INCLUSIVE: u32 = 2 << 30;
const COUNT_MASK: u32 = (1 << 30) - 1;
/// The most keys a sort takes: the look-back counts have 30 bits.
pub const SORT_MAX_KEYS: usize = COUNT_MASK as usize;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
    impl Sealed for u64 {}
}

/// A key type of the radix sort: `u32`, `i32`, `f32`, `u64`.
pub trait SortKey: ShuffleValue + DeviceCopy + Default + sealed::Sealed {
    /// Sorting passes: the key's bits / [`RADIX_BITS`].
    const PASSES: u32;
    /// Threads per block of the keys-only onesweep pass.
    const THREADS: u32;
    /// Keys per onesweep tile (blocks of [`THREADS`](Self::THREADS) threads).
    const TILE: usize;
    /// Threads per block of the onesweep pass of pairs.
    const PAIRS_THREADS: u32;
    /// Keys per onesweep tile of a sort of pairs (fewer: the values need registers too).
    const PAIRS_TILE: usize = Self::PAIRS_THREADS as usize * SORT_ITEMS_PAIRS;
    /// The digit at bit `shift` of the key's order-preserving bits, XORed with `flip` (all
    /// ones for a descending sort, else zero).
    fn digit(self, shift: u32, flip: u32) -> u32;
    /// The key that sorts last in the order of `flip` (every digit of it the greatest): the
    /// stand-in for the missing keys of a last, partial tile.
    fn last(flip: u32) -> Self;
}

impl SortKey for u32 {
    const PASSES: u32 = 4;
    const THREADS: u32 = SORT_THREADS_32;
    const PAIRS_THREADS: u32 = SORT_THREADS_PAIRS_32;
    const TILE: usize = SORT_THREADS_32 as usize * SORT_ITEMS_32;
    #[inline(always)]
    fn digit(self, shift: u32, flip: u32) -> u32 {
        ((self ^ flip) >> shift) & (RADIX as u32 - 1)
    }
    #[inline(always)]
    fn last(flip: u32) -> Self {
        if flip == 0 { u32::MAX } else { 0 }
    }
}

impl SortKey for i32 {
    const PASSES: u32 = 4;
    const THREADS: u32 = SORT_THREADS_32;
    const PAIRS_THREADS: u32 = SORT_THREADS_PAIRS_32;
    const TILE: usize = SORT_THREADS_32 as usize * SORT_ITEMS_32;
    #[inline(always)]
    fn digit(self, shift: u32, flip: u32) -> u32 {
        ((self as u32 ^ 0x8000_0000 ^ flip) >> shift) & (RADIX as u32 - 1)
    }
    #[inline(always)]
    fn last(flip: u32) -> Self {
        if flip == 0 { i32::MAX } else { i32::MIN }
    }
}

impl SortKey for f32 {
    const PASSES: u32 = 4;
    const THREADS: u32 = SORT_THREADS_32;
    const PAIRS_THREADS: u32 = SORT_THREADS_PAIRS_32;
    const TILE: usize = SORT_THREADS_32 as usize * SORT_ITEMS_32;
    #[inline(always)]
    fn digit(self, shift: u32, flip: u32) -> u32 {
        let b = self.to_bits();
        // Negative: every bit flipped (a larger magnitude sorts first); else the sign set.
        let m = if b >> 31 != 0 { u32::MAX } else { 0x8000_0000 };
        ((b ^ m ^ flip) >> shift) & (RADIX as u32 - 1)
    }
    #[inline(always)]
    fn last(flip: u32) -> Self {
        // +NaN and -NaN with every payload bit: the ends of the total order.
        f32::from_bits(if flip == 0 { 0x7fff_ffff } else { u32::MAX })
    }
}

impl SortKey for u64 {
    const PASSES: u32 = 8;
    const THREADS: u32 = SORT_THREADS_PAIRS;
    const PAIRS_THREADS: u32 = SORT_THREADS_PAIRS;
    const TILE: usize = SORT_THREADS_PAIRS as usize * SORT_ITEMS_64;
    #[inline(always)]
    fn digit(self, shift: u32, flip: u32) -> u32 {
        let f = flip as u64 | (flip as u64) << 32;
        ((self ^ f) >> shift) as u32 & (RADIX as u32 - 1)
    }
    #[inline(always)]
    fn last(flip: u32) -> Self {
        if flip == 0 { u64::MAX } else { 0 }
    }
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

/// The address of word `i` of `s` (bounds-checked: a trap, a panic in the simulator).
#[inline(always)]
fn word_ptr(s: &DisjointSlice<'_, u32>, i: usize) -> *mut u32 {
    if i >= s.len() {
        gpukernel_device::__trap_out_of_bounds(i, s.len());
    }
    // SAFETY: in bounds.
    unsafe { s.as_mut_ptr().add(i) }
}

/// A relaxed load at device scope of status word `i` (`ld.relaxed.gpu`: the L2).
#[inline(always)]
fn status_load(s: &DisjointSlice<'_, u32>, i: usize) -> u32 {
    let p = word_ptr(s, i);
    #[cfg(target_arch = "nvptx64")]
    {
        let w: u32;
        // SAFETY: an aligned word of global memory; every access to the status words during
        // the launch is a relaxed atomic.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {1}; ld.relaxed.gpu.global.b32 {0}, [g]; }}",
                out(reg32) w, in(reg64) p, options(nostack, readonly),
            );
        }
        w
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: as above; the simulator's blocks are host threads.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }
        .load(core::sync::atomic::Ordering::Relaxed)
}

/// A relaxed store at device scope of status word `i` (`st.relaxed.gpu`).
#[inline(always)]
fn status_store(s: &DisjointSlice<'_, u32>, i: usize, w: u32) {
    let p = word_ptr(s, i);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `status_load`.
    unsafe {
        core::arch::asm!(
            "{{ .reg .b64 g; cvta.to.global.u64 g, {0}; st.relaxed.gpu.global.b32 [g], {1}; }}",
            in(reg64) p, in(reg32) w, options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: as in `status_load`.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }
        .store(w, core::sync::atomic::Ordering::Relaxed)
}

/// `hist[p × 256 + d]` += the keys whose digit `p` is `d`, for every pass `p`.
#[inline(always)]
fn histogram<K: SortKey>(keys: &[K], hist: DisjointSlice<'_, u32>, flip: u32) {
    let passes = K::PASSES as usize;
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && hist.len() == passes * RADIX
    );
    let local = gpukernel_device::shared::shared_array!(u32, 8 * RADIX);
    let t = thread::thread_idx_x() as usize;
    for i in (t..passes * RADIX).step_by(BLOCK as usize) {
        // SAFETY: thread `t` alone writes slots `t + 256 k`; the barrier orders it before the
        // atomics.
        unsafe { local.write(i, 0) };
    }
    sync::sync_threads();
    let count = |key: K| {
        for p in 0..passes {
            let d = key.digit(p as u32 * RADIX_BITS, flip) as usize;
            // SAFETY: a shared address of this block (`p × 256 + d < 8 × 256`), updated only
            // atomically between the two barriers.
            unsafe { gpukernel_device::atomic::add(local.as_mut_ptr().add(p * RADIX + d), 1u32) };
        }
    };
    let n = keys.len();
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    // `HIST_ITEMS` loads in flight per thread, then the rest one by one.
    while i + (HIST_ITEMS - 1) * stride < n {
        let mut ks = [K::default(); HIST_ITEMS];
        unroll::<HIST_ITEMS>(|j| {
            // SAFETY: `i + j × stride <= i + (HIST_ITEMS - 1) × stride < n` (the loop's
            // condition): unchecked, so that every load is issued before the first count.
            ks[j] = unsafe { *keys.get_unchecked(i + j * stride) }
        });
        unroll::<HIST_ITEMS>(|j| count(ks[j]));
        i += HIST_ITEMS * stride;
    }
    while i < n {
        count(keys[i]);
        i += stride;
    }
    sync::sync_threads();
    for i in (t..passes * RADIX).step_by(BLOCK as usize) {
        // SAFETY: no atomic on the shared bins runs after the barrier.
        let c = unsafe { local.read(i) };
        if c != 0 {
            // SAFETY: `i < hist.len()` (checked above); `hist` is updated only atomically.
            unsafe { gpukernel_device::atomic::add(hist.as_mut_ptr().add(i), c) };
        }
    }
}

macro_rules! histogram_kernels {
    ($($name:ident: $t:ty;)*) => { $(
        #[doc = concat!("The digit counts of every pass of a sort of `", stringify!($t),
            "` keys, added to `hist` (`passes × 256` zeroed counters). Blocks of [`BLOCK`] \
            threads, any grid. `flip`: `u32::MAX` for a descending sort, else 0.")]
        #[kernel]
        pub fn $name(keys: &[$t], hist: DisjointSlice<u32>, flip: u32) {
            histogram::<$t>(keys, hist, flip);
        }
    )* };
}

histogram_kernels! {
    sort_histogram_u32: u32;
    sort_histogram_i32: i32;
    sort_histogram_f32: f32;
    sort_histogram_u64: u64;
}

/// Each pass's 256 digit counts in `hist` become the bins' starts (an exclusive scan), in
/// place. One block of 256 threads per pass (`hist.len()` = 256 × the grid).
#[kernel]
pub fn sort_scan_bins(mut hist: DisjointSlice<u32>) {
    assert!(
        thread::block_dim_x() == RADIX as u32
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && hist.len() == RADIX * thread::grid_dim_x() as usize
    );
    let i = thread::index();
    let c = hist.get_mut(&i).map_or(0, |c| *c);
    let (start, _) = block::exclusive_scan(c, 0u32, gpukernel_device::ops::Sum);
    hist.set(&i, start);
}

/// The values that travel with the keys: none, or an input and an output.
type Values<'a, V> = Option<(&'a [V], DisjointSlice<'a, V>)>;

/// One onesweep pass over digit `shift / 8` (see the [module documentation](self)).
///
/// # Safety
/// `bins` holds the bins' starts of this digit over all of `keys_in` with this `flip` (from
/// [`sort_histogram_u32`] & co. and [`sort_scan_bins`]); `status` is `tiles × 256` zeroed
/// words and `counter[0]` is zero, where `tiles` = the grid = `keys_in.len() / (BLOCK ×
/// ITEMS)` rounded up. Then every output element is written exactly once.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernels' parameters, passed through
unsafe fn onesweep<
    K: SortKey,
    V: ShuffleValue + DeviceCopy + Default,
    const THREADS: usize,
    const ITEMS: usize,
    const MATCH_ANY: bool,
>(
    keys_in: &[K],
    keys_out: DisjointSlice<'_, K>,
    values: Values<'_, V>,
    bins: &[u32],
    status: DisjointSlice<'_, u32>,
    counter: DisjointSlice<'_, u32>,
    shift: u32,
    flip: u32,
) {
    let n = keys_in.len();
    let tile_len = THREADS * ITEMS;
    let tiles = n.div_ceil(tile_len);
    assert!(
        thread::block_dim_x() as usize == THREADS
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && THREADS >= RADIX
            && keys_out.len() == n
            && values
                .as_ref()
                .is_none_or(|(vi, vo)| vi.len() == n && vo.len() == n)
            && bins.len() == RADIX
            && status.len() == tiles * RADIX
            && !counter.is_empty()
            && thread::grid_dim_x() as usize == tiles
    );
    let (t, lane, w) = (
        thread::thread_idx_x() as usize,
        thread::lane_id() as usize,
        thread::warp_id() as usize,
    );
    let claimed = if t == 0 {
        // SAFETY: `counter[0]` is touched only atomically during the launch.
        unsafe { gpukernel_device::atomic::add(counter.as_mut_ptr(), 1u32) }
    } else {
        0
    };
    let tile = block::broadcast(claimed, 0) as usize;
    if tile >= tiles {
        // Only with a counter that did not start at zero (the caller's promise).
        return;
    }
    let base = tile * tile_len;
    let valid = (n - base).min(tile_len);
    // Warp-striped: item `j` of lane `l` of warp `w` is key `w × 32 × ITEMS + 32 j + l` of the
    // tile, the order `radix_rank` keeps for equal digits.
    let seg = w * 32 * ITEMS + lane;
    let mut keys = [K::default(); ITEMS];
    let mut digits = [RADIX as u32 - 1; ITEMS];
    if valid == tile_len {
        unroll::<ITEMS>(|j| {
            // SAFETY: `base + seg + 32 j < base + tile_len <= n` (a whole tile).
            keys[j] = unsafe { *keys_in.get_unchecked(base + seg + 32 * j) };
            digits[j] = keys[j].digit(shift, flip);
        });
    } else {
        // The last tile: the missing keys rank last (the greatest digit, after every real
        // key of it) and are not written.
        unroll::<ITEMS>(|j| {
            if seg + 32 * j < valid {
                keys[j] = keys_in[base + seg + 32 * j];
                digits[j] = keys[j].digit(shift, flip);
            }
        });
    }
    let ranked = if MATCH_ANY {
        block::__radix_rank_match_any::<RADIX_BITS, ITEMS>(digits)
    } else {
        block::radix_rank::<RADIX_BITS, ITEMS>(digits)
    };

    // Thread `d < 256` speaks for digit `d`: its count in this tile, published at once.
    let d = t;
    let count = if d == RADIX - 1 {
        ranked.bin_count - (tile_len - valid) as u32
    } else {
        ranked.bin_count
    };
    if d < RADIX {
        if tile == 0 {
            status_store(&status, d, FLAG_INCLUSIVE | count);
        } else {
            status_store(&status, tile * RADIX + d, FLAG_AGGREGATE | count);
        }
    }

    // The keys to digit order in shared memory, while the tiles before publish.
    let sorted = block::scatter_to_striped(keys, ranked.ranks);

    let table = gpukernel_device::shared::shared_array!(u32, RADIX);
    if d < RADIX {
        // Look back: the keys of digit `d` in the tiles before this one.
        let mut before = 0u32;
        if tile > 0 {
            let mut i = tile;
            loop {
                i -= 1;
                let s = loop {
                    let s = status_load(&status, i * RADIX + d);
                    if s & !COUNT_MASK != 0 {
                        break s;
                    }
                    // Nothing on the GPU (0 ns: the loop's timing is unchanged); in the
                    // simulator the end of this thread once another block of the launch
                    // failed, whose tile would never publish (as the scan's look-back).
                    sync::poll_pause(0);
                };
                before += s & COUNT_MASK;
                if s & FLAG_INCLUSIVE != 0 {
                    break;
                }
            }
            status_store(&status, tile * RADIX + d, FLAG_INCLUSIVE | (before + count));
        }
        // Where digit `d`'s keys of this tile go, less their first place in the tile.
        // SAFETY: thread `d` alone writes slot `d`; read only after the barrier below.
        unsafe {
            table.write(
                d,
                bins[d].wrapping_add(before).wrapping_sub(ranked.bin_start),
            )
        };
    }
    sync::sync_threads();

    let mut dst = [0usize; ITEMS];
    unroll::<ITEMS>(|j| {
        let place = t + THREADS * j;
        // SAFETY: no thread writes the table after the barrier.
        let at = unsafe { table.read(sorted[j].digit(shift, flip) as usize) };
        dst[j] = at.wrapping_add(place as u32) as usize;
        if place < valid {
            // SAFETY: the bins' starts, the earlier tiles' counts and the places in the tile
            // make a permutation of the keys (the caller's promise), so `dst[j]` is this key's
            // alone; out of bounds traps.
            unsafe { keys_out.write(dst[j], sorted[j]) };
        }
    });
    if let Some((values_in, values_out)) = values {
        let mut v = [V::default(); ITEMS];
        unroll::<ITEMS>(|j| {
            if seg + 32 * j < valid {
                v[j] = values_in[base + seg + 32 * j];
            }
        });
        let v = block::scatter_to_striped(v, ranked.ranks);
        unroll::<ITEMS>(|j| {
            if t + THREADS * j < valid {
                // SAFETY: as for the key it travels with.
                unsafe { values_out.write(dst[j], v[j]) };
            }
        });
    }
}

/// The lanes of the warp whose digit `d` equals the caller's: `RADIX_BITS` ballots (faster
/// than one `match.any.sync`: 0.61× CUB against 0.83× in the pass of 384 × 20 keys on an
/// H200). The whole warp calls it.
#[inline(always)]
fn peers(d: u32) -> u32 {
    let mut peers = gpukernel_device::warp::FULL_MASK;
    for b in 0..RADIX_BITS {
        let set = (d >> b) & 1 != 0;
        // SAFETY: the whole warp calls it: every lane is in the mask.
        let votes = unsafe { gpukernel_device::warp::ballot_sync_unchecked(u32::MAX, set) };
        peers &= if set { votes } else { !votes };
    }
    peers
}

/// The most warps of a block of [`onesweep_early`] (blocks of up to 384 threads).
const EARLY_MAX_WARPS: usize = 12;
/// The 32-bit words of [`onesweep_early`]'s exchange buffer: a tile of 32-bit keys (up to
/// 8192), or of 64-bit keys (up to 4096).
const EARLY_EXCHANGE_WORDS: usize = 8192;

/// One onesweep pass over digit `shift / 8` with the digit counts computed first (CUB's
/// `BlockRadixRankMatchEarlyCounts`), as [`onesweep`] otherwise (the same contract and
/// results):
///
/// 1. each warp counts its keys' digits in a histogram of its own in shared memory (one
///    shared atomic per key);
/// 2. thread `d < 256` sums digit `d` over the warps, publishes the tile's count of `d` for
///    the look-back at once (before the keys are ranked: the tiles after this one find it
///    early), and turns the warps' counts into each warp's first place for `d` (a scan over
///    the warps, then over the digits);
/// 3. each warp ranks its keys from those first places (`RADIX_BITS` ballots per key, one
///    shared atomic per digit and warp) and writes each key at once to its place in shared
///    memory: the ranks are final, nothing is scanned after the ranking, and a keys-only
///    sort keeps no rank in registers;
/// 4. thread `d` looks back over the earlier tiles for digit `d`, then the block writes its
///    keys in place order to `bin start + keys of the digit in earlier tiles + place`.
///
/// Five barriers per tile (seven with values).
///
/// # Safety
/// As [`onesweep`].
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernels' parameters, passed through
unsafe fn onesweep_early<
    K: SortKey,
    V: ShuffleValue + DeviceCopy + Default,
    const THREADS: usize,
    const ITEMS: usize,
>(
    keys_in: &[K],
    keys_out: DisjointSlice<'_, K>,
    values: Values<'_, V>,
    bins: &[u32],
    status: DisjointSlice<'_, u32>,
    counter: DisjointSlice<'_, u32>,
    shift: u32,
    flip: u32,
) {
    let n = keys_in.len();
    let tile_len = THREADS * ITEMS;
    let tiles = n.div_ceil(tile_len);
    let wide = core::mem::size_of::<K>() == 8 || core::mem::size_of::<V>() == 8;
    let warps = THREADS / 32;
    assert!(
        thread::block_dim_x() as usize == THREADS
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && THREADS >= RADIX
            && THREADS.is_multiple_of(32)
            && warps <= EARLY_MAX_WARPS
            && tile_len * if wide { 2 } else { 1 } <= EARLY_EXCHANGE_WORDS
            && keys_out.len() == n
            && values
                .as_ref()
                .is_none_or(|(vi, vo)| vi.len() == n && vo.len() == n)
            && bins.len() == RADIX
            && status.len() == tiles * RADIX
            && !counter.is_empty()
            && thread::grid_dim_x() as usize == tiles
    );
    let counts = gpukernel_device::shared::shared_array!(u32, EARLY_MAX_WARPS * RADIX);
    let exchange = gpukernel_device::shared::shared_array!(u32, EARLY_EXCHANGE_WORDS);
    let table = gpukernel_device::shared::shared_array!(u32, RADIX);
    // Word 0: the tile; words 1..=8: the digit scan's warp totals.
    let misc = gpukernel_device::shared::shared_array!(u32, 16);
    let (t, lane) = (thread::thread_idx_x() as usize, thread::lane_id() as usize);
    // `min`: below the checked maximum, which bounds the counters' indices for the compiler.
    let w = (t / 32).min(EARLY_MAX_WARPS - 1);
    let row = w * RADIX;

    // Each warp zeroes its own counters; the barrier below orders that before any count.
    for i in (lane..RADIX).step_by(32) {
        // SAFETY: `row + i < EARLY_MAX_WARPS × 256`; row `w` is this warp's alone until the
        // barrier.
        unsafe { counts.write(row + i, 0) };
    }
    if t == 0 {
        // SAFETY: `counter[0]` is touched only atomically during the launch; `misc[0]` is
        // written by thread 0 alone and read after the barrier.
        unsafe { misc.write(0, gpukernel_device::atomic::add(counter.as_mut_ptr(), 1u32)) };
    }
    sync::sync_threads();
    // SAFETY: written before the barrier.
    let tile = unsafe { misc.read(0) } as usize;
    if tile >= tiles {
        // Only with a counter that did not start at zero (the caller's promise).
        return;
    }
    let base = tile * tile_len;
    let valid = (n - base).min(tile_len);
    // Warp-striped: item `j` of lane `l` of warp `w` is key `w × 32 × ITEMS + 32 j + l` of the
    // tile, the order the ranks keep for equal digits. A missing key of the last tile is the
    // key that sorts last (every digit the greatest), so that it ranks after every real key
    // (and is not written).
    let seg = w * 32 * ITEMS + lane;
    let mut keys = [K::last(flip); ITEMS];
    if valid == tile_len {
        unroll::<ITEMS>(|j| {
            // SAFETY: `base + seg + 32 j < base + tile_len <= n` (a whole tile).
            keys[j] = unsafe { *keys_in.get_unchecked(base + seg + 32 * j) };
        });
    } else {
        unroll::<ITEMS>(|j| {
            if seg + 32 * j < valid {
                keys[j] = keys_in[base + seg + 32 * j];
            }
        });
    }

    // 1. The warp's digit counts.
    unroll::<ITEMS>(|j| {
        let d = keys[j].digit(shift, flip) as usize;
        // SAFETY: `row + d < EARLY_MAX_WARPS × 256`; the counters are updated only atomically
        // between the barriers.
        unsafe { gpukernel_device::atomic::add(counts.as_mut_ptr().add(row + d), 1u32) };
    });
    sync::sync_threads();

    // 2. Thread `d` speaks for digit `d`: its count in the tile, published at once, and each
    // warp's first place among the tile's keys of digit `d` (warps in order).
    let d = t;
    let mut count = 0u32;
    if d < RADIX {
        for v in 0..warps {
            // SAFETY: `v × 256 + d < EARLY_MAX_WARPS × 256`; column `d` is this thread's alone
            // between the barriers.
            unsafe {
                let c = counts.read(v * RADIX + d);
                counts.write(v * RADIX + d, count);
                count += c;
            }
        }
        let published = if d == RADIX - 1 {
            count - (tile_len - valid) as u32
        } else {
            count
        };
        if tile == 0 {
            status_store(&status, d, FLAG_INCLUSIVE | published);
        } else {
            status_store(&status, tile * RADIX + d, FLAG_AGGREGATE | published);
        }
    }
    // The digits' first places in the tile: a scan over the digits, warp by warp (the digits'
    // threads are the first 8 warps, whole).
    let incl = if d < RADIX {
        gpukernel_device::warp::inclusive_scan(count, gpukernel_device::ops::Sum)
    } else {
        0
    };
    if d < RADIX && lane == 31 {
        // SAFETY: `1 + w < 9`, this warp's slot alone; read after the barrier.
        unsafe { misc.write(1 + w, incl) };
    }
    sync::sync_threads();
    let mut start = 0u32;
    if d < RADIX {
        start = incl - count;
        for v in 0..w {
            // SAFETY: written before the barrier.
            start += unsafe { misc.read(1 + v) };
        }
        for v in 0..warps {
            // SAFETY: column `d` is this thread's alone between the barriers.
            unsafe {
                let c = counts.read(v * RADIX + d);
                counts.write(v * RADIX + d, c + start);
            }
        }
    }
    sync::sync_threads();

    // 3. Ranks: per key, the warp's lanes with the same digit; one of them takes their places
    // from the warp's counter and hands them out. Each key goes to its place at once.
    let below_me = (1u32 << lane) - 1;
    let places = tile_len;
    let mut ranks = [0u32; ITEMS];
    unroll::<ITEMS>(|j| {
        let dj = keys[j].digit(shift, flip);
        let peers = peers(dj);
        // The highest of the peers leads (one instruction to find it).
        let leader = 31 - peers.leading_zeros();
        let mut first = 0;
        if lane as u32 == leader {
            // SAFETY: `row + dj < EARLY_MAX_WARPS × 256`; updated only atomically between
            // the barriers.
            first = unsafe {
                gpukernel_device::atomic::add(
                    counts.as_mut_ptr().add(row + dj as usize),
                    peers.count_ones(),
                )
            };
        }
        // SAFETY: as above.
        let first = unsafe { gpukernel_device::warp::shfl_sync_unchecked(u32::MAX, first, leader) };
        // The counters make the ranks a permutation of the tile's places; `min` keeps a
        // broken promise inside the buffer.
        let r = ((first + (peers & below_me).count_ones()) as usize).min(places - 1);
        ranks[j] = r as u32;
        let bits = keys[j].__to_bits();
        // SAFETY: `r < places <= EARLY_EXCHANGE_WORDS` (and `places + r` below it for 64-bit
        // keys, checked above); each place is written by one key, read after the barrier.
        unsafe {
            exchange.write(r, bits as u32);
            if core::mem::size_of::<K>() == 8 {
                exchange.write(places + r, (bits >> 32) as u32);
            }
        }
    });

    // 4. Look back: the keys of digit `d` in the tiles before this one (after the ranks: the
    // look-back first measured slower, 0.90× CUB against 0.94× on an H100).
    if d < RADIX {
        let mut before = 0u32;
        if tile > 0 {
            let mut i = tile;
            loop {
                i -= 1;
                let s = loop {
                    let s = status_load(&status, i * RADIX + d);
                    if s & !COUNT_MASK != 0 {
                        break s;
                    }
                    // Nothing on the GPU (0 ns: the loop's timing is unchanged); in the
                    // simulator the end of this thread once another block of the launch
                    // failed, whose tile would never publish (as the scan's look-back).
                    sync::poll_pause(0);
                };
                before += s & COUNT_MASK;
                if s & FLAG_INCLUSIVE != 0 {
                    break;
                }
            }
            let published = if d == RADIX - 1 {
                count - (tile_len - valid) as u32
            } else {
                count
            };
            status_store(
                &status,
                tile * RADIX + d,
                FLAG_INCLUSIVE | (before + published),
            );
        }
        // Where digit `d`'s keys of this tile go, less their first place in the tile.
        // SAFETY: thread `d` alone writes slot `d`; read only after the barrier below.
        unsafe { table.write(d, bins[d].wrapping_add(before).wrapping_sub(start)) };
    }
    sync::sync_threads();

    let mut dst = [0u32; ITEMS];
    unroll::<ITEMS>(|j| {
        let place = t + THREADS * j;
        // SAFETY: `place < places`; written before the barrier.
        let mut bits = unsafe { exchange.read(place) } as u64;
        if core::mem::size_of::<K>() == 8 {
            // SAFETY: as above.
            bits |= (unsafe { exchange.read(places + place) } as u64) << 32;
        }
        let key = K::__from_bits(bits);
        // SAFETY: no thread writes the table after the barrier.
        let at = unsafe { table.read(key.digit(shift, flip) as usize) };
        dst[j] = at.wrapping_add(place as u32);
        if place < valid {
            // SAFETY: the bins' starts, the earlier tiles' counts and the places in the tile
            // make a permutation of the keys (the caller's promise), so `dst[j]` is this key's
            // alone; out of bounds traps.
            unsafe { keys_out.write(dst[j] as usize, key) };
        }
    });
    if let Some((values_in, values_out)) = values {
        let mut v = [V::default(); ITEMS];
        unroll::<ITEMS>(|j| {
            if seg + 32 * j < valid {
                v[j] = values_in[base + seg + 32 * j];
            }
        });
        // Every key is read from the buffer before the values take it.
        sync::sync_threads();
        let vwide = core::mem::size_of::<V>() == 8;
        unroll::<ITEMS>(|j| {
            let r = ranks[j] as usize;
            let bits = v[j].__to_bits();
            // SAFETY: as for the keys.
            unsafe {
                exchange.write(r, bits as u32);
                if vwide {
                    exchange.write(places + r, (bits >> 32) as u32);
                }
            }
        });
        sync::sync_threads();
        unroll::<ITEMS>(|j| {
            let place = t + THREADS * j;
            // SAFETY: as for the keys.
            let mut bits = unsafe { exchange.read(place) } as u64;
            if vwide {
                // SAFETY: as above.
                bits |= (unsafe { exchange.read(places + place) } as u64) << 32;
            }
            if place < valid {
                // SAFETY: as for the key it travels with.
                unsafe { values_out.write(dst[j] as usize, V::__from_bits(bits)) };
            }
        });
    }
}

macro_rules! onesweep_kernels {
    ($($keys:ident, $pairs:ident: $t:ty, $threads:expr, $items:expr, $pthreads:expr;)*) => { $(
        #[doc = concat!("One onesweep pass of a sort of `", stringify!($t), "` keys (blocks \
            of `", stringify!($threads), "` threads, tiles of `", stringify!($threads), " × ",
            stringify!($items), "` keys).\n\n# Safety\nLaunched by \
            `Algorithms::sort_keys` only: `bins` = the scanned digit counts of this pass \
            (`shift`, `flip`) over `keys_in`, `status` = `tiles × 256` zeroed words, \
            `counter[0]` = 0, one block of `", stringify!($threads), "` threads per tile.")]
        #[kernel]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $keys(
            keys_in: &[$t],
            keys_out: DisjointSlice<$t>,
            bins: &[u32],
            status: DisjointSlice<u32>,
            counter: DisjointSlice<u32>,
            shift: u32,
            flip: u32,
        ) {
            // SAFETY: the caller's promise.
            unsafe {
                onesweep_early::<$t, u32, { $threads as usize }, { $items }>(
                    keys_in, keys_out, None, bins, status, counter, shift, flip,
                )
            }
        }
        #[doc = concat!("As [`", stringify!($keys), "`], with `u32` values moved with \
            their keys (blocks of `", stringify!($pthreads), "` threads, tiles of \
            [`SORT_ITEMS_PAIRS`] keys per thread).\n\n# Safety\nAs [`",
            stringify!($keys), "`], with the pairs' blocks and tiles.")]
        #[kernel]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $pairs(
            keys_in: &[$t],
            keys_out: DisjointSlice<$t>,
            values_in: &[u32],
            values_out: DisjointSlice<u32>,
            bins: &[u32],
            status: DisjointSlice<u32>,
            counter: DisjointSlice<u32>,
            shift: u32,
            flip: u32,
        ) {
            // SAFETY: the caller's promise.
            unsafe {
                onesweep_early::<
                    $t,
                    u32,
                    { $pthreads as usize },
                    { SORT_ITEMS_PAIRS },
                >(
                    keys_in,
                    keys_out,
                    Some((values_in, values_out)),
                    bins,
                    status,
                    counter,
                    shift,
                    flip,
                )
            }
        }
    )* };
}

onesweep_kernels! {
    sort_onesweep_u32, sort_onesweep_pairs_u32:
        u32, SORT_THREADS_32, SORT_ITEMS_32, SORT_THREADS_PAIRS_32;
    sort_onesweep_i32, sort_onesweep_pairs_i32:
        i32, SORT_THREADS_32, SORT_ITEMS_32, SORT_THREADS_PAIRS_32;
    sort_onesweep_f32, sort_onesweep_pairs_f32:
        f32, SORT_THREADS_32, SORT_ITEMS_32, SORT_THREADS_PAIRS_32;
    sort_onesweep_u64, sort_onesweep_pairs_u64:
        u64, SORT_THREADS_PAIRS, SORT_ITEMS_64, SORT_THREADS_PAIRS;
}

macro_rules! tuning_kernels {
    ($($name:ident: $early:literal, $threads:literal, $items:literal;)*) => { $(
        #[doc = concat!("[`sort_onesweep_u32`] with blocks of ", stringify!($threads),
            " threads, ", stringify!($items), " keys per thread, the counts early: ",
            stringify!($early), " (else the block rank of `block::radix_rank`): the \
            benchmark's tuning rows only.\n\n# Safety\nAs [`sort_onesweep_u32`], with these \
            blocks and tiles.")]
        #[doc(hidden)]
        #[kernel]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            keys_in: &[u32],
            keys_out: DisjointSlice<u32>,
            bins: &[u32],
            status: DisjointSlice<u32>,
            counter: DisjointSlice<u32>,
            shift: u32,
            flip: u32,
        ) {
            // SAFETY: the caller's promise.
            unsafe {
                if $early {
                    onesweep_early::<u32, u32, $threads, $items>(
                        keys_in, keys_out, None, bins, status, counter, shift, flip,
                    )
                } else {
                    onesweep::<u32, u32, $threads, $items, false>(
                        keys_in, keys_out, None, bins, status, counter, shift, flip,
                    )
                }
            }
        }
    )* };
}

/// The tuning variants of the u32 keys-only pass: (counts early, threads, keys per thread).
/// Measured at 2^28 on an H100 (2026-11-27), CUB's time / ours: the default 256 × 28 0.970,
/// these 0.730 (the former pass), 0.941 and 0.831 (CUB's sm_90 shape); 256 × 20 0.868 and
/// 256 × 32 (96 registers) 0.852.
pub const SORT_TUNING: [(bool, u32, usize); 3] =
    [(false, 256, 24), (true, 256, 24), (true, 384, 20)];

tuning_kernels! {
    sort_onesweep_u32_tune_a: false, 256, 24;
    sort_onesweep_u32_tune_b: true, 256, 24;
    sort_onesweep_u32_tune_c: true, 384, 20;
}

macro_rules! pairs_tuning_kernels {
    ($($name:ident: $threads:literal, $items:literal;)*) => { $(
        #[doc = concat!("[`sort_onesweep_pairs_u32`] with blocks of ", stringify!($threads),
            " threads and ", stringify!($items), " keys per thread: the benchmark's tuning \
            rows only.\n\n# Safety\nAs [`sort_onesweep_pairs_u32`], with these blocks and \
            tiles.")]
        #[doc(hidden)]
        #[kernel]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            keys_in: &[u32],
            keys_out: DisjointSlice<u32>,
            values_in: &[u32],
            values_out: DisjointSlice<u32>,
            bins: &[u32],
            status: DisjointSlice<u32>,
            counter: DisjointSlice<u32>,
            shift: u32,
            flip: u32,
        ) {
            // SAFETY: the caller's promise.
            unsafe {
                onesweep_early::<u32, u32, $threads, $items>(
                    keys_in,
                    keys_out,
                    Some((values_in, values_out)),
                    bins,
                    status,
                    counter,
                    shift,
                    flip,
                )
            }
        }
    )* };
}

/// The tuning variants of the u32 pairs' pass: (threads, keys per thread). At 2^28 on an
/// H100, CUB's time / ours: the default 384 × 16 0.830, 256 × 16 0.775 (256 × 20 at 80
/// registers: 0.43).
pub const SORT_PAIRS_TUNING: [(u32, usize); 1] = [(256, 16)];

pairs_tuning_kernels! {
    sort_onesweep_pairs_u32_tune_a: 256, 16;
}

// --- checks of the block primitives the sort is built on (tests only) ------------------------

macro_rules! rank_checks {
    ($($name:ident: $bits:literal, $items:literal;)*) => { $(
        #[doc = concat!("Test kernel: `block::radix_rank::<", stringify!($bits), ", ",
            stringify!($items), ">` of each block's `threads × ", stringify!($items),
            "` digits (warp-striped, as the ranks' order), each rank written where its digit \
            was read; thread `t` writes its bin count and start at `block × threads + t`. \
            Any whole-warp block of up to 256 threads; every digit's block is full.")]
        #[doc(hidden)]
        #[kernel]
        pub fn $name(
            digits: &[u32],
            ranks: DisjointSlice<u32>,
            mut counts: DisjointSlice<u32>,
            mut starts: DisjointSlice<u32>,
        ) {
            const ITEMS: usize = $items;
            let threads = thread::block_dim_x() as usize;
            let (lane, w) = (thread::lane_id() as usize, thread::warp_id() as usize);
            let at = thread::block_idx_x() as usize * threads * ITEMS + w * 32 * ITEMS + lane;
            let mut d = [0u32; ITEMS];
            unroll::<ITEMS>(|j| d[j] = digits[at + 32 * j]);
            let r = block::radix_rank::<$bits, ITEMS>(d);
            unroll::<ITEMS>(|j| {
                // SAFETY: element `at + 32 j` is this thread's item `j` alone.
                unsafe { ranks.write(at + 32 * j, r.ranks[j]) };
            });
            let i = thread::index();
            counts.set(&i, r.bin_count);
            starts.set(&i, r.bin_start);
        }
    )* };
}

rank_checks! {
    check_radix_rank_8x4: 8, 4;
    check_radix_rank_4x3: 4, 3;
    check_radix_rank_1x1: 1, 1;
}

macro_rules! exchange_checks {
    ($($name:ident: $t:ty, $items:literal;)*) => { $(
        #[doc = concat!("Test kernel: `block::scatter_to_striped` of `", stringify!($t),
            "`s: thread `t`'s item `j` (`x[block start + ", stringify!($items),
            " t + j]`) goes to place `ranks[…]` of its block; out[block start + t + threads \
            × j] = the item at place `t + threads × j`.")]
        #[doc(hidden)]
        #[kernel]
        pub fn $name(x: &[$t], ranks: &[u32], out: DisjointSlice<$t>) {
            const ITEMS: usize = $items;
            let threads = thread::block_dim_x() as usize;
            let t = thread::thread_idx_x() as usize;
            let start = thread::block_idx_x() as usize * threads * ITEMS;
            let mut v = [<$t>::default(); ITEMS];
            let mut r = [0u32; ITEMS];
            unroll::<ITEMS>(|j| {
                v[j] = x[start + ITEMS * t + j];
                r[j] = ranks[start + ITEMS * t + j];
            });
            let got = block::scatter_to_striped(v, r);
            unroll::<ITEMS>(|j| {
                // SAFETY: place `t + threads × j` of the block is this thread's alone.
                unsafe { out.write(start + t + threads * j, got[j]) };
            });
        }
    )* };
}

exchange_checks! {
    check_exchange_u32: u32, 5;
    check_exchange_f64: f64, 3;
}
