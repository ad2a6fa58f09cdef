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
//!     if let Some(yi) = y.get_mut(i) {
//!         *yi += a * x[i.get()];
//!     }
//! }
//! ```

use core::marker::PhantomData;

/// The index of the calling thread in the whole launch, unique per thread: the block's linear
/// index times the threads per block, plus the thread's linear index in its block.
///
/// It can only be obtained from [`crate::thread::index`], so a `ThreadIndex` held by a thread
/// is never held by another thread of the same launch. For a one-dimensional launch it equals
/// `block_idx_x * block_dim_x + thread_idx_x`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::thread;
///
/// #[kernel]
/// pub fn squares(mut out: DisjointSlice<u64>) {
///     let i = thread::index(); // this thread's own index, unique in the launch
///     if let Some(o) = out.get_mut(i) { *o = (i.get() * i.get()) as u64; }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    ///     if i.get() < x.len() { out.set(i, x[i.get()]); } // a plain index for reading
    /// }
    /// ```
    #[inline(always)]
    pub fn get(self) -> usize {
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
/// Other access patterns (a block leader writing one slot per block, a grid-stride loop) use
/// the `unsafe` methods, whose caller promises that no two threads write one element.
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
///     if let Some(yi) = y.get_mut(i) { *yi = x[i.get()].max(0.0); }
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
#[doc(hidden)]
#[inline(always)]
pub unsafe fn disjoint_from_raw<'a, T>(ptr: *mut T, len: usize) -> DisjointSlice<'a, T> {
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
    ///     if i.get() < out.len() { out.set(i, 1); } // extra threads of the last block do nothing
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
    pub fn get_mut(&mut self, index: ThreadIndex) -> Option<&mut T> {
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
    ///     let _in_range: bool = out.set(i, i.get() as u32); // false (nothing written) past the end
    /// }
    /// ```
    #[inline(always)]
    pub fn set(&mut self, index: ThreadIndex, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
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
    ///     if i.get() > 0 && i.get() < data.len() { out.set(i, unsafe { data.read(i.get() - 1) }); }
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
