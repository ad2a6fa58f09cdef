//! Page-locked host memory ([`PinnedHostBuffer`]), the endpoint of asynchronous copies.

use std::fmt;
use std::sync::Arc;

use gpukernel_device::DeviceCopy;

use super::buffer::{align_for, byte_len};
use super::tracker::{Access, Tracker};
use crate::context::{Context, ContextInner, check_same};
use crate::error::Result;
use crate::stream::Stream;

/// Page-locked host memory (`cuMemHostAlloc`), the source or destination of asynchronous copies
/// ([`Stream::memcpy_htod_async`], [`Stream::memcpy_dtoh_async`]). Host access waits for the
/// copies still pending on it.
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
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents, after the copies pending on them have completed (a kernel fault or a
    /// failed foreign call of the work before them is reported here).
    pub fn as_slice(&self) -> Result<&[T]> {
        self.tracker.synchronize_all()?;
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at allocation, then written
        // only by copies of `T`s), and no copy is pending.
        Ok(unsafe { core::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The contents, mutable, after the copies pending on them have completed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.tracker.synchronize_all()?;
        // SAFETY: as `as_slice`, and `&mut self` excludes any other access.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    pub(super) fn track(&self, s: &Stream, access: Access) -> Result<()> {
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
