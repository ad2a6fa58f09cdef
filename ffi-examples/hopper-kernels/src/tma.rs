//! The tensor memory accelerator: a 2D tile copy through shared memory (a TMA load completing
//! on an `mbarrier`, then a TMA store), a probe of the 128-byte swizzle, and a two-slot
//! producer/consumer ring on `mbarrier`s alone.

use gpukernel_device::mbarrier::{self, Mbarrier};
use gpukernel_device::mma::SharedAddr;
use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::tma::{self, TensorMap};
use gpukernel_device::{sync, thread};

/// The side of [`tma_copy_tiles`]'s square tiles.
pub const TILE: u32 = 32;

/// 32 × 32 f32, aligned for any TMA destination (1024 bytes: the 128-byte swizzle's span).
#[repr(C, align(1024))]
#[derive(Clone, Copy, Debug)]
pub struct Tile(pub [f32; (TILE * TILE) as usize]);
// SAFETY: a `#[repr(C)]` array of floats: no padding, all-zero valid.
unsafe impl DeviceCopy for Tile {}

/// Copies `src` to `dst` (2D f32 tensors of one shape) one [`TILE`] × [`TILE`] box per block:
/// thread 0 loads the box with TMA (completing on an `mbarrier`), every thread adds `add` to
/// its column of the tile in shared memory, and thread 0 stores the box with TMA. Boxes
/// crossing the tensor's edge are clipped by the hardware.
///
/// # Safety
/// `src` and `dst` are maps from the runtime of same-shaped f32 tensors with [`TILE`] ×
/// [`TILE`] boxes and no swizzle; a grid covering `dst` in boxes; blocks of [`TILE`]
/// threads; nothing else accesses `dst` during the launch.
#[kernel]
pub unsafe fn tma_copy_tiles(src: TensorMap, dst: TensorMap, add: f32) {
    let tile = shared_array!(Tile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let smem = SharedAddr::of(tile.as_mut_ptr());
    let t = thread::thread_idx_x();
    let at = [
        (TILE * thread::block_idx_x()) as i32,
        (TILE * thread::block_idx_y()) as i32,
    ];
    if t == 0 {
        // SAFETY: `src` is the runtime's tensor map (the kernel's contract).
        unsafe { src.prefetch() };
        // SAFETY: one thread initialises the barrier before the block barrier; it expects the
        // box's bytes, which the load completes.
        unsafe {
            bar.init(1);
            mbarrier::fence_init();
            bar.arrive_expect_tx(TILE * TILE * 4);
            tma::load(smem, src, at, bar);
        }
    }
    sync::sync_threads();
    // SAFETY: initialised before the barrier; phase 0 completes when the box landed.
    unsafe { bar.wait_parity(0) };
    let p = tile.as_mut_ptr().cast::<f32>();
    for r in 0..TILE {
        // SAFETY: thread `t` alone touches column `t` of the tile; the copy completed.
        unsafe {
            let e = p.add((r * TILE + t) as usize);
            e.write(e.read() + add);
        }
    }
    tma::fence_proxy_async();
    sync::sync_threads();
    if t == 0 {
        // SAFETY: the tile holds the box, its writes fenced for the copy engine; the caller
        // gives `dst` to this launch alone; the wait keeps the tile alive until it is read.
        unsafe { tma::store(dst, at, smem) };
        tma::commit_group();
        tma::wait_group::<0>();
    }
}

/// Loads the box at the origin of `src` (a 2D f32 map with 8 × 32 boxes and the 128-byte
/// swizzle) and writes element `t` of the box, read back through the swizzle
/// (`tma::swizzled_offset`), to `out[t]`: equal to the tensor's top-left 8 × 32 corner when
/// the swizzle is the one the hardware applies. One block of 256 threads.
///
/// # Safety
/// `src` is such a map from the runtime; `out` has 256 elements.
#[kernel]
pub unsafe fn tma_swizzle_probe(src: TensorMap, mut out: DisjointSlice<f32>) {
    let tile = shared_array!(Tile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let t = thread::thread_idx_x() as usize;
    if t == 0 {
        // SAFETY: as in `tma_copy_tiles`; the tile is 1024-byte aligned.
        unsafe {
            bar.init(1);
            mbarrier::fence_init();
            bar.arrive_expect_tx(8 * 32 * 4);
            tma::load(SharedAddr::of(tile.as_mut_ptr()), src, [0, 0], bar);
        }
    }
    sync::sync_threads();
    // SAFETY: initialised before the barrier.
    unsafe { bar.wait_parity(0) };
    let byte = tma::swizzled_offset(3, t * 4);
    // SAFETY: inside the 1024-byte tile; the copy completed; no writers.
    let v = unsafe {
        tile.as_mut_ptr()
            .cast::<u8>()
            .add(byte)
            .cast::<f32>()
            .read()
    };
    if let Some(o) = out.get_mut(thread::index()) {
        *o = v;
    }
}

/// A two-slot ring between warp 0 (producer) and warp 1 (consumer) on four `mbarrier`s: in
/// round `k` the producer writes `k * 32 + lane` into slot `k % 2`; the consumer adds it up.
/// `out[32 + lane]` receives the consumer lane's total (the producer's half stays as it
/// was). One block of 64 threads; `out` has 64 elements.
#[kernel]
pub fn mbarrier_ring(rounds: u32, mut out: DisjointSlice<u32>) {
    assert!(thread::block_dim_x() == 64 && thread::grid_dim_x() == 1);
    let slots = shared_array!(u32, 64);
    let words = shared_array!(u64, 4);
    let w = SharedAddr::of(words.as_mut_ptr());
    let full = [Mbarrier::at(w), Mbarrier::at(w.add_bytes(8))];
    let empty = [Mbarrier::at(w.add_bytes(16)), Mbarrier::at(w.add_bytes(24))];
    let t = thread::thread_idx_x();
    let lane = t % 32;
    if t == 0 {
        for b in full.iter().chain(&empty) {
            // SAFETY: one thread initialises every barrier before the block barrier.
            unsafe { b.init(32) };
        }
        mbarrier::fence_init();
    }
    sync::sync_threads();
    let mut total = 0u32;
    for k in 0..rounds {
        let s = (k % 2) as usize;
        let phase = (k / 2) % 2;
        if t < 32 {
            // SAFETY: the slot is free once the consumers released its previous use (parity
            // `phase ^ 1`, complete at once for the first use); 32 arrivals per phase.
            unsafe {
                empty[s].wait_parity(phase ^ 1);
                slots.write(s * 32 + lane as usize, k * 32 + lane);
                full[s].arrive();
            }
        } else {
            // SAFETY: the producer's 32 arrivals (release) complete the phase after its writes.
            unsafe {
                full[s].wait_parity(phase);
                total = total.wrapping_add(slots.read(s * 32 + lane as usize));
                empty[s].arrive();
            }
        }
    }
    if t >= 32
        && let Some(o) = out.get_mut(thread::index())
    {
        *o = total;
    }
}

/// Shared memory for the boxes of [`tma_boxes_3d`] and its siblings: 8 KiB, 1024-byte
/// aligned.
#[repr(C, align(1024))]
#[derive(Clone, Copy, Debug)]
pub struct BoxTile(pub [f32; 2048]);
// SAFETY: a `#[repr(C)]` array of floats: no padding, all-zero valid.
unsafe impl DeviceCopy for BoxTile {}

/// The boxes of [`tma_boxes_3d`] and its siblings, innermost dimension first (the first `N`
/// entries of each array for rank `N`): `boxes[d]` elements per box along dimension `d`,
/// `counts[d]` boxes along it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoxGrid {
    /// Box extents, innermost first.
    pub boxes: [u32; 5],
    /// Boxes per dimension, innermost first.
    pub counts: [u32; 5],
}
// SAFETY: `#[repr(C)]` u32 arrays: no padding, every bit pattern valid.
unsafe impl DeviceCopy for BoxGrid {}

/// The round trip of one box per block of an `N`-dimensional f32 tensor: thread 0 loads the
/// box of `src` whose index (innermost first) is `blockIdx.x` split by `counts`, every thread
/// adds `add` to its share of the box in shared memory, and thread 0 stores it to `dst` at the
/// same coordinates.
///
/// # Safety
/// `src`, `dst`: runtime maps of rank `N`, f32, no swizzle, boxes of `grid.boxes` (at most
/// 2048 elements); the launch has `Π grid.counts` blocks; nothing else accesses `dst`.
#[inline(always)]
unsafe fn box_round_trip<const N: usize>(src: TensorMap, dst: TensorMap, grid: BoxGrid, add: f32) {
    let (boxes, counts) = (grid.boxes, grid.counts);
    let tile = shared_array!(BoxTile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let smem = SharedAddr::of(tile.as_mut_ptr());
    let elems = boxes[..N].iter().product::<u32>() as usize;
    assert!(elems <= 2048);
    let mut at = [0i32; N];
    let mut rest = thread::block_idx_x();
    for d in 0..N {
        at[d] = ((rest % counts[d]) * boxes[d]) as i32;
        rest /= counts[d];
    }
    let t = thread::thread_idx_x() as usize;
    if t == 0 {
        // SAFETY: one thread initialises the barrier and expects the box's bytes, which the
        // load completes; the tile is 1024-byte aligned with room for 2048 f32s.
        unsafe {
            bar.init(1);
            mbarrier::fence_init();
            bar.arrive_expect_tx(elems as u32 * 4);
            tma::load(smem, src, at, bar);
        }
    }
    sync::sync_threads();
    // SAFETY: initialised before the block barrier; phase 0 completes when the box landed.
    unsafe { bar.wait_parity(0) };
    let p = tile.as_mut_ptr().cast::<f32>();
    let step = thread::block_dim_x() as usize;
    for j in (t..elems).step_by(step) {
        // SAFETY: thread `t` alone touches elements `t, t + step, ..`; the copy completed.
        unsafe { p.add(j).write(p.add(j).read() + add) };
    }
    tma::fence_proxy_async();
    sync::sync_threads();
    if t == 0 {
        // SAFETY: the tile holds the box, fenced for the copy engine; `dst` is this launch's
        // alone; the wait keeps the tile alive until it is read.
        unsafe { tma::store(dst, at, smem) };
        tma::commit_group();
        tma::wait_group::<0>();
    }
}

/// [`box_round_trip`] of a 3D tensor: `tma::load` / `tma::store` with three coordinates.
///
/// # Safety
/// `src`, `dst`: runtime maps of 3D f32 tensors of one shape, no swizzle, boxes of `grid.boxes`
/// ([`BoxGrid`], at most 2048 elements); `Π grid.counts` blocks covering the tensor in boxes;
/// nothing else accesses `dst` during the launch.
#[kernel]
pub unsafe fn tma_boxes_3d(src: TensorMap, dst: TensorMap, grid: BoxGrid, add: f32) {
    // SAFETY: the kernel's contract.
    unsafe { box_round_trip::<3>(src, dst, grid, add) };
}

/// [`box_round_trip`] of a 4D tensor.
///
/// # Safety
/// As [`tma_boxes_3d`], for 4D maps.
#[kernel]
pub unsafe fn tma_boxes_4d(src: TensorMap, dst: TensorMap, grid: BoxGrid, add: f32) {
    // SAFETY: the kernel's contract.
    unsafe { box_round_trip::<4>(src, dst, grid, add) };
}

/// [`box_round_trip`] of a 5D tensor.
///
/// # Safety
/// As [`tma_boxes_3d`], for 5D maps.
#[kernel]
pub unsafe fn tma_boxes_5d(src: TensorMap, dst: TensorMap, grid: BoxGrid, add: f32) {
    // SAFETY: the kernel's contract.
    unsafe { box_round_trip::<5>(src, dst, grid, add) };
}

/// Rows of the slice each block of a [`tma_multicast_tiles`] cluster loads (of 32 f32).
pub const MC_SLICE_ROWS: u32 = 8;

/// Shared memory for [`tma_multicast_tiles`]: up to 8 slices of 8 × 32 f32 (8 KiB).
#[repr(C, align(1024))]
#[derive(Clone, Copy, Debug)]
pub struct McTile(pub [f32; 2048]);
// SAFETY: a `#[repr(C)]` array of floats: no padding, all-zero valid.
unsafe impl DeviceCopy for McTile {}

/// TMA multicast: cluster `c` of `s` blocks (1 to 8) shares the tile of `s ·` [`MC_SLICE_ROWS`]
/// rows starting at row `c · s · 8` of `src` (32 f32 per row). The block of rank `r` loads
/// slice `r` once and multicasts it to every block of the cluster; each block then writes the
/// whole tile it received to its `s · 256` elements of `out` (block `b` from `b · s · 256`).
/// `rounds` repeats the exchange on the same barrier (phase after phase), each round's slices
/// shifted by one rank, the last round's tile written.
///
/// The order it shows: every block initialises its barrier, fences the initialisation
/// (`fence_init`), and only after a cluster barrier does any block multicast into the others;
/// a block leaves only after a last cluster barrier (no peer's copy still writes into it).
///
/// # Safety
/// `src` is a runtime map of a 2D f32 tensor of 32 columns with 8 × 32 boxes, no swizzle;
/// launched with clusters of `s` blocks along x (`s` ≤ 8); `out` has `gridDim.x · s · 256`
/// elements.
#[kernel]
pub unsafe fn tma_multicast_tiles(src: TensorMap, rounds: u32, out: DisjointSlice<f32>) {
    let tile = shared_array!(McTile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let size = gpukernel_device::cluster::size();
    let rank = gpukernel_device::cluster::block_rank();
    assert!(size <= 8);
    let slice_bytes = MC_SLICE_ROWS * 32 * 4;
    let t = thread::thread_idx_x();
    if t == 0 {
        // SAFETY: one thread initialises the barrier, fenced for the cluster before the
        // cluster barrier below publishes it.
        unsafe { bar.init(1) };
        mbarrier::fence_init();
    }
    // Every block's barrier is initialised before any block multicasts into it.
    gpukernel_device::cluster::sync();
    let first_row = gpukernel_device::cluster::cluster_idx().x * size * MC_SLICE_ROWS;
    let mask = ((1u32 << size) - 1) as u16;
    for round in 0..rounds {
        if t == 0 {
            // This round's slice of this block; it lands at the slice's place in every block.
            let slice = (rank + round) % size;
            let dst = SharedAddr::of(tile.as_mut_ptr()).add_bytes((slice * slice_bytes) as usize);
            let row = (first_row + slice * MC_SLICE_ROWS) as i32;
            // SAFETY: every block's barrier was initialised before the cluster barrier above;
            // it expects the `size` slices of this round (this arrival), which the `size`
            // multicasts of the round complete; the previous round's readers are done (the
            // cluster barrier at the end of each round); the slice is 1024-byte aligned.
            unsafe {
                bar.arrive_expect_tx(size * slice_bytes);
                tma::load_multicast(dst, src, [0, row], bar, mask);
            }
        }
        // SAFETY: initialised; phase `round` completes when every slice of the round landed.
        unsafe { bar.wait_parity(round & 1) };
        if round + 1 == rounds {
            let n = (size * 256) as usize;
            let base = thread::block_idx_x() as usize * n;
            let p = tile.as_mut_ptr().cast::<f32>();
            for j in (t as usize..n).step_by(thread::block_dim_x() as usize) {
                if base + j < out.len() {
                    // SAFETY: the copies completed, nothing writes the tile any more; element
                    // `base + j` of `out` is this block's and this thread's alone.
                    unsafe { out.write(base + j, p.add(j).read()) };
                }
            }
        }
        // No block overwrites a peer's tile (next round) or leaves (last round) while that
        // peer may still read it or wait for a copy.
        gpukernel_device::cluster::sync();
    }
}

/// Each block of a cluster aligns its dynamic shared memory up to 1024 bytes (as the TMA and
/// `wgmma` kernels do for swizzled tiles), writes `1000 + rank` there, and after a cluster
/// barrier reads the word at the same aligned place in every block of its cluster through
/// distributed shared memory: `out[b · size + r]` is what block `b` read from rank `r`,
/// `1000 + r` when the aligned place has the same offset in every block (as on the GPU, where
/// dynamic shared memory starts at the same offset in every block of a launch). Launch with
/// at least 1024 + 4 bytes of dynamic shared memory and clusters along x; `out` has one element
/// per block and rank.
#[kernel]
pub fn cluster_aligned_dynamic_exchange(out: DisjointSlice<u32>) {
    let smem = gpukernel_device::shared::dynamic_shared::<u8>();
    assert!(smem.len() >= 1024 + 4);
    let base = smem.as_mut_ptr();
    // The generic address keeps the shared address's alignment (the shared window is aligned
    // far beyond 1024 bytes).
    // SAFETY: at most 1023 bytes in, inside the region (checked above).
    let mine = unsafe { base.add((base as usize).wrapping_neg() & 1023) };
    let rank = gpukernel_device::cluster::block_rank();
    let size = gpukernel_device::cluster::size();
    let t = thread::thread_idx_x();
    if t == 0 {
        // SAFETY: inside the block's dynamic shared memory (1024 bytes of slack); one writer,
        // read after the cluster barrier.
        unsafe { mine.cast::<u32>().write(1000 + rank) };
    }
    gpukernel_device::cluster::sync();
    if t < size {
        let peer = gpukernel_device::cluster::map_shared_rank(mine.cast::<u32>(), t);
        // SAFETY: written before the barrier, not again; no block exits before the last
        // barrier; element `b · size + t` is this thread's alone.
        unsafe {
            out.write(
                thread::block_idx_x() as usize * size as usize + t as usize,
                peer.read(),
            )
        };
    }
    gpukernel_device::cluster::sync();
}

/// Rank 0 of each cluster writes `1000 · (c + 1) + r` into the shared memory of every block of
/// rank `r ≥ 1` of its cluster `c` through distributed shared memory, then arrives on that
/// block's barrier with `Mbarrier::arrive_cluster_release` (release at cluster scope); each
/// such block waits on its barrier and writes what it found to `out[b]` (block `b`); rank 0
/// writes 0. Launch with clusters along x, `out` one element per block.
#[kernel]
pub fn cluster_publish(out: DisjointSlice<u32>) {
    let word = shared_array!(u64, 1);
    let slot = shared_array!(u32, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let (t, rank) = (
        thread::thread_idx_x(),
        gpukernel_device::cluster::block_rank(),
    );
    let size = gpukernel_device::cluster::size();
    if t == 0 {
        // SAFETY: one thread initialises the barrier (one arrival: rank 0's), fenced for the
        // cluster before the cluster barrier publishes it.
        unsafe { bar.init(1) };
        mbarrier::fence_init();
    }
    gpukernel_device::cluster::sync();
    let c = gpukernel_device::cluster::cluster_idx().x;
    if rank == 0 && t > 0 && t < size {
        // SAFETY: thread `t` alone writes rank `t`'s slot, which that block reads only after
        // the phase this arrival completes; its barrier is initialised (cluster barrier above)
        // and it waits on it before the last cluster barrier.
        unsafe {
            gpukernel_device::cluster::map_shared_rank(slot.as_mut_ptr(), t)
                .write(1000 * (c + 1) + t);
            bar.arrive_cluster_release(t);
        }
    }
    if rank != 0 && t == 0 {
        // SAFETY: initialised; rank 0's arrival completes phase 0, after its write (release at
        // cluster scope, acquired by the wait).
        let v = unsafe {
            bar.wait_parity(0);
            slot.read(0)
        };
        // SAFETY: element `b` is this block's, written by its thread 0 alone.
        unsafe { out.write(thread::block_idx_x() as usize, v) };
    }
    // No block exits while rank 0 may still write into it.
    gpukernel_device::cluster::sync();
}
