//! Views of part of a buffer: shared ([`DeviceView`]) and exclusive ([`DeviceViewMut`]).

use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};
use std::fmt;
use std::sync::Arc;

use gpukernel_device::DeviceCopy;

use super::buffer::offset;
use super::tracker::Tracker;
use crate::context::ContextInner;
use crate::error::{Error, Result};

/// A shared view of part of a [`DeviceBuffer`](crate::DeviceBuffer) (`buffer.slice(range)`): launches and copies
/// like a buffer.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let mut y = ctx.alloc_zeros::<f32>(2)?;
/// let back_half = x.slice(2..)?; // a kernel input, like `&x`
/// stream.launch(&module.kernel(saxpy)?, LaunchConfig::for_elements(2)?, (1.0f32, &back_half, &mut y))?;
/// assert_eq!(y.to_host_vec()?, [3.0, 4.0]);
/// # Ok(()) }
/// ```
pub struct DeviceView<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) ctx: &'a Arc<ContextInner>,
    pub(super) tracker: &'a Tracker,
    pub(super) _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceView<'_, T> {}

/// An exclusive view of part of a [`DeviceBuffer`](crate::DeviceBuffer) (`buffer.slice_mut(range)`,
/// `split_at_mut`): a kernel output or copy destination like a buffer.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let mut out = ctx.alloc_zeros::<u32>(6)?;
/// let iota = module.kernel(iota)?;
/// let (mut a, mut b) = out.split_at_mut(3)?;
/// stream.launch(&iota, LaunchConfig::for_elements(3)?, (&mut a,))?;
/// stream.launch(&iota, LaunchConfig::for_elements(3)?, (&mut b,))?;
/// assert_eq!(out.to_host_vec()?, [0, 1, 2, 0, 1, 2]);
/// # Ok(()) }
/// ```
pub struct DeviceViewMut<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) ctx: &'a Arc<ContextInner>,
    pub(super) tracker: &'a Tracker,
    pub(super) _t: PhantomData<&'a mut [T]>,
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

pub(super) fn bounds(
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

pub(super) fn split<'a, T: DeviceCopy>(
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let buf = ctx.htod_copy(&[0, 1, 2, 3, 4, 5])?;
    /// let view = buf.slice(1..)?;
    /// assert_eq!(view.slice(..2)?.to_host_vec()?, [1, 2]); // indices are relative to the view
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = ctx.htod_copy(&[0, 1, 2, 3])?;
    /// let view = buf.slice_mut(2..)?;
    /// assert_eq!(view.slice(1..)?.to_host_vec()?, [3]);
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = ctx.alloc_zeros::<u8>(4)?;
    /// let mut view = buf.slice_mut(1..)?;
    /// view.slice_mut(1..)?.memset_d8(7)?;
    /// assert_eq!(buf.to_host_vec()?, [0, 0, 7, 7]);
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = ctx.alloc_zeros::<u8>(4)?;
    /// let mut view = buf.slice_mut(..)?;
    /// let (mut a, mut b) = view.split_at_mut(1)?;
    /// a.memset_d8(1)?;
    /// b.memset_d8(2)?;
    /// assert_eq!(buf.to_host_vec()?, [1, 2, 2, 2]);
    /// # Ok(()) }
    /// ```
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
