//! Device memory: typed buffers, views, raw device pointers, foreign allocations, pinned host
//! memory, and the copies and memsets between them.
//!
//! Every operation checks lengths and bounds (a mismatch is an error, never undefined
//! behaviour) and is stream-ordered (see [`Tracker`](crate::stream)): a buffer remembers the
//! streams that used it, so work from another stream, host reads and the final free wait for
//! whatever is pending.

mod buffer;
mod copy;
mod pinned;
mod ptr;
#[cfg(test)]
mod tests;
pub(crate) mod tracker;
mod view;
mod view_nd;

use std::fmt;
use std::sync::Arc;

use gpukernel_device::{AnyBitPattern, DeviceCopy};

use crate::context::{Context, ContextInner};
use crate::error::{Error, Result};
use crate::stream::Stream;
use tracker::{Access, Tracker};

pub use buffer::DeviceBuffer;
use copy::{memcpy_dtod, memcpy_dtoh, memcpy_dtoh_raw, memcpy_htod, memset_d8};
pub use pinned::PinnedHostBuffer;
pub use ptr::DevicePtr;
pub use view::{DeviceView, DeviceViewMut};
pub use view_nd::{DeviceView2DMut, DeviceView3DMut};

/// Alignment of device allocations (what `cuMemAlloc` guarantees on the GPU; the simulator
/// gives the same).
const DEVICE_ALIGN: usize = 256;

/// What a buffer or view is made of, for the runtime's own use (kernel arguments, copies).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct RawParts<'a> {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    pub(crate) ctx: &'a Arc<ContextInner>,
    pub(crate) tracker: &'a Tracker,
    /// Bytes per element.
    pub(crate) elem: usize,
    /// How the holder uses the memory: reads it, writes it (a view), or has exclusive use of
    /// the whole allocation (`&mut DeviceBuffer`).
    pub(crate) access: Access,
}

impl fmt::Debug for RawParts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawParts")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl RawParts<'_> {
    /// Checks the context and orders work about to be enqueued on `s` after pending work.
    #[inline]
    pub(crate) fn track(
        &self,
        operation: &'static str,
        what: &'static str,
        s: &Stream,
    ) -> Result<()> {
        if !Arc::ptr_eq(self.ctx, s.ctx()) {
            return Err(crate::context::mismatch(operation, what, s.ctx(), self.ctx));
        }
        let bytes = (self.len * self.elem) as u64;
        self.tracker
            .use_on(s, (self.ptr, self.ptr + bytes.max(1)), self.access)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Device memory that can be read: [`DeviceBuffer`], [`DeviceView`], [`DeviceViewMut`].
pub trait DeviceSlice<T: DeviceCopy>: sealed::Sealed {
    #[doc(hidden)]
    fn raw_parts(&self) -> RawParts<'_>;

    /// Number of elements.
    fn len(&self) -> usize {
        self.raw_parts().len
    }

    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw device pointer to the first element (a host address on the simulator).
    fn device_ptr(&self) -> DevicePtr<T> {
        DevicePtr::from_addr(self.raw_parts().ptr)
    }

    /// The context the memory belongs to.
    fn context(&self) -> Context {
        Context {
            inner: self.raw_parts().ctx.clone(),
        }
    }

    /// Copies to host memory of the same length, after the pending work on the memory
    /// (`cuMemcpyDtoHAsync` + `cuStreamSynchronize`). A kernel fault surfaces here.
    fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        let p = self.raw_parts();
        let s = p.tracker.home();
        memcpy_dtoh(&s, dst, p, "copy_to_host")
    }

    /// Copies to a new `Vec`.
    fn to_host_vec(&self) -> Result<Vec<T>> {
        let p = self.raw_parts();
        let mut v: Vec<T> = Vec::new();
        // Device memory may be larger than what the host can hold: an error, not an abort.
        v.try_reserve_exact(p.len).map_err(|_| Error::OutOfMemory {
            operation: "to_host_vec",
            bytes: p.len * p.elem,
            place: "the host".to_owned(),
        })?;
        let s = p.tracker.home();
        // SAFETY: capacity is `len` and `v` is ours; the copy initialises every element before
        // `set_len` exposes them (no reference to the uninitialised memory is made), and
        // `DeviceCopy` values are valid for the bits the device holds.
        unsafe {
            memcpy_dtoh_raw(&s, v.as_mut_ptr(), p.len, p, "to_host_vec")?;
            v.set_len(p.len);
        }
        Ok(v)
    }
}

/// Device memory that can be written: [`DeviceBuffer`] and [`DeviceViewMut`].
pub trait DeviceSliceMut<T: DeviceCopy>: DeviceSlice<T> {
    #[doc(hidden)]
    fn raw_parts_mut(&mut self) -> RawParts<'_>;

    /// Copies from host memory of the same length (`cuMemcpyHtoDAsync`), ordered after pending
    /// work; returns once `src` is no longer needed.
    fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memcpy_htod(&s, p, src, "copy_from_host")
    }

    /// Copies from device memory of the same length in the same context
    /// (`cuMemcpyDtoDAsync`); stream-ordered, does not block.
    fn copy_from_device(&mut self, src: &impl DeviceSlice<T>) -> Result<()>
    where
        Self: Sized,
    {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memcpy_dtod(&s, p, src.raw_parts(), "copy_from_device")
    }

    /// Sets every byte to `value` (`cuMemsetD8Async`); stream-ordered, does not block.
    /// Only for element types where any byte pattern is a value ([`AnyBitPattern`]); use
    /// [`memset_zeros`](Self::memset_zeros) for the others.
    fn memset_d8(&mut self, value: u8) -> Result<()>
    where
        T: AnyBitPattern,
    {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memset_d8(&s, p, value)
    }

    /// Sets every byte to zero (valid for every `DeviceCopy` type).
    fn memset_zeros(&mut self) -> Result<()> {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memset_d8(&s, p, 0)
    }
}

impl<T: DeviceCopy> sealed::Sealed for DeviceBuffer<T> {}
impl<T: DeviceCopy> sealed::Sealed for DeviceView<'_, T> {}
impl<T: DeviceCopy> sealed::Sealed for DeviceViewMut<'_, T> {}

impl<T: DeviceCopy> DeviceSlice<T> for DeviceBuffer<T> {
    #[inline]
    fn raw_parts(&self) -> RawParts<'_> {
        RawParts {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            tracker: &self.tracker,
            elem: size_of::<T>(),
            access: Access::Read,
        }
    }
}
impl<T: DeviceCopy> DeviceSliceMut<T> for DeviceBuffer<T> {
    #[inline]
    fn raw_parts_mut(&mut self) -> RawParts<'_> {
        RawParts {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            tracker: &self.tracker,
            elem: size_of::<T>(),
            access: Access::Exclusive,
        }
    }
}
impl<T: DeviceCopy> DeviceSlice<T> for DeviceView<'_, T> {
    #[inline]
    fn raw_parts(&self) -> RawParts<'_> {
        RawParts {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            tracker: self.tracker,
            elem: size_of::<T>(),
            access: Access::Read,
        }
    }
}
impl<T: DeviceCopy> DeviceSlice<T> for DeviceViewMut<'_, T> {
    #[inline]
    fn raw_parts(&self) -> RawParts<'_> {
        RawParts {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            tracker: self.tracker,
            elem: size_of::<T>(),
            access: Access::Read,
        }
    }
}
impl<T: DeviceCopy> DeviceSliceMut<T> for DeviceViewMut<'_, T> {
    #[inline]
    fn raw_parts_mut(&mut self) -> RawParts<'_> {
        RawParts {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            tracker: self.tracker,
            elem: size_of::<T>(),
            access: Access::Write,
        }
    }
}

/// Inherent forms of the [`DeviceSlice`] / [`DeviceSliceMut`] methods, so the everyday calls
/// need no trait import.
macro_rules! inherent_read {
    ($([$($gen:tt)*] $ty:ty),*) => { $(
        impl<$($gen)*> $ty {
            /// Number of elements.
            #[inline]
            pub fn len(&self) -> usize {
                DeviceSlice::len(self)
            }

            /// Whether there are no elements.
            #[inline]
            pub fn is_empty(&self) -> bool {
                DeviceSlice::is_empty(self)
            }

            /// The raw device pointer to the first element (a host address on the simulator).
            #[inline]
            pub fn device_ptr(&self) -> DevicePtr<T> {
                DeviceSlice::device_ptr(self)
            }

            /// See [`DeviceSlice::copy_to_host`].
            pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
                DeviceSlice::copy_to_host(self, dst)
            }

            /// See [`DeviceSlice::to_host_vec`].
            pub fn to_host_vec(&self) -> Result<Vec<T>> {
                DeviceSlice::to_host_vec(self)
            }
        }
    )* };
}

macro_rules! inherent_write {
    ($([$($gen:tt)*] $ty:ty),*) => { $(
        impl<$($gen)*> $ty {
            /// See [`DeviceSliceMut::copy_from_host`].
            pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
                DeviceSliceMut::copy_from_host(self, src)
            }

            /// See [`DeviceSliceMut::copy_from_device`].
            pub fn copy_from_device(&mut self, src: &impl DeviceSlice<T>) -> Result<()> {
                DeviceSliceMut::copy_from_device(self, src)
            }

            /// See [`DeviceSliceMut::memset_d8`].
            pub fn memset_d8(&mut self, value: u8) -> Result<()>
            where
                T: AnyBitPattern,
            {
                DeviceSliceMut::memset_d8(self, value)
            }

            /// See [`DeviceSliceMut::memset_zeros`].
            pub fn memset_zeros(&mut self) -> Result<()> {
                DeviceSliceMut::memset_zeros(self)
            }
        }
    )* };
}

inherent_read!([T: DeviceCopy] DeviceBuffer<T>, [T: DeviceCopy] DeviceView<'_, T>, [T: DeviceCopy] DeviceViewMut<'_, T>);
inherent_write!([T: DeviceCopy] DeviceBuffer<T>, [T: DeviceCopy] DeviceViewMut<'_, T>);
