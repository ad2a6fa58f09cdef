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

use gpukernel_device::AnyBitPattern;

use crate::backend::{ExternalMemoryHandle as RawMem, ExternalSemaphoreHandle as RawSem};
use crate::context::{Context, ContextInner};
use crate::driver::{ExtMemType, ExtSemType, OsHandle};
use crate::error::{Error, Result};
use crate::ipc::{check_range, not_on_simulator};
use crate::memory::{DeviceBuffer, DevicePtr};
use crate::stream::Stream;

/// A memory handle exported by another API. A POSIX descriptor is given to the driver on a
/// successful import (closed here on failure); Windows handles stay the caller's.
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::external::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
/// // `fd`: vkGetMemoryFdKHR(.., VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT) of 64 MiB.
/// let handle = ExternalMemoryHandle::OpaqueFd(fd); // the driver owns it once imported
/// // SAFETY: 64 MiB of this device's memory (same deviceUUID); Vulkan and our streams are
/// // ordered by semaphores; Vulkan frees it only after `mem` and its buffers are dropped.
/// let mem = unsafe { ExternalMemory::import(&ctx, handle, 64 << 20, false)? };
/// # Ok(()) }
/// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::external::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
/// // `fd`: vkGetSemaphoreFdKHR(.., VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT) of a
/// // timeline semaphore.
/// let handle = ExternalSemaphoreHandle::OpaqueFd(fd);
/// // SAFETY: a timeline semaphore of this device.
/// let frames = unsafe { ExternalSemaphore::import(&ctx, handle, SemaphoreKind::Timeline)? };
/// # Ok(()) }
/// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::external::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
/// # let frame = 1;
/// let handle = ExternalSemaphoreHandle::OpaqueFd(fd);
/// // SAFETY: `fd` exports a VK_SEMAPHORE_TYPE_TIMELINE semaphore of this device.
/// let sem = unsafe { ExternalSemaphore::import(&ctx, handle, SemaphoreKind::Timeline)? };
/// sem.wait_value(&stream, 2 * frame)?; // a timeline is waited on for a value
/// let no_value = sem.wait(&stream); // the binary form: refused by name
/// assert!(matches!(no_value, Err(Error::SemaphoreKind { .. })));
/// # Ok(()) }
/// ```
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
    /// The byte ranges mapped by live buffers.
    lent: LentRanges,
    /// The device address of the one mapping of the whole import
    /// (`cuExternalMemoryGetMappedBuffer` at offset 0 for `size` bytes), made by the first
    /// [`ExternalMemory::map`] and freed with the import: every buffer is a range of it. The
    /// driver refuses mappings at offsets the external API's allocation granularity does not
    /// allow (on an H100, a second buffer at byte 2048 of a 4 KiB Vulkan allocation got
    /// `CUDA_ERROR_INVALID_VALUE`), and NVIDIA recommends mapping the combined range once and
    /// offsetting into it; so any offset aligned for the element type works.
    whole: Mutex<Option<u64>>,
}

impl MemInner {
    /// The whole import's device address, mapped on first use.
    fn whole(&self) -> Result<u64> {
        let mut whole = self.whole.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ptr) = *whole {
            return Ok(ptr);
        }
        // The driver refuses empty mappings.
        let ptr = self
            .ctx
            .backend
            .external_memory_map(self.handle, 0, self.size.max(1))?;
        *whole = Some(ptr);
        Ok(ptr)
    }
}

/// The byte ranges of an import that live buffers hold: a range is lent to one buffer at a
/// time, so two buffers never alias.
#[derive(Debug, Default)]
struct LentRanges(Mutex<Vec<(u64, u64)>>);

impl LentRanges {
    /// Lends `bytes` bytes at `offset`, or names the live range it overlaps (empty ranges
    /// overlap nothing).
    fn lend(&self, operation: &'static str, offset: u64, bytes: u64) -> Result<()> {
        let mut lent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let end = offset.saturating_add(bytes);
        if let Some(&(lent_offset, lent_bytes)) = lent
            .iter()
            .find(|&&(o, b)| bytes > 0 && b > 0 && offset < o.saturating_add(b) && o < end)
        {
            return Err(Error::RangeAlreadyMapped {
                operation,
                what: "the external memory",
                offset,
                bytes,
                lent_offset,
                lent_bytes,
            });
        }
        lent.push((offset, bytes));
        Ok(())
    }

    /// Takes back a range [`lend`](Self::lend) lent.
    fn release(&self, offset: u64, bytes: u64) {
        let mut lent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = lent.iter().position(|&r| r == (offset, bytes)) {
            lent.swap_remove(i);
        }
    }
}

// SAFETY: the handle is a process-wide driver object; the backend binds the context.
unsafe impl Send for MemInner {}
// SAFETY: as above; nothing is mutated through `&`.
unsafe impl Sync for MemInner {}

impl Drop for MemInner {
    fn drop(&mut self) {
        // Every mapped buffer holds an `Arc` of this: they are all dropped, their work done
        // (the buffers' drop policy), by now.
        let whole = self
            .whole
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(ptr) = whole {
            // SAFETY: mapped by `whole`, no buffer of it is left.
            let _ = unsafe { self.ctx.backend.external_memory_unmap(ptr) };
        }
        // SAFETY: ours, not used after this.
        let _ = unsafe { self.ctx.backend.external_memory_destroy(self.handle) };
    }
}

/// Memory imported from another API (`cuImportExternalMemory`). Map ranges of it as typed
/// buffers ([`map`](Self::map)); it is destroyed (`cuDestroyExternalMemory`) when this and
/// every buffer mapped from it are dropped.
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::external::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
/// # let null = || -> std::io::Result<std::os::fd::OwnedFd> { Ok(std::fs::File::open("/dev/null")?.into()) };
/// # let (fd, n) = (null()?, 1 << 20);
/// # let binary = |fd| unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Binary) };
/// # let (rendered, computed) = (binary(null()?)?, binary(null()?)?);
/// // `fd`: vkGetMemoryFdKHR of a Vulkan buffer of `n` u32s.
/// let handle = ExternalMemoryHandle::OpaqueFd(fd);
/// // SAFETY: `4 * n` bytes of this device's memory; Vulkan touches them only between the
/// // semaphores below, and frees them after `mem` and `texels` are dropped.
/// let mem = unsafe { ExternalMemory::import(&ctx, handle, 4 * n as u64, false)? };
/// let mut texels = mem.map::<u32>(0, n)?;
/// rendered.wait(&stream)?; // after Vulkan's work
/// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(n)?, (&mut texels,))?;
/// computed.signal(&stream)?; // Vulkan's next submission waits for this
/// # Ok(()) }
/// ```
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
    /// - The handle is an export of at least `size` bytes of memory of this context's device.
    /// - The other API does not access the mapped ranges while work enqueued here on them may
    ///   run (order both sides with [`ExternalSemaphore`]s), and keeps its memory alive until
    ///   this and the mapped buffers are dropped.
    /// - The memory is not imported into this process a second time (another
    ///   `ExternalMemory` of the same handle or allocation) while buffers mapped from this one
    ///   live, unless no range is mapped from both: [`map`](Self::map) lends each range of
    ///   one import once, but cannot see another import's mappings, and two buffers of one
    ///   memory would alias.
    ///
    /// What [`map`](Self::map) then checks by itself: the range fits `size`, is aligned for
    /// the element type and is not lent to another live buffer; the element type is valid for
    /// any bytes the other API writes.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// // `fd` exports a VkDeviceMemory of 16 MiB allocated with VkMemoryDedicatedAllocateInfo.
    /// let handle = ExternalMemoryHandle::OpaqueFd(fd);
    /// // SAFETY: 16 MiB of this device's memory; both sides are ordered with semaphores; Vulkan
    /// // frees it only after `mem` and every buffer mapped from it are dropped.
    /// let mem = unsafe { ExternalMemory::import(&ctx, handle, 16 << 20, true)? };
    /// # Ok(()) }
    /// ```
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
                lent: LentRanges::default(),
                whole: Mutex::new(None),
            }),
        })
    }

    /// The imported size in bytes.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let mem = unsafe { ExternalMemory::import(&ctx, ExternalMemoryHandle::OpaqueFd(fd), 16 << 20, false)? };
    /// assert_eq!(mem.size(), 16 << 20);
    /// let whole = mem.map::<f32>(0, (mem.size() / 4) as usize)?; // all of it as f32s
    /// # Ok(()) }
    /// ```
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// Lends `len` elements at byte `offset` as a buffer: a range of the import's one device
    /// mapping (`cuExternalMemoryGetMappedBuffer` of the whole import, made by the first call),
    /// so any offset aligned for `T` works, whatever the external API's allocation granularity;
    /// the import (and its mapping) stays alive while the buffer exists.
    /// [`Error::ShareRange`] when the range does not fit the import or `offset` is misaligned
    /// for `T`; [`Error::RangeAlreadyMapped`] when a buffer mapped from this import that is
    /// still alive overlaps the range (each byte is lent to one buffer at a time, as the borrow
    /// rules of buffers assume; once that buffer is dropped, the range may be mapped again).
    ///
    /// The bytes are the other API's, never checked: `T` must be valid for every bit pattern
    /// ([`AnyBitPattern`]: integers, floats, arrays of them),
    /// so `map::<bool>` does not compile.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let mem = unsafe { ExternalMemory::import(&ctx, ExternalMemoryHandle::OpaqueFd(fd), 16 << 20, false)? };
    /// // A vertex buffer at byte 0 and an index buffer at 8 MiB of one Vulkan allocation.
    /// let vertices = mem.map::<[f32; 4]>(0, 1 << 19)?;
    /// let indices = mem.map::<u32>(8 << 20, 1 << 21)?;
    /// let past_end = mem.map::<u32>(8 << 20, 1 << 22); // 16 MiB more do not fit
    /// assert!(matches!(past_end, Err(Error::ShareRange { .. })));
    /// let again = mem.map::<u32>(8 << 20, 16); // `indices` holds these bytes
    /// assert!(matches!(again, Err(Error::RangeAlreadyMapped { .. })));
    /// drop(indices);
    /// let again = mem.map::<u32>(8 << 20, 16)?; // lent back once that buffer's work is done
    /// # Ok(()) }
    /// ```
    pub fn map<T: AnyBitPattern>(&self, offset: u64, len: usize) -> Result<DeviceBuffer<T>> {
        const OP: &str = "ExternalMemory::map";
        let i = &self.inner;
        check_range::<T>(OP, "the external memory", offset, len as u64, i.size)?;
        let bytes = (len * size_of::<T>()) as u64;
        i.lent.lend(OP, offset, bytes)?;
        // A range of the one mapping of the whole import (see `MemInner::whole`).
        let ptr = match i.whole() {
            Ok(p) => p + offset,
            Err(e) => {
                i.lent.release(offset, bytes);
                return Err(e);
            }
        };
        let keep = self.inner.clone();
        let ctx = Context {
            inner: i.ctx.clone(),
        };
        // The range goes back once the buffer's work is done (the drop policy); the mapping
        // stays with the import.
        let finalizer = move || {
            keep.lent.release(offset, bytes);
            drop(keep);
        };
        // SAFETY: `ptr` is `bytes` bytes inside the import's mapping (`check_range`: the range
        // fits `size`, `offset` is aligned for `T`), lent to this buffer alone (no live buffer
        // of this import overlaps it: `lend` above); the import's contract (caller of
        // `import`) keeps it valid and unshared while our work runs; every bit pattern is a
        // `T`; the mapping outlives the buffer (the finalizer holds the import).
        let made = unsafe {
            DeviceBuffer::from_raw_parts_with_finalizer(
                &ctx,
                DevicePtr::from_addr(ptr),
                len,
                finalizer,
            )
        };
        if made.is_err() {
            // The finalizer was dropped unrun.
            i.lent.release(offset, bytes);
        }
        made
    }
}

/// A semaphore imported from another API (`cuImportExternalSemaphore`): streams wait on it and
/// signal it, in stream order. Destroyed when dropped, after the streams that used it are idle
/// (else leaked, like buffers).
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::external::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
/// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
/// # let mut image = stream.alloc_zeros::<u32>(1024)?;
/// // `fd`: a Vulkan timeline semaphore the renderer sets to 2n-1 after frame n, and waits on
/// // for 2n before presenting it.
/// let handle = ExternalSemaphoreHandle::OpaqueFd(fd);
/// // SAFETY: it is a timeline semaphore of this device.
/// let timeline = unsafe { ExternalSemaphore::import(&ctx, handle, SemaphoreKind::Timeline)? };
/// for frame in 1..=3u64 {
///     timeline.wait_value(&stream, 2 * frame - 1)?;
///     stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut image,))?;
///     timeline.signal_value(&stream, 2 * frame)?;
/// }
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// // `fd`: vkGetSemaphoreFdKHR of a binary VkSemaphore (VK_SEMAPHORE_TYPE_BINARY).
    /// let handle = ExternalSemaphoreHandle::OpaqueFd(fd);
    /// // SAFETY: a binary semaphore of this device.
    /// let ready = unsafe { ExternalSemaphore::import(&ctx, handle, SemaphoreKind::Binary)? };
    /// ready.wait(&stream)?; // later work on `stream` waits for Vulkan's signal
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let sem = unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Timeline)? };
    /// # let frame = 1;
    /// // Code that takes either kind of semaphore signals each as it must be.
    /// match sem.kind() {
    ///     SemaphoreKind::Binary => sem.signal(&stream)?,
    ///     SemaphoreKind::Timeline => sem.signal_value(&stream, frame)?,
    ///     other => return Err(format!("no signal for a {other:?} semaphore").into()),
    /// }
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let computed = unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Binary)? };
    /// # let mut out = stream.alloc_zeros::<u32>(1024)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut out,))?;
    /// computed.signal(&stream)?; // after the kernel: Vulkan's waiting submission reads `out`
    /// # Ok(()) }
    /// ```
    pub fn signal(&self, stream: &Stream) -> Result<()> {
        let v = self.check("ExternalSemaphore::signal", stream, None)?;
        self.ctx
            .backend
            .external_semaphore_signal(self.handle, v, stream.handle())
    }

    /// Enqueues setting a timeline semaphore to `value` on `stream`.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let timeline = unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Timeline)? };
    /// # let mut out = stream.alloc_zeros::<u32>(1024)?;
    /// # let frame = 1;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut out,))?;
    /// timeline.signal_value(&stream, frame)?; // Vulkan waits for `frame` before reading `out`
    /// assert!(matches!(timeline.signal(&stream), Err(Error::SemaphoreKind { .. }))); // no value
    /// # Ok(()) }
    /// ```
    pub fn signal_value(&self, stream: &Stream, value: u64) -> Result<()> {
        let v = self.check("ExternalSemaphore::signal_value", stream, Some(value))?;
        self.ctx
            .backend
            .external_semaphore_signal(self.handle, v, stream.handle())
    }

    /// Makes later work on `stream` wait until a binary semaphore is signalled (and consumes
    /// the signal).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let rendered = unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Binary)? };
    /// # let mut image = stream.alloc_zeros::<u32>(1024)?; // a buffer mapped from the Vulkan image's memory
    /// rendered.wait(&stream)?; // Vulkan's submission signals it after drawing `image`
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut image,))?;
    /// # Ok(()) }
    /// ```
    pub fn wait(&self, stream: &Stream) -> Result<()> {
        let v = self.check("ExternalSemaphore::wait", stream, None)?;
        self.ctx
            .backend
            .external_semaphore_wait(self.handle, v, stream.handle())
    }

    /// Makes later work on `stream` wait until a timeline semaphore reaches `value`.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::external::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let timeline = unsafe { ExternalSemaphore::import(&ctx, ExternalSemaphoreHandle::OpaqueFd(fd), SemaphoreKind::Timeline)? };
    /// # let mut image = stream.alloc_zeros::<u32>(1024)?;
    /// # let frame = 1;
    /// timeline.wait_value(&stream, frame)?; // until Vulkan sets it to `frame` (or more)
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut image,))?;
    /// # Ok(()) }
    /// ```
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_lent_once_at_a_time() {
        let lent = LentRanges::default();
        lent.lend("map", 0, 64).unwrap();
        lent.lend("map", 64, 64).unwrap(); // adjacent: no overlap
        for (offset, bytes) in [(0, 64), (32, 8), (60, 8), (120, 100), (0, 1 << 20)] {
            match lent.lend("map", offset, bytes) {
                Err(Error::RangeAlreadyMapped {
                    operation: "map",
                    offset: o,
                    bytes: b,
                    ..
                }) => assert_eq!((o, b), (offset, bytes)),
                other => panic!("{offset}+{bytes}: expected RangeAlreadyMapped, got {other:?}"),
            }
        }
        let e = lent.lend("ExternalMemory::map", 16, 16).unwrap_err();
        assert!(e.to_string().contains("bytes 16..32"), "{e}");
        assert!(e.to_string().contains("overlap bytes 0..64"), "{e}");
        // An empty range overlaps nothing.
        lent.lend("map", 32, 0).unwrap();
        lent.release(32, 0);
        // Released: lent again.
        lent.release(0, 64);
        lent.lend("map", 0, 64).unwrap();
        lent.lend("map", 128, 8).unwrap();
        assert!(lent.lend("map", 100, 30).is_err());
    }
}
