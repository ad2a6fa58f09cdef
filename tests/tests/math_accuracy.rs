//! Accuracy of `gpukernel_device::math`: every function over random inputs and edge cases
//! (±0, ±inf, NaN, subnormals, large arguments), measured in ulp against a reference and
//! checked against CUDA's documented bounds (CUDA C Programming Guide, "Mathematical
//! Functions"). The maximum ulp distance of each function is printed (`--nocapture`).
//!
//! * The host twins (what the simulator computes), called directly: `f32` functions against
//!   the `f64` function (an exact-enough reference at `f32` precision), `f64` functions
//!   against the platform's C library (an independent implementation, itself within about
//!   1-2 ulp, so the check allows its error too).
//! * On every test device (the simulator; with the `gpu` feature the GPU too), the kernels
//!   `math_f32` / `math_f64` over the same inputs: the same checks against the reference, and
//!   the GPU against the simulator within the sum of both bounds.

use ffi_examples_kernels::math_kernels::{
    F32_FUNCTIONS, F64_FUNCTIONS, eval_f32, eval_f64, math_f32, math_f64,
};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Kernel, LaunchConfig, Module};
use gpukernel_tests::{Rng, devices};

/// How far a result may be from the exact value, at one input.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tol {
    /// At most this many ulp (fractional, against the exact value: CUDA's bound + 0.5).
    Ulp(f64),
    /// At most this absolute error.
    Abs(f64),
    /// Not bounded here (CUDA documents no bound for this input).
    Unbounded,
}

/// CUDA's bound for function `name` at (`x`, `y`), in the caller's precision.
fn cuda_bound(name: &str, x: f64, y: f64) -> Tol {
    use Tol::*;
    let in_unit = (0.5..=2.0).contains(&x);
    let ulp = |n: f64| Ulp(n);
    match name {
        // Measured on an H100 (CUDA 13.0): libdevice's `__nv_hypot` returns infinity when
        // the larger argument is `f64::MAX` (the exact result rounds to `f64::MAX`).
        "hypot" if x.abs().max(y.abs()) > f64::MAX / 2.0 => Unbounded,
        "sqrtf" | "sqrt" | "floorf" | "floor" | "ceilf" | "ceil" | "roundf" | "round"
        | "truncf" | "trunc" | "fabsf" | "fabs" | "fminf" | "fmin" | "fmaxf" | "fmax" | "fmodf"
        | "fmod" | "copysignf" | "copysign" => ulp(0.0),
        "rsqrtf" => ulp(2.0),
        "rsqrt" | "cbrtf" | "cbrt" | "exp" | "exp2" | "expm1f" | "expm1" | "logf" | "log"
        | "log2f" | "log2" | "log10" | "log1pf" | "log1p" | "cosh" | "tanh" => ulp(1.0),
        "expf" | "exp2f" | "log10f" | "sinf" | "cosf" | "sincosf.sin" | "sincosf.cos" | "asinf"
        | "acosf" | "atanf" | "coshf" | "tanhf" | "erff" | "pow" | "sin" | "cos" | "tan"
        | "sincos.sin" | "sincos.cos" | "asin" | "acos" | "atan" | "atan2" | "sinh" | "erf"
        | "hypot" => ulp(2.0),
        "atan2f" | "sinhf" | "hypotf" => ulp(3.0),
        "powf" | "tanf" | "erfcf" => ulp(4.0),
        "erfc" => ulp(5.0),
        "lgammaf" if (-10.001..=-2.264).contains(&x) => Unbounded,
        "lgammaf" => ulp(6.0),
        "lgamma" if (-23.0001..=-2.2637).contains(&x) => Unbounded,
        "lgamma" => ulp(4.0),
        "fast::expf" | "fast::exp10f" if !x.is_finite() => ulp(2.0),
        "fast::expf" => ulp(2.0 + (1.173 * x).abs().floor()),
        "fast::exp10f" => ulp(2.0 + (2.97 * x).abs().floor()),
        "fast::logf" if in_unit => Abs(2f64.powf(-21.41)),
        "fast::log2f" if in_unit => Abs(2f64.powf(-22.0)),
        "fast::log2f" => ulp(2.0),
        "fast::log10f" if in_unit => Abs(2f64.powf(-24.0)),
        "fast::logf" | "fast::log10f" => ulp(3.0),
        "fast::sinf" if x.abs() <= core::f64::consts::PI => Abs(2f64.powf(-21.41)),
        "fast::cosf" if x.abs() <= core::f64::consts::PI => Abs(2f64.powf(-21.19)),
        "fast::sinf" | "fast::cosf" => Unbounded,
        "fast::fdividef" if (2f64.powi(-126)..=2f64.powi(126)).contains(&y.abs()) => ulp(2.0),
        "fast::fdividef" => Unbounded,
        other => panic!("no accuracy bound known for `{other}`"),
    }
}

/// The exact-enough value of `f32` function `name` at (`x`, `y`): its `f64` twin.
fn reference_f32(name: &str, x: f64, y: f64) -> f64 {
    let f64_name = match name {
        "fast::expf" => "exp",
        "fast::exp10f" => return libm::exp10(x),
        "fast::logf" => "log",
        "fast::log2f" => "log2",
        "fast::log10f" => "log10",
        "fast::sinf" => "sin",
        "fast::cosf" => "cos",
        "fast::fdividef" => return x / y,
        n => n.strip_suffix('f').unwrap_or(n),
    };
    let f64_name = f64_name.replace("sincosf", "sincos");
    let i = F64_FUNCTIONS
        .iter()
        .position(|n| *n == f64_name)
        .unwrap_or_else(|| panic!("no f64 twin `{f64_name}` for `{name}`"));
    eval_f64(i as u32, x, y)
}

mod c {
    // The platform's C math library (glibc on Linux), which std already links.
    unsafe extern "C" {
        pub safe fn cbrt(x: f64) -> f64;
        pub safe fn exp(x: f64) -> f64;
        pub safe fn exp2(x: f64) -> f64;
        pub safe fn expm1(x: f64) -> f64;
        pub safe fn log(x: f64) -> f64;
        pub safe fn log2(x: f64) -> f64;
        pub safe fn log10(x: f64) -> f64;
        pub safe fn log1p(x: f64) -> f64;
        pub safe fn pow(x: f64, y: f64) -> f64;
        pub safe fn sin(x: f64) -> f64;
        pub safe fn cos(x: f64) -> f64;
        pub safe fn tan(x: f64) -> f64;
        pub safe fn asin(x: f64) -> f64;
        pub safe fn acos(x: f64) -> f64;
        pub safe fn atan(x: f64) -> f64;
        pub safe fn atan2(y: f64, x: f64) -> f64;
        pub safe fn sinh(x: f64) -> f64;
        pub safe fn cosh(x: f64) -> f64;
        pub safe fn tanh(x: f64) -> f64;
        pub safe fn erf(x: f64) -> f64;
        pub safe fn erfc(x: f64) -> f64;
        pub safe fn lgamma(x: f64) -> f64;
        pub safe fn floor(x: f64) -> f64;
        pub safe fn ceil(x: f64) -> f64;
        pub safe fn round(x: f64) -> f64;
        pub safe fn trunc(x: f64) -> f64;
        pub safe fn fmin(x: f64, y: f64) -> f64;
        pub safe fn fmax(x: f64, y: f64) -> f64;
        pub safe fn fmod(x: f64, y: f64) -> f64;
        pub safe fn hypot(x: f64, y: f64) -> f64;
    }
}

/// The platform C library's value of `f64` function `name` (an independent implementation).
fn reference_f64(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "sqrt" => x.sqrt(),
        "rsqrt" => 1.0 / x.sqrt(),
        "cbrt" => c::cbrt(x),
        "exp" => c::exp(x),
        "exp2" => c::exp2(x),
        "expm1" => c::expm1(x),
        "log" => c::log(x),
        "log2" => c::log2(x),
        "log10" => c::log10(x),
        "log1p" => c::log1p(x),
        "pow" => c::pow(x, y),
        "sin" | "sincos.sin" => c::sin(x),
        "cos" | "sincos.cos" => c::cos(x),
        "tan" => c::tan(x),
        "asin" => c::asin(x),
        "acos" => c::acos(x),
        "atan" => c::atan(x),
        "atan2" => c::atan2(x, y),
        "sinh" => c::sinh(x),
        "cosh" => c::cosh(x),
        "tanh" => c::tanh(x),
        "erf" => c::erf(x),
        "erfc" => c::erfc(x),
        "lgamma" => c::lgamma(x),
        "floor" => c::floor(x),
        "ceil" => c::ceil(x),
        "round" => c::round(x),
        "trunc" => c::trunc(x),
        "fabs" => x.abs(),
        "fmin" => c::fmin(x, y),
        "fmax" => c::fmax(x, y),
        "fmod" => c::fmod(x, y),
        "hypot" => c::hypot(x, y),
        "copysign" => x.copysign(y),
        other => panic!("no reference for `{other}`"),
    }
}

/// The distance of `got` from `want` in units of the last place of `want` at a precision of
/// `mantissa` bits with smallest exponent `min_exp` (fractional; 0 for equal values, NaN and
/// NaN, or equal infinities; infinite for a NaN or infinity against anything else).
fn ulp_distance(got: f64, want: f64, mantissa: i32, min_exp: i32, max: f64) -> f64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got == want {
        return 0.0;
    }
    if got.is_infinite() {
        // `want` beyond the largest finite value rounds to this infinity.
        return if want.abs() > max && want.signum() == got.signum() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() {
        return f64::INFINITY;
    }
    let mag = want.abs().min(max);
    let exp = if mag == 0.0 {
        min_exp
    } else {
        (mag.log2().floor() as i32).max(min_exp)
    };
    (got - want).abs() / libm::ldexp(1.0, exp - mantissa)
}

fn ulp32(got: f32, want: f64) -> f64 {
    ulp_distance(f64::from(got), want, 23, -126, f64::from(f32::MAX))
}

fn ulp64(got: f64, want: f64) -> f64 {
    ulp_distance(got, want, 52, -1022, f64::MAX)
}

/// Whether `got` is within `tol` of `want` (`ulp` its distance in ulp).
fn within(tol: Tol, got: f64, want: f64, ulp: f64) -> bool {
    match tol {
        Tol::Ulp(n) => ulp <= n,
        Tol::Abs(a) => ulp == 0.0 || (got - want).abs() <= a,
        Tol::Unbounded => true,
    }
}

const EDGES_F32: &[f32] = &[
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-45,
    -1e-45,
    1.0e-40,
    f32::MIN_POSITIVE,
    1.0,
    -1.0,
    0.5,
    2.0,
    -2.5,
    3.0,
    10.0,
    88.7,
    -103.0,
    1e5,
    -1e5,
    1e30,
    -1e30,
    f32::MAX,
    f32::MIN,
    core::f32::consts::PI,
    -core::f32::consts::FRAC_PI_2,
    0.999_999_9,
];

/// Random inputs over the magnitudes that matter (log-uniform, both signs) and over
/// [-4, 4], plus every edge case, and every pair of edge cases for two arguments.
fn inputs(rng: &mut Rng, n: usize, edges: &[f64], max_exp: i32) -> (Vec<f64>, Vec<f64>) {
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut uniform = |rng: &mut Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    for k in 0..n {
        let sign = |rng: &mut Rng| if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        let draw = |rng: &mut Rng, u: &mut dyn FnMut(&mut Rng) -> f64| {
            if k % 2 == 0 {
                sign(rng) * 2f64.powf((u(rng) * 2.0 - 1.0) * f64::from(max_exp))
            } else {
                (u(rng) * 2.0 - 1.0) * 4.0
            }
        };
        x.push(draw(rng, &mut uniform));
        y.push(draw(rng, &mut uniform));
    }
    for &a in edges {
        for &b in edges {
            x.push(a);
            y.push(b);
        }
    }
    (x, y)
}

/// Per function: the largest ulp distance where a bound applies, and the failures.
#[derive(Debug, Default)]
struct Report {
    max_ulp: f64,
    /// The largest absolute error where the bound is absolute.
    max_abs: Option<f64>,
    checked: usize,
    failures: Vec<String>,
}

impl Report {
    fn note(&mut self, tol: Tol, got: f64, want: f64, ulp: f64, what: impl FnOnce() -> String) {
        if tol == Tol::Unbounded {
            return;
        }
        self.checked += 1;
        match tol {
            Tol::Abs(_) if ulp.is_finite() => {
                let e = (got - want).abs();
                self.max_abs = Some(self.max_abs.map_or(e, |m| m.max(e)));
            }
            _ => self.max_ulp = self.max_ulp.max(ulp),
        }
        if !within(tol, got, want, ulp) && self.failures.len() < 5 {
            self.failures.push(what());
        }
    }
}

/// Prints one table of reports and returns every failure, named.
fn finish(title: &str, names: &[&str], reports: &[Report]) -> Vec<String> {
    eprintln!(
        "{title}\n| function | max ulp | max abs error (where CUDA bounds it so) | inputs checked |"
    );
    let mut failed = Vec::new();
    for (name, r) in names.iter().zip(reports) {
        let abs = r.max_abs.map_or(String::new(), |e| format!("{e:.2e}"));
        eprintln!("| {name} | {:.2} | {abs} | {} |", r.max_ulp, r.checked);
        failed.extend(r.failures.iter().map(|f| format!("{name}: {f}")));
    }
    failed.iter().map(|f| format!("{title}: {f}")).collect()
}

fn f32_inputs(rng: &mut Rng) -> (Vec<f32>, Vec<f32>) {
    let edges: Vec<f64> = EDGES_F32.iter().map(|&e| f64::from(e)).collect();
    let (x, y) = inputs(rng, 4096, &edges, 40);
    (
        x.iter().map(|&v| v as f32).collect(),
        y.iter().map(|&v| v as f32).collect(),
    )
}

fn f64_inputs(rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let mut edges: Vec<f64> = EDGES_F32.iter().map(|&e| f64::from(e)).collect();
    edges.extend([
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        709.7,
        -745.0,
        1e300,
        f64::MAX,
        f64::MIN,
    ]);
    inputs(rng, 4096, &edges, 300)
}

/// Checks `f32` results `got[func][i]` against the reference.
fn check_f32(title: &str, x: &[f32], y: &[f32], got: &[Vec<f32>]) -> Vec<String> {
    let mut reports = Vec::new();
    for (func, name) in F32_FUNCTIONS.iter().enumerate() {
        let mut r = Report::default();
        for i in 0..x.len() {
            let (a, b) = (f64::from(x[i]), f64::from(y[i]));
            let want = reference_f32(name, a, b);
            let g = got[func][i];
            let tol = match cuda_bound(name, a, b) {
                Tol::Ulp(n) => Tol::Ulp(n + 0.5),
                t => t,
            };
            r.note(tol, f64::from(g), want, ulp32(g, want), || {
                format!(
                    "at ({a:e}, {b:e}) got {g:e}, exact {want:e}: {:.2} ulp > {tol:?}",
                    ulp32(g, want)
                )
            });
        }
        reports.push(r);
    }
    finish(title, F32_FUNCTIONS, &reports)
}

/// Checks `f64` results against the platform's C library, allowing its own error (2 ulp).
fn check_f64(title: &str, x: &[f64], y: &[f64], got: &[Vec<f64>]) -> Vec<String> {
    let mut reports = Vec::new();
    for (func, name) in F64_FUNCTIONS.iter().enumerate() {
        let mut r = Report::default();
        for i in 0..x.len() {
            let want = reference_f64(name, x[i], y[i]);
            let g = got[func][i];
            let tol = match cuda_bound(name, x[i], y[i]) {
                Tol::Ulp(0.0) => Tol::Ulp(0.0),
                Tol::Ulp(n) => Tol::Ulp(n + 2.0),
                t => t,
            };
            r.note(tol, g, want, ulp64(g, want), || {
                format!(
                    "at ({:e}, {:e}) got {g:e}, C library {want:e}: {:.2} ulp > {tol:?}",
                    x[i],
                    y[i],
                    ulp64(g, want)
                )
            });
        }
        reports.push(r);
    }
    finish(title, F64_FUNCTIONS, &reports)
}

#[test]
fn host_twins_are_within_cuda_bounds() {
    let mut rng = Rng::from_env("math host twins");
    let (x, y) = f32_inputs(&mut rng);
    let got: Vec<Vec<f32>> = (0..F32_FUNCTIONS.len())
        .map(|f| {
            x.iter()
                .zip(&y)
                .map(|(&a, &b)| eval_f32(f as u32, a, b))
                .collect()
        })
        .collect();
    let mut failed = check_f32("f32 host twins vs the f64 functions", &x, &y, &got);
    let (x, y) = f64_inputs(&mut rng);
    let got: Vec<Vec<f64>> = (0..F64_FUNCTIONS.len())
        .map(|f| {
            x.iter()
                .zip(&y)
                .map(|(&a, &b)| eval_f64(f as u32, a, b))
                .collect()
        })
        .collect();
    failed.extend(check_f64(
        "f64 host twins vs the platform's C library",
        &x,
        &y,
        &got,
    ));
    assert!(failed.is_empty(), "out of bounds:\n{}", failed.join("\n"));
}

#[test]
fn the_ulp_distance_is_measured_in_the_reference_precision() {
    assert_eq!(ulp32(1.0, 1.0), 0.0);
    assert_eq!(ulp32(1.0 + f32::EPSILON, 1.0), 1.0);
    assert_eq!(ulp32(f32::NAN, f64::NAN), 0.0);
    assert_eq!(ulp32(f32::INFINITY, 1e39), 0.0);
    assert_eq!(ulp32(f32::INFINITY, -1e39), f64::INFINITY);
    assert_eq!(ulp32(1e-45, 0.0), 1.0);
    assert_eq!(ulp64(2.0, 2.0 + 2.0 * f64::EPSILON), 1.0);
    assert!(!within(Tol::Ulp(2.5), 0.0, 0.0, 3.0));
    assert!(within(Tol::Abs(1e-6), 0.5, 0.5000001, 1e9));
}

fn math_module(ctx: &Context) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(
                ffi_examples_kernels::PTX,
                "kernels.ptx",
                &[math_f32::NAME, math_f64::NAME],
            )
            .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking the math kernels failed: {e}"))
}

/// Every device's results for every function: `[device][func][input]`.
fn run_on_devices<T: gpukernel_device::DeviceCopy + Copy + Default>(
    x: &[T],
    y: &[T],
    count: usize,
    launch: impl Fn(&Context, &Module, u32, &[T], &[T]) -> Vec<T>,
) -> Vec<(String, Vec<Vec<T>>)> {
    devices()
        .into_iter()
        .map(|(name, ctx)| {
            let module = math_module(&ctx);
            let got = (0..count as u32)
                .map(|f| launch(&ctx, &module, f, x, y))
                .collect();
            (name, got)
        })
        .collect()
}

#[test]
fn device_math_is_within_cuda_bounds_and_agrees_with_the_simulator() {
    let mut rng = Rng::from_env("math on devices");
    let (x, y) = f32_inputs(&mut rng);
    let runs32 = run_on_devices(&x, &y, F32_FUNCTIONS.len(), |ctx, m, f, x, y| {
        let k = m.kernel(math_f32).unwrap();
        let (dx, dy) = (ctx.htod_copy(x).unwrap(), ctx.htod_copy(y).unwrap());
        let mut out = ctx.default_stream().alloc_zeros::<f32>(x.len()).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(x.len()).unwrap(),
                (f, &dx, &dy, &mut out),
            )
            .unwrap();
        out.to_host_vec().unwrap()
    });
    let (x64, y64) = f64_inputs(&mut rng);
    let runs64 = run_on_devices(&x64, &y64, F64_FUNCTIONS.len(), |ctx, m, f, x, y| {
        let k = m.kernel(math_f64).unwrap();
        let (dx, dy) = (ctx.htod_copy(x).unwrap(), ctx.htod_copy(y).unwrap());
        let mut out = ctx.default_stream().alloc_zeros::<f64>(x.len()).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(x.len()).unwrap(),
                (f, &dx, &dy, &mut out),
            )
            .unwrap();
        out.to_host_vec().unwrap()
    });
    // Every check runs and reports before the test fails.
    let mut failed = Vec::new();
    for (dev, got) in &runs32 {
        failed.extend(check_f32(
            &format!("f32 on {dev} vs the f64 functions"),
            &x,
            &y,
            got,
        ));
    }
    for (dev, got) in &runs64 {
        failed.extend(check_f64(
            &format!("f64 on {dev} vs the platform's C library"),
            &x64,
            &y64,
            got,
        ));
    }
    // The simulator runs the host twins, unchanged by the launch.
    let (sim, sim64) = (&runs32[0].1, &runs64[0].1);
    for (f, results) in sim.iter().enumerate() {
        let twin: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| eval_f32(f as u32, a, b))
            .collect();
        assert!(
            results
                .iter()
                .zip(&twin)
                .all(|(g, t)| g.to_bits() == t.to_bits() || g.is_nan() && t.is_nan()),
            "the simulator's {} differs from the host twin",
            F32_FUNCTIONS[f]
        );
    }
    for (f, results) in sim64.iter().enumerate() {
        let twin: Vec<f64> = x64
            .iter()
            .zip(&y64)
            .map(|(&a, &b)| eval_f64(f as u32, a, b))
            .collect();
        assert!(
            results
                .iter()
                .zip(&twin)
                .all(|(g, t)| g.to_bits() == t.to_bits() || g.is_nan() && t.is_nan()),
            "the simulator's {} differs from the host twin",
            F64_FUNCTIONS[f]
        );
    }
    // Each other device against the simulator: within the sum of both bounds.
    for (dev, got) in runs32.iter().skip(1) {
        let mut reports = Vec::new();
        for (f, name) in F32_FUNCTIONS.iter().enumerate() {
            let mut r = Report::default();
            for i in 0..x.len() {
                let (a, b) = (f64::from(x[i]), f64::from(y[i]));
                let tol = match cuda_bound(name, a, b) {
                    Tol::Ulp(0.0) => Tol::Ulp(0.0),
                    Tol::Ulp(n) => Tol::Ulp(2.0 * n + 1.0),
                    Tol::Abs(e) => Tol::Abs(2.0 * e),
                    t => t,
                };
                let (g, s) = (got[f][i], sim[f][i]);
                let u = ulp32(g, f64::from(s));
                r.note(tol, f64::from(g), f64::from(s), u, || {
                    format!("at ({a:e}, {b:e}) {dev} {g:e}, simulator {s:e}: {u:.2} ulp > {tol:?}")
                });
            }
            reports.push(r);
        }
        failed.extend(finish(
            &format!("f32 on {dev} vs the simulator"),
            F32_FUNCTIONS,
            &reports,
        ));
    }
    for (dev, got) in runs64.iter().skip(1) {
        let mut reports = Vec::new();
        for (f, name) in F64_FUNCTIONS.iter().enumerate() {
            let mut r = Report::default();
            for i in 0..x64.len() {
                let tol = match cuda_bound(name, x64[i], y64[i]) {
                    Tol::Ulp(0.0) => Tol::Ulp(0.0),
                    Tol::Ulp(n) => Tol::Ulp(2.0 * n + 1.0),
                    t => t,
                };
                let (g, s) = (got[f][i], sim64[f][i]);
                let u = ulp64(g, s);
                r.note(tol, g, s, u, || {
                    format!(
                        "at ({:e}, {:e}) {dev} {g:e}, simulator {s:e}: {u:.2} ulp > {tol:?}",
                        x64[i], y64[i]
                    )
                });
            }
            reports.push(r);
        }
        failed.extend(finish(
            &format!("f64 on {dev} vs the simulator"),
            F64_FUNCTIONS,
            &reports,
        ));
    }
    assert!(failed.is_empty(), "out of bounds:\n{}", failed.join("\n"));
}

/// The build linked libdevice in and inlined it: the PTX declares no `__nv_*` function, asks
/// no `__nvvm_reflect` question, no kernel calls an `__nv_*` function (libdevice's own
/// out-of-line slow paths, `__internal_*`, stay calls, as in CUDA C), Black-Scholes written
/// CUDA-style calls nothing at all, and in the safe idiom only the panic of its one length
/// assertion (no bounds check is left).
#[test]
fn libdevice_is_linked_in_and_inlined() {
    let ptx = ffi_examples_kernels::PTX;
    assert!(
        !ptx.lines()
            .any(|l| l.contains(".extern") && l.contains("__nv")),
        "a libdevice function is left undefined in the PTX"
    );
    assert!(!ptx.contains("__nvvm_reflect"));
    let calls = |kernel: &str| -> Vec<String> {
        let start = ptx
            .find(&format!(".entry {kernel}("))
            .unwrap_or_else(|| panic!("no entry {kernel} in the PTX"));
        let body = &ptx[start..];
        let body = &body[..body.find("\n}").expect("the entry's closing brace")];
        body.lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("call"))
            .map(String::from)
            .collect()
    };
    for kernel in [math_f32::NAME, math_f64::NAME, "black_scholes"] {
        let nv: Vec<_> = calls(kernel)
            .into_iter()
            .filter(|c| c.contains("__nv_"))
            .collect();
        assert!(nv.is_empty(), "{kernel} calls libdevice: {nv:?}");
    }
    assert_eq!(calls("black_scholes_cuda_style"), Vec::<String>::new());
    // The safe kernel's lengths are checked on the host (`same_len`), so it indexes without a
    // bounds check: no call (no panic path) is left.
    assert_eq!(calls("black_scholes"), Vec::<String>::new());
}
