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
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::ipc::ShareKind;
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// // Legacy IPC within one machine and container; an fd over a Unix socket across containers.
/// let across = std::env::var_os("SHARE_ACROSS_CONTAINERS").is_some();
/// let kind = if across { ShareKind::PosixFd } else { ShareKind::Ipc };
/// match ctx.alloc_shareable::<f32>(1 << 20, kind) {
///     Ok(buf) => println!("{} elements to share", buf.len()),
///     Err(Error::NotOnSimulator { .. }) => assert!(ctx.is_simulator()), // one process's memory
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::ShareKind;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let legacy = ctx.alloc_shareable::<f32>(1000, ShareKind::Ipc)?; // zeroed
    /// let handle = legacy.ipc_handle(..)?; // its bytes go to the other process
    /// let vmm = ctx.alloc_shareable::<f32>(1000, ShareKind::PosixFd)?;
    /// assert_eq!(vmm.len(), 1000); // the allocation behind it is a multiple of the granularity
    /// let fd = vmm.export_vmm(..)?; // sent over a Unix socket
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::ShareKind;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let mut shared = ctx.alloc_shareable::<u32>(1024, ShareKind::Ipc)?;
    /// let written = ctx.new_ipc_event()?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut shared,))?;
    /// written.record(&stream)?; // the other process waits on this before reading `shared`
    /// let event_bytes = written.ipc_handle()?.to_bytes(); // sent with the buffer's handle
    /// # Ok(()) }
    /// ```
    pub fn new_ipc_event(&self) -> Result<Event> {
        not_on_simulator(&self.inner, "Context::new_ipc_event")?;
        let h = self.inner.backend.event_create_interprocess()?;
        Ok(Event::from_handle(self.inner.clone(), h, false, true))
    }

    /// `(free, total)` bytes of the device's memory (`cuMemGetInfo`): for leak checks and
    /// capacity planning. [`Error::NotOnSimulator`] on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// match ctx.memory_info() {
    ///     Ok((free, total)) => println!("{} of {} MiB free", free >> 20, total >> 20),
    ///     Err(Error::NotOnSimulator { .. }) => assert!(ctx.is_simulator()),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        not_on_simulator(&self.inner, "Context::memory_info")?;
        self.inner.backend.mem_info()
    }

    /// The device's UUID (`cuDeviceGetUuid`): what Vulkan calls `deviceUUID`, to pick the
    /// same physical device in both APIs. [`Error::NotOnSimulator`] on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // Vulkan: pick the VkPhysicalDevice whose VkPhysicalDeviceIDProperties::deviceUUID is this.
    /// match ctx.device_uuid() {
    ///     Ok(uuid) => println!("device {uuid:02x?}"),
    ///     Err(Error::NotOnSimulator { .. }) => assert!(ctx.is_simulator()),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn device_uuid(&self) -> Result<[u8; 16]> {
        not_on_simulator(&self.inner, "Context::device_uuid")?;
        self.inner.backend.device_uuid()
    }
}

const MEM_MAGIC: &[u8; 8] = b"GKIPCMEM";
const EVENT_MAGIC: &[u8; 8] = b"GKIPCEVT";
/// 2: the element type tag ([`element_tag`]) follows the fields of version 1.
const VERSION: u32 = 2;
const IPC_MEM_HANDLE_BYTES: usize = 112;

/// The element type tag the sharing handles carry ([`IpcMemHandle::to_bytes`],
/// [`VmmHandle::meta_bytes`]), so that memory exported as `T` opens only as `T`: FNV-1a (64
/// bits) of `T`'s type name (`core::any::type_name`, which includes the path of the crate
/// that defines it), size and alignment. Both programs must name one type (the same crate's
/// `f32`, `[u32; 4]` or `my_crate::Particle`); a type of the same layout spelled by another
/// crate is another type here.
///
/// ```
/// use gpukernel_runtime::ipc::element_tag;
/// assert_eq!(element_tag::<f32>(), element_tag::<f32>());
/// assert_ne!(element_tag::<u8>(), element_tag::<bool>()); // one byte each, not one type
/// ```
pub fn element_tag<T>() -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let size = (size_of::<T>() as u64).to_le_bytes();
    let align = (align_of::<T>() as u64).to_le_bytes();
    for &b in core::any::type_name::<T>()
        .as_bytes()
        .iter()
        .chain(&[0u8])
        .chain(&size)
        .chain(&align)
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h
}

/// Refuses meta bytes written for another element type than `T`: another size (named), or
/// another type tag.
pub(crate) fn check_element<T>(
    operation: &'static str,
    handle: &'static str,
    elem_size: usize,
    tag: u64,
) -> Result<()> {
    let problem = if elem_size != size_of::<T>() {
        format!(
            "exported for {elem_size}-byte elements, opened as {} ({} bytes)",
            core::any::type_name::<T>(),
            size_of::<T>()
        )
    } else if tag != element_tag::<T>() {
        format!(
            "exported for another element type of {elem_size} bytes (type tag {tag:#018x}), \
             opened as {} (type tag {:#018x}); open it as the type it was exported as",
            core::any::type_name::<T>(),
            element_tag::<T>()
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidShareHandle {
        operation,
        handle,
        problem,
    })
}

/// A legacy IPC handle of an element range of a shareable buffer: the driver's 64 bytes plus
/// the range, the allocation size and the element size, as [`IpcMemHandle::BYTES`] bytes.
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::ipc::*;
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// // The exporting process: a buffer allocated for sharing, its handle as bytes.
/// let buf = ctx.alloc_shareable::<f32>(1024, ShareKind::Ipc)?;
/// let bytes = buf.ipc_handle(..)?.to_bytes(); // through a pipe, a socket, a file ...
/// // Another process: the same memory as a buffer of its own.
/// let handle = IpcMemHandle::<f32>::from_bytes(&bytes)?;
/// // SAFETY: the exporter keeps `buf` alive and leaves it alone while we use it.
/// let theirs = unsafe { handle.open(&ctx)? };
/// assert_eq!(theirs.len(), 1024);
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::ShareKind;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let buf = ctx.alloc_shareable::<f32>(1024, ShareKind::Ipc)?;
    /// let middle = buf.ipc_handle(256..768)?; // the other process sees these 512 elements
    /// assert_eq!(middle.len(), 512);
    /// let pooled = stream.alloc_zeros::<f32>(1024)?; // the stream-ordered pool: refused by name
    /// assert!(matches!(pooled.ipc_handle(..), Err(Error::NotExportable { .. })));
    /// # Ok(()) }
    /// ```
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
    /// offset, length, allocation size, element type tag ([`element_tag`]; little-endian).
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::IpcMemHandle;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # // Stands in for another process's `buf.ipc_handle(..)?.to_bytes()`: 16 f32s at byte 0
    /// # // of a 64-byte allocation (the driver's 64 bytes left zero).
    /// # let mut received = [0u8; 112];
    /// # received[..8].copy_from_slice(b"GKIPCMEM"); received[8] = 2; received[12] = 4;
    /// # received[104..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # received[88] = 16; received[96] = 64;
    /// let handle = IpcMemHandle::<f32>::from_bytes(&received)?;
    /// let bytes = handle.to_bytes(); // to pass it on to a third process
    /// assert_eq!(bytes.len(), IpcMemHandle::<f32>::BYTES);
    /// assert_eq!(bytes, received); // the round trip keeps every byte
    /// # Ok(()) }
    /// ```
    pub fn to_bytes(&self) -> [u8; IPC_MEM_HANDLE_BYTES] {
        let mut b = [0u8; IPC_MEM_HANDLE_BYTES];
        b[..8].copy_from_slice(MEM_MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(size_of::<T>() as u32).to_le_bytes());
        b[16..80].copy_from_slice(&self.raw);
        b[80..88].copy_from_slice(&self.offset.to_le_bytes());
        b[88..96].copy_from_slice(&self.len.to_le_bytes());
        b[96..104].copy_from_slice(&self.alloc_bytes.to_le_bytes());
        b[104..112].copy_from_slice(&element_tag::<T>().to_le_bytes());
        b
    }

    /// Reads [`to_bytes`](Self::to_bytes) back: [`Error::InvalidShareHandle`] for bytes of
    /// another length, magic, version, element size or element type (`IpcMemHandle::<bool>`
    /// of a `u8` export is refused), [`Error::ShareRange`] for a range
    /// outside the allocation or misaligned for `T`. Whether the driver accepts the handle is
    /// known only at [`open`](Self::open).
    ///
    /// ```
    /// # use gpukernel_runtime::{Error, ipc::IpcMemHandle};
    /// # // 16 f32s at byte 0 of a 64-byte allocation, as `to_bytes` writes them.
    /// # let mut bytes = [0u8; 112];
    /// # bytes[..8].copy_from_slice(b"GKIPCMEM"); bytes[8] = 2; bytes[12] = 4;
    /// # bytes[104..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # bytes[88] = 16; bytes[96] = 64;
    /// assert_eq!(IpcMemHandle::<f32>::from_bytes(&bytes).unwrap().len(), 16);
    /// let cut = IpcMemHandle::<f32>::from_bytes(&bytes[..10]).unwrap_err();
    /// assert!(cut.to_string().contains("10 bytes, expected 112"));
    /// let other = IpcMemHandle::<f64>::from_bytes(&bytes).unwrap_err(); // exported for f32
    /// assert!(matches!(other, Error::InvalidShareHandle { .. }));
    /// let same_size = IpcMemHandle::<u32>::from_bytes(&bytes).unwrap_err(); // 4 bytes, not f32
    /// assert!(same_size.to_string().contains("another element type"));
    /// let zeros = IpcMemHandle::<f32>::from_bytes(&[0; 112]).unwrap_err();
    /// assert!(zeros.to_string().contains("wrong magic"));
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        const OP: &str = "IpcMemHandle::from_bytes";
        const WHAT: &str = "IPC memory handle";
        check_header(OP, WHAT, bytes, Self::BYTES, MEM_MAGIC)?;
        let elem = u32::from_le_bytes(take(bytes, 12)) as usize;
        check_element::<T>(OP, WHAT, elem, u64::from_le_bytes(take(bytes, 104)))?;
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
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::IpcMemHandle;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # // 16 f32s at byte 0 of a 64-byte allocation, as another process's `to_bytes` wrote them.
    /// # let mut received = [0u8; 112];
    /// # received[..8].copy_from_slice(b"GKIPCMEM"); received[8] = 2; received[12] = 4;
    /// # received[104..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # received[88] = 16; received[96] = 64;
    /// let handle = IpcMemHandle::<f32>::from_bytes(&received)?;
    /// let mut host = vec![0.0f32; handle.len()]; // room for the shared range
    /// assert_eq!(host.len(), 16);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it names no element.
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::IpcMemHandle;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # // A handle of an empty range of a 64-byte allocation, as another process's `to_bytes`
    /// # // wrote it (`buf.ipc_handle(0..0)`).
    /// # let mut received = [0u8; 112];
    /// # received[..8].copy_from_slice(b"GKIPCMEM"); received[8] = 2; received[12] = 4;
    /// # received[104..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # received[96] = 64;
    /// let handle = IpcMemHandle::<f32>::from_bytes(&received)?;
    /// assert!(handle.is_empty()); // a valid handle, but nothing to open or read
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Opens the memory in this process (`cuIpcOpenMemHandle`) as a buffer of the handle's
    /// range, closed (`cuIpcCloseMemHandle`) when dropped, after its work.
    /// [`Error::ShareHandleRejected`] when the driver refuses it (freed by the exporter, from
    /// another device, or opened in the exporting process).
    ///
    /// # Safety
    /// The returned buffer is treated as exclusively this process's, so the caller guarantees,
    /// for as long as it and its work live:
    /// - The exporting process keeps the allocation alive.
    /// - No other side writes the range while this process's work on it may run, nor reads it
    ///   while this process may write it (order both sides with an IPC event): the exporting
    ///   process, other importers, and this process itself through another buffer of the same
    ///   memory. Opening one handle twice (or handles of overlapping ranges) gives two buffers
    ///   of one memory whose borrows the runtime cannot relate: only one may be used, or all
    ///   only read.
    /// - The bytes in the range are valid values of `T` (the export's element type, which the
    ///   handle names and [`from_bytes`](Self::from_bytes) checked; a writer in another
    ///   process must keep them valid, e.g. only 0 and 1 for `bool`).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::*;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let (mem_bytes, event_bytes) = ([0u8; 112], [0u8; 80]); // received from the exporter
    /// let handle = IpcMemHandle::<f32>::from_bytes(&mem_bytes)?;
    /// let written = IpcEventHandle::from_bytes(&event_bytes)?.open(&ctx)?;
    /// // SAFETY: the exporter keeps the allocation alive and does not touch it until we are done.
    /// let theirs = unsafe { handle.open(&ctx)? };
    /// stream.wait_event(&written)?; // after the exporter's writes
    /// let mut host = vec![0.0f32; theirs.len()];
    /// stream.memcpy_dtoh(&mut host, &theirs)?;
    /// # Ok(()) }
    /// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::ipc::*;
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// // The exporting process: an event recorded after the work the other process waits for.
/// let done = ctx.new_ipc_event()?;
/// done.record(&stream)?;
/// let bytes = done.ipc_handle()?.to_bytes();
/// // Another process: its stream waits for that work.
/// let theirs = IpcEventHandle::from_bytes(&bytes)?.open(&ctx)?;
/// stream.wait_event(&theirs)?;
/// # Ok(()) }
/// ```
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
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::IpcEventHandle;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # // Stands in for another process's `event.ipc_handle()?.to_bytes()` (the driver's 64 bytes
    /// # // left zero).
    /// # let mut received = [0u8; 80];
    /// # received[..8].copy_from_slice(b"GKIPCEVT"); received[8] = 2;
    /// let handle = IpcEventHandle::from_bytes(&received)?;
    /// let bytes = handle.to_bytes(); // to pass it on to a third process
    /// assert_eq!(bytes.len(), IpcEventHandle::BYTES);
    /// assert_eq!(bytes, received); // the round trip keeps every byte
    /// # Ok(()) }
    /// ```
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..8].copy_from_slice(EVENT_MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[16..80].copy_from_slice(&self.raw);
        b
    }

    /// Reads [`to_bytes`](Self::to_bytes) back ([`Error::InvalidShareHandle`] otherwise).
    ///
    /// ```
    /// # use gpukernel_runtime::{Error, ipc::IpcEventHandle};
    /// # let mut bytes = [0u8; 80]; // as `to_bytes` writes them (the driver's 64 bytes left zero)
    /// # bytes[..8].copy_from_slice(b"GKIPCEVT"); bytes[8] = 2;
    /// assert!(IpcEventHandle::from_bytes(&bytes).is_ok());
    /// let cut = IpcEventHandle::from_bytes(&bytes[..79]).unwrap_err();
    /// assert!(cut.to_string().contains("79 bytes, expected 80"));
    /// bytes[..8].copy_from_slice(b"GKIPCMEM"); // a memory handle's magic: not an event's
    /// let e = IpcEventHandle::from_bytes(&bytes).unwrap_err();
    /// assert!(matches!(e, Error::InvalidShareHandle { .. }));
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::*;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let bytes = [0u8; 80]; // received from the exporting process
    /// let theirs = IpcEventHandle::from_bytes(&bytes)?.open(&ctx)?;
    /// stream.wait_event(&theirs)?; // later work on `stream` runs after the exporter's
    /// theirs.synchronize()?; // or the host waits
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let shared = ctx.new_ipc_event()?;
    /// let bytes = shared.ipc_handle()?.to_bytes(); // for the other process
    /// let timing = ctx.new_event()?; // not interprocess: refused by name
    /// assert!(matches!(timing.ipc_handle(), Err(Error::NotExportable { .. })));
    /// # Ok(()) }
    /// ```
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
