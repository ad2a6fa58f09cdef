//! Method syntax for the math functions: `x.exp()`, `x.sin_cos()`, … on `f32` and `f64`.

use super::*;

/// The math functions as methods, named as `std` names them (`exp`, `ln`, `powf`,
/// `sin_cos`, …), for kernels, which have `core` but not `std`.
///
/// On nvptx64 each method is the function of this module (libdevice). On the host, `std`'s
/// inherent methods of the same names take precedence over a trait's, so there `x.exp()` is
/// `std`'s `f32::exp` (the platform's libm: within the same bounds, not always bit-equal to
/// [`expf`]); `rsqrt`, which `std` lacks, is this trait's. Call the functions ([`expf`],
/// [`logf`], …) where the simulator should compute exactly what the GPU's twin computes.
///
/// The prelude brings the trait into scope without its name (`use
/// gpukernel_device::prelude::*`). `abs`, `min`, `max` and `copysign` are `core`'s own
/// methods; `erf`, `erfc` and `lgamma` are functions only ([`erff`], …), since `std` has
/// unstable methods of those names.
///
/// ```
/// use gpukernel_device::math::Float;
///
/// let x = 0.5f32;
/// assert!((x.exp().ln() - x).abs() <= 2.0 * f32::EPSILON);
/// assert_eq!(Float::rsqrt(4.0f64), 0.5);
/// ```
pub trait Float: Copy {
    /// [`sqrtf`] / [`sqrt`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::sqrt(0.5f32), math::sqrtf(0.5));
    /// ```
    fn sqrt(self) -> Self;
    /// [`rsqrtf`] / [`rsqrt`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::rsqrt(0.5f32), math::rsqrtf(0.5));
    /// ```
    fn rsqrt(self) -> Self;
    /// [`cbrtf`] / [`cbrt`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::cbrt(0.5f32), math::cbrtf(0.5));
    /// ```
    fn cbrt(self) -> Self;
    /// [`expf`] / [`exp`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::exp(0.5f32), math::expf(0.5));
    /// ```
    fn exp(self) -> Self;
    /// [`exp2f`] / [`exp2`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::exp2(0.5f32), math::exp2f(0.5));
    /// ```
    fn exp2(self) -> Self;
    /// [`expm1f`] / [`expm1`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::exp_m1(0.5f32), math::expm1f(0.5));
    /// ```
    fn exp_m1(self) -> Self;
    /// [`logf`] / [`log`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::ln(0.5f32), math::logf(0.5));
    /// ```
    fn ln(self) -> Self;
    /// [`log2f`] / [`log2`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::log2(0.5f32), math::log2f(0.5));
    /// ```
    fn log2(self) -> Self;
    /// [`log10f`] / [`log10`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::log10(0.5f32), math::log10f(0.5));
    /// ```
    fn log10(self) -> Self;
    /// [`log1pf`] / [`log1p`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::ln_1p(0.5f32), math::log1pf(0.5));
    /// ```
    fn ln_1p(self) -> Self;
    /// [`powf`] / [`pow`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::powf(0.5f32, 2.0), math::powf(0.5, 2.0));
    /// ```
    fn powf(self, y: Self) -> Self;
    /// [`sinf`] / [`sin`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::sin(0.5f32), math::sinf(0.5));
    /// ```
    fn sin(self) -> Self;
    /// [`cosf`] / [`cos`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::cos(0.5f32), math::cosf(0.5));
    /// ```
    fn cos(self) -> Self;
    /// [`tanf`] / [`tan`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::tan(0.5f32), math::tanf(0.5));
    /// ```
    fn tan(self) -> Self;
    /// [`sincosf`] / [`sincos`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::sin_cos(0.5f32), math::sincosf(0.5));
    /// ```
    fn sin_cos(self) -> (Self, Self);
    /// [`asinf`] / [`asin`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::asin(0.5f32), math::asinf(0.5));
    /// ```
    fn asin(self) -> Self;
    /// [`acosf`] / [`acos`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::acos(0.5f32), math::acosf(0.5));
    /// ```
    fn acos(self) -> Self;
    /// [`atanf`] / [`atan`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::atan(0.5f32), math::atanf(0.5));
    /// ```
    fn atan(self) -> Self;
    /// [`atan2f`] / [`atan2`]: `self` is `y`.
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::atan2(0.5f32, 2.0), math::atan2f(0.5, 2.0));
    /// ```
    fn atan2(self, x: Self) -> Self;
    /// [`sinhf`] / [`sinh`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::sinh(0.5f32), math::sinhf(0.5));
    /// ```
    fn sinh(self) -> Self;
    /// [`coshf`] / [`cosh`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::cosh(0.5f32), math::coshf(0.5));
    /// ```
    fn cosh(self) -> Self;
    /// [`tanhf`] / [`tanh`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::tanh(0.5f32), math::tanhf(0.5));
    /// ```
    fn tanh(self) -> Self;
    /// [`floorf`] / [`floor`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::floor(0.5f32), math::floorf(0.5));
    /// ```
    fn floor(self) -> Self;
    /// [`ceilf`] / [`ceil`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::ceil(0.5f32), math::ceilf(0.5));
    /// ```
    fn ceil(self) -> Self;
    /// [`roundf`] / [`round`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::round(0.5f32), math::roundf(0.5));
    /// ```
    fn round(self) -> Self;
    /// [`truncf`] / [`trunc`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::trunc(0.5f32), math::truncf(0.5));
    /// ```
    fn trunc(self) -> Self;
    /// [`hypotf`] / [`hypot`].
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::hypot(0.5f32, 2.0), math::hypotf(0.5, 2.0));
    /// ```
    fn hypot(self, y: Self) -> Self;
    /// [`fmaf`] / [`fma`]: `self * a + b`, rounded once.
    ///
    /// ```
    /// use gpukernel_device::math::{self, Float};
    /// assert_eq!(Float::mul_add(0.5f32, 2.0, 1.0), math::fmaf(0.5, 2.0, 1.0));
    /// ```
    fn mul_add(self, a: Self, b: Self) -> Self;
}

macro_rules! impl_float {
    ($t:ty, $sincos:ident: $($m:ident = $f:ident ($($a:ident),*);)*) => {
        impl Float for $t {
            $(
                #[inline(always)]
                fn $m(self $(, $a: $t)*) -> $t {
                    $f(self $(, $a)*)
                }
            )*
            #[inline(always)]
            fn sin_cos(self) -> ($t, $t) {
                $sincos(self)
            }
        }
    };
}

impl_float! { f32, sincosf:
    sqrt = sqrtf(); rsqrt = rsqrtf(); cbrt = cbrtf(); exp = expf(); exp2 = exp2f();
    exp_m1 = expm1f(); ln = logf(); log2 = log2f(); log10 = log10f(); ln_1p = log1pf();
    powf = powf(y); sin = sinf(); cos = cosf(); tan = tanf(); asin = asinf(); acos = acosf();
    atan = atanf(); atan2 = atan2f(x); sinh = sinhf(); cosh = coshf(); tanh = tanhf();
    floor = floorf(); ceil = ceilf(); round = roundf(); trunc = truncf(); hypot = hypotf(y);
    mul_add = fmaf(a, b);
}

impl_float! { f64, sincos:
    sqrt = sqrt(); rsqrt = rsqrt(); cbrt = cbrt(); exp = exp(); exp2 = exp2();
    exp_m1 = expm1(); ln = log(); log2 = log2(); log10 = log10(); ln_1p = log1p();
    powf = pow(y); sin = sin(); cos = cos(); tan = tan(); asin = asin(); acos = acos();
    atan = atan(); atan2 = atan2(x); sinh = sinh(); cosh = cosh(); tanh = tanh();
    floor = floor(); ceil = ceil(); round = round(); trunc = trunc(); hypot = hypot(y);
    mul_add = fma(a, b);
}
