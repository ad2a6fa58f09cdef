//! The kernels of `gpukernel-algorithms`: device-wide reduce in two passes.
//!
//! This crate compiles twice, like every kernels crate: for `nvptx64-nvidia-cuda` (its
//! `build.rs`, through `nvptx-builder`) and for the host, where each kernel is the marker type
//! the runtime launches, on the GPU with [`PTX`] or on the simulator.
//!
//! The first pass ([`reduce_partial_sum_f32`] & co.) runs a grid of a few blocks per SM; each
//! thread walks the input grid-stride in tiles of `BLOCK × VECS` 16-byte vectors (`VECS`
//! vector loads in flight per thread, `ld.global.nc.v4`), the few elements before the first
//! 16-byte boundary and after the last whole vector one per thread; then each block reduces
//! its threads' values ([`gpukernel_device::block::reduce`]) into one partial per block. The
//! second pass ([`reduce_final_sum_f32`] & co.) is one block that reduces the partials into
//! the output. No atomics: the result of a float sum is the same from run to run.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::ops::{Identity, Max, Min, Number, ReduceOp, Sum};
use gpukernel_device::prelude::*;
use gpukernel_device::warp::ShuffleValue;
use gpukernel_device::{block, thread};

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
    /// `acc ⊕ e` for each element `e` of the 16 bytes `w`, in order.
    fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self;
}

macro_rules! item32 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                let e = |i: usize| <$t>::from_ne_bytes(w[i].to_ne_bytes());
                op.combine(op.combine(op.combine(op.combine(acc, e(0)), e(1)), e(2)), e(3))
            }
        }
    )* };
}
item32!(u32, i32, f32);

macro_rules! item64 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                let e = |i: usize| {
                    <$t>::from_ne_bytes((w[i] as u64 | (w[i + 1] as u64) << 32).to_ne_bytes())
                };
                op.combine(op.combine(acc, e(0)), e(2))
            }
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
unsafe fn ld16(p: *const [u32; 4]) -> [u32; 4] {
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

/// The first pass: `partials[b]` = the reduction of the elements block `b` visits.
#[inline(always)]
fn partial<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    partials: DisjointSlice<'_, T>,
    op: Op,
) {
    // Uniform checks before any barrier: the host launches exactly this shape.
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && partials.len() == thread::grid_dim_x() as usize
    );
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
    let total = block::reduce(acc, op);
    if t == 0 {
        // SAFETY: only the block's first thread writes slot `b`, and `b < grid_dim_x ==
        // partials.len()` (checked above).
        unsafe { partials.write(b, total) };
    }
}

/// The second pass, one block: `out[0]` = the reduction of `partials`.
#[inline(always)]
fn finish<T: Item, Op: Identity<T>>(partials: &[T], mut out: DisjointSlice<'_, T>, op: Op) {
    assert!(thread::grid_dim_x() == 1 && thread::block_dim_y() == 1 && thread::block_dim_z() == 1);
    let (t, nt) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    let mut acc = op.identity();
    let mut i = t;
    while i < partials.len() {
        acc = op.combine(acc, partials[i]);
        i += nt;
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
    ($($partial:ident, $final:ident: $t:ty, $op:ident;)*) => { $(
        #[doc = concat!("First pass of the device-wide `", stringify!($op), "` of `",
            stringify!($t), "`: one partial per block. Blocks of [`BLOCK`] threads, \
            `partials.len()` blocks.")]
        #[kernel]
        pub fn $partial(input: &[$t], partials: DisjointSlice<$t>) {
            partial::<$t, $op, VECS>(input, partials, $op);
        }
        #[doc = concat!("Second pass of the device-wide `", stringify!($op), "` of `",
            stringify!($t), "`: `out[0]` from the partials. One block.")]
        #[kernel]
        pub fn $final(partials: &[$t], out: DisjointSlice<$t>) {
            finish::<$t, $op>(partials, out, $op);
        }
    )* };
}

reduce_kernels! {
    reduce_partial_sum_f32, reduce_final_sum_f32: f32, Sum;
    reduce_partial_sum_f64, reduce_final_sum_f64: f64, Sum;
    reduce_partial_sum_i32, reduce_final_sum_i32: i32, Sum;
    reduce_partial_sum_u32, reduce_final_sum_u32: u32, Sum;
    reduce_partial_sum_i64, reduce_final_sum_i64: i64, Sum;
    reduce_partial_sum_u64, reduce_final_sum_u64: u64, Sum;
    reduce_partial_min_f32, reduce_final_min_f32: f32, Min;
    reduce_partial_min_f64, reduce_final_min_f64: f64, Min;
    reduce_partial_min_i32, reduce_final_min_i32: i32, Min;
    reduce_partial_min_u32, reduce_final_min_u32: u32, Min;
    reduce_partial_min_i64, reduce_final_min_i64: i64, Min;
    reduce_partial_min_u64, reduce_final_min_u64: u64, Min;
    reduce_partial_max_f32, reduce_final_max_f32: f32, Max;
    reduce_partial_max_f64, reduce_final_max_f64: f64, Max;
    reduce_partial_max_i32, reduce_final_max_i32: i32, Max;
    reduce_partial_max_u32, reduce_final_max_u32: u32, Max;
    reduce_partial_max_i64, reduce_final_max_i64: i64, Max;
    reduce_partial_max_u64, reduce_final_max_u64: u64, Max;
}

/// [`reduce_partial_sum_f32`] with 8 vectors in flight per thread instead of [`VECS`]: for
/// the benchmark's tuning rows only.
#[kernel]
pub fn reduce_partial_sum_f32_v8(input: &[f32], partials: DisjointSlice<f32>) {
    partial::<f32, Sum, 8>(input, partials, Sum);
}

/// [`reduce_partial_sum_f32`] with 2 vectors in flight per thread: for the benchmark's tuning
/// rows only.
#[kernel]
pub fn reduce_partial_sum_f32_v2(input: &[f32], partials: DisjointSlice<f32>) {
    partial::<f32, Sum, 2>(input, partials, Sum);
}

// --- scan: one pass, decoupled look-back ----------------------------------------------------

/// 16-byte vectors per thread per scan tile (`4 × SCAN_VECS` elements per thread).
pub const SCAN_VECS: usize = 4;
/// Elements per scan tile: `BLOCK × 4 × SCAN_VECS`.
pub const SCAN_TILE: usize = BLOCK as usize * 4 * SCAN_VECS;

/// A tile's status word: `flag << 32 | value bits`, written and read whole (one 64-bit
/// atomic), so a reader never sees a flag without its value.
const FLAG_AGGREGATE: u64 = 1;
const FLAG_INCLUSIVE: u64 = 2;

/// The 32-bit element types of the scan: `u32`, `i32`, `f32`.
pub trait Item32: Item {
    /// The value's bits.
    fn to_bits32(self) -> u32;
    /// The value of these bits.
    fn from_bits32(bits: u32) -> Self;
}

macro_rules! item32_bits {
    ($($t:ty),*) => { $(
        impl Item32 for $t {
            #[inline(always)]
            fn to_bits32(self) -> u32 { u32::from_ne_bytes(self.to_ne_bytes()) }
            #[inline(always)]
            fn from_bits32(bits: u32) -> Self { <$t>::from_ne_bytes(bits.to_ne_bytes()) }
        }
    )* };
}
item32_bits!(u32, i32, f32);

/// Writes 16 bytes: `st.global.v4.u32`.
///
/// # Safety
/// `p` is a 16-byte aligned global address valid for 16 bytes that no other thread accesses
/// during the kernel.
#[inline(always)]
unsafe fn st16(p: *mut [u32; 4], w: [u32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promise.
    unsafe {
        core::arch::asm!(
            "st.global.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg64) p, in(reg32) w[0], in(reg32) w[1], in(reg32) w[2], in(reg32) w[3],
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promise.
    unsafe {
        p.write(w)
    }
}

/// The address of status word `i` (bounds-checked: a trap, a panic in the simulator).
#[inline(always)]
fn status_ptr(status: &DisjointSlice<'_, u64>, i: usize) -> *mut u64 {
    if i >= status.len() {
        gpukernel_device::__trap_out_of_bounds(i, status.len());
    }
    // SAFETY: in bounds.
    unsafe { status.as_mut_ptr().add(i) }
}

/// A relaxed load of status word `i` at device scope (`ld.relaxed.gpu`: the L2, where every
/// block's stores meet; LLVM's atomics would say `.sys`).
#[inline(always)]
fn status_load(status: &DisjointSlice<'_, u64>, i: usize) -> u64 {
    let p = status_ptr(status, i);
    #[cfg(target_arch = "nvptx64")]
    {
        let w: u64;
        // SAFETY: `p` is an aligned status word of global memory; every access of the status
        // words during the launch is a relaxed atomic (this kernel's only).
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {1}; ld.relaxed.gpu.global.b64 {0}, [g]; }}",
                out(reg64) w, in(reg64) p, options(nostack, readonly),
            );
        }
        w
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: as above; the simulator's blocks are host threads.
    unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }
        .load(core::sync::atomic::Ordering::Relaxed)
}

/// A relaxed store of status word `i` at device scope (`st.relaxed.gpu`).
#[inline(always)]
fn status_store(status: &DisjointSlice<'_, u64>, i: usize, word: u64) {
    let p = status_ptr(status, i);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `status_load`.
    unsafe {
        core::arch::asm!(
            "{{ .reg .b64 g; cvta.to.global.u64 g, {0}; st.relaxed.gpu.global.b64 [g], {1}; }}",
            in(reg64) p, in(reg64) word, options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: as in `status_load`.
    unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }
        .store(word, core::sync::atomic::Ordering::Relaxed)
}

/// The exclusive prefix of tile `tile` (> 0), by warp 0 of its block: the tiles before it,
/// read back 32 at a time until one has published its inclusive prefix. Returns it in every
/// lane.
#[inline(always)]
fn look_back<T: Item32, Op: Identity<T>>(
    status: &DisjointSlice<'_, u64>,
    tile: usize,
    op: Op,
) -> T {
    let lane = thread::lane_id() as usize;
    let mut prefix = op.identity();
    let mut end = tile;
    loop {
        let word = if end > lane {
            loop {
                let w = status_load(status, end - 1 - lane);
                if w >> 32 != 0 {
                    break w;
                }
            }
        } else {
            // Before tile 0: nothing, as an inclusive identity (tile 0 always publishes its
            // inclusive prefix, so this is never reached while tile 0's word is in view).
            FLAG_INCLUSIVE << 32 | op.identity().to_bits32() as u64
        };
        let value = T::from_bits32(word as u32);
        let inclusive = gpukernel_device::warp::ballot_sync(
            gpukernel_device::warp::FULL_MASK,
            word >> 32 == FLAG_INCLUSIVE,
        );
        if inclusive != 0 {
            // Lane `first` is the closest tile with an inclusive prefix: it and the aggregates
            // of the tiles after it make this tile's prefix.
            let first = inclusive.trailing_zeros() as usize;
            let part = if lane <= first { value } else { op.identity() };
            return op.combine(gpukernel_device::warp::reduce(part, op), prefix);
        }
        prefix = op.combine(gpukernel_device::warp::reduce(value, op), prefix);
        end -= 32;
    }
}

/// One tile of the scan: `out[i] = x_0 ⊕ … ⊕ x_i` (`INCLUSIVE`) or `x_0 ⊕ … ⊕ x_{i-1}` with
/// `out[0]` the identity.
///
/// Tiles are numbered in the order blocks start (an atomic counter, the status array's last
/// word), so every tile a block waits for belongs to a block that already runs. Within a tile
/// each warp owns `32 × 4 × SCAN_VECS` consecutive elements; step `j` of lane `l` holds the
/// four at `j × 128 + 4l`: coalesced 16-byte loads and stores, a scan of four in registers,
/// a warp scan of the four-element totals per step.
#[inline(always)]
fn scan_tile<T: Item32, Op: Identity<T>, const INCLUSIVE: bool, const V: usize>(
    input: &[T],
    output: DisjointSlice<'_, T>,
    status: DisjointSlice<'_, u64>,
    op: Op,
) {
    let n = input.len();
    let tile_len = BLOCK as usize * 4 * V;
    let tiles = n.div_ceil(tile_len);
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && output.len() == n
            && status.len() == tiles + 1
            && thread::grid_dim_x() as usize == tiles
    );
    let (t, lane, w) = (
        thread::thread_idx_x(),
        thread::lane_id() as usize,
        thread::warp_id() as usize,
    );
    let claimed = if t == 0 {
        // SAFETY: the status array's last word is the tile counter, touched only atomically.
        unsafe { gpukernel_device::atomic::add(status.as_mut_ptr().add(tiles), 1u64) }
    } else {
        0
    };
    let tile = block::broadcast(claimed, 0) as usize;
    let base = tile * tile_len;
    let seg = base + w * 32 * 4 * V;
    let in_ptr = input.as_ptr();
    let out_ptr = output.as_mut_ptr();
    let vector = base + tile_len <= n && (in_ptr as usize | out_ptr as usize).is_multiple_of(16);

    let mut v = [[op.identity(); 4]; V];
    for (j, vj) in v.iter_mut().enumerate() {
        let at = seg + j * 128 + 4 * lane;
        if vector {
            // SAFETY: `at + 4 <= base + tile_len <= n`, 16-byte aligned (`at` is a multiple of
            // 4 elements of 4 bytes from an aligned start); the input is a `&[T]`.
            let words = unsafe { ld16(in_ptr.add(at).cast()) };
            for e in 0..4 {
                vj[e] = T::from_bits32(words[e]);
            }
        } else {
            for (e, x) in vj.iter_mut().enumerate() {
                if let Some(&y) = input.get(at + e) {
                    *x = y;
                }
            }
        }
    }

    // Scan within the warp, step by step, carrying the warp's running total.
    let mut carry = op.identity();
    for vj in v.iter_mut() {
        let raw = *vj;
        let mut p = raw;
        for e in 1..4 {
            p[e] = op.combine(p[e - 1], raw[e]);
        }
        let incl = gpukernel_device::warp::inclusive_scan(p[3], op);
        // SAFETY: the block has 256 threads: every warp is whole, so the mask holds the caller.
        let before = unsafe {
            gpukernel_device::warp::shfl_up_sync_unchecked(
                gpukernel_device::warp::FULL_MASK,
                incl,
                1,
            )
        };
        let pre = if lane == 0 {
            carry
        } else {
            op.combine(carry, before)
        };
        for e in 0..4 {
            vj[e] = if INCLUSIVE {
                op.combine(pre, p[e])
            } else if e == 0 {
                pre
            } else {
                op.combine(pre, p[e - 1])
            };
        }
        carry = op.combine(carry, gpukernel_device::warp::broadcast(incl, 31));
    }

    // The warps before this one, and the tile's total (lane 31 carries its warp's total).
    let mine = if lane == 31 { carry } else { op.identity() };
    let (warps_before, tile_total) = block::exclusive_scan(mine, op.identity(), op);

    let tile_prefix = if tile == 0 {
        if t == 0 {
            status_store(
                &status,
                0,
                FLAG_INCLUSIVE << 32 | tile_total.to_bits32() as u64,
            );
        }
        op.identity()
    } else {
        if t == 0 {
            status_store(
                &status,
                tile,
                FLAG_AGGREGATE << 32 | tile_total.to_bits32() as u64,
            );
        }
        let mut prefix = op.identity();
        if w == 0 {
            prefix = look_back(&status, tile, op);
            if lane == 0 {
                status_store(
                    &status,
                    tile,
                    FLAG_INCLUSIVE << 32 | op.combine(prefix, tile_total).to_bits32() as u64,
                );
            }
        }
        block::broadcast(prefix, 0)
    };
    let pre = op.combine(tile_prefix, warps_before);

    for (j, vj) in v.iter().enumerate() {
        let at = seg + j * 128 + 4 * lane;
        let out = [
            op.combine(pre, vj[0]),
            op.combine(pre, vj[1]),
            op.combine(pre, vj[2]),
            op.combine(pre, vj[3]),
        ];
        if vector {
            // SAFETY: as for the load; element `at..at + 4` of the output is this thread's
            // alone (the tiles, warps, steps and lanes partition the elements).
            unsafe { st16(out_ptr.add(at).cast(), out.map(T::to_bits32)) };
        } else {
            for (e, &o) in out.iter().enumerate() {
                if at + e < n {
                    // SAFETY: as above; in bounds.
                    unsafe { output.write(at + e, o) };
                }
            }
        }
    }
}

macro_rules! scan_kernels {
    ($($incl:ident, $excl:ident: $t:ty;)*) => { $(
        #[doc = concat!("Inclusive sum of `", stringify!($t), "` in one pass (decoupled \
            look-back). `status`: `tiles + 1` zeroed words; blocks of [`BLOCK`] threads, one \
            per tile of [`SCAN_TILE`] elements.")]
        ///
        /// # Safety
        ///
        /// `status` holds `tiles + 1` words that are all zero when the launch starts and that
        /// no other work reads or writes until it ends (a fresh `alloc_zeros` per launch, as
        /// `gpukernel-algorithms` gives each call). The kernel cannot tell stale words from
        /// its own: a status array used before gives a wrong output or none (its tiles are
        /// numbered past the input's end), and one whose tile counter is not zero leaves a
        /// tile waiting for a predecessor no block computes, a hang.
        #[kernel]
        pub unsafe fn $incl(input: &[$t], output: DisjointSlice<$t>, status: DisjointSlice<u64>) {
            scan_tile::<$t, Sum, true, SCAN_VECS>(input, output, status, Sum);
        }
        #[doc = concat!("Exclusive sum of `", stringify!($t), "` (`output[0] = 0`), as the \
            inclusive one.")]
        ///
        /// # Safety
        ///
        /// As for the inclusive scan: `status` is zeroed and this launch's alone.
        #[kernel]
        pub unsafe fn $excl(input: &[$t], output: DisjointSlice<$t>, status: DisjointSlice<u64>) {
            scan_tile::<$t, Sum, false, SCAN_VECS>(input, output, status, Sum);
        }
    )* };
}

scan_kernels! {
    scan_inclusive_sum_f32, scan_exclusive_sum_f32: f32;
    scan_inclusive_sum_i32, scan_exclusive_sum_i32: i32;
    scan_inclusive_sum_u32, scan_exclusive_sum_u32: u32;
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
