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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a number.
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
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element at the calling thread's own index, or `None` past the end.
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
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}
