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
    fn sqrt(self) -> Self;
    /// [`rsqrtf`] / [`rsqrt`].
    fn rsqrt(self) -> Self;
    /// [`cbrtf`] / [`cbrt`].
    fn cbrt(self) -> Self;
    /// [`expf`] / [`exp`].
    fn exp(self) -> Self;
    /// [`exp2f`] / [`exp2`].
    fn exp2(self) -> Self;
    /// [`expm1f`] / [`expm1`].
    fn exp_m1(self) -> Self;
    /// [`logf`] / [`log`].
    fn ln(self) -> Self;
    /// [`log2f`] / [`log2`].
    fn log2(self) -> Self;
    /// [`log10f`] / [`log10`].
    fn log10(self) -> Self;
    /// [`log1pf`] / [`log1p`].
    fn ln_1p(self) -> Self;
    /// [`powf`] / [`pow`].
    fn powf(self, y: Self) -> Self;
    /// [`sinf`] / [`sin`].
    fn sin(self) -> Self;
    /// [`cosf`] / [`cos`].
    fn cos(self) -> Self;
    /// [`tanf`] / [`tan`].
    fn tan(self) -> Self;
    /// [`sincosf`] / [`sincos`].
    fn sin_cos(self) -> (Self, Self);
    /// [`asinf`] / [`asin`].
    fn asin(self) -> Self;
    /// [`acosf`] / [`acos`].
    fn acos(self) -> Self;
    /// [`atanf`] / [`atan`].
    fn atan(self) -> Self;
    /// [`atan2f`] / [`atan2`]: `self` is `y`.
    fn atan2(self, x: Self) -> Self;
    /// [`sinhf`] / [`sinh`].
    fn sinh(self) -> Self;
    /// [`coshf`] / [`cosh`].
    fn cosh(self) -> Self;
    /// [`tanhf`] / [`tanh`].
    fn tanh(self) -> Self;
    /// [`floorf`] / [`floor`].
    fn floor(self) -> Self;
    /// [`ceilf`] / [`ceil`].
    fn ceil(self) -> Self;
    /// [`roundf`] / [`round`].
    fn round(self) -> Self;
    /// [`truncf`] / [`trunc`].
    fn trunc(self) -> Self;
    /// [`hypotf`] / [`hypot`].
    fn hypot(self, y: Self) -> Self;
    /// [`fmaf`] / [`fma`]: `self * a + b`, rounded once.
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
