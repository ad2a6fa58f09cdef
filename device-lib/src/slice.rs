//! Output slices that many threads can write without data races.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::thread;
//!
//! /// `y[i] += a * x[i]`: each thread gets a `&mut` to its own element only.
//! #[kernel]
//! pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
//!     let i = thread::index();
//!     if let Some(yi) = y.get_mut(&i) {
//!         *yi += a * x[i.get()];
//!     }
//! }
//! ```

use core::borrow::Borrow;
use core::marker::PhantomData;

/// The index of the calling thread in a one-dimensional launch, unique per thread.
///
/// It can only be obtained from [`crate::thread::index`] and [`crate::thread::grid_stride`],
/// and equals `block_idx_x * block_dim_x + thread_idx_x` (plus multiples of the grid's thread
/// count, for the grid-stride loop). In a one-dimensional launch, which the typed launch
/// guarantees for every kernel taking a [`DisjointSlice`], a `ThreadIndex` held by a thread is
/// therefore never held by another thread of the same launch.
///
/// It cannot travel to another thread either: it is neither `Copy` nor `Clone`, and not
/// [`DeviceCopy`](crate::DeviceCopy), so it cannot be stored in shared memory
/// ([`crate::shared`]), passed to or out of a kernel, shuffled ([`crate::warp`] moves only
/// numbers) or used in an atomic operation. The output slices' methods take it by value or by
/// reference (`out.set(&i, x[i.get()])`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn squares(mut out: DisjointSlice<u64>) {
///     let i = thread::index(); // this thread's own index, unique in the launch
///     if let Some(o) = out.get_mut(&i) { *o = (i.get() * i.get()) as u64; }
/// }
/// ```
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a number.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn copy(x: &[f32], mut out: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if i.get() < x.len() { out.set(&i, x[i.get()]); } // a plain index for reading
    /// }
    /// ```
    #[inline(always)]
    pub fn get(&self) -> usize {
        self.0
    }

    /// Only the thread module may create one.
    #[inline(always)]
    pub(crate) fn new_unchecked(i: usize) -> Self {
        ThreadIndex(i)
    }
}

/// A kernel's output slice: each thread may get `&mut` access to the element at its own
/// [`ThreadIndex`], which no other thread of the launch can reach, so safe code cannot race.
///
/// A grid-stride loop gets its indices from [`crate::thread::grid_stride`]. Other access
/// patterns (a block leader writing one slot per block) use the `unsafe` methods, whose
/// caller promises that no two threads write one element.
///
/// `ThreadIndex` is the one-dimensional global index, unique only in a one-dimensional
/// launch: the typed launch refuses a 2D or 3D configuration for a kernel that takes a
/// `DisjointSlice` (use [`DisjointSlice2D`] / [`DisjointSlice3D`] for those).
///
/// A `#[kernel]` parameter `out: DisjointSlice<f32>` lowers to a pointer and a length; on the
/// host it is passed a `&mut DeviceBuffer<f32>` or a mutable view of one.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// Host side: `stream.launch(&k, cfg, (&x, &mut y))` with `y: DeviceBuffer<f32>`.
/// #[kernel]
/// pub fn relu(x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi = x[i.get()].max(0.0); }
/// }
/// ```
#[derive(Debug)]
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _marker: PhantomData<&'a mut [T]>,
}

/// Builds a [`DisjointSlice`] from its two ABI parameters.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `len` elements for `'a`, and no other
/// parameter of the launch may reach those elements (the typed launch guarantees this).
/// `ptr` is not null, even when `len` is 0 (the typed launch passes an aligned dangling
/// address for memory at address 0).
#[doc(hidden)]
#[inline(always)]
pub unsafe fn disjoint_from_raw<'a, T>(ptr: *mut T, len: usize) -> DisjointSlice<'a, T> {
    // SAFETY: the caller's contract. Said so that `get_mut`'s `Some` folds: LLVM otherwise
    // keeps a compare of the kernel parameter with null (two instructions per access).
    unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
    DisjointSlice {
        ptr,
        len,
        _marker: PhantomData,
    }
}

impl<'a, T> DisjointSlice<'a, T> {
    /// The number of elements.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn bounded(mut out: DisjointSlice<u32>) {
    ///     let i = thread::index();
    ///     if i.get() < out.len() { out.set(&i, 1); } // extra threads of the last block do nothing
    /// }
    /// ```
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice has no elements.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn maybe(mut out: DisjointSlice<u32>) {
    ///     if out.is_empty() { return; }
    ///     out.set(thread::index(), 7);
    /// }
    /// ```
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element at the calling thread's own index, or `None` past the end.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn increment(mut data: DisjointSlice<u32>) {
    ///     if let Some(v) = data.get_mut(thread::index()) { *v += 1; } // None past the end
    /// }
    /// ```
    #[inline(always)]
    pub fn get_mut(&mut self, index: impl Borrow<ThreadIndex>) -> Option<&mut T> {
        let index = index.borrow();
        let i = index.get();
        if i < self.len {
            // SAFETY: in bounds; `index` is unique to this thread within the launch and
            // `&mut self` stops this thread from holding two references to it.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            None
        }
    }

    /// Writes `value` at the calling thread's own index; returns `false` (and writes nothing)
    /// past the end.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn ids(mut out: DisjointSlice<u32>) {
    ///     let i = thread::index();
    ///     let _in_range: bool = out.set(&i, i.get() as u32); // false (nothing written) past the end
    /// }
    /// ```
    #[inline(always)]
    pub fn set(&mut self, index: impl Borrow<ThreadIndex>, value: T) -> bool {
        let index = index.borrow();
        let i = index.get();
        if i < self.len {
            // SAFETY: as in `get_mut`: in bounds, and the element is this thread's alone. No
            // `Option` is built, so no null test is left for the compiler to remove.
            unsafe { *self.ptr.add(i) = value };
            true
        } else {
            false
        }
    }

    /// Writes `value` at any index. Out of bounds traps the kernel (an error at the next
    /// synchronization), never writes.
    ///
    /// # Safety
    /// No other thread of the launch may read or write element `i` concurrently (for example,
    /// only thread 0 of each block writes the block's slot).
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// One result per block, written by thread 0.
    /// #[kernel]
    /// pub fn block_marks(out: DisjointSlice<u32>) {
    ///     let b = thread::block_idx_x() as usize;
    ///     // SAFETY: only thread 0 of block `b` writes element `b`.
    ///     if thread::thread_idx_x() == 0 { unsafe { out.write(b, 1) } }
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        if i >= self.len {
            crate::__trap_out_of_bounds(i, self.len);
        }
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// Reads the element at any index. Out of bounds traps.
    ///
    /// # Safety
    /// No other thread may write element `i` concurrently.
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// In-place prefix step: each thread reads its left neighbour's old value first.
    /// #[kernel]
    /// pub fn neighbours(data: DisjointSlice<u32>, mut out: DisjointSlice<u32>) {
    ///     let i = thread::index();
    ///     // SAFETY: nothing writes `data` during this launch.
    ///     if i.get() > 0 && i.get() < data.len() { out.set(&i, unsafe { data.read(i.get() - 1) }); }
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        if i >= self.len {
            crate::__trap_out_of_bounds(i, self.len);
        }
        // SAFETY: in bounds; absence of concurrent writers is the caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    /// The data pointer, for atomics ([`crate::atomic`]) and foreign calls.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// use gpukernel_device::atomic;
    /// /// Every thread adds into `sums[key[i]]`: atomics on the output's pointer.
    /// #[kernel]
    /// pub fn scatter_add(keys: &[u32], sums: DisjointSlice<u32>) {
    ///     let i = thread::index().get();
    ///     if i < keys.len() && (keys[i] as usize) < sums.len() {
    ///         // SAFETY: in bounds; the elements are touched only by atomics during the launch.
    ///         unsafe { atomic::add(sums.as_mut_ptr().add(keys[i] as usize), 1) };
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

/// The calling thread's two-dimensional global index `(x, y)`: CUDA's
/// `(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y)`.
///
/// Only [`crate::thread::index_2d`] and [`crate::thread::grid_stride_2d`] make one. Two
/// threads of a launch whose z extent is 1 (`grid.z == block.z == 1`) never hold the same
/// `(x, y)`: the typed launch refuses any other configuration for a kernel that takes a
/// [`DisjointSlice2D`], the only type a `ThreadIndex2D` unlocks. Like [`ThreadIndex`], it is
/// neither `Copy`, `Clone` nor `DeviceCopy`, so it never reaches another thread.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice2D<f32>) {
///     let i: ThreadIndex2D = thread::index_2d();
///     out.set(&i, (i.x() + i.y()) as f32);
/// }
/// ```
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadIndex2D {
    x: usize,
    y: usize,
}

impl ThreadIndex2D {
    /// The column (x).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     out.set(&i, i.x() as f32); // the column
    /// }
    /// ```
    #[inline(always)]
    pub fn x(&self) -> usize {
        self.x
    }

    /// The row (y).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     out.set(&i, i.y() as f32); // the row
    /// }
    /// ```
    #[inline(always)]
    pub fn y(&self) -> usize {
        self.y
    }

    /// Only the thread module may create one.
    #[inline(always)]
    pub(crate) fn new_unchecked(x: usize, y: usize) -> Self {
        ThreadIndex2D { x, y }
    }
}

/// The calling thread's three-dimensional global index `(x, y, z)`, each
/// `blockIdx * blockDim + threadIdx` along its axis.
///
/// Only [`crate::thread::index_3d`] and [`crate::thread::grid_stride_3d`] make one. Distinct
/// threads of any launch have distinct `(x, y, z)` (each axis is a bijection of block and
/// thread indices), so no launch configuration is refused for a kernel that takes a
/// [`DisjointSlice3D`]. Like [`ThreadIndex`], it is neither `Copy`, `Clone` nor
/// `DeviceCopy`, so it never reaches another thread.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn k(mut out: DisjointSlice3D<f32>) {
///     let i: ThreadIndex3D = thread::index_3d();
///     out.set(&i, (i.x() + i.y() + i.z()) as f32);
/// }
/// ```
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadIndex3D {
    x: usize,
    y: usize,
    z: usize,
}

impl ThreadIndex3D {
    /// The x index (fastest varying).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     out.set(&i, i.x() as f32);
    /// }
    /// ```
    #[inline(always)]
    pub fn x(&self) -> usize {
        self.x
    }

    /// The y index.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     out.set(&i, i.y() as f32);
    /// }
    /// ```
    #[inline(always)]
    pub fn y(&self) -> usize {
        self.y
    }

    /// The z index (slowest varying).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     out.set(&i, i.z() as f32);
    /// }
    /// ```
    #[inline(always)]
    pub fn z(&self) -> usize {
        self.z
    }

    /// Only the thread module may create one.
    #[inline(always)]
    pub(crate) fn new_unchecked(x: usize, y: usize, z: usize) -> Self {
        ThreadIndex3D { x, y, z }
    }
}

/// A kernel's two-dimensional output: `rows` rows of `cols` elements, row `y` starting
/// `pitch` elements after row `y - 1` (`pitch >= cols`; the elements between `cols` and
/// `pitch` are never reached). Each thread may get `&mut` access to the element at its own
/// [`ThreadIndex2D`] (column `x`, row `y`), which no other thread of the launch holds, so
/// safe code cannot race.
///
/// A `#[kernel]` parameter `out: DisjointSlice2D<f32>` lowers to four parameters (pointer,
/// `cols`, `rows`, `pitch`, each 64-bit); on the host it is passed a 2D view of a buffer
/// (`buffer.view_2d_mut(cols, rows, pitch)?`), whose shape the runtime checks against the
/// buffer's length. The typed launch refuses a configuration with `grid.z` or `block.z`
/// above 1 for such a kernel (there, two threads would share an `(x, y)`).
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// `out = mᵀ` for a row-major `rows × cols` matrix `m`: `out` has `cols` rows of `rows`
/// /// elements, and thread `(x, y)` writes `out[y][x] = m[x][y]`.
/// #[kernel]
/// pub fn transpose(m: &[f32], cols: u32, mut out: DisjointSlice2D<f32>) {
///     let i = thread::index_2d();
///     if let Some(o) = out.get_mut(&i) {
///         *o = m[i.x() * cols as usize + i.y()];
///     }
/// }
/// ```
#[derive(Debug)]
pub struct DisjointSlice2D<'a, T> {
    ptr: *mut T,
    cols: usize,
    rows: usize,
    pitch: usize,
    _marker: PhantomData<&'a mut [T]>,
}

/// Builds a [`DisjointSlice2D`] from its four ABI parameters.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `(rows - 1) * pitch + cols` elements for `'a`
/// (none when `rows` or `cols` is 0), `pitch >= cols`, and no other parameter of the launch may
/// reach those elements (the typed launch checks the shape and guarantees this).
/// `ptr` is not null (see [`disjoint_from_raw`]).
#[doc(hidden)]
#[inline(always)]
pub unsafe fn disjoint_2d_from_raw<'a, T>(
    ptr: *mut T,
    cols: usize,
    rows: usize,
    pitch: usize,
) -> DisjointSlice2D<'a, T> {
    // SAFETY: the caller's contract (see `disjoint_from_raw`).
    unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
    DisjointSlice2D {
        ptr,
        cols,
        rows,
        pitch,
        _marker: PhantomData,
    }
}

impl<'a, T> DisjointSlice2D<'a, T> {
    /// Elements per row (the x extent).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     if i.x() < out.cols() {
    ///         out.set(&i, 1.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Number of rows (the y extent).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     if i.y() < out.rows() {
    ///         out.set(&i, 1.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements from the start of one row to the start of the next (`>= cols`).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     // Element (x, y) is `y * pitch + x` elements from the start.
    ///     let i = thread::index_2d();
    ///     let offset = i.y() * out.pitch() + i.x();
    ///     out.set(&i, offset as f32);
    /// }
    /// ```
    #[inline(always)]
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The element at the calling thread's own `(x, y)` (column `x` of row `y`), or `None`
    /// outside the `cols × rows` shape.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     if let Some(o) = out.get_mut(&i) {
    ///         *o += 1.0;
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn get_mut(&mut self, index: impl Borrow<ThreadIndex2D>) -> Option<&mut T> {
        let index = index.borrow();
        let (x, y) = (index.x(), index.y());
        if x < self.cols && y < self.rows {
            // SAFETY: in bounds (`y * pitch + x < (rows - 1) * pitch + cols`, which the host
            // checked against the buffer); `(x, y)` is this thread's alone within the launch
            // (z extent 1, checked at launch), and `&mut self` stops this thread from holding
            // two references to it.
            Some(unsafe { &mut *self.ptr.add(y * self.pitch + x) })
        } else {
            None
        }
    }

    /// Writes `value` at the calling thread's own `(x, y)`; returns `false` (and writes
    /// nothing) outside the shape.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let written = out.set(thread::index_2d(), 2.0);
    ///     let _ = written; // false outside the shape
    /// }
    /// ```
    #[inline(always)]
    pub fn set(&mut self, index: impl Borrow<ThreadIndex2D>, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// Writes `value` at column `x` of row `y`, any thread's. Outside the shape traps the
    /// kernel, never writes.
    ///
    /// # Safety
    /// No other thread of the launch may read or write that element concurrently.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(out: DisjointSlice2D<f32>) {
    ///     // Thread (0, 0) of each block writes the block's slot: no two blocks share one.
    ///     if thread::thread_idx_x() == 0 && thread::thread_idx_y() == 0 {
    ///         let (bx, by) = (thread::block_idx_x() as usize, thread::block_idx_y() as usize);
    ///         if bx < out.cols() && by < out.rows() {
    ///             // SAFETY: one writer per (block x, block y).
    ///             unsafe { out.write(bx, by, 1.0) };
    ///         }
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn write(&self, x: usize, y: usize, value: T) {
        let i = self.offset(x, y);
        // SAFETY: in bounds (checked by `offset`); exclusivity is the caller's promise.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// Reads column `x` of row `y`. Outside the shape traps.
    ///
    /// # Safety
    /// No other thread may write that element concurrently.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     let i = thread::index_2d();
    ///     if i.x() < out.cols() && i.y() < out.rows() {
    ///         // SAFETY: this thread's own element; no other thread writes it.
    ///         let v = unsafe { out.read(i.x(), i.y()) };
    ///         out.set(&i, v * 2.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn read(&self, x: usize, y: usize) -> T
    where
        T: Copy,
    {
        let i = self.offset(x, y);
        // SAFETY: in bounds; absence of concurrent writers is the caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    #[inline(always)]
    fn offset(&self, x: usize, y: usize) -> usize {
        if x >= self.cols {
            crate::__trap_out_of_bounds(x, self.cols);
        }
        if y >= self.rows {
            crate::__trap_out_of_bounds(y, self.rows);
        }
        y * self.pitch + x
    }

    /// The data pointer (row 0, column 0), for atomics and foreign calls.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice2D<f32>) {
    ///     // For atomics or a foreign call: the element at row 0, column 0.
    ///     let p: *mut f32 = out.as_mut_ptr();
    ///     let _ = p;
    /// }
    /// ```
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

/// A kernel's three-dimensional output: `depth` planes of `rows` rows of `cols` elements;
/// element `(x, y, z)` is at `(z * rows + y) * pitch + x` (`pitch >= cols`). Each thread may
/// get `&mut` access to the element at its own [`ThreadIndex3D`].
///
/// Lowers to five 64-bit parameters (pointer, `cols`, `rows`, `depth`, `pitch`); on the host
/// it is passed `buffer.view_3d_mut(cols, rows, depth, pitch)?`. Every launch configuration is
/// allowed: 3D global indices are unique in any launch.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// `out[z][y][x] = x + 10 y + 100 z`.
/// #[kernel]
/// pub fn coordinates(mut out: DisjointSlice3D<u32>) {
///     let i = thread::index_3d();
///     out.set(&i, (i.x() + 10 * i.y() + 100 * i.z()) as u32);
/// }
/// ```
#[derive(Debug)]
pub struct DisjointSlice3D<'a, T> {
    ptr: *mut T,
    cols: usize,
    rows: usize,
    depth: usize,
    pitch: usize,
    _marker: PhantomData<&'a mut [T]>,
}

/// Builds a [`DisjointSlice3D`] from its five ABI parameters.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `((depth - 1) * rows + rows - 1) * pitch +
/// cols` elements for `'a` (none when a dimension is 0), `pitch >= cols`, and no other
/// parameter of the launch may reach them (the typed launch checks the shape).
/// `ptr` is not null (see [`disjoint_from_raw`]).
#[doc(hidden)]
#[inline(always)]
pub unsafe fn disjoint_3d_from_raw<'a, T>(
    ptr: *mut T,
    cols: usize,
    rows: usize,
    depth: usize,
    pitch: usize,
) -> DisjointSlice3D<'a, T> {
    // SAFETY: the caller's contract (see `disjoint_from_raw`).
    unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
    DisjointSlice3D {
        ptr,
        cols,
        rows,
        depth,
        pitch,
        _marker: PhantomData,
    }
}

impl<'a, T> DisjointSlice3D<'a, T> {
    /// Elements per row (the x extent).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     if i.x() < out.cols() {
    ///         out.set(&i, 1.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows per plane (the y extent).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     if i.y() < out.rows() {
    ///         out.set(&i, 1.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of planes (the z extent).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     if i.z() < out.depth() {
    ///         out.set(&i, 1.0);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Elements from the start of one row to the start of the next (`>= cols`).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     // Element (x, y) is `y * pitch + x` elements from the start.
    ///     let i = thread::index_3d();
    ///     let offset = i.y() * out.pitch() + i.x();
    ///     out.set(&i, offset as f32);
    /// }
    /// ```
    #[inline(always)]
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The element at the calling thread's own `(x, y, z)`, or `None` outside the shape.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let i = thread::index_3d();
    ///     if let Some(o) = out.get_mut(&i) {
    ///         *o += 1.0;
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn get_mut(&mut self, index: impl Borrow<ThreadIndex3D>) -> Option<&mut T> {
        let index = index.borrow();
        let (x, y, z) = (index.x(), index.y(), index.z());
        if x < self.cols && y < self.rows && z < self.depth {
            // SAFETY: in bounds (checked on the host against the buffer); `(x, y, z)` is unique
            // to this thread in any launch, and `&mut self` allows one reference at a time.
            Some(unsafe { &mut *self.ptr.add((z * self.rows + y) * self.pitch + x) })
        } else {
            None
        }
    }

    /// Writes `value` at the calling thread's own `(x, y, z)`; returns `false` (and writes
    /// nothing) outside the shape.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     let written = out.set(thread::index_3d(), 2.0);
    ///     let _ = written; // false outside the shape
    /// }
    /// ```
    #[inline(always)]
    pub fn set(&mut self, index: impl Borrow<ThreadIndex3D>, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// Writes `value` at `(x, y, z)`, any thread's. Outside the shape traps.
    ///
    /// # Safety
    /// No other thread of the launch may read or write that element concurrently.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(out: DisjointSlice3D<f32>) {
    ///     if thread::thread_idx() == thread::Dim3::new(0, 0, 0) {
    ///         let b = thread::block_idx();
    ///         let (x, y, z) = (b.x as usize, b.y as usize, b.z as usize);
    ///         if x < out.cols() && y < out.rows() && z < out.depth() {
    ///             // SAFETY: one writer per block.
    ///             unsafe { out.write(x, y, z, 1.0) };
    ///         }
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn write(&self, x: usize, y: usize, z: usize, value: T) {
        for (i, n) in [(x, self.cols), (y, self.rows), (z, self.depth)] {
            if i >= n {
                crate::__trap_out_of_bounds(i, n);
            }
        }
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe {
            self.ptr
                .add((z * self.rows + y) * self.pitch + x)
                .write(value)
        }
    }

    /// The data pointer, for atomics and foreign calls.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn k(mut out: DisjointSlice3D<f32>) {
    ///     // For atomics or a foreign call: the element at row 0, column 0.
    ///     let p: *mut f32 = out.as_mut_ptr();
    ///     let _ = p;
    /// }
    /// ```
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

/// A kernel's two-dimensional input, read-only: `rows` rows of `cols` elements, row `r`
/// starting `pitch` elements after row `r - 1` (`pitch >= cols`). Element `(r, c)` (row `r`,
/// column `c`, the matrix order of `ndarray` and `nalgebra`) is `m[(r, c)]`, which checks
/// `r < rows` and `c < cols` only: the host checked the shape against the buffer once, at the
/// launch, so the element's offset `r * pitch + c` needs no check of its own. A kernel that
/// tests `r < m.rows() && c < m.cols()` before the read (as a tiled kernel does for its edge
/// tiles) pays for no check at all: the compiler folds the index's into the kernel's.
///
/// Reading a `&[T]` at `r * cols + c` instead checks the 64-bit product against the slice's
/// length at each read, which the compiler cannot prove in range (a compare and a branch
/// around every load).
///
/// A `#[kernel]` parameter `m: Slice2D<f32>` lowers to four 64-bit parameters (pointer,
/// `cols`, `rows`, `pitch`, as [`DisjointSlice2D`]); on the host it is passed a read-only 2D
/// view (`buffer.view_2d(cols, rows, pitch)?`), whose shape the runtime checks against the
/// buffer's length. It is `Copy`, like `&[T]`: any thread reads any element, and nothing writes
/// the memory during the launch (the typed launch borrows it shared).
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// /// `out = mᵀ`: `out` has `m.cols()` rows of `m.rows()` elements; thread `(x, y)` writes
/// /// `out[y][x] = m[x][y]`.
/// #[kernel]
/// pub fn transpose(m: Slice2D<f32>, mut out: DisjointSlice2D<f32>) {
///     let i = thread::index_2d();
///     if let Some(v) = m.get(i.x(), i.y()) {
///         out.set(&i, *v);
///     }
/// }
/// ```
#[derive(Debug)]
pub struct Slice2D<'a, T> {
    ptr: *const T,
    cols: usize,
    rows: usize,
    pitch: usize,
    _marker: PhantomData<&'a [T]>,
}

impl<T> Clone for Slice2D<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Slice2D<'_, T> {}

/// Builds a [`Slice2D`] from its four ABI parameters.
///
/// # Safety
/// `ptr` must be valid for reads of `(rows - 1) * pitch + cols` elements for `'a` (none when
/// `rows` or `cols` is 0), `pitch >= cols`, and nothing may write those elements during `'a`
/// (the typed launch checks the shape and borrows the memory shared). `ptr` is not null and is
/// aligned (see [`disjoint_from_raw`]).
#[doc(hidden)]
#[inline(always)]
pub unsafe fn slice_2d_from_raw<'a, T>(
    ptr: *const T,
    cols: usize,
    rows: usize,
    pitch: usize,
) -> Slice2D<'a, T> {
    // SAFETY: the caller's contract (see `disjoint_from_raw`).
    unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
    Slice2D {
        ptr,
        cols,
        rows,
        pitch,
        _marker: PhantomData,
    }
}

impl<'a, T> Slice2D<'a, T> {
    /// Elements per row (the column count).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn last_column(m: Slice2D<f32>, mut out: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if m.cols() > 0 && let Some(v) = m.get(i.get(), m.cols() - 1) {
    ///         out.set(&i, *v);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Number of rows.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn first_column(m: Slice2D<f32>, mut out: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if i.get() < m.rows() && m.cols() > 0 {
    ///         out.set(&i, m[(i.get(), 0)]);
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements from the start of one row to the start of the next (`>= cols`).
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    ///
    /// #[kernel]
    /// pub fn pitch_of(m: Slice2D<u8>, mut out: DisjointSlice<u64>) {
    ///     out.set(gpukernel_device::thread::index(), m.pitch() as u64);
    /// }
    /// ```
    #[inline(always)]
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// Element `(r, c)` (row `r`, column `c`), or `None` outside the `rows × cols` shape.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// /// Row sums of `m`, one thread per row.
    /// #[kernel]
    /// pub fn row_sums(m: Slice2D<f32>, mut out: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     let mut s = 0.0;
    ///     let mut c = 0;
    ///     while let Some(v) = m.get(i.get(), c) {
    ///         s += *v;
    ///         c += 1;
    ///     }
    ///     out.set(&i, s);
    /// }
    /// ```
    #[inline(always)]
    pub fn get(&self, r: usize, c: usize) -> Option<&'a T> {
        if r < self.rows && c < self.cols {
            // SAFETY: `r * pitch + c <= (rows - 1) * pitch + cols - 1`, inside the memory the
            // host checked the shape against; nothing writes it during the launch.
            Some(unsafe { &*self.ptr.add(r * self.pitch + c) })
        } else {
            None
        }
    }

    /// Row `r` as a slice of `cols` elements, or `None` when `r >= rows`.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    ///
    /// #[kernel]
    /// pub fn row_maxima(m: Slice2D<f32>, mut out: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if let Some(row) = m.row(i.get()) {
    ///         out.set(&i, row.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    ///     }
    /// }
    /// ```
    #[inline(always)]
    pub fn row(&self, r: usize) -> Option<&'a [T]> {
        if r >= self.rows {
            None
        } else if self.cols == 0 {
            // No element: the shape reaches no memory, so no offset from the pointer is valid.
            Some(&[])
        } else {
            // SAFETY: row `r` is `cols` elements from `r * pitch`, inside the checked memory
            // (`r * pitch + cols <= (rows - 1) * pitch + cols`); read-only for the launch.
            Some(unsafe { core::slice::from_raw_parts(self.ptr.add(r * self.pitch), self.cols) })
        }
    }

    /// The data pointer (row 0, column 0), for foreign calls.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    ///
    /// #[kernel]
    /// pub fn k(m: Slice2D<f32>) {
    ///     let p: *const f32 = m.as_ptr();
    ///     let _ = p;
    /// }
    /// ```
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
}

impl<T> core::ops::Index<(usize, usize)> for Slice2D<'_, T> {
    type Output = T;

    /// Element `(r, c)`: row `r`, column `c`. Outside the shape traps the kernel (an error at
    /// the next synchronization; in the simulator an error naming the thread).
    #[inline(always)]
    #[track_caller]
    fn index(&self, (r, c): (usize, usize)) -> &T {
        if r >= self.rows {
            crate::__trap_out_of_bounds(r, self.rows);
        }
        if c >= self.cols {
            crate::__trap_out_of_bounds(c, self.cols);
        }
        // SAFETY: in the shape, hence in the checked memory (see `get`); read-only.
        unsafe { &*self.ptr.add(r * self.pitch + c) }
    }
}
