//! Benchmark of a math-heavy kernel on a CUDA device: Black-Scholes option pricing (a
//! logarithm, an exponential, a square root and two complementary error functions per
//! option) in Rust with `gpukernel_device::math` (libdevice, linked and inlined at build time)
//! next to the same kernel in CUDA C compiled by NVRTC in this process with its defaults
//! (`--fmad=true`, `-prec-div=true`, `-prec-sqrt=true`, `-ftz=false`, the device's
//! architecture). The Rust kernels write `math::fmaf` where CUDA C contracts.
//!
//! Results are checked first: every option of each kernel against an `f64` host reference,
//! and the Rust kernels against CUDA C. Then event-timed launches (ten back to back per trial,
//! so that launch costs overlap the work), alternating the order, the median of several
//! trials; throughput in options per second.
//!
//! Prints a table with ratios (Rust / CUDA C throughput; target >= 0.97). Never asserts on
//! time; exits non-zero only when a result is wrong or the GPU cannot be used. Without a CUDA
//! device it runs the correctness part on the simulator and says so.

use std::process::ExitCode;

use core::ffi::c_void;

use cudarc::driver::sys;
use ffi_examples::bench::{BoxError, median};
use ffi_examples_kernels::PTX;
use ffi_examples_kernels::math_kernels::{Market, black_scholes, black_scholes_cuda_style};
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, Event, Function, Kernel, LaunchConfig, Stream,
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
const TRIALS: usize = 15;
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
    let r = unsafe {
        sys::cuLaunchKernel(
            f.raw(),
            cfg.grid.x,
            cfg.grid.y,
            cfg.grid.z,
            cfg.block.x,
            cfg.block.y,
            cfg.block.z,
            0,
            stream.raw(),
            params.as_mut_ptr(),
            core::ptr::null_mut(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuLaunchKernel: {r:?}").into())
    }
}

/// The PTX module header of `ptx`, its entry `name` alone (whose body must call nothing else
/// in the module) and the entry's signature record (`__gpukernel_sig_<name>`, which
/// `Module::kernel` checks), to be JIT-compiled as a whole program.
fn single_entry_ptx(ptx: &str, name: &str) -> Option<String> {
    let header_end = ptx.find(".address_size")?;
    let header_end = header_end + ptx[header_end..].find('\n')? + 1;
    let sig = ptx
        .lines()
        .find(|l| l.contains(&format!(" __gpukernel_sig_{name}[")))?;
    let start = ptx.find(&format!(".visible .entry {name}("))?;
    let end = start + ptx[start..].find("\n}")? + 2;
    Some(format!(
        "{}\n{sig}\n\n{}\n",
        &ptx[..header_end],
        &ptx[start..end]
    ))
}

/// Event-timed milliseconds per launch of `f`, over [`LAUNCHES`] back-to-back launches.
fn timed(
    stream: &Stream,
    start: &Event,
    end: &Event,
    f: &mut dyn FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    start.record(stream)?;
    for _ in 0..LAUNCHES {
        f()?;
    }
    end.record(stream)?;
    Ok(start.elapsed_ms(end)? as f64 / LAUNCHES as f64)
}

fn run() -> Result<bool, BoxError> {
    let device = Device::auto()?;
    let ctx: Context = device.primary_context()?;
    let rust = link::Linker::new(&ctx)?
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[black_scholes::NAME, black_scholes_cuda_style::NAME],
        )
        .link_and_load()?;
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
        "# gpukernel math benchmark: {} (sm_{major}{minor}), Black-Scholes, {n} options",
        device.name()?
    );
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
    // The same CUDA-style Rust kernel, its PTX alone JIT-compiled as a whole program (as the
    // CUDA C is), not through the linker (which compiles PTX relocatable, for linking).
    let whole_ptx = single_entry_ptx(PTX, black_scholes_cuda_style::NAME)
        .ok_or("black_scholes_cuda_style not found in the PTX")?;
    let whole_module = ctx.load_module(whole_ptx.as_bytes())?;
    let k_whole = whole_module.kernel(black_scholes_cuda_style)?;
    // The safe kernel loaded the same way: how a kernels crate without run-time foreign inputs
    // (build-time LTO) loads its PTX, `ctx.load_module(PTX)`.
    let whole_safe_ptx =
        single_entry_ptx(PTX, black_scholes::NAME).ok_or("black_scholes not found in the PTX")?;
    let whole_safe_module = ctx.load_module(whole_safe_ptx.as_bytes())?;
    let k_whole_safe = whole_safe_module.kernel(black_scholes)?;
    println!(
        "# registers per thread: Rust safe {} (linked), {} (whole-program JIT), Rust CUDA-style {} (linked), {} (whole-program JIT), CUDA C {}",
        rust.function(black_scholes::NAME)?.num_registers(),
        whole_safe_module
            .function(black_scholes::NAME)?
            .num_registers(),
        rust.function(black_scholes_cuda_style::NAME)?
            .num_registers(),
        whole_module
            .function(black_scholes_cuda_style::NAME)?
            .num_registers(),
        c_kernel.num_registers()
    );
    call.copy_from_host(&vec![0.0; n])?;
    // SAFETY: every buffer holds n floats, used on `stream` only, synchronized below.
    unsafe { launch_c(&c_kernel, &stream, cfg, &s, &x, &t, &mut call, &mut put)? };
    let (c, p) = (call.to_host_vec()?, put.to_host_vec()?);
    ok &= check("CUDA C", &inputs, &c, &p);
    // The two kernels loaded as whole programs, checked like the others before any timing.
    call.copy_from_host(&vec![0.0; n])?;
    stream.launch(
        &k_whole_safe,
        cfg,
        (&s, &x, &t, MARKET, &mut call, &mut put),
    )?;
    ok &= check(
        "Rust safe, whole program",
        &inputs,
        &call.to_host_vec()?,
        &put.to_host_vec()?,
    );
    call.copy_from_host(&vec![0.0; n])?;
    // SAFETY: one-dimensional launch; every buffer holds n floats; synchronized by the reads.
    unsafe { stream.launch_unchecked(&k_whole, cfg, (&s, &x, &t, MARKET, &mut call, &mut put))? };
    ok &= check(
        "Rust CUDA-style, whole program",
        &inputs,
        &call.to_host_vec()?,
        &put.to_host_vec()?,
    );
    let max_diff = c
        .iter()
        .chain(&p)
        .zip(results[0].0.iter().chain(&results[0].1))
        .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
        .fold(0.0f32, f32::max);
    println!(
        "# Rust vs CUDA C prices: largest difference {max_diff:.2e} (relative, or absolute below 1)"
    );

    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let mut ms = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for trial in 0..TRIALS {
        let order: [usize; 5] = if trial % 2 == 0 {
            [0, 1, 3, 4, 2]
        } else {
            [2, 4, 3, 1, 0]
        };
        for which in order {
            let mut f: Box<dyn FnMut() -> Result<(), BoxError>> = match which {
                0 => Box::new(|| {
                    Ok(stream.launch(&k_safe, cfg, (&s, &x, &t, MARKET, &mut call, &mut put))?)
                }),
                // SAFETY: one-dimensional launch; every buffer holds n floats.
                1 => Box::new(|| unsafe {
                    Ok(stream.launch_unchecked(
                        &k_style,
                        cfg,
                        (&s, &x, &t, MARKET, &mut call, &mut put),
                    )?)
                }),
                // SAFETY: as for `1`: the same kernel, loaded from its PTX alone.
                3 => Box::new(|| unsafe {
                    Ok(stream.launch_unchecked(
                        &k_whole,
                        cfg,
                        (&s, &x, &t, MARKET, &mut call, &mut put),
                    )?)
                }),
                4 => Box::new(|| {
                    Ok(stream.launch(
                        &k_whole_safe,
                        cfg,
                        (&s, &x, &t, MARKET, &mut call, &mut put),
                    )?)
                }),
                // SAFETY: as for the correctness launch.
                _ => Box::new(|| unsafe {
                    launch_c(&c_kernel, &stream, cfg, &s, &x, &t, &mut call, &mut put)
                }),
            };
            ms[which].push(timed(&stream, &start, &end, &mut *f)?);
        }
    }
    stream.synchronize()?;
    let m: Vec<f64> = ms.into_iter().map(median).collect();
    let rate = |ms: f64| n as f64 / (ms * 1e-3) / 1e9;
    println!("| Black-Scholes, {n} options | median | Gopt/s | ratio (Rust / CUDA C throughput) |");
    println!("|---|---|---|---|");
    let rows = [
        (
            "Rust (`math::*`, libdevice inlined; safe `DisjointSlice`)",
            m[0],
        ),
        ("Rust, CUDA-style (`unsafe fn`, 1D index, unchecked)", m[1]),
        ("CUDA C, NVRTC defaults (--fmad=true)", m[2]),
        (
            "Rust, CUDA-style, its PTX JIT-compiled alone (whole program, as the CUDA C)",
            m[3],
        ),
        (
            "Rust safe, its PTX JIT-compiled alone (whole program, as `ctx.load_module(PTX)`)",
            m[4],
        ),
    ];
    for (what, t) in rows {
        println!("| {what} | {t:.3} ms | {:.2} | {:.3} |", rate(t), m[2] / t);
    }
    let verdict = |r: f64| if r >= 0.97 { "met" } else { "NOT met" };
    println!(
        "# target (Rust >= 0.97 x CUDA C): through the Linker (cuLink, relocatable): safe {} ({:.3}), CUDA-style {} ({:.3}); whole program (`ctx.load_module`): safe {} ({:.3}), CUDA-style {} ({:.3})",
        verdict(m[2] / m[0]),
        m[2] / m[0],
        verdict(m[2] / m[1]),
        m[2] / m[1],
        verdict(m[2] / m[4]),
        m[2] / m[4],
        verdict(m[2] / m[3]),
        m[2] / m[3]
    );
    if !ok {
        eprintln!("bench_math: a result was wrong");
    }
    Ok(ok)
}
