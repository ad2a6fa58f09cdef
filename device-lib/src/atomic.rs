//! Atomic read-modify-write operations on raw pointers (CUDA's `atomicAdd`, `atomicCAS`, …).
//!
//! Every function returns the value the location held before the operation. The memory
//! ordering is **relaxed**, as for CUDA's `atomic*` functions: the operation itself is atomic
//! with respect to every other atomic operation on the location, from any thread of any block,
//! but it orders no other memory access. Use [`crate::sync::threadfence`] (or a barrier) to
//! publish other data. On the GPU these lower to `atom.<op>` with the device (`.gpu`) scope; in
//! the simulator to std's atomics.
//!
//! # Safety (for every function here)
//! `ptr` must be valid for reads and writes of one `T`, aligned to `size_of::<T>()`, and while
//! other threads may access the location, every access (by any thread) must be atomic.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{atomic, thread};
//!
//! /// A histogram of bytes: CUDA's `atomicAdd(&bins[v], 1)`.
//! ///
//! /// # Safety
//! /// `bins` points to 256 `u32`s that only atomics touch during the launch.
//! #[kernel]
//! pub unsafe fn histogram(data: &[u8], bins: *mut u32) {
//!     let i = thread::global_index_x();
//!     if i < data.len() {
//!         // SAFETY: the caller's promise; `data[i] < 256`.
//!         unsafe { atomic::add(bins.add(data[i] as usize), 1) };
//!     }
//! }
//! ```

use core::sync::atomic::{AtomicI32, AtomicI64, Ordering::Relaxed};
#[cfg(not(target_arch = "nvptx64"))]
use core::sync::atomic::{AtomicU32, AtomicU64};
use core::sync::atomic::{AtomicU32 as AU32, AtomicU64 as AU64};

mod sealed {
    pub trait Sealed {}
}

/// An integer type with atomic operations: `i32`, `u32`, `i64`, `u64`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::atomic::{self, AtomicInt};
/// /// Works for `i32`, `u32`, `i64` and `u64` counters.
/// ///
/// /// # Safety
/// /// `counter` is valid and only touched by atomics during the launch.
/// unsafe fn bump<T: AtomicInt>(counter: *mut T, one: T) -> T {
///     unsafe { atomic::add(counter, one) }
/// }
/// let mut n = 0u64;
/// assert_eq!(unsafe { bump(&raw mut n, 1) }, 0); // atomics work on the host too
/// ```
pub trait AtomicInt: AtomicAdd + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn __rmw(ptr: *mut Self, op: IntOp, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __cas(ptr: *mut Self, current: Self, new: Self) -> Self;
}

/// A type with an atomic add: the [`AtomicInt`] types, `f32` and `f64`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::atomic::{self, AtomicAdd};
/// /// Accumulates into any of `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
/// unsafe fn accumulate<T: AtomicAdd>(total: *mut T, v: T) {
///     unsafe { atomic::add(total, v) };
/// }
/// let mut total = 1.5f32;
/// unsafe { accumulate(&raw mut total, 2.0) };
/// assert_eq!(total, 3.5);
/// ```
pub trait AtomicAdd: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn __add(ptr: *mut Self, v: Self) -> Self;
}

#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum IntOp {
    Sub,
    Min,
    Max,
    Exchange,
    And,
    Or,
    Xor,
}

macro_rules! atomic_int {
    ($($t:ty => $a:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn __add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the module's contract (valid, aligned, only accessed atomically).
                unsafe { <$a>::from_ptr(ptr) }.fetch_add(v, Relaxed)
            }
        }
        impl AtomicInt for $t {
            #[inline(always)]
            unsafe fn __rmw(ptr: *mut Self, op: IntOp, v: Self) -> Self {
                // SAFETY: the module's contract (valid, aligned, only accessed atomically).
                let a = unsafe { <$a>::from_ptr(ptr) };
                match op {
                    IntOp::Sub => a.fetch_sub(v, Relaxed),
                    IntOp::Min => a.fetch_min(v, Relaxed),
                    IntOp::Max => a.fetch_max(v, Relaxed),
                    IntOp::Exchange => a.swap(v, Relaxed),
                    IntOp::And => a.fetch_and(v, Relaxed),
                    IntOp::Or => a.fetch_or(v, Relaxed),
                    IntOp::Xor => a.fetch_xor(v, Relaxed),
                }
            }
            #[inline(always)]
            unsafe fn __cas(ptr: *mut Self, current: Self, new: Self) -> Self {
                // SAFETY: the module's contract (valid, aligned, only accessed atomically).
                let a = unsafe { <$a>::from_ptr(ptr) };
                match a.compare_exchange(current, new, Relaxed, Relaxed) {
                    Ok(old) | Err(old) => old,
                }
            }
        }
    )* };
}
atomic_int!(i32 => AtomicI32, u32 => AU32, i64 => AtomicI64, u64 => AU64);

impl sealed::Sealed for f32 {}
impl AtomicAdd for f32 {
    #[inline(always)]
    unsafe fn __add(ptr: *mut Self, v: Self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: f32;
            // SAFETY: the module's contract; `atom.add.f32` on a generic address.
            unsafe {
                core::arch::asm!(
                    "atom.add.f32 {old}, [{ptr}], {v};",
                    old = out(reg32) old,
                    ptr = in(reg64) ptr,
                    v = in(reg32) v,
                    options(nostack),
                )
            };
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // SAFETY: the module's contract; f32 and AtomicU32 have the same size and
            // alignment.
            let a = unsafe { AtomicU32::from_ptr(ptr.cast()) };
            let prev = a.fetch_update(Relaxed, Relaxed, |bits| {
                Some((f32::from_bits(bits) + v).to_bits())
            });
            match prev {
                Ok(bits) | Err(bits) => f32::from_bits(bits),
            }
        }
    }
}

impl sealed::Sealed for f64 {}
impl AtomicAdd for f64 {
    #[inline(always)]
    unsafe fn __add(ptr: *mut Self, v: Self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: f64;
            // SAFETY: the module's contract; `atom.add.f64` on a generic address (sm_60+).
            unsafe {
                core::arch::asm!(
                    "atom.add.f64 {old}, [{ptr}], {v};",
                    old = out(reg64) old,
                    ptr = in(reg64) ptr,
                    v = in(reg64) v,
                    options(nostack),
                )
            };
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // SAFETY: the module's contract; f64 and AtomicU64 have the same size and
            // alignment on the supported hosts (checked below at compile time).
            let a = unsafe { AtomicU64::from_ptr(ptr.cast()) };
            let prev = a.fetch_update(Relaxed, Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
            match prev {
                Ok(bits) | Err(bits) => f64::from_bits(bits),
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
const _: () = assert!(core::mem::align_of::<f64>() == core::mem::align_of::<AtomicU64>());

/// `atomicAdd(ptr, v)`: `*ptr += v` (wrapping for integers); returns the old value.
///
/// # Safety
/// See the [module documentation](self).
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{atomic, thread};
///
/// /// `*sum += x[i]` from every thread: CUDA's `atomicAdd(sum, x[i])`.
/// ///
/// /// # Safety
/// /// `sum` points to an `f32` that only atomics touch during the launch.
/// #[kernel]
/// pub unsafe fn total(x: &[f32], sum: *mut f32) {
///     let i = thread::index().get();
///     if i < x.len() { unsafe { atomic::add(sum, x[i]) }; }
/// }
/// ```
#[inline(always)]
pub unsafe fn add<T: AtomicAdd>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded.
    unsafe { T::__add(ptr, v) }
}

macro_rules! int_ops {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => { $(
        $(#[$m])*
        ///
        /// # Safety
        /// See the [module documentation](self).
        #[inline(always)]
        pub unsafe fn $name<T: AtomicInt>(ptr: *mut T, v: T) -> T {
            // SAFETY: forwarded.
            unsafe { T::__rmw(ptr, IntOp::$op, v) }
        }
    )* };
}
int_ops! {
    /// `atomicSub(ptr, v)`: `*ptr -= v` (wrapping); returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// /// Hands out slots from the top of a stack: CUDA's `atomicSub(top, 1)`.
    /// ///
    /// /// # Safety
    /// /// `top` is touched only by atomics during the launch.
    /// #[kernel]
    /// pub unsafe fn pop(top: *mut u32, mut got: DisjointSlice<u32>) {
    ///     got.set(thread::index(), unsafe { atomic::sub(top, 1) });
    /// }
    /// ```
    sub => Sub;
    /// `atomicMin(ptr, v)`: `*ptr = min(*ptr, v)`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// /// The smallest element: CUDA's `atomicMin(m, x[i])`.
    /// ///
    /// /// # Safety
    /// /// `m` starts at `i32::MAX` and is touched only by atomics during the launch.
    /// #[kernel]
    /// pub unsafe fn minimum(x: &[i32], m: *mut i32) {
    ///     let i = thread::index().get();
    ///     if i < x.len() { unsafe { atomic::min(m, x[i]) }; }
    /// }
    /// ```
    min => Min;
    /// `atomicMax(ptr, v)`: `*ptr = max(*ptr, v)`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// /// The largest element: CUDA's `atomicMax(m, x[i])`.
    /// ///
    /// /// # Safety
    /// /// `m` is touched only by atomics during the launch.
    /// #[kernel]
    /// pub unsafe fn maximum(x: &[u32], m: *mut u32) {
    ///     let i = thread::index().get();
    ///     if i < x.len() { unsafe { atomic::max(m, x[i]) }; }
    /// }
    /// ```
    max => Max;
    /// `atomicExch(ptr, v)`: `*ptr = v`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// let mut slot = 7u32;
    /// let old = unsafe { atomic::exchange(&raw mut slot, 9) }; // CUDA's atomicExch
    /// assert_eq!((old, slot), (7, 9));
    /// ```
    exchange => Exchange;
    /// `atomicAnd(ptr, v)`: `*ptr &= v`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// let mut flags = 0b1111u32;
    /// let old = unsafe { atomic::and(&raw mut flags, !0b0010) }; // clear bit 1: atomicAnd
    /// assert_eq!((old, flags), (0b1111, 0b1101));
    /// ```
    and => And;
    /// `atomicOr(ptr, v)`: `*ptr |= v`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// /// Marks which of 32 buckets were seen: CUDA's `atomicOr(seen, 1 << b)`.
    /// ///
    /// /// # Safety
    /// /// `seen` is touched only by atomics during the launch.
    /// #[kernel]
    /// pub unsafe fn mark(buckets: &[u8], seen: *mut u32) {
    ///     let i = thread::index().get();
    ///     if i < buckets.len() { unsafe { atomic::or(seen, 1 << (buckets[i] % 32)) }; }
    /// }
    /// ```
    or => Or;
    /// `atomicXor(ptr, v)`: `*ptr ^= v`; returns the old value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{atomic, thread};
    ///
    /// let mut parity = 0u64;
    /// for v in [3u64, 5, 3] {
    ///     unsafe { atomic::xor(&raw mut parity, v) }; // CUDA's atomicXor
    /// }
    /// assert_eq!(parity, 5);
    /// ```
    xor => Xor;
}

/// `atomicCAS(ptr, current, new)`: stores `new` if `*ptr == current`; returns the old value
/// (equal to `current` exactly when the store happened).
///
/// # Safety
/// See the [module documentation](self).
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{atomic, thread};
///
/// /// A lock-free maximum of `u64`s through CUDA's `atomicCAS` loop.
/// ///
/// /// # Safety
/// /// `m` is touched only by atomics during the launch.
/// unsafe fn cas_max(m: *mut u64, v: u64) {
///     let mut cur = unsafe { m.read_volatile() };
///     while cur < v {
///         match unsafe { atomic::compare_exchange(m, cur, v) } {
///             old if old == cur => break, // stored
///             old => cur = old,           // someone else won: retry against their value
///         }
///     }
/// }
/// let mut m = 3u64;
/// unsafe { cas_max(&raw mut m, 8) };
/// assert_eq!(m, 8);
/// ```
#[inline(always)]
pub unsafe fn compare_exchange<T: AtomicInt>(ptr: *mut T, current: T, new: T) -> T {
    // SAFETY: forwarded.
    unsafe { T::__cas(ptr, current, new) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ops_return_the_old_value() {
        let mut x: i32 = 5;
        let p = &raw mut x;
        // SAFETY: `x` is a local accessed only through `p` here.
        unsafe {
            assert_eq!(add(p, 3), 5);
            assert_eq!(sub(p, 1), 8);
            assert_eq!(min(p, -2), 7);
            assert_eq!(max(p, 10), -2);
            assert_eq!(exchange(p, 6), 10);
            assert_eq!(and(p, 3), 6);
            assert_eq!(or(p, 8), 2);
            assert_eq!(xor(p, 1), 10);
            assert_eq!(compare_exchange(p, 0, 1), 11);
            assert_eq!(compare_exchange(p, 11, 1), 11);
        }
        assert_eq!(x, 1);
        let mut y: u64 = u64::MAX;
        // SAFETY: as above.
        unsafe { assert_eq!(add(&raw mut y, 2), u64::MAX) };
        assert_eq!(y, 1);
    }

    #[test]
    fn float_add_from_many_threads() {
        let mut total = 0.0f32;
        let mut total64 = 0.0f64;
        let (p, q) = (&raw mut total as usize, &raw mut total64 as usize);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(move || {
                    for _ in 0..1000 {
                        // SAFETY: both locals outlive the scope and are only accessed
                        // atomically while it runs.
                        unsafe {
                            add(p as *mut f32, 1.0f32);
                            add(q as *mut f64, 0.5f64);
                        }
                    }
                });
            }
        });
        assert_eq!(total, 4000.0);
        assert_eq!(total64, 2000.0);
    }
}
