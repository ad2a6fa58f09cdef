//! Shared memory: per-block arrays declared in a kernel body with [`shared_array!`], and the
//! launch-sized dynamic shared memory from [`dynamic_shared`].
//!
//! Shared memory is visible to every thread of one block and to no other block. Accesses are
//! not synchronized: write, [`sync_threads`](crate::sync::sync_threads), then read — the
//! `unsafe` accessors' callers promise that discipline.
//!
//! On the GPU a `shared_array!` is an uninitialized module global in the `.shared` state
//! space (see the macro for how it gets there), and its contents are undefined when a block
//! starts. In the simulator each block gets its own zeroed storage for each declaration.
//!
//! What shared memory can carry from one thread to another is plain data, checked by the
//! element types, so that the `unsafe` accessors' contracts are only about timing:
//!
//! - a [`shared_array!`] element is [`DeviceCopy`]: numbers, arrays, `#[repr(C)]` structs of
//!   them, `bool`. The thread index types ([`ThreadIndex`](crate::ThreadIndex) and its 2D/3D
//!   forms) are deliberately not `DeviceCopy` (nor `Copy`): an index read by another thread
//!   would give that thread `&mut` access to an output element that is not its own;
//! - a [`dynamic_shared`] view is [`AnyBitPattern`]: every call in a block views the same
//!   bytes, whatever its type, so what one view wrote another reads as its own type, and only
//!   a type for which every byte pattern is a value (not `bool`, not a struct with padding)
//!   may do so.
//!
//! The warp shuffles move only [`ShuffleValue`](crate::warp::ShuffleValue)s (sealed: the
//! 32- and 64-bit numbers) and the atomics only numbers, so none of them carries an index.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{shared::shared_array, sync, thread};
//!
//! /// Each block of 128 threads writes its 128 elements of `x`, reversed, to `out`.
//! #[kernel]
//! pub fn reverse_blocks(x: &[u32], out: DisjointSlice<u32>) {
//!     let tile = shared_array!(u32, 128);
//!     let t = thread::thread_idx_x() as usize;
//!     let base = thread::block_idx_x() as usize * 128;
//!     // SAFETY: each thread writes only its own slot.
//!     unsafe { tile.write(t, x[base + t]) };
//!     sync::sync_threads();
//!     // SAFETY: after the barrier nobody writes `tile`; slot `base + t` is this thread's alone.
//!     unsafe { out.write(base + t, tile.read(127 - t)) };
//! }
//! ```

use core::marker::PhantomData;

use crate::{AnyBitPattern, DeviceCopy};

/// A statically sized shared-memory array of `N` elements of `T`, the same storage for every
/// thread of the block. Made by [`shared_array!`]; `Copy`, so it can be passed to helpers.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{shared::shared_array, sync, thread};
///
/// use gpukernel_device::shared::SharedArray;
/// /// A helper that takes the block's tile: `SharedArray` is `Copy`.
/// unsafe fn sum(tile: SharedArray<f32, 64>) -> f32 {
///     (0..tile.len()).map(|i| unsafe { tile.read(i) }).sum()
/// }
/// #[kernel]
/// pub fn block_sums(x: &[f32], out: DisjointSlice<f32>) {
///     let tile = shared_array!(f32, 64);
///     let t = thread::thread_idx_x() as usize;
///     unsafe { tile.write(t, x[thread::index().get()]) }; // SAFETY: own slot
///     sync::sync_threads();
///     // SAFETY: after the barrier nobody writes; thread 0 writes its block's slot.
///     if t == 0 { unsafe { out.write(thread::block_idx_x() as usize, sum(tile)) } }
/// }
/// ```
#[derive(Debug)]
pub struct SharedArray<T, const N: usize> {
    ptr: *mut T,
    _marker: PhantomData<*mut [T; N]>,
}

impl<T, const N: usize> Clone for SharedArray<T, N> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for SharedArray<T, N> {}

// The element type is checked where a handle is made (`__from_raw`, `__host`: what
// `shared_array!` expands to), so that a type that is not `DeviceCopy` gets one error naming
// the trait; the methods need no bound of their own.
impl<T, const N: usize> SharedArray<T, N> {
    /// Device: the array behind a `static` that `nvptx-builder` placed in the `.shared` state
    /// space. Used by [`shared_array!`] only.
    ///
    /// # Safety
    /// `storage` must be such a static, used for this array only.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_raw(storage: *mut T) -> Self
    where
        T: DeviceCopy,
    {
        SharedArray {
            ptr: storage,
            _marker: PhantomData,
        }
    }

    /// Host: the current simulated block's storage for the declaration `key`.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    #[track_caller]
    pub fn __host(key: &'static __SharedKey) -> Self
    where
        T: DeviceCopy,
    {
        let ptr = crate::host::with_context("shared_array!", |cx| {
            cx.hooks().static_shared(
                key as *const __SharedKey as usize,
                core::mem::size_of::<[T; N]>(),
                core::mem::align_of::<[T; N]>(),
            )
        });
        SharedArray {
            ptr: ptr.cast(),
            _marker: PhantomData,
        }
    }

    /// The number of elements, `N`.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// #[kernel]
    /// pub fn zero_tile() {
    ///     let tile = shared_array!(u32, 128);
    ///     let t = thread::thread_idx_x() as usize;
    ///     // SAFETY: each thread writes its own slot.
    ///     if t < tile.len() { unsafe { tile.write(t, 0) } }
    /// }
    /// ```
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N == 0`.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// #[kernel]
    /// pub fn tiles() {
    ///     let tile = shared_array!(f64, 32);
    ///     assert!(!tile.is_empty());
    /// }
    /// ```
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Reads element `i`. Out of bounds traps the kernel (a panic in the simulator).
    ///
    /// # Safety
    /// - No other thread writes element `i` concurrently: each write of element `i` by another
    ///   thread of the block is separated from this read by a barrier that both threads reach
    ///   ([`sync_threads`](crate::sync::sync_threads)), or both accesses are atomic.
    /// - Element `i` was written since the block started (by [`write`](Self::write) or through
    ///   [`as_mut_ptr`](Self::as_mut_ptr), by any thread of the block, ordered before this
    ///   read as above). On the GPU the storage starts with whatever the block before left;
    ///   reading a never-written element is undefined behaviour, whatever `T` is.
    ///
    /// Nothing else is the caller's to check: `T` is [`DeviceCopy`], so the value read is
    /// plain data and never another thread's index (see the [module documentation](self)).
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// /// Each thread gets its left neighbour's value (blocks of 256 threads).
    /// #[kernel]
    /// pub fn left(x: &[f32], mut out: DisjointSlice<f32>) {
    ///     let tile = shared_array!(f32, 256);
    ///     let (i, t) = (thread::index(), thread::thread_idx_x() as usize);
    ///     unsafe { tile.write(t, x[i.get()]) }; // SAFETY: own slot
    ///     sync::sync_threads();
    ///     out.set(&i, unsafe { tile.read((t + 255) % 256) }); // SAFETY: no writes after the barrier
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read(&self, i: usize) -> T {
        if i >= N {
            crate::__trap_out_of_bounds(i, N);
        }
        // SAFETY: in bounds of the block's storage; the race-freedom is the caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`. Out of bounds traps the kernel (a panic in the simulator).
    ///
    /// # Safety
    /// No other thread reads or writes element `i` concurrently: each access of element `i`
    /// by another thread of the block is separated from this write by a barrier that both
    /// threads reach ([`sync_threads`](crate::sync::sync_threads)), or both accesses are
    /// atomic.
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// #[kernel]
    /// pub fn stage(x: &[u32]) {
    ///     let tile = shared_array!(u32, 256);
    ///     let t = thread::thread_idx_x() as usize;
    ///     // SAFETY: each thread writes only its own slot; reads come after a barrier.
    ///     unsafe { tile.write(t, x[thread::index().get()]) };
    ///     sync::sync_threads();
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    pub unsafe fn write(&self, i: usize, value: T) {
        if i >= N {
            crate::__trap_out_of_bounds(i, N);
        }
        // SAFETY: in bounds of the block's storage; exclusivity is the caller's promise.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// The first element's address (a generic address of the block's shared memory on the
    /// GPU), e.g. for [`crate::atomic`] operations on shared memory.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::atomic;
    /// /// A per-block histogram in shared memory (`atomicAdd` on `__shared__` bins).
    /// #[kernel]
    /// pub fn block_histogram(data: &[u8]) {
    ///     let bins = shared_array!(u32, 256);
    ///     let i = thread::index().get();
    ///     // SAFETY: the bins are touched only by atomics; data[i] < 256.
    ///     if i < data.len() { unsafe { atomic::add(bins.as_mut_ptr().add(data[i] as usize), 1) }; }
    ///     sync::sync_threads();
    /// }
    /// ```
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

/// The identity of one `shared_array!` declaration in the simulator: a static with interior
/// mutability, so that no two declarations can share an address.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[derive(Debug)]
pub struct __SharedKey(
    // Never read: it only gives the key's static a unique, unmergeable address.
    #[allow(dead_code)] core::sync::atomic::AtomicU8,
);

#[cfg(not(target_arch = "nvptx64"))]
impl __SharedKey {
    #[doc(hidden)]
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        __SharedKey(core::sync::atomic::AtomicU8::new(0))
    }
}

/// The section `nvptx-builder` moves into the `.shared` state space (LLVM address space 3).
#[doc(hidden)]
pub const SHARED_SECTION: &str = ".gpukernel.shared";

/// Declares a statically sized shared-memory array in a kernel body and evaluates to its
/// [`SharedArray`] handle: `let tile = shared_array!(f32, 256);`.
///
/// Each use of the macro is one array per block (a loop or a second call of the function
/// reaches the same array). The element type must be [`DeviceCopy`] (plain data: never a
/// thread index, see the [module documentation](crate::shared)) and must not name generic
/// parameters of the enclosing function (the storage is a `static`).
///
/// On nvptx64 the storage is an uninitialized `static` in the link section
/// `.gpukernel.shared`, which `nvptx-builder` moves to the `.shared` state space before
/// code generation, so its accesses compile to `ld.shared`/`st.shared`.
#[cfg(target_arch = "nvptx64")]
#[macro_export]
macro_rules! shared_array {
    ($t:ty, $n:expr $(,)?) => {{
        #[unsafe(link_section = ".gpukernel.shared")]
        static mut __GPUKERNEL_SHARED: $crate::__private::core::mem::MaybeUninit<[$t; $n]> =
            $crate::__private::core::mem::MaybeUninit::uninit();
        // SAFETY: the static is this declaration's own storage.
        unsafe {
            $crate::shared::SharedArray::<$t, { $n }>::__from_raw(
                (&raw mut __GPUKERNEL_SHARED).cast::<$t>(),
            )
        }
    }};
}

/// Declares a statically sized shared-memory array in a kernel body and evaluates to its
/// [`SharedArray`] handle: `let tile = shared_array!(f32, 256);`.
///
/// Each use of the macro is one array per block (a loop or a second call of the function
/// reaches the same array). The element type must be [`DeviceCopy`] (plain data: never a
/// thread index, see the [module documentation](crate::shared)) and must not name generic
/// parameters of the enclosing function (the storage is a `static`).
///
/// In the simulator each block gets its own zeroed storage per declaration, found through the
/// address of a static unique to the declaration.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{shared::shared_array, sync, thread};
///
/// /// Reverses each block of 256 elements (blocks of 256 threads).
/// #[kernel]
/// pub fn block_reverse(x: &[f32], mut out: DisjointSlice<f32>) {
///     let tile = shared_array!(f32, 256); // CUDA's `__shared__ float tile[256];`
///     let (i, t) = (thread::index(), thread::thread_idx_x() as usize);
///     unsafe { tile.write(t, x[i.get()]) }; // SAFETY: own slot
///     sync::sync_threads();
///     out.set(&i, unsafe { tile.read(255 - t) }); // SAFETY: no writes after the barrier
/// }
/// ```
#[cfg(not(target_arch = "nvptx64"))]
#[macro_export]
macro_rules! shared_array {
    ($t:ty, $n:expr $(,)?) => {{
        static __GPUKERNEL_SHARED_KEY: $crate::shared::__SharedKey =
            $crate::shared::__SharedKey::new();
        $crate::shared::SharedArray::<$t, { $n }>::__host(&__GPUKERNEL_SHARED_KEY)
    }};
}

pub use crate::shared_array;

/// The block's dynamic shared memory, viewed as elements of `T`: as many as fit in the size
/// the launch asked for.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{shared::shared_array, sync, thread};
///
/// use gpukernel_device::shared::{DynamicShared, dynamic_shared};
/// #[kernel]
/// pub fn sized_at_launch(x: &[f32]) {
///     let buf: DynamicShared<f32> = dynamic_shared(); // as many f32s as the launch gave bytes
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: own slot.
///     if t < buf.len() { unsafe { buf.write(t, x[thread::index().get()]) } }
/// }
/// ```
#[derive(Debug)]
pub struct DynamicShared<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for DynamicShared<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DynamicShared<T> {}

/// The block's dynamic shared memory (CUDA's `extern __shared__ T buf[];`), sized by the
/// launch's `dynamic_shared_bytes` and aligned to 16 bytes. Every call in a block, whatever
/// `T`, views the same bytes.
///
/// `T` must be [`AnyBitPattern`]: every view reads the bytes that views of other types wrote.
/// `T`'s alignment must be at most 16 (a compile-time error otherwise).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{shared::shared_array, sync, thread};
///
/// use gpukernel_device::shared::dynamic_shared;
/// /// CUDA's `extern __shared__ float buf[];`: launched with
/// /// `LaunchConfig::new(grid, 256).with_shared_mem_bytes(256 * 4)`.
/// #[kernel]
/// pub fn rotate(x: &[f32], mut out: DisjointSlice<f32>) {
///     let buf = dynamic_shared::<f32>();
///     let (i, t, n) = (thread::index(), thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
///     unsafe { buf.write(t, x[i.get()]) }; // SAFETY: own slot
///     sync::sync_threads();
///     out.set(&i, unsafe { buf.read((t + 1) % n) }); // SAFETY: no writes after the barrier
/// }
/// ```
#[inline(always)]
#[track_caller]
pub fn dynamic_shared<T: AnyBitPattern>() -> DynamicShared<T> {
    const {
        assert!(
            core::mem::align_of::<T>() <= 16,
            "dynamic shared memory is 16-byte aligned"
        )
    };
    let (ptr, bytes) = dynamic_shared_bytes();
    let len = match core::mem::size_of::<T>() {
        0 => 0,
        size => bytes / size,
    };
    DynamicShared {
        ptr: ptr.cast(),
        len,
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn dynamic_shared_bytes() -> (*mut u8, usize) {
    let bytes: u32;
    // SAFETY: reads the `%dynamic_smem_size` special register.
    unsafe {
        core::arch::asm!("mov.u32 {0}, %dynamic_smem_size;", out(reg32) bytes, options(pure, nomem, nostack))
    };
    let ptr = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u128>();
    (ptr.cast(), bytes as usize)
}

#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn dynamic_shared_bytes() -> (*mut u8, usize) {
    crate::host::with_context("shared::dynamic_shared", |cx| cx.hooks().dynamic_shared())
}

// Only `dynamic_shared` makes one, for an `AnyBitPattern` `T`: the methods need no bound.
impl<T> DynamicShared<T> {
    /// The number of `T` elements that fit in the launch's dynamic shared memory.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::shared::dynamic_shared;
    /// #[kernel]
    /// pub fn check_size(mut out: DisjointSlice<usize>) {
    ///     out.set(thread::index(), dynamic_shared::<f64>().len()); // shared_mem_bytes / 8
    /// }
    /// ```
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no element fits.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::shared::dynamic_shared;
    /// #[kernel]
    /// pub fn needs_shared(mut ok: DisjointSlice<bool>) {
    ///     ok.set(thread::index(), !dynamic_shared::<u32>().is_empty()); // false: launched without any
    /// }
    /// ```
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads element `i`. Out of bounds traps the kernel (a panic in the simulator).
    ///
    /// # Safety
    /// - No other thread writes any byte of element `i` (bytes `i * size_of::<T>()` up to
    ///   `(i + 1) * size_of::<T>()` of the block's dynamic shared memory) concurrently, through
    ///   this view or a view of another type: each such write is separated from this read by a
    ///   barrier that both threads reach, or both accesses are atomic.
    /// - Those bytes were written since the block started, through views of any types (as
    ///   above, ordered before this read). On the GPU they start with whatever the block
    ///   before left; reading never-written bytes is undefined behaviour.
    ///
    /// Bytes written through a view of another type need no care: `T` is [`AnyBitPattern`],
    /// so every byte pattern is a `T`.
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::shared::dynamic_shared;
    /// #[kernel]
    /// pub fn neighbour(x: &[u32], mut out: DisjointSlice<u32>) {
    ///     let buf = dynamic_shared::<u32>();
    ///     let (i, t) = (thread::index(), thread::thread_idx_x() as usize);
    ///     unsafe { buf.write(t, x[i.get()]) }; // SAFETY: own slot
    ///     sync::sync_threads();
    ///     out.set(&i, unsafe { buf.read(t ^ 1) }); // SAFETY: no writes after the barrier
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read(&self, i: usize) -> T {
        if i >= self.len {
            crate::__trap_out_of_bounds(i, self.len);
        }
        // SAFETY: in bounds of the launch's dynamic shared memory; race-freedom is the
        // caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`. Out of bounds traps the kernel (a panic in the simulator).
    ///
    /// # Safety
    /// No other thread reads or writes any byte of element `i` concurrently, through this
    /// view or a view of another type: each such access is separated from this write by a
    /// barrier that both threads reach, or both accesses are atomic.
    ///
    /// # Example
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::shared::dynamic_shared;
    /// #[kernel]
    /// pub fn fill_shared(v: u32) {
    ///     let buf = dynamic_shared::<u32>();
    ///     let t = thread::thread_idx_x() as usize;
    ///     // SAFETY: each thread writes only its own slot.
    ///     if t < buf.len() { unsafe { buf.write(t, v) } }
    ///     sync::sync_threads();
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    pub unsafe fn write(&self, i: usize, value: T) {
        if i >= self.len {
            crate::__trap_out_of_bounds(i, self.len);
        }
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// The first element's address.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{shared::shared_array, sync, thread};
    ///
    /// use gpukernel_device::{atomic, shared::dynamic_shared};
    /// #[kernel]
    /// pub fn count_odd(x: &[u32]) {
    ///     let counter = dynamic_shared::<u32>().as_mut_ptr(); // launched with 4 bytes
    ///     let i = thread::index().get();
    ///     // SAFETY: the counter is touched only by atomics.
    ///     if i < x.len() && x[i] % 2 == 1 { unsafe { atomic::add(counter, 1) }; }
    /// }
    /// ```
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}
