//! The kernels of `gpukernel-algorithms`: the device-wide reduce in one launch, the one-pass
//! scan ([`scan`]), the in-order reductions by segments and of a user's operator ([`ordered`],
//! [`user_op`]), and the histograms ([`histogram`] and [`histogram256_u8`]).
//!
//! This crate compiles twice, like every kernels crate: for `nvptx64-nvidia-cuda` (its
//! `build.rs`, through `nvptx-builder`) and for the host, where each kernel is the marker type
//! the runtime launches, on the GPU with [`PTX`] or on the simulator.
//!
//! The reduce ([`reduce_sum_f32`] & co.) runs a grid of a few blocks per SM; each thread walks
//! the input grid-stride in tiles of `BLOCK × VECS` 16-byte vectors (`VECS` vector loads in
//! flight per thread, `ld.global.nc.v4`), the few elements before the first 16-byte boundary
//! and after the last whole vector one per thread; then each block reduces its threads' values
//! ([`gpukernel_device::block::reduce`]) into one partial, and the last block to finish
//! reduces the partials, in block order, into the output ([`last_block`]). The result of a
//! float sum is the same from run to run on one device and grid: the ticket decides which
//! block combines the partials, never their order.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::ops::{Identity, Max, Min, Number, ReduceOp, Sum};
use gpukernel_device::prelude::*;
use gpukernel_device::warp::ShuffleValue;
use gpukernel_device::{block, thread};

pub mod last_block;
pub mod sort;

/// The PTX of every kernel in this crate (for the architecture `GPUKERNEL_ARCH`, default sm_90).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Threads per block of both passes.
pub const BLOCK: u32 = 256;
/// 16-byte vectors each thread loads per step of the first pass (loads in flight).
pub const VECS: usize = 4;

/// An element type of the device-wide algorithms: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`.
pub trait Item: ShuffleValue + DeviceCopy + Number {
    /// Elements per 16 bytes: 4 or 2.
    const PER: usize;
    /// `acc ⊕ e` for each element `e` of the 16 bytes `w`, in order.
    fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self;
    /// Element `i` (< `PER`) of the 16 bytes `w`.
    fn lane16(w: [u32; 4], i: usize) -> Self;
    /// Sets element `i` (< `PER`) of the 16 bytes `w`.
    fn set_lane16(w: &mut [u32; 4], i: usize, v: Self);
    /// The value's bits, zero-extended.
    fn to_bits64(self) -> u64;
    /// The value of the low `8 × size_of::<Self>()` bits.
    fn from_bits64(bits: u64) -> Self;
}

macro_rules! item32 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            const PER: usize = 4;
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                let e = |i: usize| <$t>::from_ne_bytes(w[i].to_ne_bytes());
                op.combine(op.combine(op.combine(op.combine(acc, e(0)), e(1)), e(2)), e(3))
            }
            #[inline(always)]
            fn lane16(w: [u32; 4], i: usize) -> Self { <$t>::from_ne_bytes(w[i].to_ne_bytes()) }
            #[inline(always)]
            fn set_lane16(w: &mut [u32; 4], i: usize, v: Self) {
                w[i] = u32::from_ne_bytes(v.to_ne_bytes());
            }
            #[inline(always)]
            fn to_bits64(self) -> u64 { u32::from_ne_bytes(self.to_ne_bytes()) as u64 }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self { <$t>::from_ne_bytes((bits as u32).to_ne_bytes()) }
        }
    )* };
}
item32!(u32, i32, f32);

macro_rules! item64 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            const PER: usize = 2;
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                op.combine(op.combine(acc, Self::lane16(w, 0)), Self::lane16(w, 1))
            }
            #[inline(always)]
            fn lane16(w: [u32; 4], i: usize) -> Self {
                <$t>::from_ne_bytes((w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32).to_ne_bytes())
            }
            #[inline(always)]
            fn set_lane16(w: &mut [u32; 4], i: usize, v: Self) {
                let b = u64::from_ne_bytes(v.to_ne_bytes());
                w[2 * i] = b as u32;
                w[2 * i + 1] = (b >> 32) as u32;
            }
            #[inline(always)]
            fn to_bits64(self) -> u64 { u64::from_ne_bytes(self.to_ne_bytes()) }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self { <$t>::from_ne_bytes(bits.to_ne_bytes()) }
        }
    )* };
}
item64!(u64, i64, f64);

/// Reads 16 bytes through the non-coherent (read-only) path: `ld.global.nc.v4.u32`.
///
/// # Safety
/// `p` is a 16-byte aligned global address valid for 16 bytes that nothing writes during the
/// kernel (a `&[T]` parameter's memory).
#[inline(always)]
pub(crate) unsafe fn ld16(p: *const [u32; 4]) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller's promise; the generic address of global memory is its global
        // address on every architecture of the target (sm_70 and later).
        unsafe {
            core::arch::asm!(
                "ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d,
                in(reg64) p,
                options(pure, readonly, nostack),
            );
        }
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promise.
    unsafe {
        p.read()
    }
}

/// The first pass of the two-launch reduce (the benchmark's breakdown): `partials[b]` = the
/// reduction of the elements block `b` visits.
#[inline(always)]
fn partial<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    partials: DisjointSlice<'_, T>,
    op: Op,
) {
    // Uniform checks before any barrier: the host launches exactly this shape.
    assert!(
        thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && partials.len() == thread::grid_dim_x() as usize
    );
    let total = block_total::<T, Op, V>(input, op);
    if thread::thread_idx_x() == 0 {
        // SAFETY: only the block's first thread writes slot `b`, and `b < grid_dim_x ==
        // partials.len()` (checked above).
        unsafe { partials.write(thread::block_idx_x() as usize, total) };
    }
}

/// The one-launch reduce: each block's total, then the last block to finish reduces them into
/// `out[0]` ([`last_block`]).
#[inline(always)]
fn reduce_one<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    out: DisjointSlice<'_, T>,
    scratch: DisjointSlice<'_, u64>,
    op: Op,
) {
    last_block::check_launch(&scratch, &out);
    let total = block_total::<T, Op, V>(input, op);
    last_block::finish(total, &scratch, &out, op);
}

/// The reduction of the elements block `b` visits (grid-stride, in tiles of `BLOCK × V`
/// 16-byte vectors), returned to every thread of the block. Blocks of [`BLOCK`] threads (a
/// trap otherwise).
#[inline(always)]
fn block_total<T: Item, Op: Identity<T>, const V: usize>(input: &[T], op: Op) -> T {
    assert!(thread::block_dim_x() == BLOCK);
    let size = core::mem::size_of::<T>();
    let per = 16 / size;
    let n = input.len();
    let base = input.as_ptr();
    let mis = base as usize % 16;
    let head = if mis == 0 {
        0
    } else {
        ((16 - mis) / size).min(n)
    };
    let nvec = (n - head) / per;
    let (t, b, g) = (
        thread::thread_idx_x() as usize,
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let block = BLOCK as usize;
    // SAFETY: `head <= n`; `head` elements bring the pointer to a 16-byte boundary (a `T`
    // address is a multiple of `size`, which divides 16).
    let vp = unsafe { base.add(head) }.cast::<[u32; 4]>();
    let tile = block * V;
    // Grid-stride: tile `k` to block `k mod g` (one contiguous run per block instead, so that
    // every block reads the same number of vectors, measured 0.98× CUB against 1.01× on an
    // H100 at 2^28 f32).
    let full = nvec / tile;
    // One accumulator per vector in flight: `V` short dependency chains instead of one long.
    let mut accs = [op.identity(); V];
    let mut k = b;
    while k < full {
        let mut w = [[0u32; 4]; V];
        for (j, wj) in w.iter_mut().enumerate() {
            // SAFETY: vectors `k * tile + j * block + t` for `j < V` are below
            // `full * tile <= nvec`: inside the input (a `&[T]`, which nobody writes during the
            // launch), 16-byte aligned.
            *wj = unsafe { ld16(vp.add(k * tile + j * block + t)) };
        }
        for (a, wj) in accs.iter_mut().zip(&w) {
            *a = T::fold16(*a, *wj, op);
        }
        k += g;
    }
    let mut acc = accs[0];
    for a in &accs[1..] {
        acc = op.combine(acc, *a);
    }
    let gid = b * block + t;
    let mut v = full * tile + gid;
    while v < nvec {
        // SAFETY: `v < nvec`, as above.
        acc = T::fold16(acc, unsafe { ld16(vp.add(v)) }, op);
        v += g * block;
    }
    if gid < head {
        acc = op.combine(acc, input[gid]);
    }
    let tail = head + nvec * per + gid;
    if tail < n {
        acc = op.combine(acc, input[tail]);
    }
    block::reduce(acc, op)
}

/// The second pass, one block: `out[0]` = the reduction of `partials`.
#[inline(always)]
fn finish<T: Item, Op: Identity<T>>(partials: &[T], mut out: DisjointSlice<'_, T>, op: Op) {
    assert!(thread::grid_dim_x() == 1 && thread::block_dim_y() == 1 && thread::block_dim_z() == 1);
    let (t, nt) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    // Four loads in flight per thread before their combines: the partials were written by
    // the first pass just before (L2), and one load per iteration would wait for each in
    // turn (a first pass of 4 blocks per SM leaves 2 or 3 partials per thread: three round
    // trips of the L2 instead of one, about 1 µs of the whole reduce).
    const U: usize = 4;
    let n = partials.len();
    let mut acc = op.identity();
    let mut i = t;
    loop {
        let mut v = [op.identity(); U];
        for (j, vj) in v.iter_mut().enumerate() {
            if let Some(p) = partials.get(i + j * nt) {
                *vj = *p;
            }
        }
        for (j, vj) in v.iter().enumerate() {
            if i + j * nt < n {
                acc = op.combine(acc, *vj);
            }
        }
        if i + U * nt >= n {
            break;
        }
        i += U * nt;
    }
    let total = block::reduce(acc, op);
    let i = thread::index();
    if i.get() == 0
        && let Some(o) = out.get_mut(&i)
    {
        *o = total;
    }
}

macro_rules! reduce_kernels {
    ($($name:ident: $t:ty, $op:ident;)*) => { $(
        #[doc = concat!("The device-wide `", stringify!($op), "` of `", stringify!($t), "` in \
            one launch: `out[0]` = the reduction of `input`. Blocks of [`BLOCK`] threads, any \
            one-dimensional grid; `scratch`: at least [`last_block::scratch_words`] words, the \
            first (the ticket) zero (see [`last_block`]).")]
        #[kernel]
        pub fn $name(input: &[$t], out: DisjointSlice<$t>, scratch: DisjointSlice<u64>) {
            reduce_one::<$t, $op, VECS>(input, out, scratch, $op);
        }
    )* };
}

reduce_kernels! {
    reduce_sum_f32: f32, Sum;
    reduce_sum_f64: f64, Sum;
    reduce_sum_i32: i32, Sum;
    reduce_sum_u32: u32, Sum;
    reduce_sum_i64: i64, Sum;
    reduce_sum_u64: u64, Sum;
    reduce_min_f32: f32, Min;
    reduce_min_f64: f64, Min;
    reduce_min_i32: i32, Min;
    reduce_min_u32: u32, Min;
    reduce_min_i64: i64, Min;
    reduce_min_u64: u64, Min;
    reduce_max_f32: f32, Max;
    reduce_max_f64: f64, Max;
    reduce_max_i32: i32, Max;
    reduce_max_u32: u32, Max;
    reduce_max_i64: i64, Max;
    reduce_max_u64: u64, Max;
}

/// [`reduce_sum_f32`] with 8 vectors in flight per thread instead of [`VECS`]: for the
/// benchmark's tuning rows only.
#[kernel]
pub fn reduce_sum_f32_v8(input: &[f32], out: DisjointSlice<f32>, scratch: DisjointSlice<u64>) {
    reduce_one::<f32, Sum, 8>(input, out, scratch, Sum);
}

/// [`reduce_sum_f32`] with 2 vectors in flight per thread: for the benchmark's tuning rows
/// only.
#[kernel]
pub fn reduce_sum_f32_v2(input: &[f32], out: DisjointSlice<f32>, scratch: DisjointSlice<u64>) {
    reduce_one::<f32, Sum, 2>(input, out, scratch, Sum);
}

/// The first of two launches of an f32 sum (the benchmark's breakdown of the one-launch
/// reduce: the first pass alone, and two launches): `partials[b]` = block `b`'s total. Blocks
/// of [`BLOCK`] threads, `partials.len()` blocks.
#[kernel]
pub fn reduce_partial_sum_f32(input: &[f32], partials: DisjointSlice<f32>) {
    partial::<f32, Sum, VECS>(input, partials, Sum);
}

/// The second of two launches of an f32 sum: `out[0]` from the partials. One block.
#[kernel]
pub fn reduce_final_sum_f32(partials: &[f32], out: DisjointSlice<f32>) {
    finish::<f32, Sum>(partials, out, Sum);
}

// --- scan: one pass, decoupled look-back ----------------------------------------------------

pub mod scan;
pub use scan::status_words;

/// Threads per block of the scans.
pub const SCAN_BLOCK: u32 = 128;
/// 16-byte vectors per thread per scan tile.
pub const SCAN_VECS: usize = 6;
/// Whether the scans take their tile from a counter (else the block index).
const SCAN_CLAIM: bool = false;
/// Nanoseconds warp 0 sleeps before its first look at the tiles before (grids of more than
/// 500 tiles).
#[doc(hidden)]
pub const SCAN_FIRST_NS: u32 = 1140;
/// Nanoseconds warp 0 sleeps between polls of a tile that has not published yet.
#[doc(hidden)]
pub const SCAN_POLL_NS: u32 = 688;

/// Elements per scan tile of a `size`-byte type: `SCAN_BLOCK × SCAN_VECS × 16 / size`.
pub const fn scan_tile_len(size: usize) -> usize {
    SCAN_BLOCK as usize * SCAN_VECS * (16 / size)
}

macro_rules! scan_kernels {
    ($($incl:ident, $excl:ident: $t:ty;)*) => { $(
        #[doc = concat!("Inclusive sum of `", stringify!($t), "` in one pass (decoupled \
            look-back). `status`: [`status_words`] zeroed words; blocks of [`SCAN_BLOCK`] \
            threads, one per tile of [`scan_tile_len`] elements.")]
        ///
        /// # Safety
        ///
        /// `status` holds [`status_words`] words that are all zero when the launch starts and
        /// that no other work reads or writes until it ends (a fresh `alloc_zeros` per launch,
        /// as `gpukernel-algorithms` gives each call). The kernel cannot tell stale words from
        /// its own: a status array used before gives a wrong output or none, and one whose
        /// tile words are not zero leaves a tile waiting for a predecessor no block computes,
        /// a hang.
        #[kernel]
        pub unsafe fn $incl(input: &[$t], output: DisjointSlice<$t>, status: DisjointSlice<u64>) {
            scan::scan_tile::<$t, Sum, true, SCAN_BLOCK, SCAN_VECS, SCAN_CLAIM, SCAN_FIRST_NS, SCAN_POLL_NS>(
                input, output, status, Sum,
            );
        }
        #[doc = concat!("Exclusive sum of `", stringify!($t), "` (`output[0] = 0`), as the \
            inclusive one.")]
        ///
        /// # Safety
        ///
        /// As for the inclusive scan: `status` is zeroed and this launch's alone.
        #[kernel]
        pub unsafe fn $excl(input: &[$t], output: DisjointSlice<$t>, status: DisjointSlice<u64>) {
            scan::scan_tile::<$t, Sum, false, SCAN_BLOCK, SCAN_VECS, SCAN_CLAIM, SCAN_FIRST_NS, SCAN_POLL_NS>(
                input, output, status, Sum,
            );
        }
    )* };
}

scan_kernels! {
    scan_inclusive_sum_f32, scan_exclusive_sum_f32: f32;
    scan_inclusive_sum_i32, scan_exclusive_sum_i32: i32;
    scan_inclusive_sum_u32, scan_exclusive_sum_u32: u32;
    scan_inclusive_sum_f64, scan_exclusive_sum_f64: f64;
    scan_inclusive_sum_i64, scan_exclusive_sum_i64: i64;
    scan_inclusive_sum_u64, scan_exclusive_sum_u64: u64;
}

/// Tuning variants of the inclusive f32 sum (the benchmark's rows only):
/// `(threads, vectors per thread, claim by counter, first sleep ns, poll sleep ns)`.
macro_rules! scan_tuning {
    ($($name:ident: $tb:expr, $v:expr, $claim:expr, $first:expr, $poll:expr;)*) => {
        /// The shapes of the scan tuning kernels, in [`SCAN_TUNING_NAMES`] order:
        /// `(threads, vectors per thread, claim by counter, first sleep ns, poll sleep ns)`.
        pub const SCAN_TUNING: &[(u32, usize, bool, u32, u32)] = &[$(($tb, $v, $claim, $first, $poll)),*];
        /// The names of the scan tuning kernels.
        pub const SCAN_TUNING_NAMES: &[&str] = &[$(stringify!($name)),*];
        $(
            #[doc = concat!("Inclusive f32 sum, tuning shape `", stringify!($tb, $v, $claim, $first, $poll), "`.")]
            ///
            /// # Safety
            ///
            /// As for the inclusive scans: `status` is zeroed and this launch's alone.
            #[kernel]
            pub unsafe fn $name(input: &[f32], output: DisjointSlice<f32>, status: DisjointSlice<u64>) {
                scan::scan_tile::<f32, Sum, true, $tb, $v, $claim, $first, $poll>(input, output, status, Sum);
            }
        )*
    };
}

scan_tuning! {
    scan_tune_128x6: 128, 6, false, 0, 0;
    scan_tune_128x6_sleep: 128, 6, false, 1140, 688;
    scan_tune_128x6_first600: 128, 6, false, 600, 688;
    scan_tune_128x6_first2000: 128, 6, false, 2000, 688;
    scan_tune_128x6_poll200: 128, 6, false, 1140, 200;
    scan_tune_128x5_sleep: 128, 5, false, 1140, 688;
    scan_tune_128x7_sleep: 128, 7, false, 1140, 688;
    scan_tune_256x6_sleep: 256, 6, false, 1140, 688;
    scan_tune_128x6_claim_sleep: 128, 6, true, 1140, 688;
}

// --- 256-bin histogram of bytes ---------------------------------------------------------------

/// Adds the count of each byte value of `data` (at most `u32::MAX` bytes: a longer input
/// traps) to `bins[value]` (256 bins, zeroed by the host). Each block counts into its own shared-memory bins (shared atomics), reading 16-byte
/// vectors grid-stride, then adds its non-zero bins to `bins` with one global atomic each.
/// Blocks of [`BLOCK`] threads, any grid.
#[kernel]
pub fn histogram256_u8(data: &[u8], bins: DisjointSlice<u32>) {
    // A bin counts to `u32::MAX`: a longer input could wrap one.
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && bins.len() == 256
            && data.len() <= u32::MAX as usize
    );
    let local = gpukernel_device::shared::shared_array!(u32, 256);
    let t = thread::thread_idx_x() as usize;
    // SAFETY: thread `t` (< 256) alone writes slot `t`; the barrier orders it before the
    // atomics.
    unsafe { local.write(t, 0) };
    gpukernel_device::sync::sync_threads();
    let count = |v: u32| {
        // SAFETY: a shared address of this block (`v < 256`), updated only atomically
        // between the two barriers.
        unsafe { gpukernel_device::atomic::add(local.as_mut_ptr().add((v & 255) as usize), 1u32) };
    };
    let n = data.len();
    let base = data.as_ptr();
    let head = ((16 - base as usize % 16) % 16).min(n);
    let nvec = (n - head) / 16;
    let gid = thread::global_index_x();
    let stride = thread::grid_stride_x();
    // SAFETY: `head <= n` brings the pointer to a 16-byte boundary.
    let vp = unsafe { base.add(head) }.cast::<[u32; 4]>();
    let mut v = gid;
    while v < nvec {
        // SAFETY: vector `v < nvec` lies inside `data` (a `&[u8]`), 16-byte aligned.
        let w = unsafe { ld16(vp.add(v)) };
        for word in w {
            count(word);
            count(word >> 8);
            count(word >> 16);
            count(word >> 24);
        }
        v += stride;
    }
    if gid < head {
        count(data[gid] as u32);
    }
    let tail = head + nvec * 16 + gid;
    if tail < n {
        count(data[tail] as u32);
    }
    gpukernel_device::sync::sync_threads();
    // SAFETY: no atomic on the shared bins runs after the barrier.
    let c = unsafe { local.read(t) };
    if c != 0 {
        // SAFETY: `t < 256 == bins.len()`; `bins` is updated only atomically in this launch.
        unsafe { gpukernel_device::atomic::add(bins.as_mut_ptr().add(t), c) };
    }
}

// --- in-order reductions: by segments, by rows, of a user's operator -----------------------

pub mod ordered;
pub mod user_op;
pub use ordered::{ORDERED_BLOCK, ORDERED_VECS};

macro_rules! segmented_kernels {
    ($($name:ident: $t:ty, $op:ident;)*) => { $(
        #[doc = concat!("Segmented `", stringify!($op), "` of `", stringify!($t), "`: `out[s]` \
            = the reduction of `input[offsets[s]..offsets[s + 1]]` (or with no offsets of row \
            `s` of `row_len` elements), the identity for an empty segment. Blocks of \
            [`ORDERED_BLOCK`] threads; `per_warp` != 0: a warp per segment.")]
        #[kernel]
        pub fn $name(
            input: &[$t],
            offsets: &[u32],
            row_len: u64,
            per_warp: u32,
            out: DisjointSlice<$t>,
        ) {
            ordered::segmented::<$t, $op>(input, offsets, row_len, per_warp, out, $op);
        }
    )* };
}

segmented_kernels! {
    segmented_sum_f32: f32, Sum;
    segmented_sum_f64: f64, Sum;
    segmented_sum_i32: i32, Sum;
    segmented_sum_u32: u32, Sum;
    segmented_sum_i64: i64, Sum;
    segmented_sum_u64: u64, Sum;
    segmented_min_f32: f32, Min;
    segmented_min_f64: f64, Min;
    segmented_min_i32: i32, Min;
    segmented_min_u32: u32, Min;
    segmented_min_i64: i64, Min;
    segmented_min_u64: u64, Min;
    segmented_max_f32: f32, Max;
    segmented_max_f64: f64, Max;
    segmented_max_i32: i32, Max;
    segmented_max_u32: u32, Max;
    segmented_max_i64: i64, Max;
    segmented_max_u64: u64, Max;
}

// --- general histogram (even bins) -----------------------------------------------------------

pub mod histogram;
pub use histogram::{SHARED_BINS, Sample};

macro_rules! histogram_kernels {
    ($($name:ident: $t:ty;)*) => { $(
        #[doc = concat!("Adds the histogram of `", stringify!($t), "` samples in `bins.len()` \
            even bins from `lower` (inclusive) to `upper` (exclusive) to `bins` (see \
            [`histogram`]). Blocks of [`BLOCK`] threads, any grid.")]
        #[kernel]
        pub fn $name(samples: &[$t], lower: $t, upper: $t, bins: DisjointSlice<u32>) {
            histogram::histogram_even::<$t>(samples, lower, upper, bins);
        }
    )* };
}

histogram_kernels! {
    histogram_even_f32: f32;
    histogram_even_f64: f64;
    histogram_even_i32: i32;
    histogram_even_u32: u32;
}
