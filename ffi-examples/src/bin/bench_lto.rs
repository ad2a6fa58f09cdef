//! Benchmark of build-time LTO of foreign CUDA C (`ffi-examples-lto-kernels`, whose build.rs
//! names `cuda/functions.cu` in `Builder::foreign_cuda`) on a CUDA device, side by side in one
//! process, results checked before timing:
//!
//! * saxpy on 2^28 floats (GB/s, read + write bytes) with the multiply written in Rust
//!   (`saxpy_mul_inline`), through the foreign `mul_f32` linked at build time
//!   (`saxpy_mul_foreign` from the LTO PTX), and through the same foreign function linked at
//!   run time (the same kernel from `PTX_RUNTIME_LINK`, `functions.cu` by NVRTC, cuLink: a real
//!   `call` with its arguments in local memory).
//! * A compute-bound kernel with a foreign call in its inner loop: the degree-8 polynomial
//!   `horner8` applied 256 times per element of 2^24 floats (8 fused multiply-adds per call):
//!   Rust calling it with LTO, its Rust twin (`horner8_rust` with `math::fmaf`), the same
//!   kernel in CUDA C compiled by NVRTC with its defaults (`--fmad=true` contracts `acc * x + c`),
//!   and the Rust kernel with the call linked at run time.
//!
//! Targets: LTO >= 0.99x its inline twin, >= 0.97x CUDA C. Prints each row's compiler flags.
//! Never asserts on time; exits non-zero only when a result is wrong or the GPU cannot be used.

use std::process::ExitCode;

use core::ffi::c_void;

use ffi_examples::bench::{BoxError, median, raw_launch, timed};
use ffi_examples_lto_kernels::{
    FUNCTIONS_CU, HORNER8, PTX, PTX_RUNTIME_LINK, horner8_rust, poly_foreign, poly_inline,
    saxpy_mul_foreign, saxpy_mul_inline,
};
use gpukernel_runtime::link::{self, Arch, CudaOutput, Linker};
use gpukernel_runtime::{Context, Device, Kernel, LaunchConfig};

const SAXPY_N: usize = 1 << 28;
const POLY_N: usize = 1 << 24;
const POLY_ITERS: u32 = 256;
const TRIALS: usize = 21;

/// The flags of the Rust rows (what nvptx-builder runs).
const RUST_FLAGS: &str = "rustc nightly -Ctarget-cpu=sm_90 -Clinker-plugin-lto, llvm-link, opt internalize,globaldce,O3, llc -O3 -mcpu=sm_90; driver JIT (ptxas -O3)";
/// The flags of the foreign code linked at build time.
const LTO_FLAGS: &str = "functions.cu: clang-19 -x cuda --cuda-device-only -O3 (-ffp-contract=fast) -emit-llvm, linked before opt";
/// The flags of the foreign code linked at run time.
const CULINK_FLAGS: &str = "functions.cu: NVRTC -rdc=true (defaults: --fmad=true, -O3), cuLink";
/// The flags of the CUDA C reference.
const CUDA_C_FLAGS: &str = "NVRTC defaults (--fmad=true, -O3), -arch=sm_XX; driver JIT";

/// The CUDA C twin of `poly_foreign` (the polynomial written as nvcc users write it; NVRTC's
/// default `--fmad=true` fuses each `acc * x + c`).
fn cuda_c_source() -> String {
    let mut body = format!("    float acc = {:e}f;\n", HORNER8[0]);
    for c in &HORNER8[1..] {
        body.push_str(&format!("    acc = acc * x + ({c:e}f);\n"));
    }
    format!(
        r#"
__device__ float horner8(float x) {{
{body}    return acc;
}}

extern "C" __global__ void poly_c(const float* x, unsigned iters, float* out, unsigned long long n) {{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        float v = x[i];
        for (unsigned k = 0; k < iters; ++k) {{
            v = horner8(v);
        }}
        out[i] = v;
    }}
}}
"#
    )
}
struct Row {
    what: &'static str,
    value: String,
    ratio: String,
    flags: String,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_lto: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, BoxError> {
    let device = Device::get(0)?;
    let ctx: Context = device.primary_context()?;
    let (major, minor) = device.compute_capability()?;
    println!(
        "# build-time LTO of foreign CUDA C: {} (sm_{major}{minor})",
        device.name()?
    );

    // The LTO PTX loads as it is; the run-time-link PTX needs functions.cu (NVRTC + cuLink).
    let lto = ctx.load_module(PTX.as_bytes())?;
    let culink = Linker::new(&ctx)?
        .add_ptx_kernels(
            PTX_RUNTIME_LINK,
            "kernels_runtime_link.ptx",
            &[saxpy_mul_foreign::NAME, poly_foreign::NAME],
        )
        .add_cuda_source(FUNCTIONS_CU, "functions.cu")
        .link_and_load()?;
    let c_ptx = link::compile_cuda(
        &cuda_c_source(),
        "poly_c.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    let c_module = ctx.load_module(&c_ptx)?;
    let c_poly = c_module.function("poly_c")?;

    let stream = ctx.new_stream()?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let mut ok = true;
    let mut rows = Vec::new();

    // ---- saxpy: inline / LTO / cuLink ----
    let n = SAXPY_N;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1021) as f32 * 0.25).collect();
    let x = stream.htod_copy(&xs)?;
    let y0 = stream.htod_copy(&vec![1.0f32; n])?;
    let mut y = stream.alloc_zeros::<f32>(n)?;
    let a = 2.0f32;
    let cfg = LaunchConfig::for_elements(n)?;
    let k_inline = lto.kernel(saxpy_mul_inline)?;
    let k_lto = lto.kernel(saxpy_mul_foreign)?;
    let k_culink = culink.kernel(saxpy_mul_foreign)?;
    let saxpy =
        |which: usize, y: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            // SAFETY: one-dimensional launch, x.len() == y.len(): the kernels' contract.
            unsafe {
                match which {
                    0 => stream.launch_unchecked(&k_inline, cfg, (a, &x, y))?,
                    1 => stream.launch_unchecked(&k_lto, cfg, (a, &x, y))?,
                    _ => stream.launch_unchecked(&k_culink, cfg, (a, &x, y))?,
                }
            }
            Ok(())
        };
    for (which, name) in ["inline", "LTO", "cuLink"].iter().enumerate() {
        y.copy_from_device(&y0)?;
        saxpy(which, &mut y)?;
        let got = y.to_host_vec()?;
        if let Some(i) = (0..n).find(|&i| got[i] != a * xs[i] + 1.0) {
            eprintln!(
                "saxpy ({name}) is wrong at {i}: {} != {}",
                got[i],
                a * xs[i] + 1.0
            );
            ok = false;
        }
    }
    let mut gbs = vec![Vec::new(); 3];
    let bytes = 3.0 * 4.0 * n as f64;
    for _ in 0..TRIALS {
        for (which, v) in gbs.iter_mut().enumerate() {
            let ms = timed(&stream, &start, &end, || saxpy(which, &mut y))?;
            v.push(bytes / (ms * 1e-3) / 1e9);
        }
    }
    stream.synchronize()?;
    let s: Vec<f64> = gbs.into_iter().map(median).collect();
    rows.push(Row {
        what: "saxpy 2^28, multiply inline in Rust",
        value: format!("{:.0} GB/s", s[0]),
        ratio: "reference".into(),
        flags: RUST_FLAGS.into(),
    });
    rows.push(Row {
        what: "saxpy 2^28, multiply via foreign mul_f32, LTO",
        value: format!("{:.0} GB/s", s[1]),
        ratio: format!("{:.3} × inline (target ≥ 0.99)", s[1] / s[0]),
        flags: format!("{RUST_FLAGS}; {LTO_FLAGS}"),
    });
    rows.push(Row {
        what: "saxpy 2^28, multiply via foreign mul_f32, cuLink",
        value: format!("{:.0} GB/s", s[2]),
        ratio: format!("{:.3} × inline", s[2] / s[0]),
        flags: format!("{RUST_FLAGS}; {CULINK_FLAGS}"),
    });

    // ---- a foreign call in a compute-bound inner loop: LTO / Rust twin / CUDA C / cuLink ----
    let n = POLY_N;
    let xs: Vec<f32> = (0..n).map(|i| (i % 997) as f32 / 997.0).collect();
    let x = stream.htod_copy(&xs)?;
    let mut out = stream.alloc_zeros::<f32>(n)?;
    let cfg = LaunchConfig::for_elements(n)?;
    let p_lto = lto.kernel(poly_foreign)?;
    let p_inline = lto.kernel(poly_inline)?;
    let p_culink = culink.kernel(poly_foreign)?;
    let iters = POLY_ITERS;
    let poly = |which: usize,
                out: &mut gpukernel_runtime::DeviceBuffer<f32>|
     -> Result<(), BoxError> {
        match which {
            // SAFETY: one-dimensional launch, x.len() == out.len(): the kernels' contract.
            0 => unsafe { stream.launch_unchecked(&p_lto, cfg, (&x, iters, out))? },
            // SAFETY: as above.
            1 => unsafe { stream.launch_unchecked(&p_inline, cfg, (&x, iters, out))? },
            2 => {
                let (mut xp, mut it, mut op, mut nn) = (x.as_raw(), iters, out.as_raw(), n as u64);
                let mut params: [*mut c_void; 4] = [
                    (&raw mut xp).cast(),
                    (&raw mut it).cast(),
                    (&raw mut op).cast(),
                    (&raw mut nn).cast(),
                ];
                // SAFETY: (const float*, unsigned, float*, u64) as `poly_c` declares; x and
                // out are live buffers of n floats used on this stream, synchronized before
                // they are dropped.
                unsafe { raw_launch(&c_poly, &stream, cfg, params.as_mut_ptr())? }
            }
            // SAFETY: as for 0.
            _ => unsafe { stream.launch_unchecked(&p_culink, cfg, (&x, iters, out))? },
        }
        Ok(())
    };
    // The host reference on a sample (a software fmaf per step is slow on the host); the four
    // GPU results must then agree bit for bit everywhere.
    let sample: Vec<usize> = (0..n).step_by(4099).chain([n - 1]).collect();
    let names = ["Rust + LTO", "Rust twin", "CUDA C", "Rust + cuLink"];
    let mut first: Option<Vec<f32>> = None;
    for (which, name) in names.iter().enumerate() {
        let mut fresh = stream.alloc_zeros::<f32>(n)?;
        poly(which, &mut fresh)?;
        let got = fresh.to_host_vec()?;
        for &i in &sample {
            let want = (0..iters).fold(xs[i], |v, _| horner8_rust(v));
            if got[i] != want {
                eprintln!(
                    "poly ({name}) differs from the host at {i}: {} != {want}",
                    got[i]
                );
                ok = false;
                break;
            }
        }
        match &first {
            None => first = Some(got),
            Some(f) => {
                if let Some(i) = (0..n).find(|&i| got[i] != f[i]) {
                    eprintln!(
                        "poly ({name}) differs from {} at {i}: {} != {}",
                        names[0], got[i], f[i]
                    );
                    ok = false;
                }
            }
        }
    }
    let mut ms = vec![Vec::new(); 4];
    for _ in 0..TRIALS {
        for (which, v) in ms.iter_mut().enumerate() {
            v.push(timed(&stream, &start, &end, || poly(which, &mut out))?);
        }
    }
    stream.synchronize()?;
    let t: Vec<f64> = ms.into_iter().map(median).collect();
    let gfma = |ms: f64| (n as f64 * iters as f64 * 8.0) / (ms * 1e-3) / 1e9;
    rows.push(Row {
        what: "horner8 ×256 per element, 2^24, Rust + LTO",
        value: format!("{:.3} ms ({:.0} GFMA/s)", t[0], gfma(t[0])),
        ratio: format!(
            "{:.3} × Rust twin (target ≥ 0.99), {:.3} × CUDA C (target ≥ 0.97)",
            t[1] / t[0],
            t[2] / t[0]
        ),
        flags: format!("{RUST_FLAGS}; {LTO_FLAGS}"),
    });
    rows.push(Row {
        what: "horner8 ×256 per element, 2^24, Rust twin (math::fmaf)",
        value: format!("{:.3} ms ({:.0} GFMA/s)", t[1], gfma(t[1])),
        ratio: "reference".into(),
        flags: RUST_FLAGS.into(),
    });
    rows.push(Row {
        what: "horner8 ×256 per element, 2^24, CUDA C",
        value: format!("{:.3} ms ({:.0} GFMA/s)", t[2], gfma(t[2])),
        ratio: "reference".into(),
        flags: CUDA_C_FLAGS.replace("sm_XX", &format!("sm_{major}{minor}")),
    });
    rows.push(Row {
        what: "horner8 ×256 per element, 2^24, Rust + cuLink",
        value: format!("{:.3} ms ({:.0} GFMA/s)", t[3], gfma(t[3])),
        ratio: format!("{:.3} × Rust twin", t[1] / t[3]),
        flags: format!("{RUST_FLAGS}; {CULINK_FLAGS}"),
    });

    println!("# medians of {TRIALS} event-timed launches; ratios are speed (higher is better)\n");
    println!("| what | result | ratio | flags |");
    println!("|---|---|---|---|");
    for r in &rows {
        println!("| {} | {} | {} | {} |", r.what, r.value, r.ratio, r.flags);
    }
    if !ok {
        eprintln!("bench_lto: some results were wrong (see above)");
    }
    Ok(ok)
}
