//! Thread, block and grid indices and dimensions (CUDA's `threadIdx`, `blockIdx`,
//! `blockDim`, `gridDim`), and the derived global indices.
//!
//! On nvptx64 each function reads a PTX special register (`%tid`, `%ctaid`, `%ntid`,
//! `%nctaid`, `%laneid`); on the host it reads the simulated thread's context, which the
//! runtime's simulator installs, and panics when called outside a simulated launch.
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
//!     if let Some(o) = out.get_mut(&i) {
//!         *o = a * m[i.y() * cols + i.x()];
//!     }
//! }
//!
//! /// A grid-stride loop: any (one-dimensional) grid size covers every element, and each
//! /// index the loop yields belongs to this thread alone.
//! #[kernel]
//! pub fn scale_all(x: &[f32], a: f32, mut out: DisjointSlice<f32>) {
//!     for i in thread::grid_stride(out.len()) {
//!         out.set(&i, a * x[i.get()]);
//!     }
//! }
//! ```

use crate::{ThreadIndex, ThreadIndex2D, ThreadIndex3D};

/// The number of threads in a warp.
pub const WARP_SIZE: u32 = 32;

/// A three-dimensional index or size, like CUDA's `dim3` / `uint3`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn block_sizes(mut out: DisjointSlice<u32>) {
///     let (t, b) = (thread::thread_idx(), thread::block_dim());
///     let linear = t.x + t.y * b.x + t.z * b.x * b.y; // CUDA's dim3 arithmetic
///     out.set(thread::index(), linear);
/// }
/// ```
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
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread::Dim3;
    /// let tile = Dim3::new(16, 16, 1);
    /// assert_eq!(tile.volume(), 256);
    /// ```
    #[inline(always)]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// The number of elements of a box of this size: `x * y * z`.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread::Dim3;
    /// assert_eq!(Dim3::new(4, 4, 2).volume(), 32);
    /// ```
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
    /// An index register with the bound the hardware guarantees (`%tid.x < %ntid.x`,
    /// `%ctaid.x < %nctaid.x`, ...), told to LLVM: with a block size the kernel checked
    /// (`assert!(block_dim_x() == 256)`), a shared-memory index `thread_idx_x()` is then
    /// known to be in bounds, and its check, a branch on the thread index before the first
    /// barrier, folds away (with it in the kernel, `ptxas` cannot prove the block converged
    /// at a non-aligned barrier and keeps block-uniform values out of uniform registers).
    macro_rules! bounded_sreg {
        ($($name:ident => $intr:ident < $bound:ident;)*) => { $(
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: reading PTX special registers has no preconditions.
                let (v, n) = unsafe { (nvptx::$intr(), nvptx::$bound()) };
                // SAFETY: the PTX ISA defines the index register's range as [0, bound).
                unsafe { core::hint::assert_unchecked(v < n) };
                v
            }
        )* };
    }
    bounded_sreg! {
        thread_idx_x => _thread_idx_x < _block_dim_x;
        thread_idx_y => _thread_idx_y < _block_dim_y;
        thread_idx_z => _thread_idx_z < _block_dim_z;
        block_idx_x => _block_idx_x < _grid_dim_x;
        block_idx_y => _block_idx_y < _grid_dim_y;
        block_idx_z => _block_idx_z < _grid_dim_z;
    }
    sreg! {
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
        // SAFETY: `%laneid` is in [0, WARP_SZ), and the warp size is 32 on every target.
        unsafe { core::hint::assert_unchecked(lane < super::WARP_SIZE) };
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
                host::with_context(stringify!($name), |cx| cx.$field().$c)
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
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// Each block copies its first `block_dim_x` elements: CUDA's `threadIdx.x`.
    /// #[kernel]
    /// pub fn first_of_block(x: &[f32], mut out: DisjointSlice<f32>) {
    ///     let t = thread::thread_idx_x() as usize;
    ///     if let Some(o) = out.get_mut(thread::index()) { *o = x[t]; }
    /// }
    /// ```
    thread_idx_x;
    /// The thread's y index in its block (`threadIdx.y`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// Rows of a 2D block: `threadIdx.y`.
    /// #[kernel]
    /// pub fn row_in_block(mut out: DisjointSlice<u32>) {
    ///     out.set(thread::index(), thread::thread_idx_y());
    /// }
    /// ```
    thread_idx_y;
    /// The thread's z index in its block (`threadIdx.z`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn depth_in_block(mut out: DisjointSlice<u32>) {
    ///     out.set(thread::index(), thread::thread_idx_z()); // `threadIdx.z`
    /// }
    /// ```
    thread_idx_z;
    /// The block's x index in the grid (`blockIdx.x`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// One value per block, written by its thread 0: `blockIdx.x`.
    /// #[kernel]
    /// pub fn block_ids(out: DisjointSlice<u32>) {
    ///     let b = thread::block_idx_x();
    ///     // SAFETY: only thread 0 of each block writes, each to its own block's slot.
    ///     if thread::thread_idx_x() == 0 { unsafe { out.write(b as usize, b) } }
    /// }
    /// ```
    block_idx_x;
    /// The block's y index in the grid (`blockIdx.y`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn tile_rows(mut out: DisjointSlice<u32>) {
    ///     out.set(thread::index(), thread::block_idx_y()); // which row of tiles: `blockIdx.y`
    /// }
    /// ```
    block_idx_y;
    /// The block's z index in the grid (`blockIdx.z`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn batch_ids(mut out: DisjointSlice<u32>) {
    ///     out.set(thread::index(), thread::block_idx_z()); // e.g. one batch per z slice of the grid
    /// }
    /// ```
    block_idx_z;
    /// Threads per block along x (`blockDim.x`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// CUDA's `blockIdx.x * blockDim.x + threadIdx.x`, spelled out.
    /// #[kernel]
    /// pub fn global_x(mut out: DisjointSlice<usize>) {
    ///     let i = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    ///     out.set(thread::index(), i as usize);
    /// }
    /// ```
    block_dim_x;
    /// Threads per block along y (`blockDim.y`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn row(mut out: DisjointSlice<u32>) {
    ///     let r = thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y();
    ///     out.set(thread::index(), r);
    /// }
    /// ```
    block_dim_y;
    /// Threads per block along z (`blockDim.z`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn depth(mut out: DisjointSlice<u32>) {
    ///     let z = thread::block_idx_z() * thread::block_dim_z() + thread::thread_idx_z();
    ///     out.set(thread::index(), z);
    /// }
    /// ```
    block_dim_z;
    /// Blocks in the grid along x (`gridDim.x`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// A grid-stride loop by hand: `gridDim.x * blockDim.x` threads in all.
    /// #[kernel]
    /// pub fn zero(out: DisjointSlice<f32>) {
    ///     let stride = (thread::grid_dim_x() * thread::block_dim_x()) as usize;
    ///     let mut i = thread::global_index_x();
    ///     // SAFETY: the strides of distinct threads never meet.
    ///     while i < out.len() { unsafe { out.write(i, 0.0) }; i += stride; }
    /// }
    /// ```
    grid_dim_x;
    /// Blocks in the grid along y (`gridDim.y`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn rows_total(mut out: DisjointSlice<u32>) {
    ///     let rows = thread::grid_dim_y() * thread::block_dim_y(); // `gridDim.y * blockDim.y`
    ///     out.set(thread::index(), rows);
    /// }
    /// ```
    grid_dim_y;
    /// Blocks in the grid along z (`gridDim.z`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn batches(mut out: DisjointSlice<u32>) {
    ///     out.set(thread::index(), thread::grid_dim_z()); // `gridDim.z`
    /// }
    /// ```
    grid_dim_z;
    /// The thread's lane in its warp, 0..32 (`%laneid`). Warps are formed from the linear
    /// thread index in the block (`x + y * block_dim_x + z * block_dim_x * block_dim_y`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// use gpukernel_device::warp;
    /// /// Lane 0 of each warp writes the warp's maximum (CUDA's `threadIdx.x % 32 == 0`).
    /// #[kernel]
    /// pub fn warp_max(x: &[u32], out: DisjointSlice<u32>) {
    ///     let i = thread::index().get();
    ///     let mut m = x.get(i).copied().unwrap_or_default();
    ///     for d in [16, 8, 4, 2, 1] { m = m.max(warp::shfl_xor_sync(warp::FULL_MASK, m, d)); }
    ///     // SAFETY: one lane per warp writes its warp's slot.
    ///     if thread::lane_id() == 0 { unsafe { out.write(i / 32, m) } }
    /// }
    /// ```
    lane_id;
}

/// The thread's index in its block (`threadIdx`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn sum_of_coords(mut out: DisjointSlice<u32>) {
///     let t = thread::thread_idx(); // CUDA's `threadIdx`
///     out.set(thread::index(), t.x + t.y + t.z);
/// }
/// ```
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    Dim3::new(thread_idx_x(), thread_idx_y(), thread_idx_z())
}

/// The block's index in the grid (`blockIdx`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn tile_origin(mut out: DisjointSlice<u32>) {
///     let (b, d) = (thread::block_idx(), thread::block_dim()); // `blockIdx`, `blockDim`
///     out.set(thread::index(), b.y * d.y * 1024 + b.x * d.x); // top-left of the tile
/// }
/// ```
#[inline(always)]
pub fn block_idx() -> Dim3 {
    Dim3::new(block_idx_x(), block_idx_y(), block_idx_z())
}

/// The number of threads per block (`blockDim`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn block_volume(mut out: DisjointSlice<u64>) {
///     out.set(thread::index(), thread::block_dim().volume()); // threads per block
/// }
/// ```
#[inline(always)]
pub fn block_dim() -> Dim3 {
    Dim3::new(block_dim_x(), block_dim_y(), block_dim_z())
}

/// The number of blocks in the grid (`gridDim`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn launch_size(mut out: DisjointSlice<u64>) {
///     let threads = thread::grid_dim().volume() * thread::block_dim().volume();
///     out.set(thread::index(), threads);
/// }
/// ```
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    Dim3::new(grid_dim_x(), grid_dim_y(), grid_dim_z())
}

/// `block_idx_x * block_dim_x + thread_idx_x`: the thread's global x index.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn add_one(x: &[f32], out: DisjointSlice<f32>) {
///     let i = thread::global_index_x(); // blockIdx.x * blockDim.x + threadIdx.x
///     // SAFETY: one thread per index in a 1D launch.
///     if i < x.len() { unsafe { out.write(i, x[i] + 1.0) } }
/// }
/// ```
#[inline(always)]
pub fn global_index_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// `block_idx_y * block_dim_y + thread_idx_y`: the thread's global y index.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// `out[row][col] = row * cols + col` on a 2D grid.
/// #[kernel]
/// pub fn coords(cols: u32, out: DisjointSlice<u32>) {
///     let (row, col) = (thread::global_index_y(), thread::global_index_x());
///     let i = row * cols as usize + col;
///     // SAFETY: each (row, col) belongs to one thread.
///     if col < cols as usize && i < out.len() { unsafe { out.write(i, i as u32) } }
/// }
/// ```
#[inline(always)]
pub fn global_index_y() -> usize {
    block_idx_y() as usize * block_dim_y() as usize + thread_idx_y() as usize
}

/// `block_idx_z * block_dim_z + thread_idx_z`: the thread's global z index.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn planes(nx: u32, ny: u32, out: DisjointSlice<u32>) {
///     let (x, y, z) = (thread::global_index_x(), thread::global_index_y(), thread::global_index_z());
///     let i = (z * ny as usize + y) * nx as usize + x;
///     // SAFETY: each (x, y, z) belongs to one thread.
///     if x < nx as usize && y < ny as usize && i < out.len() { unsafe { out.write(i, z as u32) } }
/// }
/// ```
#[inline(always)]
pub fn global_index_z() -> usize {
    block_idx_z() as usize * block_dim_z() as usize + thread_idx_z() as usize
}

/// `grid_dim_x * block_dim_x`: the stride of a grid-stride loop along x.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// Any grid size covers every element.
/// #[kernel]
/// pub fn double_all(x: &[f32], out: DisjointSlice<f32>) {
///     let mut i = thread::global_index_x();
///     while i < x.len() {
///         // SAFETY: the strides of distinct threads never meet.
///         unsafe { out.write(i, 2.0 * x[i]) };
///         i += thread::grid_stride_x();
///     }
/// }
/// ```
#[inline(always)]
pub fn grid_stride_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// The thread's linear index in its block:
/// `x + y * block_dim_x + z * block_dim_x * block_dim_y`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// use gpukernel_device::shared::shared_array;
/// #[kernel]
/// pub fn stage(x: &[f32]) {
///     let tile = shared_array!(f32, 256); // one slot per thread of a 16×16 block
///     let t = thread::linear_thread_idx() as usize;
///     // SAFETY: each thread writes its own slot.
///     unsafe { tile.write(t, x[thread::index().get()]) };
/// }
/// ```
#[inline(always)]
pub fn linear_thread_idx() -> u32 {
    let (dx, dy) = (block_dim_x(), block_dim_y());
    thread_idx_x() + thread_idx_y() * dx + thread_idx_z() * dx * dy
}

/// The block's linear index in the grid: `x + y * grid_dim_x + z * grid_dim_x * grid_dim_y`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// One partial result per block, whatever the grid's shape.
/// #[kernel]
/// pub fn per_block(out: DisjointSlice<u64>) {
///     let b = thread::linear_block_idx();
///     // SAFETY: only the block's first thread writes its slot.
///     if thread::linear_thread_idx() == 0 { unsafe { out.write(b as usize, b) } }
/// }
/// ```
#[inline(always)]
pub fn linear_block_idx() -> u64 {
    let (gx, gy) = (grid_dim_x() as u64, grid_dim_y() as u64);
    block_idx_x() as u64 + block_idx_y() as u64 * gx + block_idx_z() as u64 * gx * gy
}

/// The threads per block: `block_dim_x * block_dim_y * block_dim_z`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn block_size(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), thread::threads_per_block()); // blockDim.x * .y * .z
/// }
/// ```
#[inline(always)]
pub fn threads_per_block() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// The calling thread's warp in its block: `linear_thread_idx() / 32`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// use gpukernel_device::shared::shared_array;
/// #[kernel]
/// pub fn per_warp(x: &[f32]) {
///     let partials = shared_array!(f32, 32); // one slot per warp of the block
///     // SAFETY: lane 0 of each warp writes its warp's slot only.
///     if thread::lane_id() == 0 { unsafe { partials.write(thread::warp_id() as usize, x[0]) } }
/// }
/// ```
#[inline(always)]
pub fn warp_id() -> u32 {
    linear_thread_idx() / WARP_SIZE
}

/// The tile `(row, column)` (in tiles) the calling block computes in a 2D grid, in *grouped*
/// order ([`grouped_tile`] of the block's linear index in the grid): consecutive blocks walk
/// `group` tile rows down one tile column before moving right, so that few input tiles of a
/// matrix product are in flight at once (L2 reuse). Blocks still own disjoint tiles.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// Thread 0 of each block writes the block's linear index at its grouped tile.
/// #[kernel]
/// pub fn owners(out: DisjointSlice2D<u32>) {
///     let (row, col) = thread::grouped_block_tile(8);
///     let _ = (row, col, out);
/// }
/// ```
#[inline(always)]
pub fn grouped_block_tile(group: usize) -> (usize, usize) {
    let (gx, gy) = (grid_dim_x() as usize, grid_dim_y() as usize);
    let block = block_idx_y() as usize * gx + block_idx_x() as usize;
    grouped_tile(block, gx, gy, group)
}

/// Tile `(row, column)` of block `block` (linear, `block < cols * rows`) in a grid of `cols ×
/// rows` tiles walked in groups of `group` rows (at least 1): a bijection of `0..cols * rows`
/// onto the tiles.
///
/// ```
/// use gpukernel_device::thread::grouped_tile;
/// let (cols, rows) = (5, 11); // a partial last group of 3 rows
/// let mut seen = vec![false; cols * rows];
/// for b in 0..cols * rows {
///     let (r, c) = grouped_tile(b, cols, rows, 4);
///     assert!(r < rows && c < cols && !seen[r * cols + c]);
///     seen[r * cols + c] = true;
/// }
/// assert_eq!(grouped_tile(1, cols, rows, 4), (1, 0)); // down the first column first
/// ```
#[inline(always)]
pub fn grouped_tile(block: usize, cols: usize, rows: usize, group: usize) -> (usize, usize) {
    let first = block / (group * cols) * group;
    let rows_in_group = if rows - first < group {
        rows - first
    } else {
        group
    };
    let in_group = block % (group * cols);
    (first + in_group % rows_in_group, in_group / rows_in_group)
}

/// The calling thread's [`ThreadIndex`]: CUDA's `blockIdx.x * blockDim.x + threadIdx.x`
/// ([`global_index_x`]), one 32×32→64-bit multiply-add.
///
/// It is unique in a one-dimensional launch (`grid.y`, `grid.z`, `block.y`, `block.z` all 1).
/// The typed launch (`Stream::launch`, graph kernel nodes, stream capture, and their
/// `unsafe` unchecked forms) refuses any other configuration for a kernel that takes a
/// [`DisjointSlice`](crate::DisjointSlice), the only type a `ThreadIndex` unlocks, so no test
/// is needed here on the device. In other launches the value may repeat and opens nothing.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// `y[i] += a * x[i]`: the index reaches `&mut` to this thread's element only.
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
/// }
/// ```
#[inline(always)]
pub fn index() -> ThreadIndex {
    ThreadIndex::new_unchecked(global_index_x())
}

/// The calling thread's [`ThreadIndex2D`], `(`[`global_index_x`]`, `[`global_index_y`]`)`.
/// Unique in a launch whose z extent is 1, which the typed launch guarantees for a kernel
/// that takes a [`DisjointSlice2D`](crate::DisjointSlice2D).
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice2D<f32>) {
///     let i = thread::index_2d();
///     out.set(&i, 1.0);
/// }
/// ```
#[inline(always)]
pub fn index_2d() -> ThreadIndex2D {
    ThreadIndex2D::new_unchecked(global_index_x(), global_index_y())
}

/// The calling thread's [`ThreadIndex3D`], `(`[`global_index_x`]`, `[`global_index_y`]`,
/// `[`global_index_z`]`)`: unique in every launch.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice3D<f32>) {
///     out.set(thread::index_3d(), 1.0);
/// }
/// ```
#[inline(always)]
pub fn index_3d() -> ThreadIndex3D {
    ThreadIndex3D::new_unchecked(global_index_x(), global_index_y(), global_index_z())
}

/// `grid_dim_y * block_dim_y`: the stride of a grid-stride loop along y.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn rows(out: DisjointSlice<u32>) {
///     // The distance between the rows one thread visits in a 2D grid-stride loop.
///     let step = thread::grid_stride_y();
///     let _ = (step, out);
/// }
/// ```
#[inline(always)]
pub fn grid_stride_y() -> usize {
    grid_dim_y() as usize * block_dim_y() as usize
}

/// `grid_dim_z * block_dim_z`: the stride of a grid-stride loop along z.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn planes(out: DisjointSlice3D<u32>) {
///     let step = thread::grid_stride_z();
///     let _ = (step, out);
/// }
/// ```
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
///         out.set(&i, value);
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
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice<f32>) {
///     let mut it: thread::GridStride = thread::grid_stride(out.len());
///     while let Some(i) = it.next() {
///         out.set(&i, 1.0);
///     }
/// }
/// ```
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
///         out.set(&i, value);
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
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice2D<f32>) {
///     let it: thread::GridStride2D = thread::grid_stride_2d(out.cols(), out.rows());
///     for i in it {
///         out.set(&i, 1.0);
///     }
/// }
/// ```
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
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice3D<f32>) {
///     for i in thread::grid_stride_3d(out.cols(), out.rows(), out.depth()) {
///         out.set(&i, (i.x() + i.y() + i.z()) as f32);
///     }
/// }
/// ```
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
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice3D<f32>) {
///     let it: thread::GridStride3D = thread::grid_stride_3d(out.cols(), out.rows(), out.depth());
///     for i in it {
///         out.set(&i, 1.0);
///     }
/// }
/// ```
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
