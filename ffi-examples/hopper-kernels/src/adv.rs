//! Probe kernels for the soundness review of the Hopper launch features (each one is used by
//! `tests/tests/adv_hopper_*.rs`).

use gpukernel_device::grid::{self, GridBarrier};
use gpukernel_device::prelude::*;
use gpukernel_device::{cluster, thread};

/// Safe: lets dependents start at once (`grid::launch_dependents`), then spins `iters` rounds
/// before writing `out[i] = 1`.
#[kernel]
pub fn adv_pdl_early(iters: u32, mut out: DisjointSlice<u32>) {
    grid::launch_dependents();
    let mut acc = thread::index().get() as u32;
    let mut k = 0;
    while k < iters {
        acc = acc.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        k += 1;
    }
    let v = if acc == 0xdead_beef && iters == 7 {
        2
    } else {
        1
    };
    out.set(thread::index(), v);
}

/// Safe: `z[i] = y[i]`, without `grid::wait_dependencies`.
#[kernel]
pub fn adv_pdl_naive(y: &[u32], mut z: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = z.get_mut(&i) {
        *o = y[i.get()];
    }
}

/// Safe: `z[i] = y[i]`, after `grid::wait_dependencies`.
#[kernel]
pub fn adv_pdl_waiting(y: &[u32], mut z: DisjointSlice<u32>) {
    let i = thread::index();
    grid::wait_dependencies();
    if let Some(o) = z.get_mut(&i) {
        *o = y[i.get()];
    }
}

/// Safe: `z[i] = 7`, without `grid::wait_dependencies` (writes what the previous kernel
/// writes too).
#[kernel]
pub fn adv_pdl_overwrite(mut z: DisjointSlice<u32>) {
    z.set(thread::index(), 7);
}

/// Block 1 exits before the grid barrier; the others wait at it.
///
/// # Safety
/// Breaks `grid::sync`'s contract on purpose (not every thread calls it): a probe of whether
/// the simulator reports it.
#[kernel]
pub unsafe fn adv_grid_sync_block_exits(bar: GridBarrier, mut out: DisjointSlice<u32>) {
    if thread::block_idx_x() == 1 {
        return;
    }
    // SAFETY: see the kernel's contract (violated on purpose).
    unsafe { grid::sync(bar) };
    out.set(thread::index(), 1);
}

/// Safe: the block of rank 1 of each cluster exits before the cluster barrier.
#[kernel]
pub fn adv_cluster_block_exits(mut out: DisjointSlice<u32>) {
    if cluster::block_rank() == 1 {
        return;
    }
    cluster::sync();
    out.set(thread::index(), 1);
}

/// Safe: `out[i]` = the cluster's size in blocks (1 without clusters).
#[kernel]
pub fn adv_cluster_size(mut out: DisjointSlice<u32>) {
    out.set(thread::index(), cluster::size());
}

/// Loads the 16 × 16 f32 box at (0, 0) of `map` to a shared destination 16 bytes past a
/// 1024-byte boundary (the documented contract asks for 128), then `out[i] = tile[i]`.
///
/// # Safety
/// Breaks `tma::load`'s alignment contract on purpose: a probe of whether the simulator
/// reports what the GPU faults on. One block of 256 threads.
#[kernel]
pub unsafe fn adv_tma_misaligned(
    map: gpukernel_device::tma::TensorMap,
    mut out: DisjointSlice<f32>,
) {
    use gpukernel_device::mbarrier::{self, Mbarrier};
    use gpukernel_device::mma::SharedAddr;
    use gpukernel_device::shared::shared_array;
    let tile = shared_array!(crate::tma::Tile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let dst = SharedAddr::of(tile.as_mut_ptr()).add_bytes(16);
    if thread::thread_idx_x() == 0 {
        // SAFETY: see the kernel's contract (alignment broken on purpose).
        unsafe {
            bar.init(1);
            mbarrier::fence_init();
            bar.arrive_expect_tx(16 * 16 * 4);
            gpukernel_device::tma::load(dst, map, [0, 0], bar);
        }
    }
    gpukernel_device::sync::sync_threads();
    // SAFETY: initialised before the barrier; one phase.
    unsafe { bar.wait_parity(0) };
    let t = thread::thread_idx_x() as usize;
    // SAFETY: the box is complete (the barrier's phase); nobody writes the tile any more.
    let v = unsafe { tile.as_mut_ptr().cast::<f32>().add(4 + t).read_volatile() };
    out.set(thread::index(), v);
}

/// Loads the box at (0, 0) of `map` (at most 4096 bytes) to a 1024-byte-aligned tile and
/// waits for `bytes` transaction bytes; then `out[t] = tile word t` (one block, `out.len()`
/// threads, at most 1024).
///
/// # Safety
/// `map` is a 2D tensor map from the runtime whose box is `bytes` bytes, at most 4096, for
/// memory nobody writes during the launch.
#[kernel]
pub unsafe fn adv_tma_load_box(
    map: gpukernel_device::tma::TensorMap,
    bytes: u32,
    mut out: DisjointSlice<u32>,
) {
    use gpukernel_device::mbarrier::{self, Mbarrier};
    use gpukernel_device::mma::SharedAddr;
    use gpukernel_device::shared::shared_array;
    let tile = shared_array!(crate::tma::Tile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    if thread::thread_idx_x() == 0 {
        // SAFETY: the kernel's contract; the tile is 1024-byte aligned with room for the box.
        unsafe {
            bar.init(1);
            mbarrier::fence_init();
            bar.arrive_expect_tx(bytes);
            gpukernel_device::tma::load(SharedAddr::of(tile.as_mut_ptr()), map, [0, 0], bar);
        }
    }
    gpukernel_device::sync::sync_threads();
    // SAFETY: initialised before the barrier; one phase.
    unsafe { bar.wait_parity(0) };
    let t = thread::thread_idx_x() as usize;
    // SAFETY: the box is complete; nobody writes the tile any more; t < 1024 words.
    let v = unsafe {
        tile.as_mut_ptr()
            .cast::<u32>()
            .add(t % 1024)
            .read_volatile()
    };
    out.set(thread::index(), v);
}

/// Safe: `out[i] = cluster::is_explicit()`.
#[kernel]
pub fn adv_is_explicit(mut out: DisjointSlice<u32>) {
    out.set(thread::index(), cluster::is_explicit() as u32);
}

/// After a cluster barrier, the block of rank 1 exits; the block of rank 0 spins `iters`
/// rounds, then reads the word the block of rank 1 wrote in its shared memory.
///
/// # Safety
/// Breaks `ClusterAddr::load_u32`'s contract on purpose (the peer has exited): a probe of
/// whether the simulator reports it. Clusters of 2.
#[kernel]
pub unsafe fn adv_dsmem_after_exit(iters: u32, mut out: DisjointSlice<u32>) {
    use gpukernel_device::mma::SharedAddr;
    use gpukernel_device::shared::shared_array;
    let w = shared_array!(u32, 1);
    if thread::thread_idx_x() == 0 {
        // SAFETY: one writer, before the barrier.
        unsafe { w.write(0, 40 + cluster::block_rank()) };
    }
    cluster::sync();
    if cluster::block_rank() == 1 {
        return;
    }
    let mut acc = 0u32;
    let mut k = 0;
    while k < iters {
        acc = acc.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        k += 1;
    }
    let peer = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 1);
    // SAFETY: see the kernel's contract (broken on purpose).
    let v = unsafe { peer.load_u32() };
    out.set(
        thread::index(),
        v + (acc == 0xdead_beef && iters == 3) as u32,
    );
}
