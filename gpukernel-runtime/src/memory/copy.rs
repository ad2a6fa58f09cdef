//! Copies and memsets: the one place that moves bytes. Each checks lengths, orders itself
//! after pending conflicting work (the trackers), and hands the bytes to the backend.

use gpukernel_device::{AnyBitPattern, DeviceCopy};

use super::buffer::DeviceBuffer;
use super::pinned::PinnedHostBuffer;
use super::tracker::Access;
use super::{DeviceSlice, DeviceSliceMut, RawParts};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::stream::Stream;

fn check_len(operation: &'static str, destination: usize, source_len: usize) -> Result<()> {
    if destination == source_len {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            operation,
            destination,
            source_len,
        })
    }
}

/// Device → pageable host, blocking.
pub(super) fn memcpy_dtoh<T: DeviceCopy>(
    s: &Stream,
    dst: &mut [T],
    src: RawParts<'_>,
    op: &'static str,
) -> Result<()> {
    let len = dst.len();
    // SAFETY: `dst` is `len` writable, initialised elements, exclusively borrowed.
    unsafe { memcpy_dtoh_raw(s, dst.as_mut_ptr(), len, src, op) }
}

/// Device → host memory that may be uninitialised (`to_host_vec`), blocking.
///
/// # Safety
/// `dst` must be valid for writes of `len` elements and not accessed by anyone else until this
/// returns.
pub(super) unsafe fn memcpy_dtoh_raw<T: DeviceCopy>(
    s: &Stream,
    dst: *mut T,
    len: usize,
    src: RawParts<'_>,
    op: &'static str,
) -> Result<()> {
    let _range = crate::profile::nvtx_range!("{op}");
    check_len(op, len, src.len)?;
    // Marked in flight from the ordering below until the backend has the copy (not during
    // the wait).
    let enqueuing = s.enqueuing();
    src.track(op, "the source", &enqueuing)?;
    let bytes = len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: `dst` is `bytes` of writable host memory, the caller's until we return, and we
    // wait for the copy below; the source range is inside a live allocation of the stream's
    // context, ordered after its writers.
    unsafe {
        s.ctx()
            .backend
            .memcpy_dtoh(dst.cast(), src.ptr, bytes, s.handle())
    }?;
    drop(enqueuing);
    // The host now observes the results of every stream that used the memory (`s` waited
    // for them): a fault or a failed foreign call of that work is reported here.
    s.wait_idle()?;
    crate::foreign::check(s)
}

/// Pageable host → device, blocking until the source is no longer needed.
pub(super) fn memcpy_htod<T: DeviceCopy>(
    s: &Stream,
    dst: RawParts<'_>,
    src: &[T],
    op: &'static str,
) -> Result<()> {
    let _range = crate::profile::nvtx_range!("{op}");
    check_len(op, dst.len, src.len())?;
    // Marked in flight from the ordering below until the backend has the copy (not during
    // the wait).
    let enqueuing = s.enqueuing();
    dst.track(op, "the destination", &enqueuing)?;
    let bytes = size_of_val(src);
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: `src` stays borrowed until the stream is idle (waited below); the destination
    // range is inside a live allocation of the context, exclusively borrowed.
    unsafe {
        s.ctx()
            .backend
            .memcpy_htod(dst.ptr, src.as_ptr().cast(), bytes, s.handle())
    }?;
    drop(enqueuing);
    s.wait_idle()
}

pub(super) fn memcpy_dtod(
    s: &Stream,
    dst: RawParts<'_>,
    src: RawParts<'_>,
    op: &'static str,
) -> Result<()> {
    let _range = crate::profile::nvtx_range!("{op}");
    check_len(op, dst.len, src.len)?;
    if !std::sync::Arc::ptr_eq(dst.ctx, src.ctx) {
        // Two devices' memory: a peer copy (see `peer.rs`).
        return super::peer::memcpy_peer(s, dst, src, op);
    }
    // Marked in flight from the ordering below until the backend has the copy.
    let s = &s.enqueuing();
    dst.track(op, "the destination", s)?;
    src.track(op, "the source", s)?;
    let bytes = dst.len * dst.elem;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: both ranges are inside live allocations of the stream's context, ordered on `s`;
    // the destination is exclusively borrowed, so they do not overlap.
    unsafe {
        s.ctx()
            .backend
            .memcpy_dtod(dst.ptr, src.ptr, bytes, s.handle())
    }
}

pub(super) fn memset_d8(s: &Stream, dst: RawParts<'_>, value: u8) -> Result<()> {
    let _range = crate::profile::nvtx_range!("memset_d8");
    // Marked in flight from the ordering below until the backend has the copy.
    let s = &s.enqueuing();
    dst.track("memset_d8", "the destination", s)?;
    let bytes = dst.len * dst.elem;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: inside a live, exclusively borrowed allocation of the stream's context, ordered
    // on `s`.
    unsafe { s.ctx().backend.memset_d8(dst.ptr, value, bytes, s.handle()) }
}

/// Pinned host → device, stream-ordered.
fn memcpy_htod_pinned<T: DeviceCopy>(
    s: &Stream,
    dst: RawParts<'_>,
    src: &PinnedHostBuffer<T>,
) -> Result<()> {
    const OP: &str = "memcpy_htod_async";
    let _range = crate::profile::nvtx_range!("{OP}");
    check_len(OP, dst.len, src.len)?;
    // Marked in flight from the ordering below until the backend has the copy.
    let s = &s.enqueuing();
    dst.track(OP, "the destination", s)?;
    src.track(s, Access::Read)?;
    let bytes = src.len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the pinned memory stays allocated until the tracked work on `s` completes (its
    // Drop and host accessors wait for it); the destination is a live allocation of the
    // context, exclusively borrowed.
    unsafe {
        s.ctx()
            .backend
            .memcpy_htod(dst.ptr, src.ptr.cast(), bytes, s.handle())
    }
}

/// Device → pinned host, stream-ordered.
fn memcpy_dtoh_pinned<T: DeviceCopy>(
    s: &Stream,
    dst: &mut PinnedHostBuffer<T>,
    src: RawParts<'_>,
) -> Result<()> {
    const OP: &str = "memcpy_dtoh_async";
    let _range = crate::profile::nvtx_range!("{OP}");
    check_len(OP, dst.len, src.len)?;
    // Marked in flight from the ordering below until the backend has the copy.
    let s = &s.enqueuing();
    src.track(OP, "the source", s)?;
    dst.track(s, Access::Write)?;
    let bytes = dst.len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the pinned memory is not read or freed by the host until the tracked work on `s`
    // completes (its accessors and Drop wait); the source is a live allocation of the context.
    unsafe {
        s.ctx()
            .backend
            .memcpy_dtoh(dst.ptr.cast(), src.ptr, bytes, s.handle())
    }
}

impl Stream {
    /// Allocates `len` zeroed elements, stream-ordered on this stream.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let buf = stream.alloc_zeros::<f32>(1024)?; // ordered on `stream`
    /// assert!(buf.to_host_vec()?.iter().all(|&v| v == 0.0));
    /// # Ok(()) }
    /// ```
    pub fn alloc_zeros<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: zeroed right away, and zero bytes are a valid `T` (the `DeviceCopy` contract
        // covers every bit pattern the device may write, including zeros).
        let mut b = unsafe { DeviceBuffer::<T>::alloc_on(self, len) }?;
        b.memset_zeros()?;
        Ok(b)
    }

    /// Allocates `len` elements without initialising them (`cuMemAllocAsync`).
    ///
    /// # Safety
    /// The contents are unspecified: write them before reading them, unless every bit pattern
    /// is a valid `T`.
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let n = 256;
    /// // SAFETY: `iota` writes every element before anything reads them.
    /// let mut out = unsafe { stream.alloc::<u32>(n)? };
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(n)?, (&mut out,))?;
    /// assert_eq!(out.to_host_vec()?[255], 255);
    /// # Ok(()) }
    /// ```
    pub unsafe fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceBuffer::alloc_on(self, len) }
    }

    /// A new buffer holding a copy of `src` (blocks until `src` is no longer needed).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let x = stream.htod_copy(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(x.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn htod_copy<T: DeviceCopy>(&self, src: &[T]) -> Result<DeviceBuffer<T>> {
        // SAFETY: fully written by the copy below before anything can read it.
        let mut b = unsafe { DeviceBuffer::<T>::alloc_on(self, src.len()) }?;
        memcpy_htod(self, b.raw_parts_mut(), src, "htod_copy")?;
        Ok(b)
    }

    /// Copies pageable host memory to device memory on this stream (`cuMemcpyHtoDAsync`),
    /// blocking until `src` is no longer needed.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = stream.alloc_zeros::<u32>(4)?;
    /// stream.memcpy_htod(&mut buf, &[1, 2, 3, 4])?;
    /// stream.memcpy_htod(&mut buf.slice_mut(..2)?, &[9, 9])?;
    /// assert_eq!(buf.to_host_vec()?, [9, 9, 3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_htod<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        src: &[T],
    ) -> Result<()> {
        memcpy_htod(self, dst.raw_parts_mut(), src, "memcpy_htod")
    }

    /// Copies device memory to pageable host memory on this stream (`cuMemcpyDtoHAsync`),
    /// blocking until it is done.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let buf = stream.htod_copy(&[1u32, 2, 3, 4])?;
    /// let mut host = [0; 2];
    /// stream.memcpy_dtoh(&mut host, &buf.slice(2..)?)?;
    /// assert_eq!(host, [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_dtoh<T: DeviceCopy>(
        &self,
        dst: &mut [T],
        src: &impl DeviceSlice<T>,
    ) -> Result<()> {
        memcpy_dtoh(self, dst, src.raw_parts(), "memcpy_dtoh")
    }

    /// Copies device memory to device memory on this stream (`cuMemcpyDtoDAsync`). Between
    /// two devices (the stream belongs to one of them) as
    /// [`copy_from_device`](DeviceSliceMut::copy_from_device): direct with peer access,
    /// staged through host memory (and complete on return) without.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let src = stream.htod_copy(&[1u32, 2, 3, 4])?;
    /// let mut dst = stream.alloc_zeros::<u32>(4)?;
    /// stream.memcpy_dtod_async(&mut dst, &src)?; // does not block the host
    /// assert_eq!(dst.to_host_vec()?, [1, 2, 3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_dtod_async<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        src: &impl DeviceSlice<T>,
    ) -> Result<()> {
        memcpy_dtod(
            self,
            dst.raw_parts_mut(),
            src.raw_parts(),
            "memcpy_dtod_async",
        )
    }

    /// Copies pinned host memory to device memory asynchronously (`cuMemcpyHtoDAsync`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let staging = ctx.pinned_from_slice(&[1.0f32; 1024])?;
    /// let mut dev = stream.alloc_zeros::<f32>(1024)?;
    /// stream.memcpy_htod_async(&mut dev, &staging)?; // returns at once; `staging` stays borrowed
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn memcpy_htod_async<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        src: &PinnedHostBuffer<T>,
    ) -> Result<()> {
        memcpy_htod_pinned(self, dst.raw_parts_mut(), src)
    }

    /// Copies device memory to pinned host memory asynchronously (`cuMemcpyDtoHAsync`); read
    /// the result with [`PinnedHostBuffer::as_slice`], which waits for it.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let dev = stream.htod_copy(&[7u32; 16])?;
    /// let mut host = ctx.alloc_pinned::<u32>(16)?;
    /// stream.memcpy_dtoh_async(&mut host, &dev)?;
    /// assert_eq!(host.as_slice()?, [7; 16]); // as_slice waits for the copy
    /// # Ok(()) }
    /// ```
    pub fn memcpy_dtoh_async<T: DeviceCopy>(
        &self,
        dst: &mut PinnedHostBuffer<T>,
        src: &impl DeviceSlice<T>,
    ) -> Result<()> {
        memcpy_dtoh_pinned(self, dst, src.raw_parts())
    }

    /// Sets every byte of `dst` to `value` (`cuMemsetD8Async`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = stream.alloc_zeros::<u8>(8)?;
    /// stream.memset_d8_async(&mut buf.slice_mut(4..)?, 0xab)?;
    /// assert_eq!(buf.to_host_vec()?, [0, 0, 0, 0, 0xab, 0xab, 0xab, 0xab]);
    /// # Ok(()) }
    /// ```
    pub fn memset_d8_async<T: AnyBitPattern>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        value: u8,
    ) -> Result<()> {
        memset_d8(self, dst.raw_parts_mut(), value)
    }
}

impl Context {
    /// Allocates `len` zeroed elements on the default stream.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let counts = ctx.alloc_zeros::<u32>(256)?;
    /// assert_eq!(counts.to_host_vec()?, vec![0; 256]);
    /// # Ok(()) }
    /// ```
    pub fn alloc_zeros<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.default_stream().alloc_zeros(len)
    }

    /// Allocates `len` elements on the default stream without initialising them.
    ///
    /// # Safety
    /// As [`Stream::alloc`].
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // SAFETY: the copy writes every element before it is read.
    /// let mut buf = unsafe { ctx.alloc::<f32>(3)? };
    /// buf.copy_from_host(&[1.0, 2.0, 3.0])?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded from the caller.
        unsafe { self.default_stream().alloc(len) }
    }

    /// A new buffer holding a copy of `src`, on the default stream.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(x.to_host_vec()?, [1.0, 2.0, 3.0]);
    /// # Ok(()) }
    /// ```
    pub fn htod_copy<T: DeviceCopy>(&self, src: &[T]) -> Result<DeviceBuffer<T>> {
        self.default_stream().htod_copy(src)
    }

    /// `len` zeroed elements of page-locked host memory (`cuMemHostAlloc`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut host = ctx.alloc_pinned::<f32>(4096)?; // page-locked: async copies from it overlap
    /// host.as_mut_slice()?.fill(1.0);
    /// # Ok(()) }
    /// ```
    pub fn alloc_pinned<T: DeviceCopy>(&self, len: usize) -> Result<PinnedHostBuffer<T>> {
        PinnedHostBuffer::zeroed(self, len)
    }

    /// Page-locked host memory holding a copy of `src`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let staging = ctx.pinned_from_slice(&[1u32, 2, 3])?;
    /// assert_eq!(staging.as_slice()?, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn pinned_from_slice<T: DeviceCopy>(&self, src: &[T]) -> Result<PinnedHostBuffer<T>> {
        let mut p = PinnedHostBuffer::zeroed(self, src.len())?;
        p.as_mut_slice()?.copy_from_slice(src);
        Ok(p)
    }
}
