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
        src.prefetch();
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
