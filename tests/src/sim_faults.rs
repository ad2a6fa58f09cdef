//! Kernels whose foreign functions (`cuda/sim_faults.cu`, compiled for the host by the build
//! script) wait at a barrier or misuse a warp operation, for the simulator's fault tests.
//! Host only: they have no PTX, and [`sim_ptx`] names them for the simulator's module.

use gpukernel_device::prelude::*;
use gpukernel_device::thread;

declare_device! {
    unsafe extern {
        /// Waits at `__syncthreads()`, then returns `v + 1`.
        pub "barrier_then_add_one", safe fn(v: u32) -> u32;
        /// `__shfl_sync` with a mask that leaves out the calling lane.
        pub "shuffle_without_self", safe fn(v: u32) -> u32;
        /// How many of the foreign code's tracked objects are alive (a frame discarded without
        /// unwinding leaves its object counted).
        pub "tracked_live", safe fn() -> i32;
        /// `x + 1`, from a device function named `write` (a C library name).
        pub foreign_write = "write", safe fn(x: i32) -> i32;
    }
}

/// Counts its drops, so that a test can tell whether a kernel frame was unwound.
#[derive(Debug)]
pub struct DropCounter;

/// How many [`DropCounter`]s were dropped.
pub static DROPPED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Drop for DropCounter {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Thread `fail` of each block panics before the barrier; every other thread calls the
/// foreign function that waits at `__syncthreads()` (holding a [`DropCounter`] across the
/// call) and writes what it returns (`thread_idx_x + 1`) to its slot of `out`.
#[kernel]
pub fn foreign_barrier(fail: u32, mut out: DisjointSlice<u32>) {
    let t = thread::thread_idx_x();
    if t == fail {
        panic!("thread {t} fails on purpose");
    }
    let held = DropCounter;
    let v = barrier_then_add_one(t);
    drop(held);
    out.set(thread::index(), v);
}

/// Every thread calls the foreign function that shuffles with a mask leaving out its own lane.
#[kernel]
pub fn foreign_bad_shuffle(mut out: DisjointSlice<u32>) {
    let v = shuffle_without_self(thread::thread_idx_x());
    out.set(thread::index(), v);
}

/// The image the simulator loads for these kernels: their names and signature fingerprints
/// as the device build would export them (the simulator runs their Rust bodies; the GPU
/// cannot run them).
pub fn sim_ptx() -> std::string::String {
    use gpukernel_device::Kernel;
    let entry = |name: &str, signature: u64| {
        std::format!(
            ".visible .global .align 8 .u64 {} = {signature};\n.visible .entry {name}()\n{{\n\tret;\n}}\n",
            gpukernel_device::signature_symbol(name)
        )
    };
    std::format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n{}{}",
        entry(foreign_barrier::NAME, foreign_barrier::SIGNATURE),
        entry(foreign_bad_shuffle::NAME, foreign_bad_shuffle::SIGNATURE)
    )
}
