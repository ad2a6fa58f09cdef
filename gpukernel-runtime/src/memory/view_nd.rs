//! Two- and three-dimensional exclusive views ([`DeviceView2DMut`], [`DeviceView3DMut`]): the
//! host side of a kernel's `DisjointSlice2D<T>` / `DisjointSlice3D<T>` parameter; and the
//! shared 2D view [`DeviceView2D`], the host side of a read-only `Slice2D<T>`.
//!
//! A view is a shape over part of a buffer: `rows` rows of `cols` elements, each row `pitch`
//! elements after the previous one (`pitch >= cols`), and for 3D `depth` planes of `rows`
//! rows. Its shape is checked once, when it is made; the kernel then reaches only elements
//! inside it.

use std::fmt;

use gpukernel_device::DeviceCopy;

use super::{DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, RawParts};
use crate::error::{Error, Result};

/// An exclusive 2D view of a buffer, `rows × cols` with a row pitch: what a kernel parameter
/// `DisjointSlice2D<T>` takes. Made by [`DeviceBuffer::view_2d_mut`] or
/// [`DeviceViewMut::view_2d_mut`].
///
/// ```
/// # use gpukernel_runtime::{Context, Result};
/// # fn f(ctx: &Context) -> Result<()> {
/// // A 100 × 60 image whose rows start 64 elements apart.
/// let mut pixels = ctx.alloc_zeros::<f32>(100 * 64)?;
/// let image = pixels.view_2d_mut(60, 100, 64)?;
/// assert_eq!((image.cols(), image.rows(), image.pitch()), (60, 100, 64));
/// // Too short a pitch, or a shape larger than the buffer, is an error.
/// assert!(pixels.view_2d_mut(60, 100, 59).is_err());
/// assert!(pixels.view_2d_mut(64, 101, 64).is_err());
/// # Ok(()) }
/// ```
pub struct DeviceView2DMut<'a, T: DeviceCopy> {
    view: DeviceViewMut<'a, T>,
    cols: usize,
    rows: usize,
    pitch: usize,
}

/// An exclusive 3D view of a buffer, `depth × rows × cols` with a row pitch (planes are
/// `rows * pitch` elements apart): what a kernel parameter `DisjointSlice3D<T>` takes. Made by
/// [`DeviceBuffer::view_3d_mut`] or [`DeviceViewMut::view_3d_mut`].
///
/// ```
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// // 4 planes of 3 rows of 5 elements, rows 8 elements apart.
/// let mut volume = ctx.alloc_zeros::<u32>(4 * 3 * 8)?;
/// let v = volume.view_3d_mut(5, 3, 4, 8)?;
/// assert_eq!((v.cols(), v.rows(), v.depth(), v.pitch()), (5, 3, 4, 8));
/// # Ok(()) }
/// ```
pub struct DeviceView3DMut<'a, T: DeviceCopy> {
    view: DeviceViewMut<'a, T>,
    cols: usize,
    rows: usize,
    depth: usize,
    pitch: usize,
}

impl<T: DeviceCopy> fmt::Debug for DeviceView2DMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView2DMut")
            .field("cols", &self.cols)
            .field("rows", &self.rows)
            .field("pitch", &self.pitch)
            .field("view", &self.view)
            .finish()
    }
}

impl<T: DeviceCopy> fmt::Debug for DeviceView3DMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView3DMut")
            .field("cols", &self.cols)
            .field("rows", &self.rows)
            .field("depth", &self.depth)
            .field("pitch", &self.pitch)
            .field("view", &self.view)
            .finish()
    }
}

/// The elements a `cols × rows × depth` shape with row pitch `pitch` reaches:
/// `((depth - 1) * rows + rows - 1) * pitch + cols`, 0 for an empty shape; an error when the
/// pitch is shorter than a row, the count overflows, or it exceeds `len`.
fn needed(
    operation: &'static str,
    [cols, rows, depth, pitch]: [usize; 4],
    len: usize,
) -> Result<usize> {
    let err = |reason: String| Error::InvalidShape {
        operation,
        cols,
        rows,
        depth,
        pitch,
        len,
        reason,
    };
    if pitch < cols {
        return Err(err("has a pitch shorter than a row".to_owned()));
    }
    if cols == 0 || rows == 0 || depth == 0 {
        return Ok(0);
    }
    let n = depth
        .checked_mul(rows)
        .and_then(|r| (r - 1).checked_mul(pitch))
        .and_then(|e| e.checked_add(cols))
        .ok_or_else(|| err("overflows the address space".to_owned()))?;
    if n > len {
        return Err(err(format!("needs {n} elements")));
    }
    Ok(n)
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// An exclusive 2D view: `rows` rows of `cols` elements, row `y` starting at element
    /// `y * pitch`. An error ([`Error::InvalidShape`]) when `pitch < cols` or the shape
    /// reaches past the buffer.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(10 * 16)?;
    /// let m = buf.view_2d_mut(12, 10, 16)?; // 10 rows of 12, pitch 16
    /// assert_eq!(m.rows(), 10);
    /// # Ok(()) }
    /// ```
    pub fn view_2d_mut(
        &mut self,
        cols: usize,
        rows: usize,
        pitch: usize,
    ) -> Result<DeviceView2DMut<'_, T>> {
        let n = needed(
            "DeviceBuffer::view_2d_mut",
            [cols, rows, 1, pitch],
            self.len(),
        )?;
        Ok(DeviceView2DMut {
            view: self.slice_mut(..n)?,
            cols,
            rows,
            pitch,
        })
    }

    /// An exclusive 3D view: `depth` planes of `rows` rows of `cols` elements, element
    /// `(x, y, z)` at `(z * rows + y) * pitch + x`. An error ([`Error::InvalidShape`]) when
    /// `pitch < cols` or the shape reaches past the buffer.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(2 * 4 * 4)?;
    /// assert!(buf.view_3d_mut(4, 4, 2, 4).is_ok());
    /// assert!(buf.view_3d_mut(4, 4, 3, 4).is_err()); // needs 48 elements
    /// # Ok(()) }
    /// ```
    pub fn view_3d_mut(
        &mut self,
        cols: usize,
        rows: usize,
        depth: usize,
        pitch: usize,
    ) -> Result<DeviceView3DMut<'_, T>> {
        let n = needed(
            "DeviceBuffer::view_3d_mut",
            [cols, rows, depth, pitch],
            self.len(),
        )?;
        Ok(DeviceView3DMut {
            view: self.slice_mut(..n)?,
            cols,
            rows,
            depth,
            pitch,
        })
    }
}

impl<T: DeviceCopy> DeviceViewMut<'_, T> {
    /// As [`DeviceBuffer::view_2d_mut`], within this view.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(100)?;
    /// let mut tail = buf.slice_mut(36..)?;
    /// let m = tail.view_2d_mut(8, 8, 8)?; // an 8 × 8 matrix in elements 36..100
    /// assert_eq!(m.cols(), 8);
    /// # Ok(()) }
    /// ```
    pub fn view_2d_mut(
        &mut self,
        cols: usize,
        rows: usize,
        pitch: usize,
    ) -> Result<DeviceView2DMut<'_, T>> {
        let n = needed(
            "DeviceViewMut::view_2d_mut",
            [cols, rows, 1, pitch],
            self.len(),
        )?;
        Ok(DeviceView2DMut {
            view: self.slice_mut(..n)?,
            cols,
            rows,
            pitch,
        })
    }

    /// As [`DeviceBuffer::view_3d_mut`], within this view.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<u8>(64)?;
    /// let mut part = buf.slice_mut(..32)?;
    /// let v = part.view_3d_mut(4, 4, 2, 4)?;
    /// assert_eq!(v.depth(), 2);
    /// # Ok(()) }
    /// ```
    pub fn view_3d_mut(
        &mut self,
        cols: usize,
        rows: usize,
        depth: usize,
        pitch: usize,
    ) -> Result<DeviceView3DMut<'_, T>> {
        let n = needed(
            "DeviceViewMut::view_3d_mut",
            [cols, rows, depth, pitch],
            self.len(),
        )?;
        Ok(DeviceView3DMut {
            view: self.slice_mut(..n)?,
            cols,
            rows,
            depth,
            pitch,
        })
    }
}

impl<T: DeviceCopy> DeviceView2DMut<'_, T> {
    /// Elements per row.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d_mut(12, 10, 16)?.cols(), 12);
    /// # Ok(()) }
    /// ```
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d_mut(12, 10, 16)?.rows(), 10);
    /// # Ok(()) }
    /// ```
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements from one row's start to the next's.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d_mut(12, 10, 16)?.pitch(), 16);
    /// # Ok(()) }
    /// ```
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The memory the shape reaches, for the kernel argument.
    pub(crate) fn parts(&mut self) -> (RawParts<'_>, [u64; 3]) {
        let shape = [self.cols as u64, self.rows as u64, self.pitch as u64];
        (self.view.raw_parts_mut(), shape)
    }
}

impl<T: DeviceCopy> DeviceView3DMut<'_, T> {
    /// Elements per row.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(96)?;
    /// assert_eq!(buf.view_3d_mut(5, 3, 4, 8)?.cols(), 5);
    /// # Ok(()) }
    /// ```
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows per plane.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(96)?;
    /// assert_eq!(buf.view_3d_mut(5, 3, 4, 8)?.rows(), 3);
    /// # Ok(()) }
    /// ```
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Planes.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(96)?;
    /// assert_eq!(buf.view_3d_mut(5, 3, 4, 8)?.depth(), 4);
    /// # Ok(()) }
    /// ```
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Elements from one row's start to the next's.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(96)?;
    /// assert_eq!(buf.view_3d_mut(5, 3, 4, 8)?.pitch(), 8);
    /// # Ok(()) }
    /// ```
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The memory the shape reaches, for the kernel argument.
    pub(crate) fn parts(&mut self) -> (RawParts<'_>, [u64; 4]) {
        let shape = [
            self.cols as u64,
            self.rows as u64,
            self.depth as u64,
            self.pitch as u64,
        ];
        (self.view.raw_parts_mut(), shape)
    }
}

/// A shared 2D view of a buffer, `rows × cols` with a row pitch: what a kernel parameter
/// `Slice2D<T>` (a read-only 2D input) takes. Made by [`DeviceBuffer::view_2d`],
/// [`DeviceView::view_2d`] or [`DeviceViewMut::view_2d`]; its shape is checked against the
/// memory once, here, so the kernel's element reads `m[(r, c)]` check only `r < rows` and
/// `c < cols`. Launches borrow it shared, like `&DeviceBuffer<T>` for `&[T]`.
///
/// ```
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// // A 100 × 60 image whose rows start 64 elements apart.
/// let pixels = ctx.alloc_zeros::<f32>(100 * 64)?;
/// let image = pixels.view_2d(60, 100, 64)?;
/// assert_eq!((image.cols(), image.rows(), image.pitch()), (60, 100, 64));
/// // Too short a pitch, or a shape larger than the buffer, is an error.
/// assert!(pixels.view_2d(60, 100, 59).is_err());
/// assert!(pixels.view_2d(64, 101, 64).is_err());
/// # Ok(()) }
/// ```
pub struct DeviceView2D<'a, T: DeviceCopy> {
    view: DeviceView<'a, T>,
    cols: usize,
    rows: usize,
    pitch: usize,
}

impl<T: DeviceCopy> Clone for DeviceView2D<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceView2D<'_, T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceView2D<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView2D")
            .field("cols", &self.cols)
            .field("rows", &self.rows)
            .field("pitch", &self.pitch)
            .field("view", &self.view)
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// A shared 2D view: `rows` rows of `cols` elements, row `r` starting at element
    /// `r * pitch`; the argument for a kernel's `Slice2D<T>`. An error
    /// ([`Error::InvalidShape`]) when `pitch < cols` or the shape reaches past the buffer.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let buf = ctx.alloc_zeros::<f32>(10 * 16)?;
    /// let m = buf.view_2d(12, 10, 16)?; // 10 rows of 12, pitch 16
    /// assert_eq!(m.rows(), 10);
    /// assert!(buf.view_2d(16, 11, 16).is_err()); // 176 elements needed, 160 there
    /// # Ok(()) }
    /// ```
    pub fn view_2d(&self, cols: usize, rows: usize, pitch: usize) -> Result<DeviceView2D<'_, T>> {
        let n = needed("DeviceBuffer::view_2d", [cols, rows, 1, pitch], self.len())?;
        Ok(DeviceView2D {
            view: self.slice(..n)?,
            cols,
            rows,
            pitch,
        })
    }
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// As [`DeviceBuffer::view_2d`], within this view.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let buf = ctx.alloc_zeros::<f32>(100)?;
    /// let tail = buf.slice(36..)?;
    /// assert_eq!(tail.view_2d(8, 8, 8)?.cols(), 8); // an 8 × 8 matrix in elements 36..100
    /// assert!(tail.view_2d(8, 9, 8).is_err());
    /// # Ok(()) }
    /// ```
    pub fn view_2d(&self, cols: usize, rows: usize, pitch: usize) -> Result<DeviceView2D<'a, T>> {
        let n = needed("DeviceView::view_2d", [cols, rows, 1, pitch], self.len())?;
        Ok(DeviceView2D {
            view: self.slice(..n)?,
            cols,
            rows,
            pitch,
        })
    }
}

impl<T: DeviceCopy> DeviceViewMut<'_, T> {
    /// As [`DeviceBuffer::view_2d`], within this view (borrowed shared).
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut buf = ctx.alloc_zeros::<f32>(64)?;
    /// let part = buf.slice_mut(..32)?;
    /// assert_eq!(part.view_2d(4, 8, 4)?.rows(), 8);
    /// # Ok(()) }
    /// ```
    pub fn view_2d(&self, cols: usize, rows: usize, pitch: usize) -> Result<DeviceView2D<'_, T>> {
        let n = needed("DeviceViewMut::view_2d", [cols, rows, 1, pitch], self.len())?;
        Ok(DeviceView2D {
            view: self.slice(..n)?,
            cols,
            rows,
            pitch,
        })
    }
}

impl<T: DeviceCopy> DeviceView2D<'_, T> {
    /// Elements per row.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d(12, 10, 16)?.cols(), 12);
    /// # Ok(()) }
    /// ```
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d(12, 10, 16)?.rows(), 10);
    /// # Ok(()) }
    /// ```
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements from one row's start to the next's.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let buf = ctx.alloc_zeros::<f32>(160)?;
    /// assert_eq!(buf.view_2d(12, 10, 16)?.pitch(), 16);
    /// # Ok(()) }
    /// ```
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The memory the shape reaches (read), for the kernel argument.
    pub(crate) fn parts(&self) -> (RawParts<'_>, [u64; 3]) {
        let shape = [self.cols as u64, self.rows as u64, self.pitch as u64];
        (self.view.raw_parts(), shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_against_the_memory() {
        let op = "t";
        assert_eq!(needed(op, [4, 3, 1, 4], 12).unwrap(), 12);
        // The last row needs no padding after it.
        assert_eq!(needed(op, [3, 3, 1, 8], 19).unwrap(), 19);
        assert_eq!(needed(op, [3, 2, 2, 4], 15).unwrap(), 15);
        assert_eq!(needed(op, [0, 5, 1, 0], 0).unwrap(), 0);
        let e = needed(op, [5, 2, 1, 4], 100).unwrap_err();
        assert!(matches!(e, Error::InvalidShape { ref reason, .. } if reason.contains("pitch")));
        let e = needed(op, [3, 3, 1, 8], 18).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t: shape 3 × 3 × 1 with a pitch of 8 elements needs 19 elements (18 elements available)"
        );
        let e = needed(op, [1, usize::MAX, 2, 1], usize::MAX).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
