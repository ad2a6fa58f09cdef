//! Device and page-locked host memory, copies and fills.

use core::ffi::c_void;

use cudarc::driver::sys;

use super::{CUdevice, CUdeviceptr, CUstream, check};
use crate::error::Result;

// ----------------------------------------------------------------------------------------------
// Memory
// ----------------------------------------------------------------------------------------------

/// Keeps freed memory in the device's default pool instead of returning it to the system at
/// every synchronization (release threshold = unlimited), as the CUDA runtime's users usually
/// configure it: stream-ordered allocations then reuse memory without driver round trips.
///
/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn keep_default_pool_memory(dev: CUdevice) -> Result<()> {
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceGetDefaultMemPool", unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, dev)
    })?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a cuuint64_t.
    check("cuMemPoolSetAttribute", unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&raw mut threshold).cast(),
        )
    })
}

/// Stream-ordered allocation from the device's default pool.
///
/// # Safety
/// `s` must be a live stream of the current context; `bytes > 0`.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: CUstream) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; stream live (caller).
    check("cuMemAllocAsync", unsafe {
        sys::cuMemAllocAsync(&mut p, bytes, s)
    })?;
    Ok(p)
}

/// # Safety
/// A context must be current; `bytes > 0`.
pub(crate) unsafe fn mem_alloc(bytes: usize) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
    Ok(p)
}

/// # Safety
/// `p` must come from [`mem_alloc_async`] and not be used by work enqueued after this on any
/// stream that is not ordered after `s`.
pub(crate) unsafe fn mem_free_async(p: CUdeviceptr, s: CUstream) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFreeAsync", unsafe { sys::cuMemFreeAsync(p, s) })
}

/// # Safety
/// `p` must come from [`mem_alloc`] and no pending work may use it.
pub(crate) unsafe fn mem_free(p: CUdeviceptr) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFree", unsafe { sys::cuMemFree_v2(p) })
}

/// # Safety
/// `dst` must be valid device memory of `bytes` bytes, `src` valid host memory of `bytes` bytes
/// that stays valid and unmodified until the copy completes (pageable memory is staged before
/// this returns; pinned memory must be kept alive by the caller), `s` a live stream.
pub(crate) unsafe fn memcpy_htod_async(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyHtoDAsync", unsafe {
        sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// `dst` must be valid host memory of `bytes` bytes that nobody reads or writes until the copy
/// completes, `src` valid device memory, `s` a live stream.
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// Both ranges must be valid device memory of `bytes` bytes, `s` a live stream.
pub(crate) unsafe fn memcpy_dtod_async(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyDtoDAsync", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// `dst` must be valid device memory of `bytes` bytes, `s` a live stream.
pub(crate) unsafe fn memset_d8_async(
    dst: CUdeviceptr,
    value: u8,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, value, bytes, s)
    })
}

/// Page-locked host memory usable by every context (`CU_MEMHOSTALLOC_PORTABLE`).
///
/// # Safety
/// A context must be current; `bytes > 0`.
pub(crate) unsafe fn mem_host_alloc(bytes: usize) -> Result<*mut c_void> {
    let mut p: *mut c_void = core::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuMemHostAlloc", unsafe {
        sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
    })?;
    Ok(p)
}

/// Page-locked host memory mapped into the address space of every context
/// (`CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE`), zeroed, and the address device
/// code reaches it at (`cuMemHostGetDevicePointer`).
///
/// # Safety
/// A context must be current; `bytes > 0`.
pub(crate) unsafe fn mem_host_alloc_mapped(bytes: usize) -> Result<(*mut c_void, CUdeviceptr)> {
    let mut p: *mut c_void = core::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuMemHostAlloc", unsafe {
        sys::cuMemHostAlloc(
            &mut p,
            bytes,
            sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP,
        )
    })?;
    // SAFETY: `p` points to `bytes` writable bytes, just allocated.
    unsafe { core::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
    let mut dev: CUdeviceptr = 0;
    // SAFETY: `p` is a mapped allocation of the current context; valid out-pointer.
    let got = check("cuMemHostGetDevicePointer", unsafe {
        sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0)
    });
    if let Err(e) = got {
        // SAFETY: allocated above, never used.
        let _ = unsafe { sys::cuMemFreeHost(p) };
        return Err(e);
    }
    Ok((p, dev))
}

/// # Safety
/// `p` must come from [`mem_host_alloc`] or [`mem_host_alloc_mapped`] and no pending work may
/// use it.
pub(crate) unsafe fn mem_free_host(p: *mut c_void) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFreeHost", unsafe { sys::cuMemFreeHost(p) })
}

// ----------------------------------------------------------------------------------------------
// Several devices
// ----------------------------------------------------------------------------------------------

/// Grants device `ordinal` read-write access to the default memory pool of `owner`
/// (`cuMemPoolSetAccess`): what peer access needs for stream-ordered allocations.
///
/// # Safety
/// `owner` must come from [`device_get`](super::device_get).
pub(crate) unsafe fn mem_pool_grant_access(owner: CUdevice, ordinal: usize) -> Result<()> {
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `owner` is valid (caller).
    check("cuDeviceGetDefaultMemPool", unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, owner)
    })?;
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: ordinal as i32,
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: one valid descriptor.
    check("cuMemPoolSetAccess", unsafe {
        sys::cuMemPoolSetAccess(pool, &desc, 1)
    })
}

/// Copies between the memory of two contexts (`cuMemcpyPeerAsync`): directly over NVLink or
/// PCIe when peer access is enabled, staged by the driver otherwise.
///
/// # Safety
/// `dst` / `src` are `bytes` of device memory of `dst_ctx` / `src_ctx`, not overlapping, kept
/// valid until the copy completes; `s` is a live stream of a current context.
pub(crate) unsafe fn memcpy_peer_async(
    dst: CUdeviceptr,
    dst_ctx: super::CUcontext,
    src: CUdeviceptr,
    src_ctx: super::CUcontext,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyPeerAsync", unsafe {
        sys::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, s)
    })
}
