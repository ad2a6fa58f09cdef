//! Memory and semaphores of graphics APIs (Vulkan, D3D12): import them, run kernels on the
//! memory, and order the work with the API's semaphores, without copies.
//!
//! ```text
//! Vulkan: vkGetMemoryFdKHR ─► ExternalMemory::import ─► .map::<T>(offset, len) ─► DeviceBuffer<T>
//! Vulkan: vkGetSemaphoreFdKHR ─► ExternalSemaphore::import(.., Binary | Timeline)
//! stream: sem.wait(&s) ─► s.launch(kernel on the buffer) ─► done.signal_value(&s, n)
//! ```
//!
//! Handle types: POSIX opaque file descriptors (`VK_KHR_external_memory_fd`,
//! `VK_KHR_external_semaphore_fd`, binary and timeline semaphores) on Unix; opaque Win32
//! handles, D3D12 resources, heaps and fences on Windows. The Windows forms compile only there
//! and were not run (no Windows machine in CI); a Windows handle on Unix is
//! [`Error::UnsupportedHandleType`].
//!
//! The simulator: [`Error::NotOnSimulator`] for everything (no graphics API can reach its
//! memory).

use std::fmt;
#[cfg(unix)]
use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use gpukernel_device::DeviceCopy;

use crate::backend::{ExternalMemoryHandle as RawMem, ExternalSemaphoreHandle as RawSem};
use crate::context::{Context, ContextInner};
use crate::driver::{ExtMemType, ExtSemType, OsHandle};
use crate::error::{Error, Result};
use crate::ipc::{check_range, not_on_simulator};
use crate::memory::{DeviceBuffer, DevicePtr};
use crate::stream::Stream;

/// A memory handle exported by another API. A POSIX descriptor is given to the driver on a
/// successful import (closed here on failure); Windows handles stay the caller's.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExternalMemoryHandle {
    /// An opaque file descriptor (`VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`).
    #[cfg(unix)]
    OpaqueFd(OwnedFd),
    /// An opaque Win32 `HANDLE` (`VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT`), as an
    /// integer. Windows only.
    OpaqueWin32(isize),
    /// A D3D12 committed resource's shared `HANDLE`. Windows only; always dedicated.
    D3D12Resource(isize),
    /// A D3D12 heap's shared `HANDLE`. Windows only.
    D3D12Heap(isize),
}

/// A semaphore handle exported by another API (ownership as for [`ExternalMemoryHandle`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ExternalSemaphoreHandle {
    /// An opaque file descriptor (`VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT`) of a
    /// binary or timeline semaphore.
    #[cfg(unix)]
    OpaqueFd(OwnedFd),
    /// An opaque Win32 `HANDLE` of a binary or timeline semaphore. Windows only.
    OpaqueWin32(isize),
    /// A D3D12 fence's shared `HANDLE` (a timeline). Windows only.
    D3D12Fence(isize),
}

/// Whether a semaphore is signalled and waited on without a value (binary) or with a
/// monotonically increasing 64-bit value (timeline; D3D12 fences).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemaphoreKind {
    /// `VK_SEMAPHORE_TYPE_BINARY`.
    Binary,
    /// `VK_SEMAPHORE_TYPE_TIMELINE`, or a D3D12 fence.
    Timeline,
}

/// Windows handles, refused elsewhere by name.
#[cfg_attr(
    windows,
    allow(dead_code, reason = "refusal used on non-Windows platforms")
)]
fn windows_only(operation: &'static str, handle_type: &'static str) -> Error {
    Error::UnsupportedHandleType {
        operation,
        handle_type,
        place: "on this platform (Windows handles exist on Windows only)".into(),
    }
}

#[cfg_attr(
    not(windows),
    allow(unused_variables, reason = "the Windows handle is unused")
)]
fn win32(operation: &'static str, what: &'static str, h: isize) -> Result<OsHandle> {
    #[cfg(windows)]
    {
        let _ = (operation, what);
        Ok(OsHandle::Win32(h as *mut core::ffi::c_void))
    }
    #[cfg(not(windows))]
    Err(windows_only(operation, what))
}

struct MemInner {
    ctx: Arc<ContextInner>,
    handle: RawMem,
    size: u64,
}

// SAFETY: the handle is a process-wide driver object; the backend binds the context.
unsafe impl Send for MemInner {}
// SAFETY: as above; nothing is mutated through `&`.
unsafe impl Sync for MemInner {}

impl Drop for MemInner {
    fn drop(&mut self) {
        // Every mapped buffer holds an `Arc` of this: they are all unmapped by now.
        // SAFETY: ours, not used after this.
        let _ = unsafe { self.ctx.backend.external_memory_destroy(self.handle) };
    }
}

/// Memory imported from another API (`cuImportExternalMemory`). Map ranges of it as typed
/// buffers ([`map`](Self::map)); it is destroyed (`cuDestroyExternalMemory`) when this and
/// every buffer mapped from it are dropped.
pub struct ExternalMemory {
    inner: Arc<MemInner>,
}

impl fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("size", &self.inner.size)
            .finish()
    }
}

impl ExternalMemory {
    /// Imports `size` bytes of another API's memory; `dedicated` when it is a dedicated
    /// allocation there (`VkMemoryDedicatedAllocateInfo`; always for D3D12 resources).
    /// [`Error::UnsupportedHandleType`] for a handle type this platform lacks, a driver error
    /// for a handle the driver refuses (closed, not memory, another device).
    ///
    /// # Safety
    /// The handle is an export of at least `size` bytes of memory of this context's device;
    /// the other API does not access the mapped ranges while work enqueued here on them may
    /// run (order both sides with [`ExternalSemaphore`]s), and keeps its memory alive until
    /// this and the mapped buffers are dropped.
    pub unsafe fn import(
        ctx: &Context,
        handle: ExternalMemoryHandle,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemory> {
        const OP: &str = "ExternalMemory::import";
        not_on_simulator(&ctx.inner, OP)?;
        let backend = &ctx.inner.backend;
        let raw = match handle {
            #[cfg(unix)]
            ExternalMemoryHandle::OpaqueFd(fd) => {
                use std::os::fd::AsRawFd;
                let m = backend.external_memory_import(
                    ExtMemType::OpaqueFd,
                    OsHandle::Fd(fd.as_raw_fd()),
                    size,
                    dedicated,
                )?;
                // Imported: the driver owns the descriptor now (on error `fd` is closed here).
                let _ = fd.into_raw_fd();
                m
            }
            ExternalMemoryHandle::OpaqueWin32(h) => backend.external_memory_import(
                ExtMemType::OpaqueWin32,
                win32(OP, "opaque Win32", h)?,
                size,
                dedicated,
            )?,
            ExternalMemoryHandle::D3D12Resource(h) => backend.external_memory_import(
                ExtMemType::D3D12Resource,
                win32(OP, "D3D12 resource", h)?,
                size,
                true,
            )?,
            ExternalMemoryHandle::D3D12Heap(h) => backend.external_memory_import(
                ExtMemType::D3D12Heap,
                win32(OP, "D3D12 heap", h)?,
                size,
                dedicated,
            )?,
        };
        Ok(ExternalMemory {
            inner: Arc::new(MemInner {
                ctx: ctx.inner.clone(),
                handle: raw,
                size,
            }),
        })
    }

    /// The imported size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// Maps `len` elements at byte `offset` as a buffer (`cuExternalMemoryGetMappedBuffer`),
    /// freed when dropped after its work; the import stays alive while it exists.
    /// [`Error::ShareRange`] when the range does not fit the import or `offset` is misaligned
    /// for `T`.
    pub fn map<T: DeviceCopy>(&self, offset: u64, len: usize) -> Result<DeviceBuffer<T>> {
        const OP: &str = "ExternalMemory::map";
        let i = &self.inner;
        check_range::<T>(OP, "the external memory", offset, len as u64, i.size)?;
        let bytes = (len * size_of::<T>()) as u64;
        // The driver refuses empty mappings; map one byte so the buffer has an address.
        let ptr = i
            .ctx
            .backend
            .external_memory_map(i.handle, offset, bytes.max(1))?;
        let keep = self.inner.clone();
        let ctx = Context {
            inner: i.ctx.clone(),
        };
        let finalizer = move || {
            // SAFETY: mapped above; the buffer's work is done (the drop policy).
            let _ = unsafe { keep.ctx.backend.external_memory_unmap(ptr) };
            drop(keep);
        };
        // SAFETY: `ptr` is `bytes` of device memory of this context, mapped for this buffer
        // alone; the import's contract (caller of `import`) keeps it valid and unshared while
        // our work runs; the finalizer unmaps it once, after that work.
        let made = unsafe {
            DeviceBuffer::from_raw_parts_with_finalizer(
                &ctx,
                DevicePtr::from_addr(ptr),
                len,
                finalizer,
            )
        };
        if made.is_err() {
            // The finalizer was dropped unrun: unmap here.
            // SAFETY: mapped above, never used.
            let _ = unsafe { i.ctx.backend.external_memory_unmap(ptr) };
        }
        made
    }
}

/// A semaphore imported from another API (`cuImportExternalSemaphore`): streams wait on it and
/// signal it, in stream order. Destroyed when dropped, after the streams that used it are idle
/// (else leaked, like buffers).
pub struct ExternalSemaphore {
    ctx: Arc<ContextInner>,
    handle: RawSem,
    kind: SemaphoreKind,
    used_on: Mutex<Vec<Stream>>,
}

// SAFETY: a process-wide driver object; the rest is Sync.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: as above.
unsafe impl Sync for ExternalSemaphore {}

impl fmt::Debug for ExternalSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalSemaphore")
            .field("kind", &self.kind)
            .finish()
    }
}

impl ExternalSemaphore {
    /// Imports a semaphore of `kind`. [`Error::UnsupportedHandleType`] for a handle type this
    /// platform lacks; [`Error::SemaphoreKind`] for a D3D12 fence imported as binary; a driver
    /// error for a handle the driver refuses.
    ///
    /// # Safety
    /// The handle is an export of a semaphore of `kind` on this context's device (the driver
    /// cannot always tell a binary from a timeline semaphore).
    pub unsafe fn import(
        ctx: &Context,
        handle: ExternalSemaphoreHandle,
        kind: SemaphoreKind,
    ) -> Result<ExternalSemaphore> {
        const OP: &str = "ExternalSemaphore::import";
        not_on_simulator(&ctx.inner, OP)?;
        let backend = &ctx.inner.backend;
        let raw = match handle {
            #[cfg(unix)]
            ExternalSemaphoreHandle::OpaqueFd(fd) => {
                use std::os::fd::AsRawFd;
                let ty = match kind {
                    SemaphoreKind::Binary => ExtSemType::OpaqueFd,
                    SemaphoreKind::Timeline => ExtSemType::TimelineFd,
                };
                let s = backend.external_semaphore_import(ty, OsHandle::Fd(fd.as_raw_fd()))?;
                let _ = fd.into_raw_fd();
                s
            }
            ExternalSemaphoreHandle::OpaqueWin32(h) => {
                let ty = match kind {
                    SemaphoreKind::Binary => ExtSemType::OpaqueWin32,
                    SemaphoreKind::Timeline => ExtSemType::TimelineWin32,
                };
                backend.external_semaphore_import(ty, win32(OP, "opaque Win32", h)?)?
            }
            ExternalSemaphoreHandle::D3D12Fence(h) => {
                if kind != SemaphoreKind::Timeline {
                    return Err(Error::SemaphoreKind {
                        operation: OP,
                        kind: "a D3D12 fence (a timeline)",
                        problem: "it was imported as binary",
                    });
                }
                backend.external_semaphore_import(
                    ExtSemType::D3D12Fence,
                    win32(OP, "D3D12 fence", h)?,
                )?
            }
        };
        Ok(ExternalSemaphore {
            ctx: ctx.inner.clone(),
            handle: raw,
            kind,
            used_on: Mutex::new(Vec::new()),
        })
    }

    /// The semaphore's kind.
    pub fn kind(&self) -> SemaphoreKind {
        self.kind
    }

    fn check(&self, operation: &'static str, stream: &Stream, value: Option<u64>) -> Result<u64> {
        crate::context::check_same(operation, "the stream", &self.ctx, stream.ctx())?;
        stream.not_capturing(operation)?;
        let v = match (self.kind, value) {
            (SemaphoreKind::Binary, None) => 0,
            (SemaphoreKind::Timeline, Some(v)) => v,
            (SemaphoreKind::Binary, Some(_)) => {
                return Err(Error::SemaphoreKind {
                    operation,
                    kind: "binary",
                    problem: "a value was given (use signal / wait)",
                });
            }
            (SemaphoreKind::Timeline, None) => {
                return Err(Error::SemaphoreKind {
                    operation,
                    kind: "timeline",
                    problem: "no value was given (use signal_value / wait_value)",
                });
            }
        };
        let mut used = self.used_on.lock().unwrap_or_else(|p| p.into_inner());
        if !used.iter().any(|s| s.same_as(stream)) {
            used.push(stream.clone());
        }
        Ok(v)
    }

    /// Enqueues a signal of a binary semaphore on `stream`, after the work enqueued so far.
    pub fn signal(&self, stream: &Stream) -> Result<()> {
        let v = self.check("ExternalSemaphore::signal", stream, None)?;
        self.ctx
            .backend
            .external_semaphore_signal(self.handle, v, stream.handle())
    }

    /// Enqueues setting a timeline semaphore to `value` on `stream`.
    pub fn signal_value(&self, stream: &Stream, value: u64) -> Result<()> {
        let v = self.check("ExternalSemaphore::signal_value", stream, Some(value))?;
        self.ctx
            .backend
            .external_semaphore_signal(self.handle, v, stream.handle())
    }

    /// Makes later work on `stream` wait until a binary semaphore is signalled (and consumes
    /// the signal).
    pub fn wait(&self, stream: &Stream) -> Result<()> {
        let v = self.check("ExternalSemaphore::wait", stream, None)?;
        self.ctx
            .backend
            .external_semaphore_wait(self.handle, v, stream.handle())
    }

    /// Makes later work on `stream` wait until a timeline semaphore reaches `value`.
    pub fn wait_value(&self, stream: &Stream, value: u64) -> Result<()> {
        let v = self.check("ExternalSemaphore::wait_value", stream, Some(value))?;
        self.ctx
            .backend
            .external_semaphore_wait(self.handle, v, stream.handle())
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        let used = std::mem::take(self.used_on.get_mut().unwrap_or_else(|p| p.into_inner()));
        // Outstanding waits and signals must complete first; if a stream cannot be waited for
        // (a faulted context, or a wait that never ends is the caller's), the semaphore leaks.
        if used.iter().any(|s| s.wait_idle().is_err()) {
            return;
        }
        // SAFETY: ours; no pending work uses it (waited above).
        let _ = unsafe { self.ctx.backend.external_semaphore_destroy(self.handle) };
    }
}
