//! Sharing device memory: external memory and semaphores (Vulkan, D3D12), legacy IPC handles,
//! and virtual-memory (VMM) allocations exported as operating-system handles.

use core::ffi::c_void;

use cudarc::driver::sys;

use super::{CUdevice, CUdeviceptr, CUevent, CUstream, check, cuda_error};
use crate::error::{CudaError, Result};

/// An operating-system handle as the driver takes it: a POSIX file descriptor, or a Windows
/// `HANDLE`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OsHandle {
    Fd(i32),
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    Win32(*mut c_void),
}

/// What kind of memory handle is imported (`CUexternalMemoryHandleType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtMemType {
    #[cfg_attr(
        windows,
        allow(dead_code, reason = "POSIX descriptors exist on Unix only")
    )]
    OpaqueFd,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    OpaqueWin32,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    D3D12Resource,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    D3D12Heap,
}

/// What kind of semaphore handle is imported (`CUexternalSemaphoreHandleType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtSemType {
    #[cfg_attr(
        windows,
        allow(dead_code, reason = "POSIX descriptors exist on Unix only")
    )]
    OpaqueFd,
    #[cfg_attr(
        windows,
        allow(dead_code, reason = "POSIX descriptors exist on Unix only")
    )]
    TimelineFd,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    OpaqueWin32,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    TimelineWin32,
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows handles exist on Windows only")
    )]
    D3D12Fence,
}

/// Imports external memory; on success the driver owns a POSIX fd (and closes it when the
/// memory is destroyed); a Windows handle stays the caller's.
///
/// # Safety
/// A context is current; `h` is a live handle of the kind `ty` names.
pub(crate) unsafe fn import_external_memory(
    ty: ExtMemType,
    h: OsHandle,
    size: u64,
    dedicated: bool,
) -> Result<sys::CUexternalMemory> {
    use sys::CUexternalMemoryHandleType as T;
    // Not `zeroed()` for the whole struct: its handle-type enum has no zero value.
    // SAFETY: the union holds an int and pointers, for which all-zero is valid.
    let mut handle: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 =
        unsafe { core::mem::zeroed() };
    match h {
        OsHandle::Fd(fd) => handle.fd = fd,
        OsHandle::Win32(p) => handle.win32.handle = p,
    }
    let desc = sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        type_: match ty {
            ExtMemType::OpaqueFd => T::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            ExtMemType::OpaqueWin32 => T::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32,
            ExtMemType::D3D12Resource => T::CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE,
            ExtMemType::D3D12Heap => T::CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP,
        },
        handle,
        size,
        flags: if dedicated {
            sys::CUDA_EXTERNAL_MEMORY_DEDICATED
        } else {
            0
        },
        reserved: [0; 16],
    };
    let mut m: sys::CUexternalMemory = core::ptr::null_mut();
    // SAFETY: valid descriptor and out-pointer; the handle is live (caller).
    check("cuImportExternalMemory", unsafe {
        sys::cuImportExternalMemory(&mut m, &desc)
    })?;
    Ok(m)
}

/// Maps `size` bytes at `offset` of imported memory as a device address (free it with
/// [`mem_free`](super::mem_free)).
///
/// # Safety
/// A context is current; `m` is live.
pub(crate) unsafe fn external_memory_mapped_buffer(
    m: sys::CUexternalMemory,
    offset: u64,
    size: u64,
) -> Result<CUdeviceptr> {
    // SAFETY: all-zero is valid (flags and reserved must be 0).
    let mut desc: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { core::mem::zeroed() };
    desc.offset = offset;
    desc.size = size;
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid descriptor and out-pointer; `m` live (caller).
    check("cuExternalMemoryGetMappedBuffer", unsafe {
        sys::cuExternalMemoryGetMappedBuffer(&mut p, m, &desc)
    })?;
    Ok(p)
}

/// # Safety
/// `m` is live, and every buffer mapped from it has been freed.
pub(crate) unsafe fn destroy_external_memory(m: sys::CUexternalMemory) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuDestroyExternalMemory", unsafe {
        sys::cuDestroyExternalMemory(m)
    })
}

/// Imports an external semaphore; on success the driver owns a POSIX fd.
///
/// # Safety
/// A context is current; `h` is a live handle of the kind `ty` names.
pub(crate) unsafe fn import_external_semaphore(
    ty: ExtSemType,
    h: OsHandle,
) -> Result<sys::CUexternalSemaphore> {
    use sys::CUexternalSemaphoreHandleType as T;
    // As for memory: the handle-type enum has no zero value.
    // SAFETY: the union holds an int and pointers, for which all-zero is valid.
    let mut handle: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 =
        unsafe { core::mem::zeroed() };
    match h {
        OsHandle::Fd(fd) => handle.fd = fd,
        OsHandle::Win32(p) => handle.win32.handle = p,
    }
    let desc = sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_: match ty {
            ExtSemType::OpaqueFd => T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
            ExtSemType::TimelineFd => T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD,
            ExtSemType::OpaqueWin32 => T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32,
            ExtSemType::TimelineWin32 => {
                T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32
            }
            ExtSemType::D3D12Fence => T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE,
        },
        handle,
        flags: 0,
        reserved: [0; 16],
    };
    let mut sem: sys::CUexternalSemaphore = core::ptr::null_mut();
    // SAFETY: valid descriptor and out-pointer.
    check("cuImportExternalSemaphore", unsafe {
        sys::cuImportExternalSemaphore(&mut sem, &desc)
    })?;
    Ok(sem)
}

/// Enqueues a signal of `sem` (to `value` for a timeline semaphore or fence) on `s`.
///
/// # Safety
/// A context is current; `sem` and `s` are live.
pub(crate) unsafe fn signal_external_semaphore(
    sem: sys::CUexternalSemaphore,
    value: u64,
    s: CUstream,
) -> Result<()> {
    // SAFETY: all-zero is valid.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { core::mem::zeroed() };
    p.params.fence.value = value;
    // SAFETY: one semaphore, one parameter block, both valid for the call.
    check("cuSignalExternalSemaphoresAsync", unsafe {
        sys::cuSignalExternalSemaphoresAsync(&sem, &p, 1, s)
    })
}

/// Enqueues a wait for `sem` (until it reaches `value`, for a timeline semaphore) on `s`.
///
/// # Safety
/// A context is current; `sem` and `s` are live.
pub(crate) unsafe fn wait_external_semaphore(
    sem: sys::CUexternalSemaphore,
    value: u64,
    s: CUstream,
) -> Result<()> {
    // SAFETY: all-zero is valid.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { core::mem::zeroed() };
    p.params.fence.value = value;
    // SAFETY: as above.
    check("cuWaitExternalSemaphoresAsync", unsafe {
        sys::cuWaitExternalSemaphoresAsync(&sem, &p, 1, s)
    })
}

/// # Safety
/// `sem` is live and no pending work waits on or signals it.
pub(crate) unsafe fn destroy_external_semaphore(sem: sys::CUexternalSemaphore) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuDestroyExternalSemaphore", unsafe {
        sys::cuDestroyExternalSemaphore(sem)
    })
}

// ----------------------------------------------------------------------------------------------
// Legacy IPC
// ----------------------------------------------------------------------------------------------

/// The 64-byte IPC handle of the allocation holding `p`.
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn ipc_get_mem_handle(p: CUdeviceptr) -> Result<[u8; 64]> {
    // SAFETY: all-zero is valid.
    let mut h: sys::CUipcMemHandle = unsafe { core::mem::zeroed() };
    // SAFETY: valid out-pointer.
    check("cuIpcGetMemHandle", unsafe {
        sys::cuIpcGetMemHandle(&mut h, p)
    })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// Opens another process's allocation; the raw result, so the caller can name a refusal.
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn ipc_open_mem_handle(
    h: &[u8; 64],
) -> core::result::Result<CUdeviceptr, CudaError> {
    // SAFETY: all-zero is valid.
    let mut handle: sys::CUipcMemHandle = unsafe { core::mem::zeroed() };
    handle.reserved = h.map(|b| b as core::ffi::c_char);
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; the handle is plain bytes (the driver validates it).
    let r = unsafe {
        sys::cuIpcOpenMemHandle_v2(
            &mut p,
            handle,
            sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32,
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(p)
    } else {
        Err(cuda_error(r))
    }
}

/// # Safety
/// `p` came from [`ipc_open_mem_handle`] and no pending work uses it.
pub(crate) unsafe fn ipc_close_mem_handle(p: CUdeviceptr) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuIpcCloseMemHandle", unsafe {
        sys::cuIpcCloseMemHandle(p)
    })
}

/// An event usable by other processes (`CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING`).
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn event_create_interprocess() -> Result<CUevent> {
    let flags = sys::CUevent_flags::CU_EVENT_INTERPROCESS as u32
        | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    let mut e: CUevent = core::ptr::null_mut();
    // SAFETY: valid out-pointer.
    check("cuEventCreate", unsafe {
        sys::cuEventCreate(&mut e, flags)
    })?;
    Ok(e)
}

/// # Safety
/// A context is current; `e` is live.
pub(crate) unsafe fn ipc_get_event_handle(e: CUevent) -> Result<[u8; 64]> {
    // SAFETY: all-zero is valid.
    let mut h: sys::CUipcEventHandle = unsafe { core::mem::zeroed() };
    // SAFETY: valid out-pointer; `e` live (caller).
    check("cuIpcGetEventHandle", unsafe {
        sys::cuIpcGetEventHandle(&mut h, e)
    })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// # Safety
/// A context is current.
pub(crate) unsafe fn ipc_open_event_handle(
    h: &[u8; 64],
) -> core::result::Result<CUevent, CudaError> {
    // SAFETY: all-zero is valid.
    let mut handle: sys::CUipcEventHandle = unsafe { core::mem::zeroed() };
    handle.reserved = h.map(|b| b as core::ffi::c_char);
    let mut e: CUevent = core::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let r = unsafe { sys::cuIpcOpenEventHandle(&mut e, handle) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(e)
    } else {
        Err(cuda_error(r))
    }
}

// ----------------------------------------------------------------------------------------------
// Virtual memory management (cuMemCreate) with shareable handles
// ----------------------------------------------------------------------------------------------

fn handle_type(win32: bool) -> sys::CUmemAllocationHandleType {
    if win32 {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_WIN32
    } else {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    }
}

fn device_prop(dev: CUdevice, win32: bool) -> sys::CUmemAllocationProp {
    // SAFETY: all-zero is valid (no Windows metadata: the default security attributes).
    let mut prop: sys::CUmemAllocationProp = unsafe { core::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = handle_type(win32);
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop
}

/// The allocation granularity for shareable device memory on `dev`.
///
/// # Safety
/// `dev` came from `cuDeviceGet`.
pub(crate) unsafe fn vmm_granularity(dev: CUdevice, win32: bool) -> Result<usize> {
    let prop = device_prop(dev, win32);
    let mut g = 0usize;
    // SAFETY: valid property and out-pointer.
    check("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(
            &mut g,
            &prop,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        )
    })?;
    Ok(g.max(1))
}

/// Creates `size` bytes (a multiple of the granularity) of exportable device memory.
///
/// # Safety
/// A context is current; `dev` is its device.
pub(crate) unsafe fn vmm_create(dev: CUdevice, size: usize, win32: bool) -> Result<u64> {
    let prop = device_prop(dev, win32);
    let mut h: sys::CUmemGenericAllocationHandle = 0;
    // SAFETY: valid property and out-pointer.
    check("cuMemCreate", unsafe {
        sys::cuMemCreate(&mut h, size, &prop, 0)
    })?;
    Ok(h)
}

/// Reserves an address range, maps `h` there and enables reads and writes from `dev`; on
/// failure everything done is undone (`h` stays the caller's).
///
/// # Safety
/// A context is current; `h` is a live allocation handle of `size` bytes.
pub(crate) unsafe fn vmm_map(h: u64, size: usize, dev: CUdevice) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; no fixed address requested.
    check("cuMemAddressReserve", unsafe {
        sys::cuMemAddressReserve(&mut p, size, 0, 0, 0)
    })?;
    // SAFETY: the range was just reserved with `size` bytes; `h` is live (caller).
    if let Err(e) = check("cuMemMap", unsafe { sys::cuMemMap(p, size, 0, h, 0) }) {
        // SAFETY: reserved above, nothing mapped.
        let _ = unsafe { sys::cuMemAddressFree(p, size) };
        return Err(e);
    }
    let access = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: the range is mapped; one valid access descriptor.
    if let Err(e) = check("cuMemSetAccess", unsafe {
        sys::cuMemSetAccess(p, size, &access, 1)
    }) {
        // SAFETY: mapped and reserved above; unused.
        let _ = unsafe { vmm_unmap(p, size) };
        return Err(e);
    }
    Ok(p)
}

/// Unmaps and frees the range of [`vmm_map`] (the allocation handle is released separately).
///
/// # Safety
/// `p` came from `vmm_map(.., size, ..)` and no pending work uses it.
pub(crate) unsafe fn vmm_unmap(p: CUdeviceptr, size: usize) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let unmapped = check("cuMemUnmap", unsafe { sys::cuMemUnmap(p, size) });
    // SAFETY: forwarded from the caller.
    let freed = check("cuMemAddressFree", unsafe {
        sys::cuMemAddressFree(p, size)
    });
    unmapped.and(freed)
}

/// # Safety
/// `h` is a live allocation handle; the memory stays alive while mapped.
pub(crate) unsafe fn vmm_release(h: u64) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemRelease", unsafe { sys::cuMemRelease(h) })
}

/// A new operating-system handle for allocation `h` (a POSIX fd the caller owns, or a Windows
/// `HANDLE`).
///
/// # Safety
/// `h` is live and was created with the requested handle type.
pub(crate) unsafe fn vmm_export(h: u64, win32: bool) -> Result<OsHandle> {
    if win32 {
        let mut out: *mut c_void = core::ptr::null_mut();
        // SAFETY: a HANDLE-sized out-pointer.
        check("cuMemExportToShareableHandle", unsafe {
            sys::cuMemExportToShareableHandle((&raw mut out).cast(), h, handle_type(true), 0)
        })?;
        Ok(OsHandle::Win32(out))
    } else {
        let mut fd: core::ffi::c_int = -1;
        // SAFETY: an int-sized out-pointer.
        check("cuMemExportToShareableHandle", unsafe {
            sys::cuMemExportToShareableHandle((&raw mut fd).cast(), h, handle_type(false), 0)
        })?;
        Ok(OsHandle::Fd(fd))
    }
}

/// The allocation handle of a shareable handle (the POSIX fd stays the caller's); the raw
/// result, so the caller can name a refusal.
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn vmm_import(h: OsHandle) -> core::result::Result<u64, CudaError> {
    let mut out: sys::CUmemGenericAllocationHandle = 0;
    let r = match h {
        // SAFETY: for POSIX fds the driver takes the fd itself, cast to a pointer.
        OsHandle::Fd(fd) => unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut out,
                fd as isize as *mut c_void,
                handle_type(false),
            )
        },
        // SAFETY: for Windows handles, the handle.
        OsHandle::Win32(p) => unsafe {
            sys::cuMemImportFromShareableHandle(&mut out, p, handle_type(true))
        },
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(out)
    } else {
        Err(cuda_error(r))
    }
}

/// `(free, total)` bytes of device memory of the current context's device.
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn mem_get_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: valid out-pointers.
    check("cuMemGetInfo", unsafe {
        sys::cuMemGetInfo_v2(&mut free, &mut total)
    })?;
    Ok((free, total))
}

/// The device's UUID (what Vulkan's `VkPhysicalDeviceIDProperties::deviceUUID` holds).
///
/// # Safety
/// `dev` came from `cuDeviceGet`.
pub(crate) unsafe fn device_uuid(dev: CUdevice) -> Result<[u8; 16]> {
    // SAFETY: all-zero is valid.
    let mut u: sys::CUuuid = unsafe { core::mem::zeroed() };
    // SAFETY: valid out-pointer.
    check("cuDeviceGetUuid", unsafe {
        sys::cuDeviceGetUuid_v2(&mut u, dev)
    })?;
    Ok(u.bytes.map(|b| b as u8))
}

/// The device of the current context.
///
/// # Safety
/// A context is current.
pub(crate) unsafe fn ctx_device() -> Result<CUdevice> {
    let mut d: CUdevice = 0;
    // SAFETY: valid out-pointer.
    check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut d) })?;
    Ok(d)
}
