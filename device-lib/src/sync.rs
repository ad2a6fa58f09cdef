//! Barriers and memory fences (`__syncthreads`, `__syncwarp`, `__threadfence*`).
//!
//! The barriers are block-wide (or warp-wide) synchronization points: every thread of the
//! block must reach the same `sync_threads*` call, as in CUDA. The simulator reports a block
//! in which some threads finished (or panicked) while others wait at a barrier as an error
//! ("barrier divergence") instead of hanging.

#[cfg(target_arch = "nvptx64")]
mod nv {
    unsafe extern "C" {
        #[link_name = "llvm.nvvm.barrier0"]
        pub fn barrier0();
        #[link_name = "llvm.nvvm.barrier0.popc"]
        pub fn barrier0_popc(pred: i32) -> i32;
        #[link_name = "llvm.nvvm.barrier0.and"]
        pub fn barrier0_and(pred: i32) -> i32;
        #[link_name = "llvm.nvvm.barrier0.or"]
        pub fn barrier0_or(pred: i32) -> i32;
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

/// `__syncthreads()`: waits until every thread of the block reached this point, and makes
/// every shared- and global-memory write made before it by the block's threads visible to the
/// block's threads after it.
///
/// Every thread of the block must call it (it must not be in code that only some threads
/// reach).
#[inline(always)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.sync 0`; the convergence requirement is documented above (a violation
    // hangs or misbehaves on the GPU but is not memory-unsafe by itself).
    unsafe {
        nv::barrier0()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("sync::sync_threads", |cx| {
            cx.hooks().sync_threads(false);
        })
    }
}

/// `__syncthreads_count(predicate)`: a [`sync_threads`] that returns how many threads of the
/// block passed `true`.
#[inline(always)]
pub fn sync_threads_count(predicate: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.red.popc`; as for `sync_threads`.
    unsafe {
        nv::barrier0_popc(predicate as i32) as u32
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("sync::sync_threads_count", |cx| {
            cx.hooks().sync_threads(predicate)
        })
    }
}

/// `__syncthreads_and(predicate)`: a [`sync_threads`] that returns whether every thread of the
/// block passed `true`.
#[inline(always)]
pub fn sync_threads_and(predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.red.and`; as for `sync_threads`.
    unsafe {
        nv::barrier0_and(predicate as i32) != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("sync::sync_threads_and", |cx| {
            cx.hooks().sync_threads(predicate) == cx.block_dim.volume() as u32
        })
    }
}

/// `__syncthreads_or(predicate)`: a [`sync_threads`] that returns whether any thread of the
/// block passed `true`.
#[inline(always)]
pub fn sync_threads_or(predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.red.or`; as for `sync_threads`.
    unsafe {
        nv::barrier0_or(predicate as i32) != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("sync::sync_threads_or", |cx| {
            cx.hooks().sync_threads(predicate) != 0
        })
    }
}

/// `__syncwarp(mask)`: waits until every lane of `mask` (which must include the caller)
/// reached a `sync_warp` with the same mask, and orders their memory accesses.
#[inline(always)]
pub fn sync_warp(mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.warp.sync mask`; the lanes of `mask` must all execute it (CUDA's rule).
    unsafe {
        nv::bar_warp_sync(mask)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("sync::sync_warp", |cx| {
            cx.hooks().warp_exchange(mask, 0);
        })
    }
}

/// `__threadfence()`: orders the caller's memory accesses as seen by every thread of the
/// device (`membar.gl`, a sequentially consistent fence at GPU scope).
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
