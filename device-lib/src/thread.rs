//! Thread, block and grid indices and dimensions (CUDA's `threadIdx`, `blockIdx`,
//! `blockDim`, `gridDim`), and the derived global indices.
//!
//! On nvptx64 each function reads a PTX special register (`%tid`, `%ctaid`, `%ntid`,
//! `%nctaid`, `%laneid`); on the host it reads the simulated thread's context (see
//! [`crate::host`]) and panics when called outside a simulated launch.
//!
//! Safe outputs pair an index type with a disjoint view: [`index`] ([`ThreadIndex`], for
//! [`DisjointSlice`](crate::DisjointSlice)), [`index_2d`] ([`ThreadIndex2D`], for
//! [`DisjointSlice2D`](crate::DisjointSlice2D)), [`index_3d`] ([`ThreadIndex3D`], for
//! [`DisjointSlice3D`](crate::DisjointSlice3D)), and their grid-stride forms
//! ([`grid_stride`], [`grid_stride_2d`], [`grid_stride_3d`]) that hand each thread several
//! elements, no two threads the same one.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::thread;
//!
//! /// One thread per element of a `rows × cols` matrix, launched on a 2D grid of 2D blocks:
//! /// thread `(x, y)` is CUDA's `col = blockIdx.x * blockDim.x + threadIdx.x`, `row = ... y`.
//! #[kernel]
//! pub fn scale_2d(m: &[f32], a: f32, mut out: DisjointSlice2D<f32>) {
//!     let i = thread::index_2d();
//!     let cols = out.cols();
//!     if let Some(o) = out.get_mut(i) {
//!         *o = a * m[i.y() * cols + i.x()];
//!     }
//! }
//!
//! /// A grid-stride loop: any (one-dimensional) grid size covers every element, and each
//! /// index the loop yields belongs to this thread alone.
//! #[kernel]
//! pub fn scale_all(x: &[f32], a: f32, mut out: DisjointSlice<f32>) {
//!     for i in thread::grid_stride(out.len()) {
//!         out.set(i, a * x[i.get()]);
//!     }
//! }
//! ```

use crate::{ThreadIndex, ThreadIndex2D, ThreadIndex3D};

/// The number of threads in a warp.
pub const WARP_SIZE: u32 = 32;

/// A three-dimensional index or size, like CUDA's `dim3` / `uint3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// The x component (fastest varying).
    pub x: u32,
    /// The y component.
    pub y: u32,
    /// The z component (slowest varying).
    pub z: u32,
}

impl Dim3 {
    /// A `Dim3` from its three components.
    #[inline(always)]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// The number of elements of a box of this size: `x * y * z`.
    #[inline(always)]
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::nvptx;

    macro_rules! sreg {
        ($($(#[$m:meta])* $name:ident => $intr:ident;)*) => { $(
            $(#[$m])*
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: reading a PTX special register has no preconditions.
                unsafe { nvptx::$intr() }
            }
        )* };
    }
    sreg! {
        thread_idx_x => _thread_idx_x;
        thread_idx_y => _thread_idx_y;
        thread_idx_z => _thread_idx_z;
        block_idx_x => _block_idx_x;
        block_idx_y => _block_idx_y;
        block_idx_z => _block_idx_z;
        block_dim_x => _block_dim_x;
        block_dim_y => _block_dim_y;
        block_dim_z => _block_dim_z;
        grid_dim_x => _grid_dim_x;
        grid_dim_y => _grid_dim_y;
        grid_dim_z => _grid_dim_z;
    }

    #[inline(always)]
    pub fn lane_id() -> u32 {
        let lane: u32;
        // SAFETY: reads the `%laneid` special register; no memory access.
        unsafe {
            core::arch::asm!("mov.u32 {0}, %laneid;", out(reg32) lane, options(pure, nomem, nostack));
        }
        lane
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use crate::host;

    macro_rules! field {
        ($($name:ident => $field:ident . $c:ident;)*) => { $(
            #[inline(always)]
            #[track_caller]
            pub fn $name() -> u32 {
                host::with_context(stringify!($name), |cx| cx.$field.$c)
            }
        )* };
    }
    field! {
        thread_idx_x => thread_idx.x;
        thread_idx_y => thread_idx.y;
        thread_idx_z => thread_idx.z;
        block_idx_x => block_idx.x;
        block_idx_y => block_idx.y;
        block_idx_z => block_idx.z;
        block_dim_x => block_dim.x;
        block_dim_y => block_dim.y;
        block_dim_z => block_dim.z;
        grid_dim_x => grid_dim.x;
        grid_dim_y => grid_dim.y;
        grid_dim_z => grid_dim.z;
    }

    #[inline(always)]
    #[track_caller]
    pub fn lane_id() -> u32 {
        host::with_context("lane_id", |cx| cx.linear_thread() % super::WARP_SIZE)
    }
}

macro_rules! reexport {
    ($($(#[$m:meta])* $name:ident;)*) => { $(
        $(#[$m])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name() -> u32 {
            imp::$name()
        }
    )* };
}
reexport! {
    /// The thread's x index in its block (`threadIdx.x`).
    thread_idx_x;
    /// The thread's y index in its block (`threadIdx.y`).
    thread_idx_y;
    /// The thread's z index in its block (`threadIdx.z`).
    thread_idx_z;
    /// The block's x index in the grid (`blockIdx.x`).
    block_idx_x;
    /// The block's y index in the grid (`blockIdx.y`).
    block_idx_y;
    /// The block's z index in the grid (`blockIdx.z`).
    block_idx_z;
    /// Threads per block along x (`blockDim.x`).
    block_dim_x;
    /// Threads per block along y (`blockDim.y`).
    block_dim_y;
    /// Threads per block along z (`blockDim.z`).
    block_dim_z;
    /// Blocks in the grid along x (`gridDim.x`).
    grid_dim_x;
    /// Blocks in the grid along y (`gridDim.y`).
    grid_dim_y;
    /// Blocks in the grid along z (`gridDim.z`).
    grid_dim_z;
    /// The thread's lane in its warp, 0..32 (`%laneid`). Warps are formed from the linear
    /// thread index in the block (`x + y * block_dim_x + z * block_dim_x * block_dim_y`).
    lane_id;
}

/// The thread's index in its block (`threadIdx`).
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    Dim3::new(thread_idx_x(), thread_idx_y(), thread_idx_z())
}

/// The block's index in the grid (`blockIdx`).
#[inline(always)]
pub fn block_idx() -> Dim3 {
    Dim3::new(block_idx_x(), block_idx_y(), block_idx_z())
}

/// The number of threads per block (`blockDim`).
#[inline(always)]
pub fn block_dim() -> Dim3 {
    Dim3::new(block_dim_x(), block_dim_y(), block_dim_z())
}

/// The number of blocks in the grid (`gridDim`).
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    Dim3::new(grid_dim_x(), grid_dim_y(), grid_dim_z())
}

/// `block_idx_x * block_dim_x + thread_idx_x`: the thread's global x index.
#[inline(always)]
pub fn global_index_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// `block_idx_y * block_dim_y + thread_idx_y`: the thread's global y index.
#[inline(always)]
pub fn global_index_y() -> usize {
    block_idx_y() as usize * block_dim_y() as usize + thread_idx_y() as usize
}

/// `block_idx_z * block_dim_z + thread_idx_z`: the thread's global z index.
#[inline(always)]
pub fn global_index_z() -> usize {
    block_idx_z() as usize * block_dim_z() as usize + thread_idx_z() as usize
}

/// `grid_dim_x * block_dim_x`: the stride of a grid-stride loop along x.
#[inline(always)]
pub fn grid_stride_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// The thread's linear index in its block:
/// `x + y * block_dim_x + z * block_dim_x * block_dim_y`.
#[inline(always)]
pub fn linear_thread_idx() -> u32 {
    let (dx, dy) = (block_dim_x(), block_dim_y());
    thread_idx_x() + thread_idx_y() * dx + thread_idx_z() * dx * dy
}

/// The block's linear index in the grid: `x + y * grid_dim_x + z * grid_dim_x * grid_dim_y`.
#[inline(always)]
pub fn linear_block_idx() -> u64 {
    let (gx, gy) = (grid_dim_x() as u64, grid_dim_y() as u64);
    block_idx_x() as u64 + block_idx_y() as u64 * gx + block_idx_z() as u64 * gx * gy
}

/// The threads per block: `block_dim_x * block_dim_y * block_dim_z`.
#[inline(always)]
pub fn threads_per_block() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// The calling thread's warp in its block: `linear_thread_idx() / 32`.
#[inline(always)]
pub fn warp_id() -> u32 {
    linear_thread_idx() / WARP_SIZE
}

/// The calling thread's [`ThreadIndex`]: CUDA's `blockIdx.x * blockDim.x + threadIdx.x`
/// ([`global_index_x`]), one 32×32→64-bit multiply-add.
///
/// It is unique in a one-dimensional launch (`grid.y`, `grid.z`, `block.y`, `block.z` all 1).
/// The typed launch (`Stream::launch`, graph kernel nodes, stream capture, and their
/// `unsafe` unchecked forms) refuses any other configuration for a kernel that takes a
/// [`DisjointSlice`](crate::DisjointSlice), the only type a `ThreadIndex` unlocks, so no test
/// is needed here on the device. In other launches the value may repeat and opens nothing.
#[inline(always)]
pub fn index() -> ThreadIndex {
    ThreadIndex::new_unchecked(global_index_x())
}

/// The calling thread's [`ThreadIndex2D`], `(`[`global_index_x`]`, `[`global_index_y`]`)`.
/// Unique in a launch whose z extent is 1, which the typed launch guarantees for a kernel
/// that takes a [`DisjointSlice2D`](crate::DisjointSlice2D).
#[inline(always)]
pub fn index_2d() -> ThreadIndex2D {
    ThreadIndex2D::new_unchecked(global_index_x(), global_index_y())
}

/// The calling thread's [`ThreadIndex3D`], `(`[`global_index_x`]`, `[`global_index_y`]`,
/// `[`global_index_z`]`)`: unique in every launch.
#[inline(always)]
pub fn index_3d() -> ThreadIndex3D {
    ThreadIndex3D::new_unchecked(global_index_x(), global_index_y(), global_index_z())
}

/// `grid_dim_y * block_dim_y`: the stride of a grid-stride loop along y.
#[inline(always)]
pub fn grid_stride_y() -> usize {
    grid_dim_y() as usize * block_dim_y() as usize
}

/// `grid_dim_z * block_dim_z`: the stride of a grid-stride loop along z.
#[inline(always)]
pub fn grid_stride_z() -> usize {
    grid_dim_z() as usize * block_dim_z() as usize
}

/// The indices below `len` of a one-dimensional grid-stride loop: [`index`], then every
/// [`grid_stride_x`] after it. In the one-dimensional launch that a kernel taking a
/// [`DisjointSlice`](crate::DisjointSlice) gets, the threads' index sets are disjoint (each
/// thread's indices are its own global index modulo the number of threads), so each
/// [`ThreadIndex`] it yields is the thread's alone.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn fill(value: u32, mut out: DisjointSlice<u32>) {
///     for i in thread::grid_stride(out.len()) {
///         out.set(i, value);
///     }
/// }
/// ```
#[inline(always)]
pub fn grid_stride(len: usize) -> GridStride {
    GridStride {
        next: global_index_x(),
        step: grid_stride_x(),
        end: len,
    }
}

/// The iterator of [`grid_stride`].
#[derive(Debug, Clone)]
pub struct GridStride {
    next: usize,
    step: usize,
    end: usize,
}

impl Iterator for GridStride {
    type Item = ThreadIndex;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex> {
        if self.next < self.end {
            let i = self.next;
            // Past `usize::MAX` the loop is over (`end` is at most `usize::MAX`).
            self.next = i.saturating_add(self.step);
            Some(ThreadIndex::new_unchecked(i))
        } else {
            None
        }
    }
}

/// The `(x, y)` below `(cols, rows)` of a two-dimensional grid-stride loop: [`index_2d`],
/// stepping x by [`grid_stride_x`] within each row and y by [`grid_stride_y`]. Each
/// [`ThreadIndex2D`] it yields is the thread's alone (in the z-extent-1 launch that a kernel
/// taking a [`DisjointSlice2D`](crate::DisjointSlice2D) gets).
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn fill_2d(value: f32, mut out: DisjointSlice2D<f32>) {
///     for i in thread::grid_stride_2d(out.cols(), out.rows()) {
///         out.set(i, value);
///     }
/// }
/// ```
#[inline(always)]
pub fn grid_stride_2d(cols: usize, rows: usize) -> GridStride2D {
    let x0 = global_index_x();
    GridStride2D {
        x0,
        x: x0,
        y: global_index_y(),
        step_x: grid_stride_x(),
        step_y: grid_stride_y(),
        cols,
        rows,
    }
}

/// The iterator of [`grid_stride_2d`].
#[derive(Debug, Clone)]
pub struct GridStride2D {
    x0: usize,
    x: usize,
    y: usize,
    step_x: usize,
    step_y: usize,
    cols: usize,
    rows: usize,
}

impl Iterator for GridStride2D {
    type Item = ThreadIndex2D;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex2D> {
        if self.x0 >= self.cols {
            return None;
        }
        if self.x >= self.cols {
            self.x = self.x0;
            self.y = self.y.saturating_add(self.step_y);
        }
        if self.y >= self.rows {
            return None;
        }
        let i = ThreadIndex2D::new_unchecked(self.x, self.y);
        self.x = self.x.saturating_add(self.step_x);
        Some(i)
    }
}

/// The `(x, y, z)` below `(cols, rows, depth)` of a three-dimensional grid-stride loop
/// ([`index_3d`] stepping by the grid's extent on each axis); each [`ThreadIndex3D`] it yields
/// is the thread's alone, in any launch.
#[inline(always)]
pub fn grid_stride_3d(cols: usize, rows: usize, depth: usize) -> GridStride3D {
    let (x0, y0) = (global_index_x(), global_index_y());
    GridStride3D {
        plane: GridStride2D {
            x0,
            x: x0,
            y: y0,
            step_x: grid_stride_x(),
            step_y: grid_stride_y(),
            cols,
            rows,
        },
        y0,
        z: global_index_z(),
        step_z: grid_stride_z(),
        depth,
    }
}

/// The iterator of [`grid_stride_3d`].
#[derive(Debug, Clone)]
pub struct GridStride3D {
    plane: GridStride2D,
    y0: usize,
    z: usize,
    step_z: usize,
    depth: usize,
}

impl Iterator for GridStride3D {
    type Item = ThreadIndex3D;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex3D> {
        loop {
            if self.z >= self.depth {
                return None;
            }
            if let Some(i) = self.plane.next() {
                return Some(ThreadIndex3D::new_unchecked(i.x(), i.y(), self.z));
            }
            if self.plane.x0 >= self.plane.cols || self.y0 >= self.plane.rows {
                return None;
            }
            self.z = self.z.saturating_add(self.step_z);
            self.plane.x = self.plane.x0;
            self.plane.y = self.y0;
        }
    }
}
