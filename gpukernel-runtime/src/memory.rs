//! Device memory: typed buffers, views, raw device pointers, foreign allocations, pinned host
//! memory, and the copies and memsets between them.
//!
//! Every operation checks lengths and bounds (a mismatch is an error, never undefined
//! behaviour) and is stream-ordered (see [`Tracker`](crate::stream)): a buffer remembers the
//! streams that used it, so work from another stream, host reads and the final free wait for
//! whatever is pending.

use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};
use std::alloc::Layout;
use std::fmt;
use std::sync::{Arc, Mutex};

use gpukernel_device::{AnyBitPattern, DeviceCopy};

use crate::context::{Context, ContextInner, check_same};
use crate::driver;
use crate::error::{Error, Result};
use crate::stream::{Stream, Tracker};

/// Alignment of simulator allocations (what `cuMemAlloc` guarantees on the GPU).
const SIM_ALIGN: usize = 256;

/// A raw device address of `T`s: what a kernel's `*const T` / `*mut T` parameter receives.
///
/// Holding one does not keep the memory alive nor order work on it: a kernel that dereferences
/// a raw pointer does so in its own `unsafe` code.
pub struct DevicePtr<T> {
    addr: u64,
    _t: PhantomData<*mut T>,
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
impl<T> PartialEq for DevicePtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}
impl<T> Eq for DevicePtr<T> {}
impl<T> fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePtr({:#x})", self.addr)
    }
}
// SAFETY: a device address is a number; it gives no access by itself.
unsafe impl<T> Send for DevicePtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DevicePtr<T> {}

impl<T> DevicePtr<T> {
    /// A device pointer from an address (`CUdeviceptr`; a host address on the simulator).
    pub fn from_addr(addr: u64) -> Self {
        DevicePtr {
            addr,
            _t: PhantomData,
        }
    }

    /// The null pointer.
    pub fn null() -> Self {
        Self::from_addr(0)
    }

    /// The address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// Whether it is null.
    pub fn is_null(self) -> bool {
        self.addr == 0
    }
}

enum Alloc {
    /// Nothing allocated (zero bytes).
    Empty,
    /// `cuMemAllocAsync`: freed with `cuMemFreeAsync` on the home stream.
    Pool,
    /// `cuMemAlloc`: freed with `cuMemFree` after waiting for pending work.
    Plain,
    /// Simulator: host memory from `std::alloc`.
    Sim(Layout),
    /// Someone else's memory; the finalizer (which may be a no-op that drops an owner) runs
    /// once, after pending work is done.
    Foreign(Mutex<Option<Box<dyn FnOnce() + Send>>>),
}

/// A typed allocation of `len` elements in a context's device memory (`cuMemAllocAsync`).
///
/// Freed in stream order when dropped. `Send + Sync`: shared references only read it (as
/// kernel inputs or copy sources); writes need `&mut`.
pub struct DeviceBuffer<T: DeviceCopy> {
    ptr: u64,
    len: usize,
    ctx: Arc<ContextInner>,
    tracker: Tracker,
    alloc: Alloc,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns device memory (an address) and synchronized bookkeeping; `T` values
// only cross by copy, and `DeviceCopy` types hold no references.
unsafe impl<T: DeviceCopy> Send for DeviceBuffer<T> {}
// SAFETY: `&DeviceBuffer` only permits reads of the memory (copies out, kernel inputs) and the
// tracker is behind a Mutex.
unsafe impl<T: DeviceCopy> Sync for DeviceBuffer<T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("device", &self.ctx.device)
            .finish()
    }
}

/// A shared view of part of a [`DeviceBuffer`] (`buffer.slice(range)`): launches and copies
/// like a buffer.
pub struct DeviceView<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    ctx: &'a Arc<ContextInner>,
    tracker: &'a Tracker,
    _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceView<'_, T> {}

/// An exclusive view of part of a [`DeviceBuffer`] (`buffer.slice_mut(range)`,
/// `split_at_mut`): a kernel output or copy destination like a buffer.
pub struct DeviceViewMut<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    ctx: &'a Arc<ContextInner>,
    tracker: &'a Tracker,
    _t: PhantomData<&'a mut [T]>,
}

// SAFETY: views are borrows of a `DeviceBuffer`, which is Send + Sync.
unsafe impl<T: DeviceCopy> Send for DeviceView<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> Sync for DeviceView<'_, T> {}
// SAFETY: as above; a `DeviceViewMut` is an exclusive borrow of its range.
unsafe impl<T: DeviceCopy> Send for DeviceViewMut<'_, T> {}
// SAFETY: `&DeviceViewMut` only permits reads.
unsafe impl<T: DeviceCopy> Sync for DeviceViewMut<'_, T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceCopy> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceViewMut")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

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
    /// Whether the holder has exclusive use of the whole allocation (`&mut DeviceBuffer`).
    pub(crate) exclusive: bool,
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
        if self.exclusive {
            self.tracker.use_exclusive(s)
        } else {
            self.tracker.use_on(s)
        }
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

// ---------------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------------

fn byte_len<T>(operation: &'static str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Error::SizeOverflow {
            operation,
            count: len,
            elem_size: size_of::<T>(),
        })
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Allocates `len` elements on `stream` without initialising them.
    ///
    /// # Safety
    /// The contents are unspecified bytes: write them (a kernel, a copy, a memset) before
    /// reading, unless every bit pattern is a valid `T`.
    pub(crate) unsafe fn alloc_on(stream: &Stream, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("alloc", len)?;
        let ctx = stream.ctx().clone();
        let (ptr, alloc) = if bytes == 0 {
            // Never null, on either backend: a kernel rebuilds `&[T]` from (pointer, length),
            // and a slice of zero-sized elements may have a non-zero length.
            (align_for::<T>() as u64, Alloc::Empty)
        } else if ctx.is_sim() {
            let (p, layout) = sim_alloc_zeroed::<T>("alloc", len, bytes, &ctx.label)?;
            (p as u64, Alloc::Sim(layout))
        } else {
            ctx.bind()?;
            let with = |e: Error| match e {
                Error::Driver { call, error, .. } => Error::Driver {
                    call,
                    error,
                    context: Some(format!("allocating {bytes} bytes on {}", ctx.label)),
                },
                e => e,
            };
            if ctx.uses_pools() {
                // SAFETY: the context is current, the stream is live and of it; bytes > 0.
                let p = unsafe { driver::mem_alloc_async(bytes, stream.raw()) }.map_err(with)?;
                (p, Alloc::Pool)
            } else {
                // SAFETY: the context is current; bytes > 0.
                let p = unsafe { driver::mem_alloc(bytes) }.map_err(with)?;
                (p, Alloc::Plain)
            }
        };
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx,
            tracker: Tracker::new(stream.clone()),
            alloc,
            _t: PhantomData,
        })
    }

    /// Wraps device memory that someone else allocated (another library, a graphics API) as a
    /// buffer of `len` elements; `finalizer` runs exactly once, when the buffer is dropped,
    /// after the work that used the buffer has completed. The Rust equivalent of a Numba
    /// `DeviceNDArray` over a foreign pointer with a finalizer.
    ///
    /// The memory is used on `ctx`'s default stream until a kernel or copy uses it elsewhere.
    /// On error (a null or misaligned pointer, a size overflow) the finalizer is dropped
    /// without being run, and the memory stays the caller's.
    ///
    /// # Safety
    /// `ptr` must be the address of `len * size_of::<T>()` bytes of device memory of `ctx`
    /// (a host address on the simulator), valid for reads and writes until the finalizer runs,
    /// holding valid `T`s (or written before being read), and not accessed by anyone else
    /// while the buffer exists (except through it).
    pub unsafe fn from_raw_parts_with_finalizer<F>(
        ctx: &Context,
        ptr: DevicePtr<T>,
        len: usize,
        finalizer: F,
    ) -> Result<Self>
    where
        F: FnOnce() + Send + 'static,
    {
        const OP: &str = "DeviceBuffer::from_raw_parts";
        byte_len::<T>(OP, len)?;
        let addr = ptr.addr();
        if addr == 0 && len > 0 {
            return Err(Error::InvalidPointer {
                operation: OP,
                ptr: 0,
                problem: "null".into(),
            });
        }
        if !addr.is_multiple_of(align_of::<T>() as u64) {
            return Err(Error::InvalidPointer {
                operation: OP,
                ptr: addr,
                problem: format!("not aligned for {}-byte-aligned elements", align_of::<T>()),
            });
        }
        Ok(DeviceBuffer {
            ptr: addr,
            len,
            ctx: ctx.inner.clone(),
            tracker: Tracker::new(ctx.default_stream()),
            alloc: Alloc::Foreign(Mutex::new(Some(Box::new(finalizer)))),
            _t: PhantomData,
        })
    }

    /// As [`from_raw_parts_with_finalizer`](Self::from_raw_parts_with_finalizer), with an
    /// owner that keeps the memory alive and is dropped exactly once, when the buffer is
    /// dropped and its pending work has completed.
    ///
    /// # Safety
    /// As [`from_raw_parts_with_finalizer`](Self::from_raw_parts_with_finalizer), with "until
    /// the finalizer runs" meaning "until `owner` is dropped".
    pub unsafe fn from_raw_parts_with_owner<O: Send + 'static>(
        ctx: &Context,
        ptr: DevicePtr<T>,
        len: usize,
        owner: O,
    ) -> Result<Self> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::from_raw_parts_with_finalizer(ctx, ptr, len, move || drop(owner)) }
    }

    /// The raw device address (`CUdeviceptr`; a host address on the simulator).
    pub fn as_raw(&self) -> u64 {
        self.ptr
    }

    /// A shared view of `range` (`slice(2..10)`, `slice(..)`…); an error when out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, end) = bounds("DeviceBuffer::slice", &range, self.len)?;
        Ok(DeviceView {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: &self.ctx,
            tracker: &self.tracker,
            _t: PhantomData,
        })
    }

    /// An exclusive view of `range`; an error when out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, end) = bounds("DeviceBuffer::slice_mut", &range, self.len)?;
        Ok(DeviceViewMut {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: &self.ctx,
            tracker: &self.tracker,
            _t: PhantomData,
        })
    }

    /// Two exclusive views, `[0, mid)` and `[mid, len)`; an error when `mid > len`.
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        split(
            "DeviceBuffer::split_at_mut",
            self.ptr,
            self.len,
            &self.ctx,
            &self.tracker,
            mid,
        )
    }

    /// The stream that host-side operations on this buffer use: the stream of its last
    /// exclusive use (at first, the allocating one).
    pub fn stream(&self) -> Stream {
        self.tracker.home()
    }
}

fn align_for<T>() -> usize {
    align_of::<T>().max(SIM_ALIGN)
}

#[inline]
fn offset<T>(ptr: u64, elems: usize) -> u64 {
    // Cannot overflow: `elems <= len` and `len * size_of::<T>()` was checked at allocation.
    ptr + (elems * size_of::<T>()) as u64
}

fn bounds(
    operation: &'static str,
    range: &impl RangeBounds<usize>,
    len: usize,
) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        (s, e) => Err(Error::OutOfBounds {
            operation,
            start: s.unwrap_or(usize::MAX),
            end: e.unwrap_or(usize::MAX),
            len,
        }),
    }
}

fn split<'a, T: DeviceCopy>(
    operation: &'static str,
    ptr: u64,
    len: usize,
    ctx: &'a Arc<ContextInner>,
    tracker: &'a Tracker,
    mid: usize,
) -> Result<(DeviceViewMut<'a, T>, DeviceViewMut<'a, T>)> {
    if mid > len {
        // The first half, `0..mid`, is what does not fit.
        return Err(Error::OutOfBounds {
            operation,
            start: 0,
            end: mid,
            len,
        });
    }
    Ok((
        DeviceViewMut {
            ptr,
            len: mid,
            ctx,
            tracker,
            _t: PhantomData,
        },
        DeviceViewMut {
            ptr: offset::<T>(ptr, mid),
            len: len - mid,
            ctx,
            tracker,
            _t: PhantomData,
        },
    ))
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// A shared sub-view; an error when out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (start, end) = bounds("DeviceView::slice", &range, self.len)?;
        Ok(DeviceView {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ..*self
        })
    }
}

impl<T: DeviceCopy> DeviceViewMut<'_, T> {
    /// A shared sub-view; an error when out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, end) = bounds("DeviceViewMut::slice", &range, self.len)?;
        Ok(DeviceView {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            tracker: self.tracker,
            _t: PhantomData,
        })
    }

    /// An exclusive sub-view; an error when out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, end) = bounds("DeviceViewMut::slice_mut", &range, self.len)?;
        Ok(DeviceViewMut {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            tracker: self.tracker,
            _t: PhantomData,
        })
    }

    /// Two exclusive sub-views, `[0, mid)` and `[mid, len)`.
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        split(
            "DeviceViewMut::split_at_mut",
            self.ptr,
            self.len,
            self.ctx,
            self.tracker,
            mid,
        )
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
            exclusive: false,
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
            exclusive: true,
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
            exclusive: false,
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
            exclusive: false,
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
            exclusive: false,
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

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        match &mut self.alloc {
            Alloc::Empty => {}
            Alloc::Sim(layout) => {
                // SAFETY: allocated with this layout in `alloc_on`; simulator work is
                // synchronous, so nothing uses it any more.
                unsafe { std::alloc::dealloc(self.ptr as *mut u8, *layout) }
            }
            Alloc::Pool => {
                if self.ctx.bind().is_err() {
                    return;
                }
                let freed = self.tracker.join_for_drop().and_then(|home| {
                    // SAFETY: allocated by cuMemAllocAsync; every stream that used the buffer is
                    // ordered before `home`, where the free is enqueued.
                    unsafe { driver::mem_free_async(self.ptr, home.raw()) }
                });
                if freed.is_err() && self.tracker.wait_all().is_ok() {
                    // SAFETY: all work that used it is complete.
                    let _ = unsafe { driver::mem_free(self.ptr) };
                }
            }
            Alloc::Plain => {
                if self.ctx.bind().is_ok() && self.tracker.wait_all().is_ok() {
                    // SAFETY: allocated by cuMemAlloc; all work that used it is complete.
                    let _ = unsafe { driver::mem_free(self.ptr) };
                }
                // On failure (a faulted context) the memory is leaked rather than freed while
                // work might still use it.
            }
            Alloc::Foreign(f) => {
                // Wait for the work that used the memory; run the finalizer even if waiting
                // failed (a faulted context runs nothing more).
                if !self.ctx.is_sim() {
                    let _ = self.tracker.wait_all();
                }
                let f = f.get_mut().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(f) = f
                    && std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
                {
                    // Not `eprintln!`: it panics when stderr is closed, and a panic in `drop`
                    // during unwinding aborts.
                    let _ = std::io::Write::write_all(
                        &mut std::io::stderr(),
                        b"gpukernel-runtime: a DeviceBuffer finalizer panicked (ignored)\n",
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pinned host memory
// ---------------------------------------------------------------------------------------------

/// Page-locked host memory (`cuMemHostAlloc`), the source or destination of asynchronous copies
/// ([`Stream::memcpy_htod_async`], [`Stream::memcpy_dtoh_async`]). Host access waits for the
/// copies still pending on it.
pub struct PinnedHostBuffer<T: DeviceCopy> {
    ptr: *mut T,
    len: usize,
    ctx: Arc<ContextInner>,
    tracker: Tracker,
    sim_layout: Option<Layout>,
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

/// Zeroed host memory for `len` elements of `T` (`bytes` > 0 of them): the simulator's device
/// memory and its pinned buffers. A failed allocation is an error, never an abort.
fn sim_alloc_zeroed<T>(
    operation: &'static str,
    len: usize,
    bytes: usize,
    place: &str,
) -> Result<(*mut u8, Layout)> {
    let layout =
        Layout::from_size_align(bytes, align_for::<T>()).map_err(|_| Error::SizeOverflow {
            operation,
            count: len,
            elem_size: size_of::<T>(),
        })?;
    // SAFETY: `layout` has a non-zero size (the callers handle `bytes == 0`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(Error::OutOfMemory {
            operation,
            bytes,
            place: place.to_owned(),
        });
    }
    Ok((p, layout))
}

impl<T: DeviceCopy> PinnedHostBuffer<T> {
    /// `len` zeroed elements of page-locked memory for `ctx`.
    pub(crate) fn zeroed(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("alloc_pinned", len)?;
        let inner = ctx.inner.clone();
        let (ptr, sim_layout) = if bytes == 0 {
            (core::ptr::NonNull::<T>::dangling().as_ptr(), None)
        } else if inner.is_sim() {
            let (p, layout) = sim_alloc_zeroed::<T>("alloc_pinned", len, bytes, &inner.label)?;
            (p.cast::<T>(), Some(layout))
        } else {
            inner.bind()?;
            // SAFETY: the context is current; bytes > 0.
            let p = unsafe { driver::mem_host_alloc(bytes) }?.cast::<u8>();
            // SAFETY: `p` points to `bytes` writable bytes (page-aligned, so aligned for T).
            unsafe { core::ptr::write_bytes(p, 0, bytes) };
            (p.cast::<T>(), None)
        };
        Ok(PinnedHostBuffer {
            ptr,
            len,
            ctx: inner,
            tracker: Tracker::new(ctx.default_stream()),
            sim_layout,
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

    /// The contents, after the copies pending on them have completed.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.tracker.wait_all()?;
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at allocation, then written
        // only by copies of `T`s), and no copy is pending.
        Ok(unsafe { core::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The contents, mutable, after the copies pending on them have completed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.tracker.wait_all()?;
        // SAFETY: as `as_slice`, and `&mut self` excludes any other access.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    fn track(&self, s: &Stream) -> Result<()> {
        check_same("pinned copy", "the pinned buffer", s.ctx(), &self.ctx)?;
        self.tracker.use_on(s)
    }
}

impl<T: DeviceCopy> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        if let Some(layout) = self.sim_layout {
            // SAFETY: allocated with this layout; simulator copies are synchronous.
            unsafe { std::alloc::dealloc(self.ptr.cast(), layout) };
        } else if self.len > 0
            && size_of::<T>() > 0
            && self.ctx.bind().is_ok()
            && self.tracker.wait_all().is_ok()
        {
            // SAFETY: allocated by cuMemHostAlloc; no copy is pending.
            let _ = unsafe { driver::mem_free_host(self.ptr.cast()) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Copies and memsets (the one place that moves bytes)
// ---------------------------------------------------------------------------------------------

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
fn memcpy_dtoh<T: DeviceCopy>(
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
unsafe fn memcpy_dtoh_raw<T: DeviceCopy>(
    s: &Stream,
    dst: *mut T,
    len: usize,
    src: RawParts<'_>,
    op: &'static str,
) -> Result<()> {
    check_len(op, len, src.len)?;
    src.track(op, "the source", s)?;
    let bytes = len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: simulator device memory is host memory of `len` elements; `dst` is distinct
        // host memory of the same length (the caller's exclusive use, the source shared).
        unsafe { core::ptr::copy_nonoverlapping(src.ptr as *const T, dst, len) };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: `dst` is `bytes` of writable host memory, the caller's until we return, and we
    // wait for the copy below; the source range is inside a live allocation of the stream's
    // context.
    unsafe { driver::memcpy_dtoh_async(dst.cast(), src.ptr, bytes, s.raw()) }?;
    s.wait_idle()
}

/// Pageable host → device, blocking until the source is no longer needed.
fn memcpy_htod<T: DeviceCopy>(
    s: &Stream,
    dst: RawParts<'_>,
    src: &[T],
    op: &'static str,
) -> Result<()> {
    check_len(op, dst.len, src.len())?;
    dst.track(op, "the destination", s)?;
    let bytes = size_of_val(src);
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: as in `memcpy_dtoh`, reversed.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.ptr as *mut T, src.len()) };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: `src` stays borrowed until the stream is idle (waited below); the destination
    // range is inside a live allocation of the context, exclusively borrowed.
    unsafe { driver::memcpy_htod_async(dst.ptr, src.as_ptr().cast(), bytes, s.raw()) }?;
    s.wait_idle()
}

fn memcpy_dtod(s: &Stream, dst: RawParts<'_>, src: RawParts<'_>, op: &'static str) -> Result<()> {
    check_len(op, dst.len, src.len)?;
    dst.track(op, "the destination", s)?;
    src.track(op, "the source", s)?;
    let bytes = dst.len * dst.elem;
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: both ranges are live host allocations of `bytes` bytes; the destination is
        // exclusively borrowed, so they do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(src.ptr as *const u8, dst.ptr as *mut u8, bytes) };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: both ranges are inside live allocations of the stream's context, ordered on `s`.
    unsafe { driver::memcpy_dtod_async(dst.ptr, src.ptr, bytes, s.raw()) }
}

fn memset_d8(s: &Stream, dst: RawParts<'_>, value: u8) -> Result<()> {
    dst.track("memset_d8", "the destination", s)?;
    let bytes = dst.len * dst.elem;
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: a live, exclusively borrowed host allocation of `bytes` bytes.
        unsafe { core::ptr::write_bytes(dst.ptr as *mut u8, value, bytes) };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: inside a live allocation of the stream's context, ordered on `s`.
    unsafe { driver::memset_d8_async(dst.ptr, value, bytes, s.raw()) }
}

/// Pinned host → device, stream-ordered.
fn memcpy_htod_pinned<T: DeviceCopy>(
    s: &Stream,
    dst: RawParts<'_>,
    src: &PinnedHostBuffer<T>,
) -> Result<()> {
    const OP: &str = "memcpy_htod_async";
    check_len(OP, dst.len, src.len)?;
    dst.track(OP, "the destination", s)?;
    src.track(s)?;
    let bytes = src.len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: both are live host allocations of `bytes` bytes; the destination is
        // exclusively borrowed, the pinned buffer shared, so they do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(src.ptr.cast::<u8>(), dst.ptr as *mut u8, bytes) };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: the pinned memory stays allocated until the tracked work on `s` completes (its
    // Drop and host accessors wait for it); the destination is a live allocation of the context.
    unsafe { driver::memcpy_htod_async(dst.ptr, src.ptr.cast(), bytes, s.raw()) }
}

/// Device → pinned host, stream-ordered.
fn memcpy_dtoh_pinned<T: DeviceCopy>(
    s: &Stream,
    dst: &mut PinnedHostBuffer<T>,
    src: RawParts<'_>,
) -> Result<()> {
    const OP: &str = "memcpy_dtoh_async";
    check_len(OP, dst.len, src.len)?;
    src.track(OP, "the source", s)?;
    dst.track(s)?;
    let bytes = dst.len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    if s.is_sim() {
        // SAFETY: as in `memcpy_htod_pinned`, reversed.
        unsafe {
            core::ptr::copy_nonoverlapping(src.ptr as *const u8, dst.ptr.cast::<u8>(), bytes)
        };
        return Ok(());
    }
    s.ctx().bind()?;
    // SAFETY: the pinned memory is not read or freed by the host until the tracked work on `s`
    // completes (its accessors and Drop wait); the source is a live allocation of the context.
    unsafe { driver::memcpy_dtoh_async(dst.ptr.cast(), src.ptr, bytes, s.raw()) }
}

impl Stream {
    /// Allocates `len` zeroed elements, stream-ordered on this stream.
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
    pub unsafe fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceBuffer::alloc_on(self, len) }
    }

    /// A new buffer holding a copy of `src` (blocks until `src` is no longer needed).
    pub fn htod_copy<T: DeviceCopy>(&self, src: &[T]) -> Result<DeviceBuffer<T>> {
        // SAFETY: fully written by the copy below before anything can read it.
        let mut b = unsafe { DeviceBuffer::<T>::alloc_on(self, src.len()) }?;
        memcpy_htod(self, b.raw_parts_mut(), src, "htod_copy")?;
        Ok(b)
    }

    /// Copies pageable host memory to device memory on this stream (`cuMemcpyHtoDAsync`),
    /// blocking until `src` is no longer needed.
    pub fn memcpy_htod<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        src: &[T],
    ) -> Result<()> {
        memcpy_htod(self, dst.raw_parts_mut(), src, "memcpy_htod")
    }

    /// Copies device memory to pageable host memory on this stream (`cuMemcpyDtoHAsync`),
    /// blocking until it is done.
    pub fn memcpy_dtoh<T: DeviceCopy>(
        &self,
        dst: &mut [T],
        src: &impl DeviceSlice<T>,
    ) -> Result<()> {
        memcpy_dtoh(self, dst, src.raw_parts(), "memcpy_dtoh")
    }

    /// Copies device memory to device memory on this stream (`cuMemcpyDtoDAsync`).
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
    pub fn memcpy_htod_async<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceSliceMut<T>,
        src: &PinnedHostBuffer<T>,
    ) -> Result<()> {
        memcpy_htod_pinned(self, dst.raw_parts_mut(), src)
    }

    /// Copies device memory to pinned host memory asynchronously (`cuMemcpyDtoHAsync`); read
    /// the result with [`PinnedHostBuffer::as_slice`], which waits for it.
    pub fn memcpy_dtoh_async<T: DeviceCopy>(
        &self,
        dst: &mut PinnedHostBuffer<T>,
        src: &impl DeviceSlice<T>,
    ) -> Result<()> {
        memcpy_dtoh_pinned(self, dst, src.raw_parts())
    }

    /// Sets every byte of `dst` to `value` (`cuMemsetD8Async`).
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
    pub fn alloc_zeros<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.default_stream().alloc_zeros(len)
    }

    /// Allocates `len` elements on the default stream without initialising them.
    ///
    /// # Safety
    /// As [`Stream::alloc`].
    pub unsafe fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded from the caller.
        unsafe { self.default_stream().alloc(len) }
    }

    /// A new buffer holding a copy of `src`, on the default stream.
    pub fn htod_copy<T: DeviceCopy>(&self, src: &[T]) -> Result<DeviceBuffer<T>> {
        self.default_stream().htod_copy(src)
    }

    /// `len` zeroed elements of page-locked host memory (`cuMemHostAlloc`).
    pub fn alloc_pinned<T: DeviceCopy>(&self, len: usize) -> Result<PinnedHostBuffer<T>> {
        PinnedHostBuffer::zeroed(self, len)
    }

    /// Page-locked host memory holding a copy of `src`.
    pub fn pinned_from_slice<T: DeviceCopy>(&self, src: &[T]) -> Result<PinnedHostBuffer<T>> {
        let mut p = PinnedHostBuffer::zeroed(self, src.len())?;
        p.as_mut_slice()?.copy_from_slice(src);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::Device;

    fn sim() -> Context {
        Device::simulator().primary_context().unwrap()
    }

    #[test]
    fn roundtrip_and_zeroed_alloc() {
        let ctx = sim();
        let src: Vec<u32> = (0..1000).collect();
        let b = ctx.htod_copy(&src).unwrap();
        assert_eq!(b.len(), 1000);
        assert_eq!(b.to_host_vec().unwrap(), src);
        assert_eq!(b.as_raw() % SIM_ALIGN as u64, 0);
        let z = ctx.alloc_zeros::<f64>(33).unwrap();
        assert_eq!(z.to_host_vec().unwrap(), vec![0.0; 33]);
        let empty = ctx.alloc_zeros::<f32>(0).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.to_host_vec().unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn lengths_are_checked() {
        let ctx = sim();
        let mut b = ctx.alloc_zeros::<u8>(4).unwrap();
        let e = b.copy_to_host(&mut [0u8; 3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "copy_to_host: length mismatch, destination has 3 elements, source has 4"
        );
        assert!(matches!(
            b.copy_from_host(&[1u8; 5]),
            Err(Error::LengthMismatch { .. })
        ));
        let other = ctx.alloc_zeros::<u8>(5).unwrap();
        assert!(matches!(
            b.copy_from_device(&other),
            Err(Error::LengthMismatch { .. })
        ));
        let e = DeviceBuffer::<u64>::alloc_zeros_checked(&ctx, usize::MAX / 4).unwrap_err();
        assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
    }

    impl<T: DeviceCopy> DeviceBuffer<T> {
        fn alloc_zeros_checked(ctx: &Context, len: usize) -> Result<Self> {
            ctx.alloc_zeros(len)
        }
    }

    #[test]
    fn views_slice_copy_and_memset() {
        let ctx = sim();
        let mut b = ctx.htod_copy(&[0u16, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        let v = b.slice(2..5).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v.to_host_vec().unwrap(), [2, 3, 4]);
        assert_eq!(v.slice(1..).unwrap().to_host_vec().unwrap(), [3, 4]);
        assert_eq!(v.device_ptr().addr(), b.as_raw() + 4);
        let e = b.slice(3..9).unwrap_err();
        assert_eq!(
            e.to_string(),
            "DeviceBuffer::slice: range 3..9 is out of bounds for 8 elements"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = b.slice(5..2);
        assert!(reversed.is_err());
        {
            let mut m = b.slice_mut(..=1).unwrap();
            m.copy_from_host(&[10, 11]).unwrap();
            m.memset_d8(0xff).unwrap();
        }
        {
            let (mut lo, mut hi) = b.split_at_mut(4).unwrap();
            hi.copy_from_device(&lo.slice(..).unwrap()).unwrap();
            lo.memset_zeros().unwrap();
            assert!(hi.slice_mut(5..).is_err());
        }
        assert_eq!(b.to_host_vec().unwrap(), [0, 0, 0, 0, 0xffff, 0xffff, 2, 3]);
        assert_eq!(
            b.split_at_mut(9).unwrap_err().to_string(),
            "DeviceBuffer::split_at_mut: range 0..9 is out of bounds for 8 elements"
        );
        let mut v = b.slice_mut(2..).unwrap();
        assert_eq!(
            v.split_at_mut(7).unwrap_err().to_string(),
            "DeviceViewMut::split_at_mut: range 0..7 is out of bounds for 6 elements"
        );
    }

    #[test]
    fn device_to_device_copies() {
        let ctx = sim();
        let a = ctx.htod_copy(&[1i32, 2, 3]).unwrap();
        let mut b = ctx.alloc_zeros::<i32>(3).unwrap();
        b.copy_from_device(&a).unwrap();
        let s = ctx.new_stream().unwrap();
        let mut c = s.alloc_zeros::<i32>(2).unwrap();
        s.memcpy_dtod_async(&mut c, &b.slice(1..).unwrap()).unwrap();
        let mut out = [0; 2];
        s.memcpy_dtoh(&mut out, &c).unwrap();
        assert_eq!(out, [2, 3]);
    }

    #[test]
    fn pinned_buffers_and_async_copies() {
        let ctx = sim();
        let s = ctx.new_stream().unwrap();
        let src = ctx.pinned_from_slice(&[1.5f32, 2.5, 3.5]).unwrap();
        let mut d = s.alloc_zeros::<f32>(3).unwrap();
        s.memcpy_htod_async(&mut d, &src).unwrap();
        let mut back = ctx.alloc_pinned::<f32>(3).unwrap();
        s.memcpy_dtoh_async(&mut back, &d).unwrap();
        assert_eq!(back.as_slice().unwrap(), [1.5, 2.5, 3.5]);
        back.as_mut_slice().unwrap()[0] = 9.0;
        assert_eq!(back.as_slice().unwrap()[0], 9.0);
        let mut short = ctx.alloc_pinned::<f32>(2).unwrap();
        assert!(matches!(
            s.memcpy_dtoh_async(&mut short, &d),
            Err(Error::LengthMismatch { .. })
        ));
        s.memset_d8_async(&mut d, 0).unwrap();
        assert_eq!(d.to_host_vec().unwrap(), [0.0; 3]);
    }

    #[test]
    fn foreign_memory_finalizer_runs_exactly_once() {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let ctx = sim();
        let mut host = vec![5u32; 16].into_boxed_slice();
        let addr = host.as_mut_ptr() as u64;
        {
            // SAFETY: the simulator's device memory is host memory; `host` outlives the buffer
            // (it is moved into the finalizer) and is only accessed through it.
            let mut b = unsafe {
                DeviceBuffer::<u32>::from_raw_parts_with_finalizer(
                    &ctx,
                    DevicePtr::from_addr(addr),
                    16,
                    move || {
                        assert_eq!(host[0], 7);
                        drop(host);
                        RUNS.fetch_add(1, Ordering::SeqCst);
                    },
                )
            }
            .unwrap();
            assert_eq!(b.to_host_vec().unwrap(), vec![5; 16]);
            b.slice_mut(0..1).unwrap().copy_from_host(&[7]).unwrap();
            assert_eq!(RUNS.load(Ordering::SeqCst), 0);
        }
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn foreign_memory_owner_is_dropped_once_and_bad_pointers_are_errors() {
        struct Owner(Arc<AtomicUsize>, #[allow(dead_code)] Vec<u64>);
        impl Drop for Owner {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let ctx = sim();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut v = vec![1u64, 2, 3];
        let addr = v.as_mut_ptr() as u64;
        let owner = Owner(drops.clone(), v);
        // SAFETY: `owner` keeps the vector alive; host memory is device memory here.
        let b = unsafe {
            DeviceBuffer::<u64>::from_raw_parts_with_owner(
                &ctx,
                DevicePtr::from_addr(addr),
                3,
                owner,
            )
        }
        .unwrap();
        assert_eq!(b.to_host_vec().unwrap(), [1, 2, 3]);
        drop(b);
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        // SAFETY: rejected before use.
        let e = unsafe {
            DeviceBuffer::<u64>::from_raw_parts_with_finalizer(
                &ctx,
                DevicePtr::from_addr(12),
                1,
                || {},
            )
        }
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("not aligned for 8-byte-aligned elements"),
            "{e}"
        );
        // SAFETY: rejected before use.
        let e = unsafe {
            DeviceBuffer::<u64>::from_raw_parts_with_finalizer(&ctx, DevicePtr::null(), 1, || {})
        }
        .unwrap_err();
        assert!(e.to_string().contains("null"), "{e}");
    }

    #[test]
    fn simulator_out_of_memory_is_an_error_not_an_abort() {
        let ctx = sim();
        // Fits the address-space check (≤ isize::MAX bytes) but no host can provide it.
        let huge = 1usize << 62;
        let e = ctx.alloc_zeros::<u8>(huge).unwrap_err();
        assert!(
            matches!(e, Error::OutOfMemory { operation: "alloc", bytes, .. } if bytes == huge),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("alloc: out of memory allocating {huge} bytes on the simulator")
        );
        // SAFETY: fails before anything is allocated.
        let e = unsafe { ctx.default_stream().alloc::<u32>(huge / 4) }.unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        let e = ctx.alloc_pinned::<u16>(huge / 2).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfMemory {
                    operation: "alloc_pinned",
                    ..
                }
            ),
            "{e}"
        );
        // Still usable afterwards.
        assert_eq!(
            ctx.alloc_zeros::<u8>(3).unwrap().to_host_vec().unwrap(),
            [0; 3]
        );
    }

    /// Empty and zero-sized-element buffers never have a null address: a kernel rebuilds
    /// `&[T]` from (pointer, length), and `&[()]` may have a non-zero length.
    fn empty_and_zero_sized_buffers_are_not_null(ctx: &Context) {
        let units = ctx.alloc_zeros::<()>(5).unwrap();
        assert_eq!(units.len(), 5);
        assert!(!units.device_ptr().is_null());
        assert_eq!(units.to_host_vec().unwrap(), [(); 5]);
        assert!(!units.slice(2..).unwrap().device_ptr().is_null());
        let units = ctx.htod_copy(&[(); 7]).unwrap();
        assert!(!units.device_ptr().is_null());
        let empty = ctx.alloc_zeros::<f64>(0).unwrap();
        assert!(!empty.device_ptr().is_null());
        assert_eq!(empty.as_raw() % align_of::<f64>() as u64, 0);
        assert_eq!(empty.to_host_vec().unwrap(), Vec::<f64>::new());
    }

    #[test]
    fn empty_and_zero_sized_buffers_are_not_null_on_the_simulator() {
        empty_and_zero_sized_buffers_are_not_null(&sim());
    }

    #[test]
    #[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
    fn empty_and_zero_sized_buffers_are_not_null_on_the_gpu() {
        let ctx = Device::get(0).unwrap().primary_context().unwrap();
        empty_and_zero_sized_buffers_are_not_null(&ctx);
    }

    #[test]
    fn tracker_single_stream_is_a_no_op_and_streams_join() {
        let ctx = sim();
        let s1 = ctx.new_stream().unwrap();
        let s2 = ctx.new_stream().unwrap();
        let b = s1.alloc_zeros::<u8>(4).unwrap();
        assert!(b.stream().same_as(&s1));
        b.raw_parts().track("test", "b", &s2).unwrap();
        assert!(b.stream().same_as(&s1));
    }
}
