//! Page-locked host memory ([`PinnedHostBuffer`]), the endpoint of asynchronous copies.

use std::fmt;
use std::sync::Arc;

use gpukernel_device::DeviceCopy;

use super::buffer::{align_for, byte_len};
use super::tracker::{Access, Tracker};
use crate::context::{Context, ContextInner, check_same};
use crate::error::Result;
use crate::stream::Enqueuing;

/// Page-locked host memory (`cuMemHostAlloc`), the source or destination of asynchronous copies
/// ([`Stream::memcpy_htod_async`](crate::Stream::memcpy_htod_async),
/// [`Stream::memcpy_dtoh_async`](crate::Stream::memcpy_dtoh_async)). Host access waits for the
/// copies still pending on it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let mut staging = ctx.alloc_pinned::<f32>(1024)?;
/// staging.as_mut_slice()?.fill(2.0);
/// let mut dev = stream.alloc_zeros::<f32>(1024)?;
/// stream.memcpy_htod_async(&mut dev, &staging)?; // overlaps with host work
/// stream.memcpy_dtoh_async(&mut staging, &dev)?;
/// assert!(staging.as_slice()?.iter().all(|&v| v == 2.0));
/// # Ok(()) }
/// ```
pub struct PinnedHostBuffer<T: DeviceCopy> {
    pub(super) ptr: *mut T,
    pub(super) len: usize,
    ctx: Arc<ContextInner>,
    tracker: Tracker,
    bytes: usize,
}

// SAFETY: owns its memory; `T: DeviceCopy` is plain data; the tracker is synchronized.
unsafe impl<T: DeviceCopy> Send for PinnedHostBuffer<T> {}
// SAFETY: shared access only reads (after waiting for pending writes).
unsafe impl<T: DeviceCopy> Sync for PinnedHostBuffer<T> {}

impl<T: DeviceCopy> fmt::Debug for PinnedHostBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedHostBuffer")
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceCopy> PinnedHostBuffer<T> {
    /// `len` zeroed elements of page-locked memory for `ctx`.
    pub(crate) fn zeroed(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("alloc_pinned", len)?;
        let inner = ctx.inner.clone();
        let ptr = if bytes == 0 {
            core::ptr::NonNull::<T>::dangling().as_ptr()
        } else {
            // Zeroed, and aligned for `T` (page-aligned on CUDA).
            inner
                .backend
                .host_alloc(bytes, align_for::<T>())?
                .cast::<T>()
        };
        Ok(PinnedHostBuffer {
            ptr,
            len,
            ctx: inner,
            tracker: Tracker::new(ctx.default_stream()),
            bytes,
        })
    }

    /// Number of elements.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(ctx.alloc_pinned::<u8>(100)?.len(), 100);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(ctx.alloc_pinned::<u8>(0)?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents, after the copies pending on them have completed (a kernel fault or a
    /// failed foreign call of the work before them is reported here).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let dev = stream.htod_copy(&[3u16; 8])?;
    /// let mut host = ctx.alloc_pinned::<u16>(8)?;
    /// stream.memcpy_dtoh_async(&mut host, &dev)?;
    /// assert_eq!(host.as_slice()?, [3; 8]); // waits for the copy first
    /// # Ok(()) }
    /// ```
    pub fn as_slice(&self) -> Result<&[T]> {
        self.tracker.synchronize_all()?;
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at allocation, then written
        // only by copies of `T`s), and no copy is pending.
        Ok(unsafe { core::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The contents, mutable, after the copies pending on them have completed.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut host = ctx.alloc_pinned::<u16>(4)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// let dev = { let mut d = stream.alloc_zeros(4)?; stream.memcpy_htod_async(&mut d, &host)?; d };
    /// assert_eq!(dev.to_host_vec()?, [1, 2, 3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.tracker.synchronize_all()?;
        // SAFETY: as `as_slice`, and `&mut self` excludes any other access.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    pub(super) fn track(&self, s: &Enqueuing<'_>, access: Access) -> Result<()> {
        check_same("pinned copy", "the pinned buffer", s.ctx(), &self.ctx)?;
        let start = self.ptr.addr() as u64;
        self.tracker
            .use_on(s, (start, start + self.bytes.max(1) as u64), access)
    }
}

impl<T: DeviceCopy> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        // Leaked rather than freed while a copy might still use it (a faulted context).
        if self.bytes > 0 && self.tracker.wait_all().is_ok() {
            // SAFETY: allocated by this backend with this size and alignment; no copy is
            // pending.
            unsafe {
                self.ctx
                    .backend
                    .host_free(self.ptr.cast(), self.bytes, align_for::<T>())
            };
        }
    }
}
