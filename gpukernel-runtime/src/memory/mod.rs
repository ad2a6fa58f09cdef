//! Device memory: typed buffers, views, raw device pointers, foreign allocations, pinned host
//! memory, and the copies and memsets between them.
//!
//! Every operation checks lengths and bounds (a mismatch is an error, never undefined
//! behaviour) and is stream-ordered (see [`Tracker`](crate::stream)): a buffer remembers the
//! streams that used it, so work from another stream, host reads and the final free wait for
//! whatever is pending.

mod buffer;
mod copy;
mod peer;
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
use crate::stream::Enqueuing;
use tracker::{Access, Tracker};

pub use buffer::DeviceBuffer;
use copy::{memcpy_dtod, memcpy_dtoh, memcpy_dtoh_raw, memcpy_htod, memset_d8};
pub use pinned::PinnedHostBuffer;
pub use ptr::DevicePtr;
pub use view::{DeviceView, DeviceViewMut};
pub use view_nd::{DeviceView2D, DeviceView2DMut, DeviceView3DMut};

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
    /// Checks that `s`'s context may use the memory (its own, or a peer's with peer access
    /// enabled) and orders work about to be enqueued on `s` after pending work.
    #[inline]
    pub(crate) fn track(
        &self,
        operation: &'static str,
        what: &'static str,
        s: &Enqueuing<'_>,
    ) -> Result<()> {
        if !Arc::ptr_eq(self.ctx, s.ctx()) && !s.ctx().can_use_memory_of(self.ctx) {
            return Err(crate::context::mismatch(operation, what, s.ctx(), self.ctx));
        }
        self.order_on(s)
    }

    /// [`track`](Self::track) for an argument of a kernel launch on `s`, whose entry checked
    /// that `s` is not capturing (nor the thread in a host node): the common case, the same
    /// context and a use the allocation's grant covers, inline and without a call.
    #[inline(always)]
    pub(crate) fn track_argument(&self, what: &'static str, s: &Enqueuing<'_>) -> Result<()> {
        let bytes = (self.len * self.elem) as u64;
        let span = (self.ptr, self.ptr + bytes.max(1));
        if Arc::ptr_eq(self.ctx, s.ctx) && self.tracker.granted(s, span, self.access) {
            return Ok(());
        }
        // By value: the common case above builds no `RawParts` in memory.
        Self::track_argument_slow(*self, what, s)
    }

    #[cold]
    #[inline(never)]
    fn track_argument_slow(self, what: &'static str, s: &Enqueuing<'_>) -> Result<()> {
        self.track("Stream::launch", what, s)
    }

    /// Orders work about to be enqueued on `s` after pending conflicting work, whichever
    /// context `s` belongs to (the caller checked that the work may use the memory).
    #[inline]
    pub(crate) fn order_on(&self, s: &Enqueuing<'_>) -> Result<()> {
        let bytes = (self.len * self.elem) as u64;
        self.tracker
            .use_on(s, (self.ptr, self.ptr + bytes.max(1)), self.access)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Device memory that can be read: [`DeviceBuffer`], [`DeviceView`], [`DeviceViewMut`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::DeviceSlice;
/// fn sum(data: &impl DeviceSlice<f32>) -> gpukernel_runtime::Result<f32> {
///     Ok(data.to_host_vec()?.iter().sum())
/// }
/// let buf = ctx.htod_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
/// assert_eq!(sum(&buf)?, 10.0);
/// assert_eq!(sum(&buf.slice(2..)?)?, 7.0); // a view works the same
/// # Ok(()) }
/// ```
pub trait DeviceSlice<T: DeviceCopy>: sealed::Sealed {
    #[doc(hidden)]
    fn raw_parts(&self) -> RawParts<'_>;

    /// Number of elements.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.alloc_zeros::<u16>(10)?;
    /// assert_eq!(DeviceSlice::len(&buf.slice(4..)?), 6);
    /// # Ok(()) }
    /// ```
    fn len(&self) -> usize {
        self.raw_parts().len
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.alloc_zeros::<u16>(10)?;
    /// assert!(DeviceSlice::is_empty(&buf.slice(10..)?));
    /// # Ok(()) }
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw device pointer to the first element (a host address on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.alloc_zeros::<u32>(8)?;
    /// let tail = DeviceSlice::device_ptr(&buf.slice(2..)?);
    /// assert_eq!(tail.addr(), buf.as_raw() + 2 * 4);
    /// # Ok(()) }
    /// ```
    fn device_ptr(&self) -> DevicePtr<T> {
        DevicePtr::from_addr(self.raw_parts().ptr)
    }

    /// The context the memory belongs to.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.alloc_zeros::<u32>(8)?;
    /// assert!(buf.context().is_simulator());
    /// # Ok(()) }
    /// ```
    fn context(&self) -> Context {
        Context {
            inner: self.raw_parts().ctx.clone(),
        }
    }

    /// Copies to host memory of the same length, after the pending work on the memory
    /// (`cuMemcpyDtoHAsync` + `cuStreamSynchronize`). A kernel fault surfaces here.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.htod_copy(&[1, 2, 3, 4])?;
    /// let mut host = [0; 2];
    /// DeviceSlice::copy_to_host(&buf.slice(2..)?, &mut host)?;
    /// assert_eq!(host, [3, 4]);
    /// # Ok(()) }
    /// ```
    fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        let p = self.raw_parts();
        let s = p.tracker.home();
        memcpy_dtoh(&s, dst, p, "copy_to_host")
    }

    /// Copies to a new `Vec`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSlice;
    /// let buf = ctx.htod_copy(&[1, 2, 3, 4])?;
    /// assert_eq!(DeviceSlice::to_host_vec(&buf.slice(..2)?)?, [1, 2]);
    /// # Ok(()) }
    /// ```
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
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::DeviceSliceMut;
/// fn fill_ones(out: &mut impl DeviceSliceMut<f32>) -> gpukernel_runtime::Result<()> {
///     out.copy_from_host(&vec![1.0; out.len()])
/// }
/// let mut buf = ctx.alloc_zeros::<f32>(4)?;
/// fill_ones(&mut buf.slice_mut(1..3)?)?;
/// assert_eq!(buf.to_host_vec()?, [0.0, 1.0, 1.0, 0.0]);
/// # Ok(()) }
/// ```
pub trait DeviceSliceMut<T: DeviceCopy>: DeviceSlice<T> {
    #[doc(hidden)]
    fn raw_parts_mut(&mut self) -> RawParts<'_>;

    /// Copies from host memory of the same length (`cuMemcpyHtoDAsync`), ordered after pending
    /// work; returns once `src` is no longer needed.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSliceMut;
    /// let mut buf = ctx.alloc_zeros::<i32>(4)?;
    /// DeviceSliceMut::copy_from_host(&mut buf.slice_mut(..2)?, &[7, 8])?;
    /// assert_eq!(buf.to_host_vec()?, [7, 8, 0, 0]);
    /// # Ok(()) }
    /// ```
    fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memcpy_htod(&s, p, src, "copy_from_host")
    }

    /// Copies from device memory of the same length (`cuMemcpyDtoDAsync`); stream-ordered,
    /// does not block. The source may be memory of another device: the copy then goes
    /// directly (`cuMemcpyPeerAsync`) when peer access is enabled between the two contexts
    /// in either direction ([`Context::enable_peer_access`]), and through page-locked host
    /// memory otherwise, returning once it is complete.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSliceMut;
    /// let src = ctx.htod_copy(&[1, 2])?;
    /// let mut dst = ctx.alloc_zeros::<i32>(4)?;
    /// DeviceSliceMut::copy_from_device(&mut dst.slice_mut(2..)?, &src)?;
    /// assert_eq!(dst.to_host_vec()?, [0, 0, 1, 2]);
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSliceMut;
    /// let mut buf = ctx.alloc_zeros::<u32>(2)?;
    /// DeviceSliceMut::memset_d8(&mut buf, 0xff)?;
    /// assert_eq!(buf.to_host_vec()?, [u32::MAX; 2]);
    /// # Ok(()) }
    /// ```
    fn memset_d8(&mut self, value: u8) -> Result<()>
    where
        T: AnyBitPattern,
    {
        let p = self.raw_parts_mut();
        let s = p.tracker.home();
        memset_d8(&s, p, value)
    }

    /// Sets every byte to zero (valid for every `DeviceCopy` type).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DeviceSliceMut;
    /// let mut buf = ctx.htod_copy(&[1.5f32, 2.5])?;
    /// DeviceSliceMut::memset_zeros(&mut buf)?;
    /// assert_eq!(buf.to_host_vec()?, [0.0, 0.0]);
    /// # Ok(()) }
    /// ```
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
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.alloc_zeros::<f32>(8)?;
            /// assert_eq!(buf.len(), 8);
            /// assert_eq!(buf.slice(2..)?.len(), 6);
            /// assert_eq!(buf.slice_mut(..3)?.len(), 3);
            /// # Ok(()) }
            /// ```
            #[inline]
            pub fn len(&self) -> usize {
                DeviceSlice::len(self)
            }

            /// Whether there are no elements.
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.alloc_zeros::<f32>(8)?;
            /// assert!(!buf.is_empty());
            /// assert!(buf.slice(8..)?.is_empty());
            /// assert!(buf.slice_mut(..0)?.is_empty());
            /// # Ok(()) }
            /// ```
            #[inline]
            pub fn is_empty(&self) -> bool {
                DeviceSlice::is_empty(self)
            }

            /// The raw device pointer to the first element (a host address on the simulator).
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.alloc_zeros::<u64>(8)?;
            /// let base = buf.device_ptr().addr();
            /// assert_eq!(buf.slice(1..)?.device_ptr().addr(), base + 8);
            /// assert_eq!(buf.slice_mut(2..)?.device_ptr().addr(), base + 16);
            /// # Ok(()) }
            /// ```
            #[inline]
            pub fn device_ptr(&self) -> DevicePtr<T> {
                DeviceSlice::device_ptr(self)
            }

            /// See [`DeviceSlice::copy_to_host`].
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.htod_copy(&[1, 2, 3, 4])?;
            /// let mut host = [0; 4];
            /// buf.copy_to_host(&mut host)?; // waits for the work pending on `buf`
            /// let mut half = [0; 2];
            /// buf.slice(2..)?.copy_to_host(&mut half)?;
            /// buf.slice_mut(..2)?.copy_to_host(&mut half)?;
            /// assert_eq!((host, half), ([1, 2, 3, 4], [1, 2]));
            /// # Ok(()) }
            /// ```
            pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
                DeviceSlice::copy_to_host(self, dst)
            }

            /// See [`DeviceSlice::to_host_vec`].
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.htod_copy(&[1, 2, 3, 4])?;
            /// assert_eq!(buf.to_host_vec()?, [1, 2, 3, 4]);
            /// assert_eq!(buf.slice(1..3)?.to_host_vec()?, [2, 3]);
            /// assert_eq!(buf.slice_mut(3..)?.to_host_vec()?, [4]);
            /// # Ok(()) }
            /// ```
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
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.alloc_zeros::<i32>(4)?;
            /// buf.copy_from_host(&[1, 2, 3, 4])?;
            /// buf.slice_mut(2..)?.copy_from_host(&[0, 0])?;
            /// assert_eq!(buf.to_host_vec()?, [1, 2, 0, 0]);
            /// # Ok(()) }
            /// ```
            pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
                DeviceSliceMut::copy_from_host(self, src)
            }

            /// See [`DeviceSliceMut::copy_from_device`].
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let src = ctx.htod_copy(&[5, 6])?;
            /// let mut dst = ctx.alloc_zeros::<i32>(4)?;
            /// dst.slice_mut(1..3)?.copy_from_device(&src)?;
            /// let copy = { let mut c = ctx.alloc_zeros::<i32>(4)?; c.copy_from_device(&dst)?; c };
            /// assert_eq!(copy.to_host_vec()?, [0, 5, 6, 0]);
            /// # Ok(()) }
            /// ```
            pub fn copy_from_device(&mut self, src: &impl DeviceSlice<T>) -> Result<()> {
                DeviceSliceMut::copy_from_device(self, src)
            }

            /// See [`DeviceSliceMut::memset_d8`].
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.alloc_zeros::<u8>(4)?;
            /// buf.memset_d8(1)?;
            /// buf.slice_mut(2..)?.memset_d8(9)?;
            /// assert_eq!(buf.to_host_vec()?, [1, 1, 9, 9]);
            /// # Ok(()) }
            /// ```
            pub fn memset_d8(&mut self, value: u8) -> Result<()>
            where
                T: AnyBitPattern,
            {
                DeviceSliceMut::memset_d8(self, value)
            }

            /// See [`DeviceSliceMut::memset_zeros`].
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut buf = ctx.htod_copy(&[1.0f64, 2.0, 3.0])?;
            /// buf.slice_mut(1..)?.memset_zeros()?;
            /// assert_eq!(buf.to_host_vec()?, [1.0, 0.0, 0.0]);
            /// buf.memset_zeros()?;
            /// # Ok(()) }
            /// ```
            pub fn memset_zeros(&mut self) -> Result<()> {
                DeviceSliceMut::memset_zeros(self)
            }
        }
    )* };
}

inherent_read!([T: DeviceCopy] DeviceBuffer<T>, [T: DeviceCopy] DeviceView<'_, T>, [T: DeviceCopy] DeviceViewMut<'_, T>);
inherent_write!([T: DeviceCopy] DeviceBuffer<T>, [T: DeviceCopy] DeviceViewMut<'_, T>);
