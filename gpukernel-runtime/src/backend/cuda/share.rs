//! The CUDA backend's sharing operations, over `driver/share.rs`.

use core::ffi::c_void;

use super::CudaBackend;
use crate::backend::{
    EventHandle, ExternalMemoryHandle, ExternalSemaphoreHandle, ShareBackend, SharedAlloc,
    SharedKind, StreamHandle,
};
use crate::driver::{self, ExtMemType, ExtSemType, OsHandle};
use crate::error::{Error, Result};

/// What the driver's refusal of an opened handle most likely means.
const REJECTED_HINT: &str = "the exporting process may have freed the memory or exited, the \
     handle may come from another device or machine, or it was opened in the process that \
     exported it (legacy IPC handles open only in other processes)";

fn ext_mem(m: ExternalMemoryHandle) -> cudarc::driver::sys::CUexternalMemory {
    m.0.cast()
}

fn ext_sem(s: ExternalSemaphoreHandle) -> cudarc::driver::sys::CUexternalSemaphore {
    s.0.cast()
}

impl ShareBackend for CudaBackend {
    fn alloc_shareable(&self, bytes: usize, vmm: Option<bool>) -> Result<SharedAlloc> {
        self.call(|| match vmm {
            None => {
                // SAFETY: the context is current; bytes > 0 (caller).
                let ptr = unsafe { driver::mem_alloc(bytes) }?;
                // SAFETY: just allocated, `bytes` long; nothing else uses it yet. The fill is
                // on the legacy default stream, which synchronizes with blocking streams; we
                // also wait for it, so every stream sees zeroed memory.
                let zeroed =
                    unsafe { driver::memset_d8_async(ptr, 0, bytes, core::ptr::null_mut()) }
                        .and_then(|()| {
                            // SAFETY: the null stream is always valid in a current context.
                            driver::sync_result("cuStreamSynchronize", unsafe {
                                driver::stream_synchronize(core::ptr::null_mut())
                            })
                        });
                if let Err(e) = zeroed {
                    // SAFETY: allocated above, unused.
                    let _ = unsafe { driver::mem_free(ptr) };
                    return Err(e);
                }
                Ok(SharedAlloc {
                    ptr,
                    bytes,
                    kind: SharedKind::Legacy,
                })
            }
            Some(win32) => {
                // SAFETY: the context is current.
                let dev = unsafe { driver::ctx_device() }?;
                // SAFETY: `dev` is the current context's device.
                let g = unsafe { driver::vmm_granularity(dev, win32) }?;
                let size = bytes.div_ceil(g) * g;
                // SAFETY: as above; `size` is a multiple of the granularity.
                let handle = unsafe { driver::vmm_create(dev, size, win32) }?;
                // SAFETY: `handle` is live and `size` long.
                let ptr = match unsafe { driver::vmm_map(handle, size, dev) } {
                    Ok(p) => p,
                    Err(e) => {
                        // SAFETY: created above, not mapped.
                        let _ = unsafe { driver::vmm_release(handle) };
                        return Err(e);
                    }
                };
                let a = SharedAlloc {
                    ptr,
                    bytes: size,
                    kind: SharedKind::Vmm { handle, win32 },
                };
                // SAFETY: mapped read-write above; waited for below.
                let zeroed =
                    unsafe { driver::memset_d8_async(ptr, 0, size, core::ptr::null_mut()) }
                        .and_then(|()| {
                            // SAFETY: the null stream is valid in a current context.
                            driver::sync_result("cuStreamSynchronize", unsafe {
                                driver::stream_synchronize(core::ptr::null_mut())
                            })
                        });
                if let Err(e) = zeroed {
                    // SAFETY: ours, unused.
                    let _ = unsafe { self.free_shareable(a) };
                    return Err(e);
                }
                Ok(a)
            }
        })
    }

    unsafe fn free_shareable(&self, a: SharedAlloc) -> Result<()> {
        self.call(|| match a.kind {
            // SAFETY: a dedicated allocation, unused (caller).
            SharedKind::Legacy => unsafe { driver::mem_free(a.ptr) },
            // SAFETY: opened by cuIpcOpenMemHandle, unused (caller).
            SharedKind::IpcOpened => unsafe { driver::ipc_close_mem_handle(a.ptr) },
            SharedKind::Vmm { handle, .. } => {
                // SAFETY: mapped by `vmm_map` with this size, unused (caller).
                let unmapped = unsafe { driver::vmm_unmap(a.ptr, a.bytes) };
                // SAFETY: the handle is ours; after unmapping nothing keeps it.
                let released = unsafe { driver::vmm_release(handle) };
                unmapped.and(released)
            }
        })
    }

    fn ipc_mem_export(&self, ptr: u64) -> Result<[u8; 64]> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::ipc_get_mem_handle(ptr) })
    }

    fn ipc_mem_open(&self, handle: &[u8; 64]) -> Result<u64> {
        self.call(|| {
            // SAFETY: the context is current.
            unsafe { driver::ipc_open_mem_handle(handle) }.map_err(|error| {
                Error::ShareHandleRejected {
                    operation: "cuIpcOpenMemHandle",
                    handle: "IPC memory handle",
                    error,
                    hint: REJECTED_HINT,
                }
            })
        })
    }

    fn event_create_interprocess(&self) -> Result<EventHandle> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::event_create_interprocess() })
            .map(|e| EventHandle(e.cast()))
    }

    fn ipc_event_export(&self, e: EventHandle) -> Result<[u8; 64]> {
        // SAFETY: the context is current; the event is live while its owner is.
        self.call(|| unsafe { driver::ipc_get_event_handle(e.0.cast()) })
    }

    fn ipc_event_open(&self, handle: &[u8; 64]) -> Result<EventHandle> {
        self.call(|| {
            // SAFETY: the context is current.
            unsafe { driver::ipc_open_event_handle(handle) }
                .map(|e| EventHandle(e.cast()))
                .map_err(|error| Error::ShareHandleRejected {
                    operation: "cuIpcOpenEventHandle",
                    handle: "IPC event handle",
                    error,
                    hint: REJECTED_HINT,
                })
        })
    }

    fn vmm_export(&self, a: SharedAlloc) -> Result<OsHandle> {
        let SharedKind::Vmm { handle, win32 } = a.kind else {
            return Err(Error::NotExportable {
                operation: "vmm_export",
                what: "this allocation",
                reason: "it was not made with cuMemCreate".into(),
                hint: "allocate it with Context::alloc_shareable(.., ShareKind::PosixFd)",
            });
        };
        // SAFETY: the context is current; the handle is live while the buffer is.
        self.call(|| unsafe { driver::vmm_export(handle, win32) })
    }

    fn vmm_import(&self, h: OsHandle, bytes: usize, win32: bool) -> Result<SharedAlloc> {
        self.call(|| {
            // SAFETY: the context is current.
            let handle =
                unsafe { driver::vmm_import(h) }.map_err(|error| Error::ShareHandleRejected {
                    operation: "cuMemImportFromShareableHandle",
                    handle: "VMM shareable handle",
                    error,
                    hint: "the descriptor must come from cuMemExportToShareableHandle (a \
                           gpukernel VMM export), not from another file",
                })?;
            // SAFETY: as above.
            let dev = unsafe { driver::ctx_device() };
            // SAFETY: `handle` is live; a size larger than the allocation fails in cuMemMap.
            let mapped = dev.and_then(|dev| unsafe { driver::vmm_map(handle, bytes, dev) });
            match mapped {
                Ok(ptr) => Ok(SharedAlloc {
                    ptr,
                    bytes,
                    kind: SharedKind::Vmm { handle, win32 },
                }),
                Err(e) => {
                    // SAFETY: imported above, not mapped.
                    let _ = unsafe { driver::vmm_release(handle) };
                    Err(e)
                }
            }
        })
    }

    fn vmm_granularity(&self, win32: bool) -> Result<usize> {
        self.call(|| {
            // SAFETY: the context is current.
            let dev = unsafe { driver::ctx_device() }?;
            // SAFETY: the current context's device.
            unsafe { driver::vmm_granularity(dev, win32) }
        })
    }

    fn external_memory_import(
        &self,
        ty: ExtMemType,
        h: OsHandle,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemoryHandle> {
        // SAFETY: the context is current; the handle's validity is the driver's to check (a
        // closed or foreign descriptor is refused).
        self.call(|| unsafe { driver::import_external_memory(ty, h, size, dedicated) })
            .map(|m| ExternalMemoryHandle(m.cast()))
    }

    fn external_memory_map(&self, m: ExternalMemoryHandle, offset: u64, size: u64) -> Result<u64> {
        // SAFETY: the context is current; `m` is live while its owner is.
        self.call(|| unsafe { driver::external_memory_mapped_buffer(ext_mem(m), offset, size) })
    }

    unsafe fn external_memory_unmap(&self, ptr: u64) -> Result<()> {
        // SAFETY: mapped by cuExternalMemoryGetMappedBuffer, unused (caller).
        self.call(|| unsafe { driver::mem_free(ptr) })
    }

    unsafe fn external_memory_destroy(&self, m: ExternalMemoryHandle) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::destroy_external_memory(ext_mem(m)) })
    }

    fn external_semaphore_import(
        &self,
        ty: ExtSemType,
        h: OsHandle,
    ) -> Result<ExternalSemaphoreHandle> {
        // SAFETY: the context is current; the driver checks the handle.
        self.call(|| unsafe { driver::import_external_semaphore(ty, h) })
            .map(|s| ExternalSemaphoreHandle(s.cast()))
    }

    fn external_semaphore_signal(
        &self,
        sem: ExternalSemaphoreHandle,
        value: u64,
        s: StreamHandle,
    ) -> Result<()> {
        // SAFETY: the context is current; both handles are live while their owners are.
        self.call(|| unsafe { driver::signal_external_semaphore(ext_sem(sem), value, s.0.cast()) })
    }

    fn external_semaphore_wait(
        &self,
        sem: ExternalSemaphoreHandle,
        value: u64,
        s: StreamHandle,
    ) -> Result<()> {
        // SAFETY: as above.
        self.call(|| unsafe { driver::wait_external_semaphore(ext_sem(sem), value, s.0.cast()) })
    }

    unsafe fn external_semaphore_destroy(&self, sem: ExternalSemaphoreHandle) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::destroy_external_semaphore(ext_sem(sem)) })
    }

    fn mem_info(&self) -> Result<(usize, usize)> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::mem_get_info() })
    }

    fn device_uuid(&self) -> Result<[u8; 16]> {
        self.call(|| {
            // SAFETY: the context is current.
            let dev = unsafe { driver::ctx_device() }?;
            // SAFETY: a device of cuCtxGetDevice.
            unsafe { driver::device_uuid(dev) }
        })
    }

    fn raw_context(&self) -> *mut c_void {
        self.raw.cast()
    }
}
