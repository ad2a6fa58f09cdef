//! Reduction operators for the warp and block collectives ([`crate::warp::reduce`],
//! [`crate::block::reduce`], the scans) and the device-wide algorithms: [`Sum`], [`Min`],
//! [`Max`], and any associative function of two values (a closure or a type implementing
//! [`ReduceOp`]).
//!
//! An operator must be **associative**: the collectives combine values in lane and thread
//! order (`op(earlier, later)`) but group them as the hardware suits, so a non-associative
//! operator gives a result that depends on the grouping. It need not be commutative. Floating
//! point addition is associative only up to rounding: a float sum differs from a sequential
//! host sum in the last bits, as CUB's does.
//!
//! ```
//! use gpukernel_device::ops::{Max, ReduceOp, Sum};
//!
//! assert_eq!(Sum.combine(2u32, 3), 5);
//! assert_eq!(Max.combine(-1.5f32, 2.0), 2.0);
//! // A closure is an operator: the larger magnitude, keeping its sign.
//! let absmax = |a: f32, b: f32| if b.abs() > a.abs() { b } else { a };
//! assert_eq!(absmax.combine(-3.0, 2.0), -3.0);
//! ```

mod sealed {
    pub trait Sealed {}
}

/// An associative operator on `T`: `combine(a, b)` with `a` the earlier value (lower lane or
/// thread, lower index).
///
/// Implemented by [`Sum`], [`Min`], [`Max`] for the [`Number`] types and by every
/// `Fn(T, T) -> T + Copy` closure.
///
/// ```
/// use gpukernel_device::ops::ReduceOp;
///
/// /// Bitwise or, as a type.
/// #[derive(Clone, Copy)]
/// struct Or;
/// impl ReduceOp<u32> for Or {
///     fn combine(&self, a: u32, b: u32) -> u32 { a | b }
/// }
/// assert_eq!(Or.combine(0b01, 0b10), 0b11);
/// ```
pub trait ReduceOp<T>: Copy {
    /// `a ⊕ b`, `a` the earlier operand.
    ///
    /// ```
    /// use gpukernel_device::ops::{Min, ReduceOp};
    /// assert_eq!(Min.combine(4u32, 2), 2);
    /// ```
    fn combine(&self, a: T, b: T) -> T;
}

/// An operator with an identity element `e` (`combine(e, x) == x == combine(x, e)`): what the
/// device-wide algorithms start every partial result from, and what an empty input reduces to.
///
/// ```
/// use gpukernel_device::ops::{Identity, Max, Min, Sum};
///
/// assert_eq!(Identity::<i32>::identity(&Sum), 0);
/// assert_eq!(Identity::<f32>::identity(&Min), f32::INFINITY);
/// assert_eq!(Identity::<u64>::identity(&Max), 0);
/// ```
pub trait Identity<T>: ReduceOp<T> {
    /// The identity element.
    ///
    /// ```
    /// use gpukernel_device::ops::{Identity, Max};
    /// assert_eq!(Identity::<i64>::identity(&Max), i64::MIN);
    /// ```
    fn identity(&self) -> T;
}

impl<T, F: Fn(T, T) -> T + Copy> ReduceOp<T> for F {
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// The numbers [`Sum`], [`Min`] and [`Max`] work on: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`.
///
/// Integer sums wrap (as CUDA's and CUB's do); float `min`/`max` ignore a NaN operand (CUDA's
/// `fminf`/`fmaxf`, Rust's `f32::min`).
///
/// ```
/// use gpukernel_device::ops::Number;
///
/// fn zero<T: Number>() -> T { T::ZERO }
/// assert_eq!(zero::<f64>(), 0.0);
/// assert_eq!(u32::MAX.add(1), 0); // wraps
/// ```
pub trait Number: Copy + PartialOrd + sealed::Sealed {
    /// `0`.
    const ZERO: Self;
    /// The least value (`-inf` for floats).
    const LOWEST: Self;
    /// The greatest value (`+inf` for floats).
    const HIGHEST: Self;
    /// `self + other`, wrapping for integers.
    ///
    /// ```
    /// use gpukernel_device::ops::Number;
    /// assert_eq!(Number::add(i32::MAX, 1), i32::MIN);
    /// ```
    fn add(self, other: Self) -> Self;
    /// The smaller of the two (the other one when one is a NaN).
    ///
    /// ```
    /// use gpukernel_device::ops::Number;
    /// assert_eq!(Number::min(f32::NAN, 1.0), 1.0);
    /// ```
    fn min(self, other: Self) -> Self;
    /// The larger of the two (the other one when one is a NaN).
    ///
    /// ```
    /// use gpukernel_device::ops::Number;
    /// assert_eq!(Number::max(2u64, 7), 7);
    /// ```
    fn max(self, other: Self) -> Self;
}

macro_rules! int_number {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl Number for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline(always)]
            fn min(self, other: Self) -> Self { if other < self { other } else { self } }
            #[inline(always)]
            fn max(self, other: Self) -> Self { if other > self { other } else { self } }
        }
    )* };
}
int_number!(u32, i32, u64, i64);

macro_rules! float_number {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl Number for $t {
            const ZERO: Self = 0.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(self, other: Self) -> Self { self + other }
            #[inline(always)]
            fn min(self, other: Self) -> Self { <$t>::min(self, other) }
            #[inline(always)]
            fn max(self, other: Self) -> Self { <$t>::max(self, other) }
        }
    )* };
}
float_number!(f32, f64);

/// Addition (wrapping for integers); identity `0`.
///
/// ```
/// use gpukernel_device::ops::{ReduceOp, Sum};
/// assert_eq!(Sum.combine(1.5f64, 2.0), 3.5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum;

/// The minimum; identity the type's greatest value (`+inf` for floats).
///
/// ```
/// use gpukernel_device::ops::{Min, ReduceOp};
/// assert_eq!(Min.combine(3i64, -4), -4);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Min;

/// The maximum; identity the type's least value (`-inf` for floats).
///
/// ```
/// use gpukernel_device::ops::{Max, ReduceOp};
/// assert_eq!(Max.combine(3u32, 4), 4);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Max;

impl<T: Number> ReduceOp<T> for Sum {
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        a.add(b)
    }
}
impl<T: Number> Identity<T> for Sum {
    #[inline(always)]
    fn identity(&self) -> T {
        T::ZERO
    }
}
impl<T: Number> ReduceOp<T> for Min {
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        a.min(b)
    }
}
impl<T: Number> Identity<T> for Min {
    #[inline(always)]
    fn identity(&self) -> T {
        T::HIGHEST
    }
}
impl<T: Number> ReduceOp<T> for Max {
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        a.max(b)
    }
}
impl<T: Number> Identity<T> for Max {
    #[inline(always)]
    fn identity(&self) -> T {
        T::LOWEST
    }
}
