//! Sharing device memory and events with other processes.
//!
//! Two mechanisms, both starting from a buffer allocated for sharing
//! ([`Context::alloc_shareable`]):
//!
//! - **Legacy IPC** ([`ShareKind::Ipc`]): a dedicated `cuMemAlloc` allocation whose
//!   [`IpcMemHandle`] is plain bytes ([`IpcMemHandle::to_bytes`]) that any channel can carry
//!   (a pipe, a socket, a file). Another process opens it as a [`DeviceBuffer`] view, closed
//!   (`cuIpcCloseMemHandle`) when dropped. Memory from the stream-ordered pool (what
//!   `alloc`/`htod_copy` return) cannot be exported this way: [`Error::NotExportable`] says so.
//!   Legacy handles open only in *another* process of the same machine and container.
//! - **VMM with an operating-system handle** ([`ShareKind::PosixFd`]; `Win32` on Windows):
//!   `cuMemCreate` memory exported as a file descriptor ([`VmmHandle`]); descriptors cross
//!   processes over a Unix socket ([`send_with_fds`] / [`recv_with_fds`], `SCM_RIGHTS`), which
//!   also works across containers that share the socket, where legacy IPC does not.
//!
//! Events: [`Context::new_ipc_event`] makes an event other processes can open
//! ([`IpcEventHandle`]); one process records it after its work, the other waits on it.
//!
//! Sub-ranges: a handle names an element range of the allocation (`buffer.ipc_handle(2..10)`),
//! and the opened buffer covers exactly that range.
//!
//! The simulator: every operation here returns [`Error::NotOnSimulator`] (its memory is host
//! memory of one process); only the byte formats and the descriptor passing, which are host
//! code, work without a device.

#[cfg(unix)]
mod fd;
#[cfg(test)]
mod tests;
mod vmm;

use core::marker::PhantomData;
use core::ops::RangeBounds;
use std::fmt;

use gpukernel_device::DeviceCopy;

use crate::context::{Context, ContextInner};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::DeviceBuffer;

#[cfg(unix)]
pub use fd::{MAX_FDS, recv_with_fds, send_with_fds};
pub use vmm::VmmHandle;

/// How a shareable buffer is allocated, hence how it is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShareKind {
    /// A dedicated allocation exported with a legacy IPC handle ([`DeviceBuffer::ipc_handle`]).
    Ipc,
    /// `cuMemCreate` memory exported as a POSIX file descriptor ([`DeviceBuffer::export_vmm`]).
    #[cfg(unix)]
    PosixFd,
    /// `cuMemCreate` memory exported as a Windows `HANDLE` (untested: no Windows machine).
    #[cfg(windows)]
    Win32,
}

pub(crate) fn not_on_simulator(ctx: &ContextInner, operation: &'static str) -> Result<()> {
    if ctx.backend.is_simulator() {
        Err(Error::NotOnSimulator { operation })
    } else {
        Ok(())
    }
}

impl Context {
    /// Allocates `len` zeroed elements that can be shared with other processes (see the
    /// [module documentation](crate::ipc)). For VMM kinds the allocation is rounded up to the
    /// device's granularity (the buffer still has `len` elements). [`Error::NotOnSimulator`]
    /// on the simulator.
    pub fn alloc_shareable<T: DeviceCopy>(
        &self,
        len: usize,
        kind: ShareKind,
    ) -> Result<DeviceBuffer<T>> {
        const OP: &str = "Context::alloc_shareable";
        not_on_simulator(&self.inner, OP)?;
        let bytes = len
            .checked_mul(size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or(Error::SizeOverflow {
                operation: OP,
                count: len,
                elem_size: size_of::<T>(),
            })?;
        let vmm = match kind {
            ShareKind::Ipc => None,
            #[cfg(unix)]
            ShareKind::PosixFd => Some(false),
            #[cfg(windows)]
            ShareKind::Win32 => Some(true),
        };
        // Zero bytes still get an allocation: a handle must name one.
        let a = self.inner.backend.alloc_shareable(bytes.max(1), vmm)?;
        Ok(DeviceBuffer::from_shared(&self.inner, a, 0, len))
    }

    /// An event other processes can open ([`Event::ipc_handle`]); it has no timing
    /// (`CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING`).
    pub fn new_ipc_event(&self) -> Result<Event> {
        not_on_simulator(&self.inner, "Context::new_ipc_event")?;
        let h = self.inner.backend.event_create_interprocess()?;
        Ok(Event::from_handle(self.inner.clone(), h, false, true))
    }

    /// `(free, total)` bytes of the device's memory (`cuMemGetInfo`): for leak checks and
    /// capacity planning. [`Error::NotOnSimulator`] on the simulator.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        not_on_simulator(&self.inner, "Context::memory_info")?;
        self.inner.backend.mem_info()
    }

    /// The device's UUID (`cuDeviceGetUuid`): what Vulkan calls `deviceUUID`, to pick the
    /// same physical device in both APIs. [`Error::NotOnSimulator`] on the simulator.
    pub fn device_uuid(&self) -> Result<[u8; 16]> {
        not_on_simulator(&self.inner, "Context::device_uuid")?;
        self.inner.backend.device_uuid()
    }
}

const MEM_MAGIC: &[u8; 8] = b"GKIPCMEM";
const EVENT_MAGIC: &[u8; 8] = b"GKIPCEVT";
const VERSION: u32 = 1;
const IPC_MEM_HANDLE_BYTES: usize = 104;

/// A legacy IPC handle of an element range of a shareable buffer: the driver's 64 bytes plus
/// the range, the allocation size and the element size, as [`IpcMemHandle::BYTES`] bytes.
pub struct IpcMemHandle<T> {
    raw: [u8; 64],
    offset: u64,
    len: u64,
    alloc_bytes: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for IpcMemHandle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for IpcMemHandle<T> {}

impl<T> fmt::Debug for IpcMemHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcMemHandle")
            .field("offset", &self.offset)
            .field("len", &self.len)
            .field("alloc_bytes", &self.alloc_bytes)
            .finish()
    }
}

pub(crate) fn range_of<T>(
    buf: &DeviceBuffer<T>,
    range: impl RangeBounds<usize>,
) -> Result<(usize, usize)>
where
    T: DeviceCopy,
{
    let v = buf.slice(range)?;
    let start = ((v.device_ptr().addr() - buf.as_raw()) as usize) / size_of::<T>().max(1);
    Ok((start, v.len()))
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// The legacy IPC handle of `range` of this buffer, for another process to open
    /// ([`IpcMemHandle::open`]). The buffer must come from
    /// [`Context::alloc_shareable`]`(.., ShareKind::Ipc)`; others are
    /// [`Error::NotExportable`], naming why. The other process sees the memory, not this
    /// process's pending work: order them with an [IPC event](Context::new_ipc_event).
    pub fn ipc_handle(&self, range: impl RangeBounds<usize>) -> Result<IpcMemHandle<T>> {
        const OP: &str = "DeviceBuffer::ipc_handle";
        not_on_simulator(&self.ctx, OP)?;
        let (start, len) = range_of(self, range)?;
        let (a, base) = match self.shared_alloc() {
            Some((a, base)) if a.kind == crate::backend::SharedKind::Legacy => (a, base),
            other => {
                let reason = match other {
                    Some(_) => "it is a VMM allocation or was opened from another process",
                    None if self.is_pooled() => {
                        "it comes from the stream-ordered memory pool, which legacy IPC cannot export"
                    }
                    None => "it was not allocated for sharing",
                };
                return Err(Error::NotExportable {
                    operation: OP,
                    what: "this buffer",
                    reason: reason.into(),
                    hint: "allocate it with Context::alloc_shareable(len, ShareKind::Ipc)",
                });
            }
        };
        let raw = self.ctx.backend.ipc_mem_export(a.ptr)?;
        Ok(IpcMemHandle {
            raw,
            offset: (base + start * size_of::<T>()) as u64,
            len: len as u64,
            alloc_bytes: a.bytes as u64,
            _t: PhantomData,
        })
    }
}

fn take<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b[at..at + N]
        .try_into()
        .expect("length checked by the caller")
}

fn check_header(
    operation: &'static str,
    handle: &'static str,
    bytes: &[u8],
    len: usize,
    magic: &[u8; 8],
) -> Result<()> {
    let bad = |problem: String| Error::InvalidShareHandle {
        operation,
        handle,
        problem,
    };
    if bytes.len() != len {
        return Err(bad(format!("{} bytes, expected {len}", bytes.len())));
    }
    if &bytes[..8] != magic {
        return Err(bad("not written by gpukernel (wrong magic)".into()));
    }
    let v = u32::from_le_bytes(take(bytes, 8));
    if v != VERSION {
        return Err(bad(format!("format version {v}, expected {VERSION}")));
    }
    Ok(())
}

/// Checks that `len` elements of `T` at byte `offset` fit `alloc_bytes`, aligned.
pub(crate) fn check_range<T>(
    operation: &'static str,
    what: &'static str,
    offset: u64,
    len: u64,
    alloc_bytes: u64,
) -> Result<()> {
    let bytes = len.saturating_mul(size_of::<T>() as u64);
    let align = align_of::<T>() as u64;
    let fits = offset
        .checked_add(bytes)
        .is_some_and(|end| end <= alloc_bytes);
    if !fits || !offset.is_multiple_of(align) || bytes > isize::MAX as u64 {
        return Err(Error::ShareRange {
            operation,
            what,
            offset,
            bytes,
            size: alloc_bytes,
            align,
        });
    }
    Ok(())
}

impl<T: DeviceCopy> IpcMemHandle<T> {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = IPC_MEM_HANDLE_BYTES;

    /// The handle as bytes for any channel: magic, version, element size, the driver's handle,
    /// offset, length, allocation size (little-endian).
    pub fn to_bytes(&self) -> [u8; IPC_MEM_HANDLE_BYTES] {
        let mut b = [0u8; IPC_MEM_HANDLE_BYTES];
        b[..8].copy_from_slice(MEM_MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(size_of::<T>() as u32).to_le_bytes());
        b[16..80].copy_from_slice(&self.raw);
        b[80..88].copy_from_slice(&self.offset.to_le_bytes());
        b[88..96].copy_from_slice(&self.len.to_le_bytes());
        b[96..104].copy_from_slice(&self.alloc_bytes.to_le_bytes());
        b
    }

    /// Reads [`to_bytes`](Self::to_bytes) back: [`Error::InvalidShareHandle`] for bytes of
    /// another length, magic, version or element size, [`Error::ShareRange`] for a range
    /// outside the allocation or misaligned for `T`. Whether the driver accepts the handle is
    /// known only at [`open`](Self::open).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        const OP: &str = "IpcMemHandle::from_bytes";
        const WHAT: &str = "IPC memory handle";
        check_header(OP, WHAT, bytes, Self::BYTES, MEM_MAGIC)?;
        let elem = u32::from_le_bytes(take(bytes, 12)) as usize;
        if elem != size_of::<T>() {
            return Err(Error::InvalidShareHandle {
                operation: OP,
                handle: WHAT,
                problem: format!(
                    "exported for {elem}-byte elements, opened as {} ({} bytes)",
                    core::any::type_name::<T>(),
                    size_of::<T>()
                ),
            });
        }
        let h = IpcMemHandle {
            raw: take(bytes, 16),
            offset: u64::from_le_bytes(take(bytes, 80)),
            len: u64::from_le_bytes(take(bytes, 88)),
            alloc_bytes: u64::from_le_bytes(take(bytes, 96)),
            _t: PhantomData,
        };
        check_range::<T>(OP, "the shared allocation", h.offset, h.len, h.alloc_bytes)?;
        Ok(h)
    }

    /// Number of elements the handle names.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it names no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Opens the memory in this process (`cuIpcOpenMemHandle`) as a buffer of the handle's
    /// range, closed (`cuIpcCloseMemHandle`) when dropped, after its work.
    /// [`Error::ShareHandleRejected`] when the driver refuses it (freed by the exporter, from
    /// another device, or opened in the exporting process).
    ///
    /// # Safety
    /// The exporting process keeps the allocation alive, and does not access the range while
    /// this process's work on it may run (order both sides with an IPC event): the returned
    /// buffer is treated as exclusively this process's.
    pub unsafe fn open(&self, ctx: &Context) -> Result<DeviceBuffer<T>> {
        const OP: &str = "IpcMemHandle::open";
        not_on_simulator(&ctx.inner, OP)?;
        check_range::<T>(
            OP,
            "the shared allocation",
            self.offset,
            self.len,
            self.alloc_bytes,
        )?;
        let base = ctx.inner.backend.ipc_mem_open(&self.raw)?;
        let a = crate::backend::SharedAlloc {
            ptr: base,
            bytes: self.alloc_bytes as usize,
            kind: crate::backend::SharedKind::IpcOpened,
        };
        Ok(DeviceBuffer::from_shared(
            &ctx.inner,
            a,
            self.offset as usize,
            self.len as usize,
        ))
    }
}

/// A legacy IPC handle of an event ([`Event::ipc_handle`]), as [`IpcEventHandle::BYTES`] bytes.
#[derive(Clone, Copy)]
pub struct IpcEventHandle {
    raw: [u8; 64],
}

impl fmt::Debug for IpcEventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IpcEventHandle")
    }
}

impl IpcEventHandle {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 80;

    /// Magic, version, four zero bytes, the driver's 64 bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..8].copy_from_slice(EVENT_MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[16..80].copy_from_slice(&self.raw);
        b
    }

    /// Reads [`to_bytes`](Self::to_bytes) back ([`Error::InvalidShareHandle`] otherwise).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        check_header(
            "IpcEventHandle::from_bytes",
            "IPC event handle",
            bytes,
            Self::BYTES,
            EVENT_MAGIC,
        )?;
        Ok(IpcEventHandle {
            raw: take(bytes, 16),
        })
    }

    /// Opens the event in this process (`cuIpcOpenEventHandle`): record it, wait on it or make
    /// a stream wait for it like any event (it has no timing).
    pub fn open(&self, ctx: &Context) -> Result<Event> {
        not_on_simulator(&ctx.inner, "IpcEventHandle::open")?;
        let h = ctx.inner.backend.ipc_event_open(&self.raw)?;
        Ok(Event::from_handle(ctx.inner.clone(), h, false, true))
    }
}

impl Event {
    /// The event's IPC handle, for another process to open. Only events from
    /// [`Context::new_ipc_event`] (or opened from a handle) can be exported; others are
    /// [`Error::NotExportable`].
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        const OP: &str = "Event::ipc_handle";
        not_on_simulator(self.ctx(), OP)?;
        if !self.interprocess {
            return Err(Error::NotExportable {
                operation: OP,
                what: "this event",
                reason: "it was not created with CU_EVENT_INTERPROCESS".into(),
                hint: "create it with Context::new_ipc_event",
            });
        }
        Ok(IpcEventHandle {
            raw: self.ctx().backend.ipc_event_export(self.handle())?,
        })
    }
}
