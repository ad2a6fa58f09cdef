//! Kernels over `gpukernel_device::math`: every math function over an array of inputs (the
//! accuracy tests run them on the GPU and on the simulator and compare), and Black-Scholes
//! option pricing (the math-heavy benchmark).

use gpukernel_device::math::{self, fast};
use gpukernel_device::{prelude::*, thread};

/// Defines the names of a table of functions and `eval(func, a, b)`, which applies function
/// number `func` (its index in the names) to `a` (and `b` for two-argument functions).
macro_rules! function_table {
    ($(#[$m:meta])* $names:ident, fn $eval:ident($a:ident, $b:ident: $t:ty) {
        $($label:literal => $e:expr,)*
    }) => {
        $(#[$m])*
        pub const $names: &[&str] = &[$($label),*];

        /// Applies function number `func` of the table (its index in the names) to the
        /// arguments (one-argument functions ignore the second); NaN for an unknown number.
        #[inline(always)]
        pub fn $eval(func: u32, $a: $t, $b: $t) -> $t {
            let _ = $b;
            let mut n = 0u32;
            $(
                if func == n {
                    return $e;
                }
                n += 1;
            )*
            let _ = n;
            <$t>::NAN
        }
    };
}

function_table! {
    /// The `f32` functions [`math_f32`] computes, by number.
    F32_FUNCTIONS, fn eval_f32(a, b: f32) {
        "sqrtf" => math::sqrtf(a),
        "rsqrtf" => math::rsqrtf(a),
        "cbrtf" => math::cbrtf(a),
        "expf" => math::expf(a),
        "exp2f" => math::exp2f(a),
        "expm1f" => math::expm1f(a),
        "logf" => math::logf(a),
        "log2f" => math::log2f(a),
        "log10f" => math::log10f(a),
        "log1pf" => math::log1pf(a),
        "powf" => math::powf(a, b),
        "sinf" => math::sinf(a),
        "cosf" => math::cosf(a),
        "tanf" => math::tanf(a),
        "sincosf.sin" => math::sincosf(a).0,
        "sincosf.cos" => math::sincosf(a).1,
        "asinf" => math::asinf(a),
        "acosf" => math::acosf(a),
        "atanf" => math::atanf(a),
        "atan2f" => math::atan2f(a, b),
        "sinhf" => math::sinhf(a),
        "coshf" => math::coshf(a),
        "tanhf" => math::tanhf(a),
        "erff" => math::erff(a),
        "erfcf" => math::erfcf(a),
        "lgammaf" => math::lgammaf(a),
        "floorf" => math::floorf(a),
        "ceilf" => math::ceilf(a),
        "roundf" => math::roundf(a),
        "truncf" => math::truncf(a),
        "fabsf" => math::fabsf(a),
        "fminf" => math::fminf(a, b),
        "fmaxf" => math::fmaxf(a, b),
        "fmodf" => math::fmodf(a, b),
        "hypotf" => math::hypotf(a, b),
        "copysignf" => math::copysignf(a, b),
        "fast::expf" => fast::expf(a),
        "fast::exp10f" => fast::exp10f(a),
        "fast::logf" => fast::logf(a),
        "fast::log2f" => fast::log2f(a),
        "fast::log10f" => fast::log10f(a),
        "fast::sinf" => fast::sinf(a),
        "fast::cosf" => fast::cosf(a),
        "fast::fdividef" => fast::fdividef(a, b),
    }
}

function_table! {
    /// The `f64` functions [`math_f64`] computes, by number.
    F64_FUNCTIONS, fn eval_f64(a, b: f64) {
        "sqrt" => math::sqrt(a),
        "rsqrt" => math::rsqrt(a),
        "cbrt" => math::cbrt(a),
        "exp" => math::exp(a),
        "exp2" => math::exp2(a),
        "expm1" => math::expm1(a),
        "log" => math::log(a),
        "log2" => math::log2(a),
        "log10" => math::log10(a),
        "log1p" => math::log1p(a),
        "pow" => math::pow(a, b),
        "sin" => math::sin(a),
        "cos" => math::cos(a),
        "tan" => math::tan(a),
        "sincos.sin" => math::sincos(a).0,
        "sincos.cos" => math::sincos(a).1,
        "asin" => math::asin(a),
        "acos" => math::acos(a),
        "atan" => math::atan(a),
        "atan2" => math::atan2(a, b),
        "sinh" => math::sinh(a),
        "cosh" => math::cosh(a),
        "tanh" => math::tanh(a),
        "erf" => math::erf(a),
        "erfc" => math::erfc(a),
        "lgamma" => math::lgamma(a),
        "floor" => math::floor(a),
        "ceil" => math::ceil(a),
        "round" => math::round(a),
        "trunc" => math::trunc(a),
        "fabs" => math::fabs(a),
        "fmin" => math::fmin(a, b),
        "fmax" => math::fmax(a, b),
        "fmod" => math::fmod(a, b),
        "hypot" => math::hypot(a, b),
        "copysign" => math::copysign(a, b),
    }
}

/// `out[i] = F32_FUNCTIONS[func](x[i], y[i])`.
#[kernel]
pub fn math_f32(func: u32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = eval_f32(func, x[i.get()], y[i.get()]);
    }
}

/// `out[i] = F64_FUNCTIONS[func](x[i], y[i])`.
#[kernel]
pub fn math_f64(func: u32, x: &[f64], y: &[f64], mut out: DisjointSlice<f64>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = eval_f64(func, x[i.get()], y[i.get()]);
    }
}

/// Market parameters shared by every option of a Black-Scholes launch.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Market {
    /// The riskless rate (per year, continuous).
    pub rate: f32,
    /// The volatility (per square root of a year).
    pub volatility: f32,
}

// SAFETY: two f32 fields, `#[repr(C)]`, no padding, no pointers: any bit pattern is valid on
// both sides.
unsafe impl DeviceCopy for Market {}

/// The standard normal distribution function, `erfc(-d / sqrt(2)) / 2` (CUDA's `normcdff`
/// is the same formula).
#[inline(always)]
pub fn normal_cdf(d: f32) -> f32 {
    0.5 * math::erfcf(-d * core::f32::consts::FRAC_1_SQRT_2)
}

/// The Black-Scholes prices of one European call and put: spot `s`, strike `x`, years to
/// expiry `t`. Written with [`math::fmaf`] where CUDA C (`--fmad=true`) contracts the same
/// expression, so that both compute the same instructions.
#[inline(always)]
pub fn black_scholes_one(s: f32, x: f32, t: f32, m: Market) -> (f32, f32) {
    let (r, v) = (m.rate, m.volatility);
    // Method syntax (`math::Float`, from the prelude): `math::sqrtf` on the GPU, `std`'s
    // (equally correctly rounded) `f32::sqrt` on the host.
    let sqrt_t = t.sqrt();
    // (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t)
    let drift = math::fmaf(0.5 * v, v, r);
    let d1 = math::fmaf(drift, t, math::logf(s / x)) / (v * sqrt_t);
    // d1 - v * sqrt_t
    let d2 = math::fmaf(-v, sqrt_t, d1);
    let (n1, n2) = (normal_cdf(d1), normal_cdf(d2));
    let discounted = x * math::expf(-r * t);
    // s * n1 - discounted * n2; discounted * (1 - n2) - s * (1 - n1)
    let call = math::fmaf(s, n1, -(discounted * n2));
    let put = math::fmaf(discounted, 1.0 - n2, -(s * (1.0 - n1)));
    (call, put)
}

/// Black-Scholes prices of European options, one thread per option: `call[i]` and `put[i]`
/// for spot `spot[i]`, strike `strike[i]` and `years[i]` to expiry. The five slices have one
/// length (`same_len`): a launch with unequal lengths is refused on the host
/// (`Error::SameLenViolated`, naming the two parameters), before anything runs.
///
/// The safe idiom at the cost of CUDA C's one test: the typed launch compares the lengths on
/// the host, the kernel knows them equal, so after `k < n` every index is in bounds and the
/// compiler drops the per-element checks; [`DisjointSlice::set`] writes without building an
/// `Option`.
#[kernel(same_len(spot, strike, years, call, put))]
pub fn black_scholes(
    spot: &[f32],
    strike: &[f32],
    years: &[f32],
    market: Market,
    mut call: DisjointSlice<f32>,
    mut put: DisjointSlice<f32>,
) {
    let i = thread::index();
    let k = i.get();
    if k < spot.len() {
        let (c, p) = black_scholes_one(spot[k], strike[k], years[k], market);
        call.set(&i, c);
        put.set(&i, p);
    }
}

/// [`black_scholes`] written as the CUDA C version is: the one-dimensional index, one bounds
/// test, unchecked accesses. The benchmark runs it beside [`black_scholes`] to separate what
/// the compiled math costs from what the safe idiom's checks cost.
///
/// # Safety
/// Launch with a one-dimensional grid and blocks (else two threads share an index), and with
/// `call.len()` and `put.len()` at least `spot.len()`, and `strike.len()` and `years.len()`
/// at least `spot.len()`.
#[kernel]
pub unsafe fn black_scholes_cuda_style(
    spot: &[f32],
    strike: &[f32],
    years: &[f32],
    market: Market,
    call: &mut [f32],
    put: &mut [f32],
) {
    let i = thread::global_index_x();
    if i < spot.len() {
        // SAFETY: i < spot.len() <= every other length (the caller's promise); one thread per
        // index.
        unsafe {
            // Told to the compiler, the promise also says the outputs are not empty, which
            // drops the test an empty `&mut [f32]` parameter otherwise keeps (its pointer may
            // be null; the slice's must not): 8 instructions fewer on sm_90.
            core::hint::assert_unchecked(i < call.len() && i < put.len());
            let (c, p) = black_scholes_one(
                *spot.get_unchecked(i),
                *strike.get_unchecked(i),
                *years.get_unchecked(i),
                market,
            );
            *call.get_unchecked_mut(i) = c;
            *put.get_unchecked_mut(i) = p;
        }
    }
}
