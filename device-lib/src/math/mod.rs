//! CUDA's math library for kernels: `expf`, `sinf`, `lgamma`, … with CUDA's accuracy.
//!
//! Every function exists for `f32` (CUDA's name, ending in `f`: [`expf`]) and `f64` ([`exp`]).
//! On the GPU each calls NVIDIA's libdevice (`__nv_expf`, …), the bitcode library behind CUDA
//! C's math functions: `nvptx-builder` links it into the device build whenever the kernels
//! call one of its functions, and internalizes it, so the functions inline into the kernels and
//! the unused ones vanish. Results and speed are those of the same line of CUDA C; the
//! accuracy each function documents is CUDA's ("Mathematical Functions" appendix of the CUDA C
//! Programming Guide, as the maximum distance from the correctly rounded result in units in
//! the last place).
//!
//! On the host (the simulator) each function has a twin: the `libm` crate (musl's
//! algorithms, the same results on every host), within the same bounds. The simulator and the
//! GPU agree within the sum of both bounds, not bit for bit (exact functions such as
//! [`floorf`], [`fmodf`], [`sqrtf`] and [`fmaf`] agree exactly).
//!
//! [`fast`] holds the intrinsics (`__expf`, `__sinf`, `__fdividef`, …): single PTX
//! approximate instructions, faster and less accurate. [`Float`] gives methods (`x.exp()`).
//!
//! Rust never contracts `a * b + c` into a fused multiply-add on its own (IEEE semantics),
//! while nvcc and NVRTC do by default (`--fmad=true`). Write [`fmaf`] / [`fma`] where CUDA C
//! would contract, to get the same `fma.rn` instruction and the same results.
//!
//! ```
//! use gpukernel_device::math;
//!
//! assert_eq!(math::fmaf(2.0, 3.0, 1.0), 7.0); // on the host too (the simulator's path)
//! assert_eq!(math::sqrtf(16.0), 4.0);
//! let (s, c) = math::sincosf(0.5);
//! assert!((s * s + c * c - 1.0).abs() <= 2.0 * f32::EPSILON);
//! assert!((math::expf(math::logf(3.0)) - 3.0).abs() <= 4.0 * f32::EPSILON * 3.0);
//! ```

pub mod fast;
mod float;

pub use float::Float;

/// Defines each function of the table twice, for `f32` and `f64`: libdevice on nvptx64, the
/// host twin elsewhere, with a doc example that runs on the host.
macro_rules! math_functions {
    ($(
        $(#[doc = $doc:literal])*
        $f:ident / $d:ident ($($a:ident),+) = $nvf:ident / $nvd:ident, $hf:path | $hd:path;
        bound $bf:literal / $bd:literal;
        example ($($ex:literal),+) => $want:literal;
    )*) => {
        #[cfg(target_arch = "nvptx64")]
        unsafe extern "C" {
            // Pure functions of their arguments, defined by libdevice, which nvptx-builder links
            // into every device build that calls one.
            $(
                safe fn $nvf($($a: f32),+) -> f32;
                safe fn $nvd($($a: f64),+) -> f64;
            )*
        }
        $(
            math_function! { [$($doc)*] $f f32 $nvf, $hf, $bf, ($($a),+) ($($ex),+) $want }
            math_function! { [$($doc)*] $d f64 $nvd, $hd, $bd, ($($a),+) ($($ex),+) $want }
        )*
    };
}

macro_rules! math_function {
    ([$($doc:literal)*] $name:ident $t:ident $nv:ident, $host:path, $bound:literal,
     ($($a:ident),+) ($($ex:literal),+) $want:literal) => {
        $(#[doc = $doc])*
        #[doc = ""]
        #[doc = concat!(
            "Accuracy on the GPU (CUDA's `", stringify!($name), "`, libdevice's `",
            stringify!($nv), "`): ", $bound, "."
        )]
        #[doc = ""]
        #[doc = "```"]
        #[doc = concat!(
            "let y = gpukernel_device::math::", stringify!($name), "(",
            $(stringify!($ex), ", ",)+ ");"
        )]
        #[doc = concat!("let want: ", stringify!($t), " = ", stringify!($want), ";")]
        #[doc = concat!("assert!((y - want).abs() <= 4.0 * ", stringify!($t), "::EPSILON * want.abs());")]
        #[doc = "```"]
        #[inline(always)]
        pub fn $name($($a: $t),+) -> $t {
            #[cfg(target_arch = "nvptx64")]
            {
                $nv($($a),+)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host($($a),+)
            }
        }
    };
}

math_functions! {
    /// The reciprocal square root, `1 / sqrt(x)`.
    rsqrtf / rsqrt (x) = __nv_rsqrtf / __nv_rsqrt, twin::rsqrtf | twin::rsqrt;
    bound "2 ulp (the `rsqrt.approx.f32` instruction)" / "1 ulp";
    example (0.25) => 2.0;
    /// The cube root.
    cbrtf / cbrt (x) = __nv_cbrtf / __nv_cbrt, libm::cbrtf | libm::cbrt;
    bound "1 ulp" / "1 ulp";
    example (27.0) => 3.0;
    /// e raised to `x`.
    expf / exp (x) = __nv_expf / __nv_exp, libm::expf | libm::exp;
    bound "2 ulp" / "1 ulp";
    example (1.0) => 2.718281828459045;
    /// 2 raised to `x`.
    exp2f / exp2 (x) = __nv_exp2f / __nv_exp2, libm::exp2f | libm::exp2;
    bound "2 ulp" / "1 ulp";
    example (0.5) => 1.4142135623730951;
    /// `exp(x) - 1`, accurate for `x` near 0.
    expm1f / expm1 (x) = __nv_expm1f / __nv_expm1, libm::expm1f | libm::expm1;
    bound "1 ulp" / "1 ulp";
    example (0.001) => 0.0010005001667083417;
    /// The natural logarithm.
    logf / log (x) = __nv_logf / __nv_log, libm::logf | libm::log;
    bound "1 ulp" / "1 ulp";
    example (2.0) => 0.6931471805599453;
    /// The base-2 logarithm.
    log2f / log2 (x) = __nv_log2f / __nv_log2, libm::log2f | libm::log2;
    bound "1 ulp" / "1 ulp";
    example (10.0) => 3.321928094887362;
    /// The base-10 logarithm.
    log10f / log10 (x) = __nv_log10f / __nv_log10, libm::log10f | libm::log10;
    bound "2 ulp" / "1 ulp";
    example (2.0) => 0.3010299956639812;
    /// `log(1 + x)`, accurate for `x` near 0.
    log1pf / log1p (x) = __nv_log1pf / __nv_log1p, libm::log1pf | libm::log1p;
    bound "1 ulp" / "1 ulp";
    example (0.001) => 0.0009995003330835331;
    /// `x` raised to `y`.
    powf / pow (x, y) = __nv_powf / __nv_pow, libm::powf | libm::pow;
    bound "4 ulp" / "2 ulp";
    example (2.0, 0.5) => 1.4142135623730951;
    /// The sine (radians).
    sinf / sin (x) = __nv_sinf / __nv_sin, libm::sinf | libm::sin;
    bound "2 ulp" / "2 ulp";
    example (1.0) => 0.8414709848078965;
    /// The cosine (radians).
    cosf / cos (x) = __nv_cosf / __nv_cos, libm::cosf | libm::cos;
    bound "2 ulp" / "2 ulp";
    example (1.0) => 0.5403023058681398;
    /// The tangent (radians).
    tanf / tan (x) = __nv_tanf / __nv_tan, libm::tanf | libm::tan;
    bound "4 ulp" / "2 ulp";
    example (1.0) => 1.5574077246549023;
    /// The arcsine, in [-π/2, π/2].
    asinf / asin (x) = __nv_asinf / __nv_asin, libm::asinf | libm::asin;
    bound "2 ulp" / "2 ulp";
    example (0.5) => 0.5235987755982989;
    /// The arccosine, in [0, π].
    acosf / acos (x) = __nv_acosf / __nv_acos, libm::acosf | libm::acos;
    bound "2 ulp" / "2 ulp";
    example (0.5) => 1.0471975511965979;
    /// The arctangent, in [-π/2, π/2].
    atanf / atan (x) = __nv_atanf / __nv_atan, libm::atanf | libm::atan;
    bound "2 ulp" / "2 ulp";
    example (1.0) => 0.7853981633974483;
    /// The angle of the point (`x`, `y`): the arctangent of `y / x` in the right quadrant.
    atan2f / atan2 (y, x) = __nv_atan2f / __nv_atan2, libm::atan2f | libm::atan2;
    bound "3 ulp" / "2 ulp";
    example (1.0, 2.0) => 0.4636476090008061;
    /// The hyperbolic sine.
    sinhf / sinh (x) = __nv_sinhf / __nv_sinh, libm::sinhf | libm::sinh;
    bound "3 ulp" / "2 ulp";
    example (1.0) => 1.1752011936438014;
    /// The hyperbolic cosine.
    coshf / cosh (x) = __nv_coshf / __nv_cosh, libm::coshf | libm::cosh;
    bound "2 ulp" / "1 ulp";
    example (1.0) => 1.5430806348152437;
    /// The hyperbolic tangent.
    tanhf / tanh (x) = __nv_tanhf / __nv_tanh, libm::tanhf | libm::tanh;
    bound "2 ulp" / "1 ulp";
    example (0.5) => 0.46211715726000974;
    /// The error function.
    erff / erf (x) = __nv_erff / __nv_erf, libm::erff | libm::erf;
    bound "2 ulp" / "2 ulp";
    example (0.5) => 0.5204998778130465;
    /// The complementary error function, `1 - erf(x)`, accurate where `erf(x)` is near 1.
    erfcf / erfc (x) = __nv_erfcf / __nv_erfc, libm::erfcf | libm::erfc;
    bound "4 ulp" / "5 ulp";
    example (0.5) => 0.4795001221869535;
    /// The natural logarithm of the absolute value of the gamma function.
    lgammaf / lgamma (x) = __nv_lgammaf / __nv_lgamma, libm::lgammaf | libm::lgamma;
    bound "6 ulp outside [-10.001, -2.264], larger inside" / "4 ulp outside [-23.0001, -2.2637], larger inside";
    example (0.5) => 0.5723649429247004;
    /// The largest integer not greater than `x`.
    floorf / floor (x) = __nv_floorf / __nv_floor, libm::floorf | libm::floor;
    bound "exact" / "exact";
    example (-1.5) => -2.0;
    /// The smallest integer not less than `x`.
    ceilf / ceil (x) = __nv_ceilf / __nv_ceil, libm::ceilf | libm::ceil;
    bound "exact" / "exact";
    example (-1.5) => -1.0;
    /// The nearest integer, halfway cases away from zero (C's `round`).
    roundf / round (x) = __nv_roundf / __nv_round, libm::roundf | libm::round;
    bound "exact" / "exact";
    example (2.5) => 3.0;
    /// The integer part: `x` rounded toward zero.
    truncf / trunc (x) = __nv_truncf / __nv_trunc, libm::truncf | libm::trunc;
    bound "exact" / "exact";
    example (-2.7) => -2.0;
    /// The absolute value.
    fabsf / fabs (x) = __nv_fabsf / __nv_fabs, libm::fabsf | libm::fabs;
    bound "exact" / "exact";
    example (-3.0) => 3.0;
    /// The smaller argument; if one is NaN, the other.
    fminf / fmin (x, y) = __nv_fminf / __nv_fmin, libm::fminf | libm::fmin;
    bound "exact" / "exact";
    example (1.0, 2.0) => 1.0;
    /// The larger argument; if one is NaN, the other.
    fmaxf / fmax (x, y) = __nv_fmaxf / __nv_fmax, libm::fmaxf | libm::fmax;
    bound "exact" / "exact";
    example (1.0, 2.0) => 2.0;
    /// The remainder of `x / y` rounded toward zero, with the sign of `x` (C's `fmod`).
    fmodf / fmod (x, y) = __nv_fmodf / __nv_fmod, libm::fmodf | libm::fmod;
    bound "exact" / "exact";
    example (5.5, 2.0) => 1.5;
    /// `sqrt(x * x + y * y)` without undue overflow or underflow.
    hypotf / hypot (x, y) = __nv_hypotf / __nv_hypot, libm::hypotf | libm::hypot;
    bound "3 ulp" / "2 ulp";
    example (3.0, 4.0) => 5.0;
    /// The magnitude of `x` with the sign of `y`.
    copysignf / copysign (x, y) = __nv_copysignf / __nv_copysign, libm::copysignf | libm::copysign;
    bound "exact" / "exact";
    example (2.0, -1.0) => -2.0;
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    // Writes its two results through the pointers; defined by libdevice.
    fn __nv_sincosf(x: f32, sin: *mut f32, cos: *mut f32);
    fn __nv_sincos(x: f64, sin: *mut f64, cos: *mut f64);
}

/// The sine and the cosine of `x` (radians), computed together.
///
/// Accuracy on the GPU (CUDA's `sincosf`, libdevice's `__nv_sincosf`): 2 ulp each.
///
/// ```
/// let (s, c) = gpukernel_device::math::sincosf(1.0);
/// assert_eq!((s, c), (gpukernel_device::math::sinf(1.0), gpukernel_device::math::cosf(1.0)));
/// ```
#[inline(always)]
pub fn sincosf(x: f32) -> (f32, f32) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (mut s, mut c) = (0.0, 0.0);
        // SAFETY: both pointers are to live locals; the function writes one f32 through each.
        unsafe { __nv_sincosf(x, &mut s, &mut c) };
        (s, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sincosf(x)
    }
}

/// The sine and the cosine of `x` (radians), computed together.
///
/// Accuracy on the GPU (CUDA's `sincos`, libdevice's `__nv_sincos`): 2 ulp each.
///
/// ```
/// let (s, c) = gpukernel_device::math::sincos(1.0);
/// assert_eq!((s, c), (gpukernel_device::math::sin(1.0), gpukernel_device::math::cos(1.0)));
/// ```
#[inline(always)]
pub fn sincos(x: f64) -> (f64, f64) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (mut s, mut c) = (0.0, 0.0);
        // SAFETY: both pointers are to live locals; the function writes one f64 through each.
        unsafe { __nv_sincos(x, &mut s, &mut c) };
        (s, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sincos(x)
    }
}

/// `a * b + c` rounded once (`fma.rn.f32`), like CUDA's `fmaf`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// assert_eq!(math::fmaf(2.0, 3.0, 1.0), 7.0);
/// // One rounding: the tiny product survives where `a * b + c` loses it.
/// let e = f32::EPSILON;
/// assert_eq!(math::fmaf(1.0 + e, 1.0 - e, -1.0), -e * e);
/// ```
#[inline(always)]
pub fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `a * b + c` rounded once (`fma.rn.f64`), like CUDA's `fma`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// let e = f64::EPSILON;
/// assert_eq!(math::fma(1.0 + e, 1.0 - e, -1.0), -e * e); // (1+e)(1-e) - 1, rounded once
/// ```
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf64(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// The correctly rounded square root (`sqrt.rn.f32`), like CUDA's `sqrtf`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{math, thread};
/// assert_eq!(math::sqrtf(2.25), 1.5);
/// #[kernel]
/// pub fn norms(xy: &[[f32; 2]], mut out: DisjointSlice<f32>) {
///     let i = thread::index();
///     let [x, y] = xy[i.get()];
///     out.set(&i, math::sqrtf(math::fmaf(x, x, y * y)));
/// }
/// ```
#[inline(always)]
pub fn sqrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// The correctly rounded square root (`sqrt.rn.f64`), like CUDA's `sqrt`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// assert_eq!(math::sqrt(6.25), 2.5);
/// assert!(math::sqrt(-1.0).is_nan());
/// ```
#[inline(always)]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Host twins that `libm` lacks.
#[cfg(not(target_arch = "nvptx64"))]
mod twin {
    /// In `f64`, then rounded: within one rounding of the exact value.
    pub(super) fn rsqrtf(x: f32) -> f32 {
        (1.0 / libm::sqrt(f64::from(x))) as f32
    }

    pub(super) fn rsqrt(x: f64) -> f64 {
        1.0 / libm::sqrt(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_multiply_add_rounds_once() {
        let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
        assert_eq!(fmaf(a, b, -1.0), -f32::EPSILON * f32::EPSILON);
        assert_eq!(a * b - 1.0, 0.0);
        let (a, b) = (1.0 + f64::EPSILON, 1.0 - f64::EPSILON);
        assert_eq!(fma(a, b, -1.0), -f64::EPSILON * f64::EPSILON);
        assert_eq!(sqrtf(16.0), 4.0);
        assert_eq!(sqrt(2.0), core::f64::consts::SQRT_2);
    }

    #[test]
    fn special_values_follow_c() {
        assert!(logf(-1.0).is_nan() && log(-1.0).is_nan());
        assert_eq!(logf(0.0), f32::NEG_INFINITY);
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert_eq!(rsqrtf(0.0), f32::INFINITY);
        assert_eq!(rsqrt(f64::INFINITY), 0.0);
        assert_eq!(fminf(f32::NAN, 1.0), 1.0);
        assert_eq!(fmax(2.0, f64::NAN), 2.0);
        assert!(sinf(f32::INFINITY).is_nan());
        assert_eq!(powf(0.0, 0.0), 1.0);
        assert_eq!(copysignf(0.0, -1.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(roundf(-0.5), -1.0);
        assert_eq!(lgamma(1.0), 0.0);
        assert_eq!(erfcf(f32::INFINITY), 0.0);
    }
}
