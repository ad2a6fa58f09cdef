//! Benchmark of a math-heavy kernel on a CUDA device: Black-Scholes option pricing (a
//! logarithm, an exponential, a square root and two complementary error functions per
//! option) in Rust with `gpukernel_device::math` (libdevice, linked and inlined at build time)
//! next to the same kernel in CUDA C compiled by NVRTC in this process with its defaults
//! (`--fmad=true`, `-prec-div=true`, `-prec-sqrt=true`, `-ftz=false`, the device's
//! architecture). The Rust kernels write `math::fmaf` where CUDA C contracts.
//!
//! Each Rust kernel is loaded through the run-time `Linker` (its inputs are one self-contained
//! PTX, so `link_and_load` hands it to the driver's JIT as a whole program) and through the
//! Linker with `whole_program(false)` (cuLink, which compiles PTX as relocatable code: the
//! Linker's path before it loaded one PTX whole); the CUDA-style kernel also with
//! `ctx.load_module` of its PTX alone (as the CUDA C twin is loaded).
//!
//! Results are checked first: every option of each kernel against an `f64` host reference,
//! and the Rust kernels against each other. Then event-timed launches (ten back to back per
//! trial, so that launch costs overlap the work), alternating the order, the median of 25
//! trials; throughput in options per second.
//!
//! Prints a table with ratios (Rust / CUDA C throughput; target >= 0.97). Never asserts on
//! time; exits non-zero only when a result is wrong or the GPU cannot be used. Without a CUDA
//! device it runs the correctness part on the simulator and says so.

use std::process::ExitCode;

use core::ffi::c_void;

use ffi_examples::bench::{BoxError, median, raw_launch, timed};
use ffi_examples_kernels::PTX;
use ffi_examples_kernels::math_kernels::{Market, black_scholes, black_scholes_cuda_style};
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, Function, Kernel, LaunchConfig, Module, Stream,
};

const CUDA_C: &str = r#"
struct Market { float rate; float volatility; };

__device__ __forceinline__ float normal_cdf(float d) {
    return 0.5f * erfcf(-d * 0.70710678118654752f);
}

extern "C" __global__ void black_scholes_c(const float* spot, const float* strike,
                                           const float* years, Market m, float* call,
                                           float* put, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = spot[i], x = strike[i], t = years[i];
        float r = m.rate, v = m.volatility;
        float sqrt_t = sqrtf(t);
        float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float n1 = normal_cdf(d1), n2 = normal_cdf(d2);
        float discounted = x * expf(-r * t);
        call[i] = s * n1 - discounted * n2;
        put[i] = discounted * (1.0f - n2) - s * (1.0f - n1);
    }
}
"#;

const N: usize = 1 << 25;
const TRIALS: usize = 25;
/// Launches per timed trial, back to back, so that the host's launch cost (larger for the
/// typed launch) overlaps the GPU's work instead of being timed with it.
const LAUNCHES: usize = 10;
const MARKET: Market = Market {
    rate: 0.02,
    volatility: 0.30,
};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_math: {e}");
            ExitCode::FAILURE
        }
    }
}
/// Options: spot in [5, 30], strike in [1, 100], 0.25 to 10 years (the CUDA samples' ranges).
fn options(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut s = Vec::with_capacity(n);
    let mut x = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    for _ in 0..n {
        s.push(5.0 + 25.0 * next());
        x.push(1.0 + 99.0 * next());
        t.push(0.25 + 9.75 * next());
    }
    (s, x, t)
}

/// The prices in `f64` (erfc from the C library through libm's port).
fn reference(s: f32, x: f32, t: f32) -> (f64, f64) {
    let (s, x, t) = (f64::from(s), f64::from(x), f64::from(t));
    let (r, v) = (f64::from(MARKET.rate), f64::from(MARKET.volatility));
    let d1 = ((s / x).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
    let d2 = d1 - v * t.sqrt();
    let cdf = |d: f64| 0.5 * libm::erfc(-d / core::f64::consts::SQRT_2);
    let disc = x * (-r * t).exp();
    (
        s * cdf(d1) - disc * cdf(d2),
        disc * (1.0 - cdf(d2)) - s * (1.0 - cdf(d1)),
    )
}

/// Whether `call`/`put` match the reference for every option (absolute 2e-4 of the larger of
/// spot and strike: the f32 prices of deep in-the-money options lose that much to
/// cancellation). Checked on every host thread.
fn check(what: &str, inputs: &(Vec<f32>, Vec<f32>, Vec<f32>), call: &[f32], put: &[f32]) -> bool {
    let (s, x, t) = inputs;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = s.len().div_ceil(threads);
    let bad = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                scope.spawn(move || {
                    (k * chunk..((k + 1) * chunk).min(s.len())).find(|&i| {
                        let (c, p) = reference(s[i], x[i], t[i]);
                        let tol = 2e-4 * f64::from(s[i]).max(f64::from(x[i]));
                        (f64::from(call[i]) - c).abs() > tol || (f64::from(put[i]) - p).abs() > tol
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .min()
    });
    match bad {
        None => true,
        Some(i) => {
            let (c, p) = reference(s[i], x[i], t[i]);
            eprintln!(
                "{what}: option {i} (S={}, X={}, T={}) priced call {} put {}, expected {c} {p}",
                s[i], x[i], t[i], call[i], put[i]
            );
            false
        }
    }
}

/// Raw `cuLaunchKernel` of the CUDA C kernel.
///
/// # Safety
/// The buffers are live, of `n` floats each, used on `stream` only until it is synchronized.
#[allow(clippy::too_many_arguments)]
unsafe fn launch_c(
    f: &Function,
    stream: &Stream,
    cfg: LaunchConfig,
    s: &DeviceBuffer<f32>,
    x: &DeviceBuffer<f32>,
    t: &DeviceBuffer<f32>,
    call: &mut DeviceBuffer<f32>,
    put: &mut DeviceBuffer<f32>,
) -> Result<(), BoxError> {
    let (mut sp, mut xp, mut tp) = (s.as_raw(), x.as_raw(), t.as_raw());
    let (mut cp, mut pp, mut m, mut n) = (call.as_raw(), put.as_raw(), MARKET, s.len() as u64);
    let mut params: [*mut c_void; 7] = [
        (&raw mut sp).cast(),
        (&raw mut xp).cast(),
        (&raw mut tp).cast(),
        (&raw mut m).cast(),
        (&raw mut cp).cast(),
        (&raw mut pp).cast(),
        (&raw mut n).cast(),
    ];
    // SAFETY: the parameters are those `black_scholes_c` declares (`Market` is two floats in
    // both languages), pointing at live locals; the buffers are the caller's promise.
    unsafe { raw_launch(f, stream, cfg, params.as_mut_ptr()) }
}

/// The PTX module header of `ptx`, its entry `name` alone (whose body must call nothing else
/// in the module), the module-scope variables its body names (the kernel-name record a
/// `#[kernel]` entry writes to shared memory, string constants) and the entry's signature
/// record (`__gpukernel_sig_<name>`, which `Module::kernel` checks), to be JIT-compiled as a
/// whole program.
fn single_entry_ptx(ptx: &str, name: &str) -> Option<String> {
    let header_end = ptx.find(".address_size")?;
    let header_end = header_end + ptx[header_end..].find('\n')? + 1;
    let sig = ptx
        .lines()
        .find(|l| l.contains(&format!(" __gpukernel_sig_{name}[")))?;
    let start = ptx.find(&format!(".visible .entry {name}("))?;
    let end = start + ptx[start..].find("\n}")? + 2;
    let body = &ptx[start..end];
    // One-line declarations of module-scope variables (`.global`, `.shared`, `.const`) whose
    // name the entry's body uses.
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let vars: Vec<&str> = ptx[header_end..start]
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            (t.contains(".global ") || t.contains(".shared ") || t.contains(".const "))
                && !t.starts_with("//")
                && t.ends_with(';')
                && !t.contains("__gpukernel_sig_")
        })
        .filter(|l| {
            let decl = l.split('=').next().unwrap_or(l);
            let name = decl.split(|c: char| !is_ident(c)).rfind(|w| !w.is_empty());
            name.is_some_and(|n| {
                body.match_indices(n).any(|(i, _)| {
                    let before = body[..i].chars().next_back().is_none_or(|c| !is_ident(c));
                    let after = body[i + n.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !is_ident(c));
                    before && after
                })
            })
        })
        .collect();
    Some(format!(
        "{}\n{sig}\n{}\n\n{body}\n",
        &ptx[..header_end],
        vars.join("\n")
    ))
}

/// The timed rows: which kernel, loaded how.
const ROWS: [(&str, &str); 6] = [
    (
        "Rust safe (`math::*`, libdevice inlined; `DisjointSlice`)",
        "Linker (one PTX: whole program)",
    ),
    (
        "Rust safe (`math::*`, libdevice inlined; `DisjointSlice`)",
        "Linker, `whole_program(false)` (cuLink, relocatable)",
    ),
    (
        "Rust CUDA-style (`unsafe fn`, 1D index, unchecked)",
        "Linker (one PTX: whole program)",
    ),
    (
        "Rust CUDA-style (`unsafe fn`, 1D index, unchecked)",
        "`ctx.load_module` of its PTX alone",
    ),
    (
        "Rust CUDA-style (`unsafe fn`, 1D index, unchecked)",
        "Linker, `whole_program(false)` (cuLink, relocatable)",
    ),
    (
        "CUDA C, NVRTC defaults (--fmad=true)",
        "`ctx.load_module` of NVRTC's PTX",
    ),
];
/// The CUDA C row.
const C_ROW: usize = 5;

fn run() -> Result<bool, BoxError> {
    let device = Device::auto()?;
    let ctx: Context = device.primary_context()?;
    let mut linker = link::Linker::new(&ctx)?;
    linker.add_ptx_kernels(
        PTX,
        "kernels.ptx",
        &[black_scholes::NAME, black_scholes_cuda_style::NAME],
    );
    let load_path = linker.load_path()?;
    let rust = linker.link_and_load()?;
    let k_safe = rust.kernel(black_scholes)?;
    let k_style = rust.kernel(black_scholes_cuda_style)?;
    let stream = ctx.new_stream()?;
    let n = if device.is_simulator() { 1 << 12 } else { N };
    let inputs = options(n);
    let s = stream.htod_copy(&inputs.0)?;
    let x = stream.htod_copy(&inputs.1)?;
    let t = stream.htod_copy(&inputs.2)?;
    let mut call = stream.alloc_zeros::<f32>(n)?;
    let mut put = stream.alloc_zeros::<f32>(n)?;
    let cfg = LaunchConfig::for_elements(n)?;

    // Correctness first, each kernel on zeroed outputs.
    let mut ok = true;
    let mut results = Vec::new();
    for which in ["Rust", "Rust, CUDA-style"] {
        call.copy_from_host(&vec![0.0; n])?;
        put.copy_from_host(&vec![0.0; n])?;
        if which == "Rust" {
            stream.launch(&k_safe, cfg, (&s, &x, &t, MARKET, &mut call, &mut put))?;
        } else {
            // SAFETY: one-dimensional launch; every buffer holds n floats.
            unsafe {
                stream.launch_unchecked(&k_style, cfg, (&s, &x, &t, MARKET, &mut call, &mut put))?
            };
        }
        let (c, p) = (call.to_host_vec()?, put.to_host_vec()?);
        ok &= check(which, &inputs, &c, &p);
        results.push((c, p));
    }
    if results[0] != results[1] {
        eprintln!("the two Rust kernels disagree");
        ok = false;
    }
    if device.is_simulator() {
        println!(
            "# bench_math: no CUDA device; the correctness part ran on the simulator ({}), no timings",
            if ok { "ok" } else { "WRONG" }
        );
        return Ok(ok);
    }
    let (major, minor) = device.compute_capability()?;
    println!(
        "# gpukernel math benchmark: {} (sm_{major}{minor}), Black-Scholes, {n} options, median of {TRIALS} trials of {LAUNCHES} launches",
        device.name()?
    );
    println!("# the Linker's load path for the Rust kernels: {load_path:?}");
    let c_ptx = link::compile_cuda(
        CUDA_C,
        "bench_math_reference.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    let c_module = ctx.load_module(&c_ptx)?;
    let c_kernel = c_module.function("black_scholes_c")?;
    // The CUDA-style kernel's PTX alone (it calls no other function), loaded as the CUDA C
    // is (`ctx.load_module`).
    let style_ptx = single_entry_ptx(PTX, black_scholes_cuda_style::NAME)
        .ok_or("black_scholes_cuda_style not found in the PTX")?;
    let style_alone = ctx.load_module(style_ptx.as_bytes())?;
    // The Linker's path before the whole-program load: cuLink, relocatable code.
    let mut relocatable_linker = linker.clone();
    relocatable_linker.whole_program(false);
    let relocatable = relocatable_linker.link_and_load()?;
    let safe = [
        rust.kernel(black_scholes)?,
        relocatable.kernel(black_scholes)?,
    ];
    let style = [
        rust.kernel(black_scholes_cuda_style)?,
        style_alone.kernel(black_scholes_cuda_style)?,
        relocatable.kernel(black_scholes_cuda_style)?,
    ];
    let registers = |m: &Module, name: &str| m.function(name).map(|f| f.num_registers());
    println!(
        "# registers per thread: safe {} (Linker, whole program), {} (relocatable); CUDA-style {} (Linker, whole program), {} (`ctx.load_module`), {} (relocatable); CUDA C {}",
        registers(&rust, black_scholes::NAME)?,
        registers(&relocatable, black_scholes::NAME)?,
        registers(&rust, black_scholes_cuda_style::NAME)?,
        registers(&style_alone, black_scholes_cuda_style::NAME)?,
        registers(&relocatable, black_scholes_cuda_style::NAME)?,
        c_kernel.num_registers()
    );

    let launch = |row: usize,
                  call: &mut DeviceBuffer<f32>,
                  put: &mut DeviceBuffer<f32>|
     -> Result<(), BoxError> {
        match row {
            0..=1 => stream.launch(&safe[row], cfg, (&s, &x, &t, MARKET, call, put))?,
            // SAFETY: one-dimensional launch; every buffer holds n floats.
            2..=4 => unsafe {
                stream.launch_unchecked(&style[row - 2], cfg, (&s, &x, &t, MARKET, call, put))?
            },
            // SAFETY: every buffer holds n floats, used on `stream` only.
            _ => unsafe { launch_c(&c_kernel, &stream, cfg, &s, &x, &t, call, put)? },
        }
        Ok(())
    };
    let mut priced = Vec::new();
    for row in 0..ROWS.len() {
        call.copy_from_host(&vec![0.0; n])?;
        put.copy_from_host(&vec![0.0; n])?;
        launch(row, &mut call, &mut put)?;
        let (c, p) = (call.to_host_vec()?, put.to_host_vec()?);
        ok &= check(&format!("row {row}"), &inputs, &c, &p);
        if row != C_ROW && (&c, &p) != (&results[0].0, &results[0].1) {
            eprintln!("row {row}: the Rust kernels disagree across loads");
            ok = false;
        }
        if row == C_ROW {
            priced = c.into_iter().chain(p).collect();
        }
    }
    let max_diff = priced
        .iter()
        .zip(results[0].0.iter().chain(&results[0].1))
        .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
        .fold(0.0f32, f32::max);
    println!(
        "# Rust vs CUDA C prices: largest difference {max_diff:.2e} (relative, or absolute below 1)"
    );

    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); ROWS.len()];
    for trial in 0..TRIALS {
        let order: Vec<usize> = if trial % 2 == 0 {
            (0..ROWS.len()).collect()
        } else {
            (0..ROWS.len()).rev().collect()
        };
        for row in order {
            let t = timed(&stream, &start, &end, || {
                for _ in 0..LAUNCHES {
                    launch(row, &mut call, &mut put)?;
                }
                Ok(())
            })?;
            ms[row].push(t / LAUNCHES as f64);
        }
    }
    stream.synchronize()?;
    let m: Vec<f64> = ms.into_iter().map(median).collect();
    let c_ms = m[C_ROW];
    let rate = |ms: f64| n as f64 / (ms * 1e-3) / 1e9;
    println!(
        "| Black-Scholes, {n} options | loaded by | median | Gopt/s | ratio (CUDA C time / Rust time) |"
    );
    println!("|---|---|---|---|---|");
    for ((what, load), t) in ROWS.iter().zip(&m) {
        println!(
            "| {what} | {load} | {t:.4} ms | {:.2} | {:.3} |",
            rate(*t),
            c_ms / t
        );
    }
    let verdict = |r: f64| if r >= 0.97 { "met" } else { "NOT met" };
    let r = |row: usize| c_ms / m[row];
    println!(
        "# target (Rust >= 0.97 x CUDA C): CUDA-style via the Linker {} ({:.3}), via `ctx.load_module` {} ({:.3}); safe idiom via the Linker {} ({:.3}); relocatable (cuLink): CUDA-style {:.3}, safe {:.3}",
        verdict(r(2)),
        r(2),
        verdict(r(3)),
        r(3),
        verdict(r(0)),
        r(0),
        r(4),
        r(1)
    );
    if !ok {
        eprintln!("bench_math: a result was wrong");
    }
    Ok(ok)
}
