//! The sharing part of the backend boundary: shareable allocations (legacy IPC, VMM with an
//! operating-system handle), IPC handles of memory and events, external memory and
//! semaphores. A supertrait of [`Backend`](super::Backend), so `ctx.backend.ipc_mem_export(..)`
//! works on every context.
//!
//! Every method has a default body that is the simulator's answer: [`Error::NotOnSimulator`].
//! The simulator's memory is host memory of this process: no other process, and no graphics
//! API, can reach it, so no emulation would be honest. The CUDA backend overrides them all
//! (`cuda/share.rs`).

use core::ffi::c_void;

use super::{EventHandle, ExternalMemoryHandle, ExternalSemaphoreHandle, StreamHandle};
use crate::driver::{ExtMemType, ExtSemType, OsHandle};
use crate::error::{Error, Result};

/// How a shareable allocation was made, hence how it is exported and freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedKind {
    /// A dedicated `cuMemAlloc` allocation (exportable with `cuIpcGetMemHandle`).
    Legacy,
    /// `cuMemCreate` with a shareable handle type, mapped here (`handle` is the
    /// `CUmemGenericAllocationHandle`).
    Vmm { handle: u64, win32: bool },
    /// Another process's legacy allocation, opened with `cuIpcOpenMemHandle`.
    IpcOpened,
}

/// A shareable allocation (or an opened one): its base address, its size in bytes (for VMM,
/// a multiple of the granularity) and its kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedAlloc {
    pub ptr: u64,
    pub bytes: usize,
    pub kind: SharedKind,
}

fn sim(operation: &'static str) -> Error {
    Error::NotOnSimulator { operation }
}

/// See the module documentation.
pub(crate) trait ShareBackend {
    /// Allocates `bytes > 0` bytes that can be exported: `SharedKind::Legacy` (a dedicated
    /// allocation) or VMM with a POSIX fd (`win32 = false`) or Windows handle; for VMM the size
    /// is rounded up to the granularity. Zeroed.
    fn alloc_shareable(&self, bytes: usize, vmm: Option<bool>) -> Result<SharedAlloc> {
        let _ = (bytes, vmm);
        Err(sim("alloc_shareable"))
    }
    /// Frees or closes a shareable allocation (after a host wait for the work that used it:
    /// the caller's).
    ///
    /// # Safety
    /// `a` came from this backend and no pending work uses it.
    unsafe fn free_shareable(&self, a: SharedAlloc) -> Result<()> {
        let _ = a;
        Err(sim("free_shareable"))
    }
    /// The legacy IPC handle of the allocation holding `ptr`.
    fn ipc_mem_export(&self, ptr: u64) -> Result<[u8; 64]> {
        let _ = ptr;
        Err(sim("ipc_mem_export"))
    }
    /// Opens another process's legacy IPC handle: the allocation's base address.
    fn ipc_mem_open(&self, handle: &[u8; 64]) -> Result<u64> {
        let _ = handle;
        Err(sim("ipc_mem_open"))
    }
    /// An event other processes can open (no timing).
    fn event_create_interprocess(&self) -> Result<EventHandle> {
        Err(sim("event_create_interprocess"))
    }
    /// The IPC handle of an interprocess event.
    fn ipc_event_export(&self, e: EventHandle) -> Result<[u8; 64]> {
        let _ = e;
        Err(sim("ipc_event_export"))
    }
    /// Opens another process's event (destroy it with `event_destroy`).
    fn ipc_event_open(&self, handle: &[u8; 64]) -> Result<EventHandle> {
        let _ = handle;
        Err(sim("ipc_event_open"))
    }
    /// A new operating-system handle for a VMM allocation (a POSIX fd the caller owns).
    fn vmm_export(&self, a: SharedAlloc) -> Result<OsHandle> {
        let _ = a;
        Err(sim("vmm_export"))
    }
    /// Imports and maps `bytes` of another allocation's VMM handle (a POSIX fd stays the
    /// caller's).
    fn vmm_import(&self, h: OsHandle, bytes: usize, win32: bool) -> Result<SharedAlloc> {
        let _ = (h, bytes, win32);
        Err(sim("vmm_import"))
    }
    /// The VMM allocation granularity.
    fn vmm_granularity(&self, win32: bool) -> Result<usize> {
        let _ = win32;
        Err(sim("vmm_granularity"))
    }
    /// Imports external memory of `size` bytes (a POSIX fd is the driver's on success).
    fn external_memory_import(
        &self,
        ty: ExtMemType,
        h: OsHandle,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemoryHandle> {
        let _ = (ty, h, size, dedicated);
        Err(sim("external_memory_import"))
    }
    /// Maps part of imported memory as a device buffer.
    fn external_memory_map(&self, m: ExternalMemoryHandle, offset: u64, size: u64) -> Result<u64> {
        let _ = (m, offset, size);
        Err(sim("external_memory_map"))
    }
    /// Frees a buffer mapped from external memory.
    ///
    /// # Safety
    /// `ptr` came from `external_memory_map` and no pending work uses it.
    unsafe fn external_memory_unmap(&self, ptr: u64) -> Result<()> {
        let _ = ptr;
        Err(sim("external_memory_unmap"))
    }
    /// Destroys imported memory.
    ///
    /// # Safety
    /// Every buffer mapped from `m` is unmapped; `m` is not used afterwards.
    unsafe fn external_memory_destroy(&self, m: ExternalMemoryHandle) -> Result<()> {
        let _ = m;
        Err(sim("external_memory_destroy"))
    }
    /// Imports an external semaphore (a POSIX fd is the driver's on success).
    fn external_semaphore_import(
        &self,
        ty: ExtSemType,
        h: OsHandle,
    ) -> Result<ExternalSemaphoreHandle> {
        let _ = (ty, h);
        Err(sim("external_semaphore_import"))
    }
    /// Enqueues a signal (`value` for timeline semaphores) on `s`.
    fn external_semaphore_signal(
        &self,
        sem: ExternalSemaphoreHandle,
        value: u64,
        s: StreamHandle,
    ) -> Result<()> {
        let _ = (sem, value, s);
        Err(sim("external_semaphore_signal"))
    }
    /// Enqueues a wait (for `value`, for timeline semaphores) on `s`.
    fn external_semaphore_wait(
        &self,
        sem: ExternalSemaphoreHandle,
        value: u64,
        s: StreamHandle,
    ) -> Result<()> {
        let _ = (sem, value, s);
        Err(sim("external_semaphore_wait"))
    }
    /// Destroys an imported semaphore.
    ///
    /// # Safety
    /// No pending work waits on or signals it; not used afterwards.
    unsafe fn external_semaphore_destroy(&self, sem: ExternalSemaphoreHandle) -> Result<()> {
        let _ = sem;
        Err(sim("external_semaphore_destroy"))
    }
    /// `(free, total)` bytes of device memory (`cuMemGetInfo`).
    fn mem_info(&self) -> Result<(usize, usize)> {
        Err(sim("mem_info"))
    }
    /// The device's UUID (`cuDeviceGetUuid`).
    fn device_uuid(&self) -> Result<[u8; 16]> {
        Err(sim("device_uuid"))
    }
    /// The raw `CUcontext` (null on the simulator), for interoperation with other libraries.
    #[cfg_attr(
        not(feature = "cudarc-interop"),
        allow(dead_code, reason = "used by the cudarc interop feature")
    )]
    fn raw_context(&self) -> *mut c_void {
        core::ptr::null_mut()
    }
}
