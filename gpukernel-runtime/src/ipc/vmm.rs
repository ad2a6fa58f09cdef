//! VMM memory (`cuMemCreate`) exported as an operating-system handle.

use core::marker::PhantomData;
use core::ops::RangeBounds;
use std::fmt;
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
#[cfg(windows)]
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use gpukernel_device::DeviceCopy;

use super::{check_range, not_on_simulator, range_of};
use crate::backend::{SharedAlloc, SharedKind};
use crate::context::Context;
use crate::driver::OsHandle;
use crate::error::{Error, Result};
use crate::memory::DeviceBuffer;

const MAGIC: &[u8; 8] = b"GKVMMEXP";
const META: usize = 48;

/// An exported VMM allocation: the operating-system handle (a POSIX fd here, closed when
/// dropped) and what the importer needs beside it: the allocation size, the element range and
/// element size ([`VmmHandle::meta_bytes`], [`VmmHandle::META_BYTES`] bytes). Send both to the
/// other process, e.g. with [`send_with_fds`](super::send_with_fds) ([`VmmHandle::send`]).
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # use gpukernel_runtime::ipc::*;
/// # use std::os::unix::net::{UnixListener, UnixStream};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// // The exporting process: VMM memory, its fd and meta bytes sent over a Unix socket.
/// let buf = ctx.alloc_shareable::<f32>(1 << 20, ShareKind::PosixFd)?;
/// buf.export_vmm(..)?.send(&UnixStream::connect("/run/app/share.sock")?)?;
/// // The other process (another container too, where the socket is shared):
/// # let (socket, _) = UnixListener::bind("/run/app/share.sock")?.accept()?;
/// let handle = VmmHandle::<f32>::recv(&socket)?;
/// // SAFETY: the exporter leaves the memory alone while we use it.
/// let theirs = unsafe { handle.open(&ctx)? };
/// # Ok(()) }
/// ```
pub struct VmmHandle<T> {
    #[cfg(unix)]
    fd: OwnedFd,
    #[cfg(windows)]
    handle: OwnedHandle,
    alloc_bytes: u64,
    offset: u64,
    len: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for VmmHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmmHandle")
            .field("alloc_bytes", &self.alloc_bytes)
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Exports `range` of this buffer as a new operating-system handle (a POSIX fd, owned by
    /// the returned value). The buffer must come from
    /// [`Context::alloc_shareable`](crate::Context::alloc_shareable) with a VMM kind
    /// ([`ShareKind::PosixFd`](super::ShareKind)), or be an import of one; others are
    /// [`Error::NotExportable`].
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::ShareKind;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let buf = ctx.alloc_shareable::<f32>(1 << 20, ShareKind::PosixFd)?;
    /// let tail = buf.export_vmm(1024..)?; // a new fd; the importer sees elements 1024..
    /// assert_eq!(tail.len(), (1 << 20) - 1024);
    /// let legacy = ctx.alloc_shareable::<f32>(1024, ShareKind::Ipc)?; // not cuMemCreate memory
    /// assert!(matches!(legacy.export_vmm(..), Err(Error::NotExportable { .. })));
    /// # Ok(()) }
    /// ```
    pub fn export_vmm(&self, range: impl RangeBounds<usize>) -> Result<VmmHandle<T>> {
        const OP: &str = "DeviceBuffer::export_vmm";
        not_on_simulator(&self.ctx, OP)?;
        let (start, len) = range_of(self, range)?;
        let Some((
            a @ SharedAlloc {
                kind: SharedKind::Vmm { .. },
                ..
            },
            base,
        )) = self.shared_alloc()
        else {
            return Err(Error::NotExportable {
                operation: OP,
                what: "this buffer",
                reason: if self.is_pooled() {
                    "it comes from the stream-ordered memory pool, not cuMemCreate".into()
                } else {
                    "it is not a VMM (cuMemCreate) allocation".into()
                },
                hint: "allocate it with Context::alloc_shareable(len, ShareKind::PosixFd)",
            });
        };
        let h = self.ctx.backend.vmm_export(a)?;
        let offset = (base + start * size_of::<T>()) as u64;
        VmmHandle::from_os(h, a.bytes as u64, offset, len as u64)
    }
}

impl<T: DeviceCopy> VmmHandle<T> {
    /// The length of [`meta_bytes`](Self::meta_bytes).
    pub const META_BYTES: usize = META;

    fn from_os(h: OsHandle, alloc_bytes: u64, offset: u64, len: u64) -> Result<Self> {
        match h {
            #[cfg(unix)]
            OsHandle::Fd(fd) => Ok(VmmHandle {
                // SAFETY: cuMemExportToShareableHandle returned a new descriptor, now ours.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                alloc_bytes,
                offset,
                len,
                _t: PhantomData,
            }),
            #[cfg(windows)]
            OsHandle::Win32(p) => Ok(VmmHandle {
                // SAFETY: the driver returned a new handle, now ours.
                handle: unsafe { OwnedHandle::from_raw_handle(p) },
                alloc_bytes,
                offset,
                len,
                _t: PhantomData,
            }),
            #[allow(unreachable_patterns, reason = "the other platform's handle kind")]
            _ => Err(Error::UnsupportedHandleType {
                operation: "DeviceBuffer::export_vmm",
                handle_type: "this platform's other handle kind",
                place: "on this platform".into(),
            }),
        }
    }

    /// What travels beside the handle: magic, version, element size, allocation size, byte
    /// offset, element count, element type tag ([`element_tag`](super::element_tag);
    /// little-endian).
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::VmmHandle;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // Stands in for `buf.export_vmm(..)?`: 256 f32s at byte 0 of a 2 MiB allocation, with a
    /// # // descriptor of /dev/null in place of the driver's.
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// // To send the fd by other means (a pidfd_getfd, a D-Bus fd), send these bytes beside it.
    /// let meta = handle.meta_bytes();
    /// assert_eq!(meta.len(), VmmHandle::<f32>::META_BYTES);
    /// let fd = handle.fd().try_clone_to_owned()?; // what the other process receives
    /// let theirs = VmmHandle::<f32>::from_parts(fd, &meta)?;
    /// assert_eq!(theirs.len(), handle.len());
    /// # Ok(()) }
    /// ```
    pub fn meta_bytes(&self) -> [u8; META] {
        let mut b = [0u8; META];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&super::VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(size_of::<T>() as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.alloc_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.len.to_le_bytes());
        b[40..48].copy_from_slice(&super::element_tag::<T>().to_le_bytes());
        b
    }

    /// A handle from a received descriptor and its [`meta_bytes`](Self::meta_bytes):
    /// [`Error::InvalidShareHandle`] / [`Error::ShareRange`] for bytes that do not describe a
    /// range of `T` in the allocation: another element size or element type than the export's
    /// (a `u8` export is no `VmmHandle<bool>`), or a range outside it. The descriptor is
    /// closed on error.
    ///
    /// ```
    /// # use gpukernel_runtime::{Error, ipc::VmmHandle};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // The exporter's meta bytes (256 f32s at byte 0 of a 2 MiB allocation) and descriptors
    /// # // (of /dev/null here, in place of the driver's).
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let fd: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
    /// # let other_fd = fd.try_clone()?;
    /// let handle = VmmHandle::<f32>::from_parts(fd, &meta)?;
    /// assert_eq!(handle.len(), 256);
    /// let e = VmmHandle::<u8>::from_parts(other_fd, &meta).unwrap_err(); // `other_fd` is closed
    /// assert!(matches!(e, Error::InvalidShareHandle { .. })); // exported for 4-byte elements
    /// # Ok(()) }
    /// ```
    #[cfg(unix)]
    pub fn from_parts(fd: OwnedFd, meta: &[u8]) -> Result<Self> {
        let (alloc_bytes, offset, len) = parse_meta::<T>(meta)?;
        Ok(VmmHandle {
            fd,
            alloc_bytes,
            offset,
            len,
            _t: PhantomData,
        })
    }

    /// The descriptor (owned by this handle).
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::*;
    /// # use std::os::fd::AsFd;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // Stands in for `buf.export_vmm(..)?` (a descriptor of /dev/null, 256 f32s).
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// # let log = std::fs::File::open("/dev/null")?;
    /// let (tx, rx) = std::os::unix::net::UnixStream::pair()?;
    /// // The handle and a second descriptor in one message.
    /// send_with_fds(&tx, &handle.meta_bytes(), &[handle.fd(), log.as_fd()])?;
    /// let mut meta = [0u8; VmmHandle::<f32>::META_BYTES];
    /// let (n, mut fds) = recv_with_fds(&rx, &mut meta)?;
    /// assert_eq!((n, fds.len()), (meta.len(), 2));
    /// let theirs = VmmHandle::<f32>::from_parts(fds.remove(0), &meta)?;
    /// # Ok(()) }
    /// ```
    #[cfg(unix)]
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// Number of elements the handle names.
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::VmmHandle;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A received handle: 256 f32s at byte 0 of a 2 MiB allocation (/dev/null's descriptor).
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// assert_eq!(handle.len(), 256); // elements, not bytes of the allocation
    /// let mut host = vec![0.0f32; handle.len()]; // room for the shared range
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it names no element.
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::VmmHandle;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A received handle of an empty range (`buf.export_vmm(0..0)`) of a 2 MiB allocation.
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes());
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// assert!(handle.is_empty()); // a valid handle, but nothing to open or read
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sends the descriptor and the meta bytes in one message (`SCM_RIGHTS`).
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::VmmHandle;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // Stands in for `buf.export_vmm(..)?` (a descriptor of /dev/null, 256 f32s).
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// let (tx, rx) = std::os::unix::net::UnixStream::pair()?; // a connection to the other process
    /// handle.send(&tx)?;
    /// let theirs = VmmHandle::<f32>::recv(&rx)?; // with its own descriptor of the memory
    /// assert_eq!(theirs.meta_bytes(), handle.meta_bytes());
    /// # Ok(()) }
    /// ```
    #[cfg(unix)]
    pub fn send(&self, socket: &std::os::unix::net::UnixStream) -> std::io::Result<()> {
        super::send_with_fds(socket, &self.meta_bytes(), &[self.fd()])
    }

    /// Receives what [`send`](Self::send) sent. An I/O error of kind `InvalidData` when the
    /// message is not one descriptor with valid meta bytes (the descriptors are closed).
    ///
    /// ```
    /// # use gpukernel_runtime::ipc::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // Stands in for `buf.export_vmm(..)?` (a descriptor of /dev/null, 256 f32s).
    /// # let mut meta = [0u8; 48];
    /// # meta[..8].copy_from_slice(b"GKVMMEXP"); meta[8] = 2; meta[12] = 4;
    /// # meta[40..].copy_from_slice(&gpukernel_runtime::ipc::element_tag::<f32>().to_le_bytes());
    /// # meta[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes()); meta[33] = 1; // 256
    /// # let handle = VmmHandle::<f32>::from_parts(std::fs::File::open("/dev/null")?.into(), &meta)?;
    /// let (tx, rx) = std::os::unix::net::UnixStream::pair()?;
    /// handle.send(&tx)?;
    /// assert_eq!(VmmHandle::<f32>::recv(&rx)?.len(), 256);
    /// send_with_fds(&tx, b"no descriptor", &[])?; // not a handle: refused
    /// let e = VmmHandle::<f32>::recv(&rx).unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    /// # Ok(()) }
    /// ```
    #[cfg(unix)]
    pub fn recv(socket: &std::os::unix::net::UnixStream) -> std::io::Result<Self> {
        let mut buf = [0u8; META];
        let (n, mut fds) = super::recv_with_fds(socket, &mut buf)?;
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
        if fds.len() != 1 || n != META {
            return Err(invalid(format!(
                "VmmHandle::recv: {n} bytes and {} descriptors, expected {META} and 1",
                fds.len()
            )));
        }
        Self::from_parts(fds.remove(0), &buf[..n]).map_err(|e| invalid(e.to_string()))
    }

    /// Imports the allocation (`cuMemImportFromShareableHandle`), maps it and returns the
    /// handle's range as a buffer, unmapped and released when dropped, after its work. The
    /// descriptor stays this handle's. [`Error::ShareHandleRejected`] when the driver refuses
    /// the descriptor (not a VMM export); a driver error from `cuMemMap` when the allocation
    /// is smaller than the size the meta bytes claim.
    ///
    /// # Safety
    /// The returned buffer is treated as this process's alone, so the caller guarantees, for
    /// as long as it and its work live:
    /// - No other side writes the range while this process's work on it may run, nor reads it
    ///   while this process may write it (order both sides, e.g. with an IPC event): the
    ///   exporting process, any other importer, and this process itself through another
    ///   buffer of the same memory. Opening one export twice (this handle, a handle received
    ///   again, or another export of an overlapping range) gives two buffers of one memory
    ///   whose borrows the runtime cannot relate: only one may be used, or all only read.
    /// - The bytes in the range are valid values of `T` (the export's element type, which
    ///   the meta bytes name and [`from_parts`](Self::from_parts) checked; a writer in another
    ///   process must keep them valid, e.g. only 0 and 1 for `bool`).
    ///
    /// The allocation itself stays alive while the buffer exists (the import holds it).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # use gpukernel_runtime::ipc::*;
    /// # use std::os::unix::net::UnixListener;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let (socket, _) = UnixListener::bind("/run/app/share.sock")?.accept()?;
    /// let handle = VmmHandle::<f32>::recv(&socket)?;
    /// // SAFETY: the exporter does not touch the range until we tell it we are done.
    /// let mut theirs = unsafe { handle.open(&ctx)? };
    /// stream.memcpy_htod(&mut theirs, &vec![1.0; handle.len()])?;
    /// stream.synchronize()?; // then tell the exporter (over the socket, or with an IPC event)
    /// # Ok(()) }
    /// ```
    pub unsafe fn open(&self, ctx: &Context) -> Result<DeviceBuffer<T>> {
        const OP: &str = "VmmHandle::open";
        not_on_simulator(&ctx.inner, OP)?;
        check_range::<T>(
            OP,
            "the shared allocation",
            self.offset,
            self.len,
            self.alloc_bytes,
        )?;
        let g = ctx.inner.backend.vmm_granularity(cfg!(windows))? as u64;
        if self.alloc_bytes == 0 || !self.alloc_bytes.is_multiple_of(g) {
            return Err(Error::InvalidShareHandle {
                operation: OP,
                handle: "VMM handle",
                problem: format!(
                    "allocation size {} is not a positive multiple of the granularity {g}",
                    self.alloc_bytes
                ),
            });
        }
        #[cfg(unix)]
        let os = OsHandle::Fd(self.fd.as_raw_fd());
        #[cfg(windows)]
        let os = OsHandle::Win32(self.handle.as_raw_handle());
        let a = ctx
            .inner
            .backend
            .vmm_import(os, self.alloc_bytes as usize, cfg!(windows))?;
        Ok(DeviceBuffer::from_shared(
            &ctx.inner,
            a,
            self.offset as usize,
            self.len as usize,
        ))
    }
}

/// `(alloc_bytes, offset, len)` of valid meta bytes.
#[cfg_attr(
    not(unix),
    allow(dead_code, reason = "descriptors are received on Unix only")
)]
pub(crate) fn parse_meta<T>(meta: &[u8]) -> Result<(u64, u64, u64)> {
    const OP: &str = "VmmHandle::from_parts";
    super::check_header(OP, "VMM handle", meta, META, MAGIC)?;
    let elem = u32::from_le_bytes(super::take(meta, 12)) as usize;
    let tag = u64::from_le_bytes(super::take(meta, 40));
    super::check_element::<T>(OP, "VMM handle", elem, tag)?;
    let alloc_bytes = u64::from_le_bytes(super::take(meta, 16));
    let offset = u64::from_le_bytes(super::take(meta, 24));
    let len = u64::from_le_bytes(super::take(meta, 32));
    check_range::<T>(OP, "the shared allocation", offset, len, alloc_bytes)?;
    Ok((alloc_bytes, offset, len))
}
