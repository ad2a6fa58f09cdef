//! Kernels that misuse the Hopper features, for the simulator's error reports (each would
//! hang or misbehave on the GPU).

use gpukernel_device::grid::{self, GridBarrier};
use gpukernel_device::mbarrier::{self, Mbarrier};
use gpukernel_device::mma::SharedAddr;
use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::{cluster, sync, thread};

/// Thread 0 of each block waits at the cluster barrier while the block's other threads wait
/// at a block barrier: neither can complete (a hang on the GPU).
#[kernel]
pub fn cluster_barrier_deadlock(mut out: DisjointSlice<u32>) {
    if thread::thread_idx_x() == 0 {
        cluster::sync();
    }
    sync::sync_threads();
    out.set(thread::index(), 1);
}

/// Calls `grid::sync`, which needs a cooperative launch.
///
/// # Safety
/// None needed in the simulator, which reports the launch; do not run it on a GPU without a
/// cooperative launch.
#[kernel]
pub unsafe fn grid_sync_anywhere(bar: GridBarrier, mut out: DisjointSlice<u32>) {
    // SAFETY: see the kernel's contract.
    unsafe { grid::sync(bar) };
    out.set(thread::index(), 1);
}

/// An `mbarrier` expecting two arrivals that gets one: its waiters never wake.
#[kernel]
pub fn mbarrier_missing_arrival(mut out: DisjointSlice<u32>) {
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    if thread::thread_idx_x() == 0 {
        // SAFETY: initialised once before the block barrier.
        unsafe { bar.init(2) };
        mbarrier::fence_init();
    }
    sync::sync_threads();
    if thread::thread_idx_x() == 0 {
        // SAFETY: one of the two arrivals the phase expects.
        unsafe { bar.arrive() };
    }
    // SAFETY: initialised; the wait is what this kernel shows never completes.
    unsafe { bar.wait_parity(0) };
    out.set(thread::index(), 1);
}

/// Maps a shared address into the block of rank `rank` of the cluster.
#[kernel]
pub fn map_rank(rank: u32, mut out: DisjointSlice<u32>) {
    let w = shared_array!(u32, 1);
    let p = cluster::map_shared_rank(w.as_mut_ptr(), rank);
    cluster::sync();
    out.set(thread::index(), p.is_null() as u32);
}

/// TMA multicast into a peer block before the peer initialised its `mbarrier`: in a cluster
/// of two, rank 0 multicasts a box of `src` (2D f32, 8 × 32 boxes) to both blocks and only then
/// arrives at the cluster barrier; rank 1 initialises its barrier after that barrier. The copy
/// completes its bytes on rank 1's word before `mbarrier.init` (undefined on the GPU: the
/// `init` erases them and rank 1 waits forever, or the copy's signal is lost); the simulator
/// reports the completion on a barrier that was not initialised.
///
/// # Safety
/// Do not run it on a GPU. `src` is such a map; clusters of 2 blocks.
#[kernel]
pub unsafe fn multicast_before_peer_init(
    src: gpukernel_device::tma::TensorMap,
    mut out: DisjointSlice<u32>,
) {
    let tile = shared_array!(crate::McTile, 1);
    let word = shared_array!(u64, 1);
    let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
    let first = thread::thread_idx_x() == 0;
    let rank = cluster::block_rank();
    if rank == 0 {
        if first {
            // SAFETY: the own barrier is initialised; the peer's is not (the misuse shown).
            unsafe {
                bar.init(1);
                mbarrier::fence_init();
                bar.arrive_expect_tx(8 * 32 * 4);
                gpukernel_device::tma::load_multicast(
                    SharedAddr::of(tile.as_mut_ptr()),
                    src,
                    [0, 0],
                    bar,
                    0b11,
                );
            }
        }
        cluster::sync();
    } else {
        cluster::sync();
        if first {
            // SAFETY: initialised once (too late for the multicast: the misuse shown).
            unsafe {
                bar.init(1);
                mbarrier::fence_init();
                bar.arrive_expect_tx(8 * 32 * 4);
            }
        }
    }
    sync::sync_threads();
    // SAFETY: initialised in both blocks by now.
    unsafe { bar.wait_parity(0) };
    cluster::sync();
    out.set(thread::index(), 1);
}
