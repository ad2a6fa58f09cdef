//! CUDA's fast intrinsics (`__expf`, `__logf`, `__sinf`, `__fdividef`, …): one approximate PTX
//! instruction each (`ex2.approx`, `lg2.approx`, `sin.approx`, `div.approx`), with a scaling
//! multiply where the base differs. Faster than [`super`]'s functions, less accurate, and
//! with their own bounds (CUDA C Programming Guide, "Intrinsic Functions"), stated on each.
//!
//! Their simulator twins compute the same formula (the same `f32` scaling constant, then an
//! accurate `exp2f`/`log2f`/`sinf`); the GPU's instruction adds its own approximation error.
//!
//! ```
//! use gpukernel_device::math::fast;
//!
//! let y = fast::expf(1.0);
//! assert!((y - core::f32::consts::E).abs() <= 4.0 * f32::EPSILON * core::f32::consts::E);
//! assert_eq!(fast::fdividef(1.0, 4.0), 0.25);
//! ```

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    // Pure functions of their arguments, defined by libdevice (linked by nvptx-builder).
    safe fn __nv_fast_expf(x: f32) -> f32;
    safe fn __nv_fast_exp10f(x: f32) -> f32;
    safe fn __nv_fast_logf(x: f32) -> f32;
    safe fn __nv_fast_log2f(x: f32) -> f32;
    safe fn __nv_fast_log10f(x: f32) -> f32;
    safe fn __nv_fast_sinf(x: f32) -> f32;
    safe fn __nv_fast_cosf(x: f32) -> f32;
    safe fn __nv_fast_fdividef(x: f32, y: f32) -> f32;
}

macro_rules! fast {
    ($(#[$doc:meta])* $name:ident ($($a:ident),+) = $nv:ident, $host:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($($a: f32),+) -> f32 {
            #[cfg(target_arch = "nvptx64")]
            {
                $nv($($a),+)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host
            }
        }
    };
}

fast! {
    /// e raised to `x`, as `ex2.approx(x * log2(e))` (CUDA's `__expf`). Maximum error
    /// `2 + floor(|1.173 x|)` ulp.
    ///
    /// ```
    /// assert!((gpukernel_device::math::fast::expf(0.0) - 1.0).abs() <= f32::EPSILON);
    /// ```
    expf(x) = __nv_fast_expf, libm::exp2f(x * core::f32::consts::LOG2_E)
}

fast! {
    /// 10 raised to `x`, as `ex2.approx(x * log2(10))` (CUDA's `__exp10f`). Maximum error
    /// `2 + floor(|2.97 x|)` ulp.
    ///
    /// ```
    /// assert!((gpukernel_device::math::fast::exp10f(2.0) - 100.0).abs() <= 1e-4);
    /// ```
    exp10f(x) = __nv_fast_exp10f, libm::exp2f(x * core::f32::consts::LOG2_10)
}

fast! {
    /// The natural logarithm, as `lg2.approx(x) * ln(2)` (CUDA's `__logf`). For `x` in
    /// [0.5, 2] the absolute error is at most 2^-21.41, elsewhere 3 ulp.
    ///
    /// ```
    /// assert!(gpukernel_device::math::fast::logf(1.0).abs() <= 1e-6);
    /// ```
    logf(x) = __nv_fast_logf, libm::log2f(x) * core::f32::consts::LN_2
}

fast! {
    /// The base-2 logarithm, `lg2.approx(x)` (CUDA's `__log2f`). For `x` in [0.5, 2] the
    /// absolute error is at most 2^-22, elsewhere 2 ulp.
    ///
    /// ```
    /// assert_eq!(gpukernel_device::math::fast::log2f(8.0), 3.0);
    /// ```
    log2f(x) = __nv_fast_log2f, libm::log2f(x)
}

fast! {
    /// The base-10 logarithm, as `lg2.approx(x) * log10(2)` (CUDA's `__log10f`). For `x` in
    /// [0.5, 2] the absolute error is at most 2^-24, elsewhere 3 ulp.
    ///
    /// ```
    /// assert!((gpukernel_device::math::fast::log10f(100.0) - 2.0).abs() <= 1e-6);
    /// ```
    log10f(x) = __nv_fast_log10f, libm::log2f(x) * core::f32::consts::LOG10_2
}

fast! {
    /// The sine, `sin.approx` (CUDA's `__sinf`). For `x` in [-π, π] the absolute error is at
    /// most 2^-21.41; outside it grows (no accurate range reduction).
    ///
    /// ```
    /// assert!(gpukernel_device::math::fast::sinf(0.0).abs() <= 1e-6);
    /// ```
    sinf(x) = __nv_fast_sinf, libm::sinf(x)
}

fast! {
    /// The cosine, `cos.approx` (CUDA's `__cosf`). For `x` in [-π, π] the absolute error is
    /// at most 2^-21.19; outside it grows (no accurate range reduction).
    ///
    /// ```
    /// assert!((gpukernel_device::math::fast::cosf(0.0) - 1.0).abs() <= 1e-6);
    /// ```
    cosf(x) = __nv_fast_cosf, libm::cosf(x)
}

fast! {
    /// `x / y` as `x * (1 / y)` with an approximate reciprocal, `div.approx.f32` (CUDA's
    /// `__fdividef`). For 2^-126 <= |y| <= 2^126 the error is at most 2 ulp; for
    /// 2^126 < |y| < 2^128 the result is 0 (NaN when `x` is infinite).
    ///
    /// ```
    /// use gpukernel_device::math::fast::fdividef;
    /// assert_eq!(fdividef(3.0, 2.0), 1.5);
    /// assert_eq!(fdividef(1.0, 1e38), 0.0);
    /// ```
    fdividef(x, y) = __nv_fast_fdividef, fdividef_twin(x, y)
}

/// `div.approx.f32`'s behaviour: 0 for 2^126 < |y| < 2^128 (NaN for an infinite `x`),
/// else `x * (1 / y)`.
#[cfg(not(target_arch = "nvptx64"))]
fn fdividef_twin(x: f32, y: f32) -> f32 {
    const HUGE: f32 = 8.507_059e37; // 2^126
    if y.is_finite() && y.abs() > HUGE {
        if x.is_finite() { 0.0 } else { f32::NAN }
    } else {
        x * (1.0 / y)
    }
}
