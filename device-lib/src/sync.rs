//! Barriers and memory fences (`__syncthreads`, `__syncwarp`, `__threadfence*`).
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{sync, thread};
//!
//! /// How many threads of the block see a positive value (`__syncthreads_count`).
//! #[kernel]
//! pub fn positives_per_block(x: &[f32], mut out: DisjointSlice<u32>) {
//!     let i = thread::index();
//!     let positive = x.get(i.get()).is_some_and(|v| *v > 0.0);
//!     let n = sync::sync_threads_count(positive); // every thread of the block reaches it
//!     if let Some(o) = out.get_mut(&i) {
//!         *o = n;
//!     }
//! }
//! ```
//!
//! # Which barrier instruction, and why the safe forms are defined
//!
//! The safe block barriers ([`sync_threads`] and its count/and/or forms) lower to the PTX
//! ISA's *non-aligned* forms, `barrier.sync 0` and `barrier.red.{popc,and,or} 0`. CUDA's
//! `__syncthreads()` lowers to `bar.sync 0`, which the ISA defines as the *aligned* form
//! `barrier.sync.aligned 0`: it promises that every thread of the block executes that same
//! instruction, and leaves the program undefined when threads reach it from divergent code.
//! A safe function cannot make that promise for its caller (nor for the compiler, whose
//! transformations such as jump threading may duplicate a barrier into the arms of a branch),
//! so the aligned form is only [`sync_threads_aligned`], an `unsafe fn`.
//!
//! The non-aligned form is defined wherever threads reach it from (sm_70 and later; the
//! nvptx64 target's floor): each thread waits for the non-exited threads of its warp, then
//! for the other warps of the block, whichever `barrier.sync 0` instruction they execute. A
//! misuse (some threads never arrive, or some wait at another kind of barrier) is a bug that
//! hangs the block or, for the reductions, gives an unpredictable result; it is not undefined
//! behaviour. The simulator reports both as errors naming the kernel, block and thread
//! ("barrier divergence"), instead of hanging.
//!
//! [`sync_warp`] checks that the calling lane is in its mask (the ISA leaves
//! `bar.warp.sync` undefined otherwise) and traps when it is not; see [`crate::warp`].

#[cfg(target_arch = "nvptx64")]
mod nv {
    unsafe extern "C" {
        // LLVM 22's barrier intrinsics: `.all` = every thread of the block takes part (no
        // thread count); the first operand is the barrier's number.
        #[link_name = "llvm.nvvm.barrier.cta.sync.all"]
        pub fn barrier_sync(id: u32);
        #[link_name = "llvm.nvvm.barrier.cta.sync.aligned.all"]
        pub fn barrier_sync_aligned(id: u32);
        #[link_name = "llvm.nvvm.barrier.cta.red.popc.all"]
        pub fn barrier_red_popc(id: u32, pred: bool) -> u32;
        #[link_name = "llvm.nvvm.barrier.cta.red.and.all"]
        pub fn barrier_red_and(id: u32, pred: bool) -> bool;
        #[link_name = "llvm.nvvm.barrier.cta.red.or.all"]
        pub fn barrier_red_or(id: u32, pred: bool) -> bool;
        #[link_name = "llvm.nvvm.bar.warp.sync"]
        pub fn bar_warp_sync(mask: u32);
        #[link_name = "llvm.nvvm.membar.gl"]
        pub fn membar_gl();
        #[link_name = "llvm.nvvm.membar.cta"]
        pub fn membar_cta();
        #[link_name = "llvm.nvvm.membar.sys"]
        pub fn membar_sys();
    }
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::host::{Barrier, BarrierKind};

/// A simulated barrier: waits in the simulator and returns how many threads passed `true`.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
#[track_caller]
fn sim_barrier(what: &str, kind: BarrierKind, predicate: bool, aligned: bool) -> u32 {
    // Called directly: `track_caller` does not pass through a function pointer.
    let aligned_at = if aligned {
        Some(core::panic::Location::caller())
    } else {
        None
    };
    crate::host::with_context(what, |cx| {
        cx.hooks().barrier(Barrier {
            kind,
            predicate,
            aligned_at,
        })
    })
}

/// `__syncthreads()`: waits until every thread of the block reached a `sync_threads`, and
/// makes every shared- and global-memory write made before it by the block's threads visible
/// to the block's threads after it.
///
/// Every thread of the block must reach it, as in CUDA; unlike CUDA's, this barrier is
/// defined when threads reach it from divergent code (`barrier.sync 0`, the non-aligned form:
/// see the [module documentation](self)). A block where some threads never arrive hangs on
/// the GPU; the simulator reports it.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// use gpukernel_device::shared::shared_array;
/// #[kernel]
/// pub fn shift(x: &[f32], mut out: DisjointSlice<f32>) {
///     let tile = shared_array!(f32, 256);
///     let (i, t) = (thread::index(), thread::thread_idx_x() as usize);
///     unsafe { tile.write(t, x[i.get()]) }; // SAFETY: own slot
///     sync::sync_threads(); // every write above is visible below
///     out.set(&i, unsafe { tile.read((t + 1) % 256) }); // SAFETY: no writes after the barrier
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `barrier.sync 0` (non-aligned) is defined from any control flow (sm_70+).
    unsafe {
        nv::barrier_sync(0)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        sim_barrier("sync::sync_threads", BarrierKind::Sync, false, false);
    }
}

/// The aligned form of [`sync_threads`] (`barrier.sync.aligned 0`, i.e. `bar.sync 0`, what
/// CUDA's `__syncthreads()` emits). What it can save is `ptxas`'s handling of a warp that may
/// be diverged at the barrier: where a branch on the thread index comes before a non-aligned
/// barrier (e.g. a bounds check that may trap), `ptxas` cannot prove the block converged
/// there, and values the whole warp shares (buffer descriptors, shared-memory bases) may
/// stay out of the uniform registers, also in loops away from the barrier. Without such a
/// branch both forms compile alike: the kernel suite's histogram and softmax run the same
/// with either on an H100 (`bench_suite`; the histogram ran 1.03× faster with this form
/// while a bounds check at the thread's shared-memory slot was left before its first
/// barrier). `bench_runtime` times the example reduction with each form side by side.
///
/// # Safety
///
/// Every thread of the block must execute this same call, the same number of times, with no
/// thread of the block waiting at another barrier meanwhile: it must not be reachable from
/// code that only some threads of the block execute (a branch on the thread index, a loop
/// whose trip count differs between threads, code after an early `return` of some threads).
/// The PTX ISA leaves the program undefined otherwise. The condition is on the PTX, which
/// keeps one barrier instruction per call as long as the call itself is uniform (LLVM treats
/// the barrier as convergent and will not make it depend on more conditions).
///
/// The simulator checks the condition by call site: a block whose threads wait at different
/// `sync_threads_aligned` calls (their `#[track_caller]` locations), or at this one and
/// another kind of barrier, is reported as an error instead of being run.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// #[kernel]
/// pub fn uniform_barrier(mut out: DisjointSlice<u32>) {
///     // SAFETY: every thread of the block executes this call, unconditionally, once.
///     unsafe { sync::sync_threads_aligned() };
///     out.set(thread::index(), 1);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn sync_threads_aligned() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller promises that the block's threads execute this call uniformly.
    unsafe {
        nv::barrier_sync_aligned(0)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        sim_barrier("sync::sync_threads_aligned", BarrierKind::Sync, false, true);
    }
}

/// `__syncthreads_count(predicate)`: a [`sync_threads`] that returns how many threads of the
/// block passed `true` (`barrier.red.popc.u32`, non-aligned).
///
/// Every thread of the block must reach a `sync_threads_count` (not a [`sync_threads`] or
/// another reduction: the ISA calls the result of mixing them unpredictable, and the
/// simulator reports it).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// #[kernel]
/// pub fn positives_per_block(x: &[f32], out: DisjointSlice<u32>) {
///     let i = thread::index().get();
///     let n = sync::sync_threads_count(i < x.len() && x[i] > 0.0);
///     // SAFETY: thread 0 of each block writes its block's slot.
///     if thread::thread_idx_x() == 0 { unsafe { out.write(thread::block_idx_x() as usize, n) } }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads_count(predicate: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `barrier.red.popc 0` (non-aligned): defined from any control flow.
    unsafe {
        nv::barrier_red_popc(0, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        sim_barrier(
            "sync::sync_threads_count",
            BarrierKind::Count,
            predicate,
            false,
        )
    }
}

/// `__syncthreads_and(predicate)`: a [`sync_threads`] that returns whether every thread of the
/// block passed `true` (`barrier.red.and.pred`, non-aligned; as for [`sync_threads_count`]).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// #[kernel]
/// pub fn converged(err: &[f32], mut done: DisjointSlice<bool>) {
///     let i = thread::index();
///     let small = err.get(i.get()).is_none_or(|e| *e < 1e-6); // threads past the end agree
///     let all_small = sync::sync_threads_and(small); // the same answer in every thread
///     done.set(&i, all_small);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads_and(predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `barrier.red.and 0` (non-aligned): defined from any control flow.
    unsafe {
        nv::barrier_red_and(0, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let block = crate::thread::threads_per_block();
        sim_barrier("sync::sync_threads_and", BarrierKind::And, predicate, false) == block
    }
}

/// `__syncthreads_or(predicate)`: a [`sync_threads`] that returns whether any thread of the
/// block passed `true` (`barrier.red.or.pred`, non-aligned; as for [`sync_threads_count`]).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// #[kernel]
/// pub fn any_nan(x: &[f32], mut flag: DisjointSlice<bool>) {
///     let i = thread::index();
///     flag.set(&i, sync::sync_threads_or(x.get(i.get()).is_some_and(|v| v.is_nan())));
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads_or(predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `barrier.red.or 0` (non-aligned): defined from any control flow.
    unsafe {
        nv::barrier_red_or(0, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        sim_barrier("sync::sync_threads_or", BarrierKind::Or, predicate, false) != 0
    }
}

/// `__syncwarp(mask)`: waits until every lane of `mask` reached a `sync_warp` with the same
/// mask, and orders their memory accesses (`bar.warp.sync mask`).
///
/// The calling lane must be in `mask`: the PTX ISA leaves `bar.warp.sync` undefined otherwise,
/// so this checks it, and traps the kernel (the launch fails with an error at the next
/// synchronization) when it is not; the simulator reports it as an error naming the thread.
/// With a constant full mask ([`FULL_MASK`](crate::warp::FULL_MASK)) the check compiles
/// away. Lanes of `mask` that never arrive hang the warp on the GPU (the simulator reports
/// it).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// use gpukernel_device::{shared::shared_array, warp::FULL_MASK};
/// #[kernel]
/// pub fn warp_swap(x: &[u32], mut out: DisjointSlice<u32>) {
///     let tile = shared_array!(u32, 256);
///     let (i, t) = (thread::index(), thread::thread_idx_x() as usize);
///     unsafe { tile.write(t, x[i.get()]) }; // SAFETY: own slot
///     sync::sync_warp(FULL_MASK); // the warp's writes are visible to the warp
///     out.set(&i, unsafe { tile.read(t ^ 1) }); // SAFETY: t ^ 1 is in the same warp
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_warp(mask: u32) {
    crate::warp::check_mask("sync::sync_warp", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { sync_warp_unchecked(mask) }
}

/// [`sync_warp`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// The calling lane must be in `mask` (`mask & (1 << lane_id()) != 0`); the PTX ISA leaves
/// `bar.warp.sync` undefined otherwise. The simulator still checks it and reports a violation
/// as an error.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// use gpukernel_device::warp;
/// #[kernel]
/// pub fn partial(mut out: DisjointSlice<u32>) {
///     let mask = warp::active_mask(); // always contains the caller
///     // SAFETY: the calling lane is in `mask`.
///     unsafe { sync::sync_warp_unchecked(mask) };
///     out.set(thread::index(), mask.count_ones());
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn sync_warp_unchecked(mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller promises the calling lane is in `mask`; lanes of `mask` that do not
    // arrive make it wait (a hang), which is not undefined.
    unsafe {
        nv::bar_warp_sync(mask)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::warp_sync("sync::sync_warp", mask);
    }
}

/// `__threadfence()`: orders the caller's memory accesses as seen by every thread of the
/// device (`membar.gl`, a sequentially consistent fence at GPU scope).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// /// Publish a result, then a flag another block polls (CUDA's `__threadfence()` idiom).
/// ///
/// /// # Safety
/// /// `result` and `ready` are valid; only thread 0 of block 0 writes them.
/// #[kernel]
/// pub unsafe fn publish(result: *mut f32, ready: *mut u32) {
///     if thread::index().get() == 0 {
///         unsafe { result.write_volatile(42.0) };
///         sync::threadfence(); // the result is visible device-wide before the flag
///         unsafe { ready.write_volatile(1) };
///     }
/// }
/// ```
#[inline(always)]
pub fn threadfence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence has no preconditions.
    unsafe {
        nv::membar_gl()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
    }
}

/// `__threadfence_block()`: orders the caller's memory accesses as seen by the threads of its
/// block (`membar.cta`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// /// # Safety
/// /// `data` and `flag` point into memory only this block's threads use.
/// #[kernel]
/// pub unsafe fn handoff(data: *mut u32, flag: *mut u32) {
///     if thread::thread_idx_x() == 0 {
///         unsafe { data.write_volatile(7) };
///         sync::threadfence_block(); // ordered as seen by the block's other threads
///         unsafe { flag.write_volatile(1) };
///     }
/// }
/// ```
#[inline(always)]
pub fn threadfence_block() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence has no preconditions.
    unsafe {
        nv::membar_cta()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
    }
}

/// `__threadfence_system()`: orders the caller's memory accesses as seen by every thread of
/// the device, the host and peer devices (`membar.sys`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
///
/// /// Signal the host through mapped pinned memory once `out` is written.
/// ///
/// /// # Safety
/// /// `out` and `host_flag` are valid device-visible addresses.
/// #[kernel]
/// pub unsafe fn signal_host(out: *mut u64, host_flag: *mut u32) {
///     if thread::index().get() == 0 {
///         unsafe { out.write_volatile(1) };
///         sync::threadfence_system(); // visible to the host before the flag
///         unsafe { host_flag.write_volatile(1) };
///     }
/// }
/// ```
#[inline(always)]
pub fn threadfence_system() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence has no preconditions.
    unsafe {
        nv::membar_sys()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
    }
}

/// A pause in a loop that polls memory another block of the launch writes (a look-back's
/// status word, a flag): `nanosleep.u32 ns` on the GPU (nothing for 0). In the simulator a spin
/// hint, and the end of the calling thread (an error of the launch) once another block of the
/// launch has failed: on a GPU its trap ends the whole grid, while a loop waiting for what the
/// stopped block would have written never ends.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{sync, thread};
/// use core::sync::atomic::{AtomicU32, Ordering};
///
/// /// Block 1 waits for block 0's flag (a grid of two blocks that run together).
/// ///
/// /// # Safety
/// /// `flag` is a live, aligned word of device memory, zero at the launch.
/// #[kernel]
/// pub unsafe fn handshake(flag: *mut u32, mut out: DisjointSlice<u32>) {
///     let flag = unsafe { AtomicU32::from_ptr(flag) };
///     if thread::block_idx_x() == 0 {
///         flag.store(1, Ordering::Release);
///     } else {
///         while flag.load(Ordering::Acquire) == 0 {
///             sync::poll_pause(100);
///         }
///     }
///     out.set(thread::index(), 1);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn poll_pause(ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    if ns != 0 {
        // SAFETY: `nanosleep` has no operands in memory (sm_70 and later).
        unsafe { core::arch::asm!("nanosleep.u32 {0};", in(reg32) ns, options(nostack, nomem)) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = ns;
        if crate::host::with_context("sync::poll_pause", |cx| cx.hooks().launch_failed()) {
            panic!("stopped polling: another block of the launch failed");
        }
        core::hint::spin_loop();
    }
}
