//! The cold path: process start → first checked result, in fresh processes (this binary runs
//! itself), split into the process's start (exec and dynamic loading, until `main`), context
//! creation (`cuInit`, the primary context), module load (the image loaded and every kernel
//! looked up), the inputs (allocated and copied: 2 × 256 KiB) and the first launch to its
//! checked result (the launch, the result read back and compared with the host's).
//!
//! Two workloads: the README's headline example (`multiply_vectors` of
//! `ffi-examples-lto-kernels`, its foreign code linked at build time) and the whole kernel
//! suite (every kernel `bench_suite` runs: the Rust suite kernels of `ffi-examples-kernels`
//! and, on compute capability 9.0, the `sm_90a` wgmma GEMM of `ffi-examples-hopper-kernels`);
//! each loaded from its PTX (the driver JIT-compiles it; the suite's through the Linker, as
//! `bench_suite` loads it) and from the fatbin nvptx-builder embedded (SASS for sm_80 and
//! sm_90, and the PTX). Each with the driver's JIT cache disabled (`CUDA_CACHE_DISABLE=1`) and
//! warm (a private `CUDA_CACHE_PATH`, filled by one run first, whose figures are shown too).
//!
//! Prints one table of medians over `RUNS` processes. Targets: the suite's module load
//! ≤ 5 ms with embedded SASS; start → first result ≤ context creation + 20 ms. Never asserts
//! on time; exits non-zero when a result is wrong or a child fails.

use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ffi_examples::bench::{BoxError, median};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Device, LaunchConfig, Module};

/// Elements of each array of the first launch (256 KiB of `f32`).
const N: usize = 1 << 16;
/// Measured processes per configuration.
const RUNS: usize = 5;
/// The variable that carries the parent's clock at the spawn to the child.
const SPAWN_VAR: &str = "GPUKERNEL_BENCH_COLD_SPAWN_NS";

/// The suite's Rust kernels: `bench_suite`'s list.
const SUITE: &[&str] = &[
    "saxpy",
    "saxpy_grid_stride",
    "sum_f32",
    "histogram256",
    "histogram256_aligned",
    "transpose",
    "stencil5",
    "softmax_rows",
    "softmax_rows_aligned",
    "nbody",
    "sgemm",
    "gemm_bf16",
    "gemm_bf16_wide",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.get(1).map(String::as_str) {
        Some("child") => child(
            args.get(2).map_or("", String::as_str),
            args.get(3).map_or("", String::as_str),
        ),
        _ => parent(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_cold: {e}");
            ExitCode::FAILURE
        }
    }
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// One child's figures, in ms: start until `main`, context, load, inputs (allocation and copy),
/// launch to checked result, total.
type Figures = [f64; 6];

fn spawn(workload: &str, image: &str, cache: &Cache) -> Result<Figures, BoxError> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["child", workload, image]);
    match cache {
        Cache::Disabled => {
            cmd.env("CUDA_CACHE_DISABLE", "1");
        }
        Cache::Dir(dir) => {
            cmd.env("CUDA_CACHE_DISABLE", "0")
                .env("CUDA_CACHE_PATH", dir);
        }
    }
    cmd.env(SPAWN_VAR, now_ns().to_string());
    let out = cmd.output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "child {workload} {image} failed ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("COLD "))
        .ok_or_else(|| format!("child {workload} {image} printed no figures:\n{stdout}"))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    v.try_into()
        .map_err(|v| format!("child figures malformed: {v:?}").into())
}

enum Cache {
    Disabled,
    Dir(std::path::PathBuf),
}

fn parent() -> Result<(), BoxError> {
    let device = Device::get(0)?;
    let (major, minor) = device.compute_capability()?;
    println!(
        "# cold path, fresh processes: {} (sm_{major}{minor}), medians of {RUNS} processes, ms",
        device.name()?
    );
    println!(
        "| workload | image | JIT cache | start → main | context | module load | inputs: alloc + copy | launch → checked result | start → first result | − context |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let tmp = std::env::temp_dir().join(format!("gpukernel-bench-cold-{}", std::process::id()));
    let mut summary = Vec::new();
    for workload in ["example", "suite"] {
        for image in ["ptx", "fatbin"] {
            for cache_name in ["disabled", "filling", "warm"] {
                let cache = if cache_name == "disabled" {
                    Cache::Disabled
                } else {
                    Cache::Dir(tmp.join(format!("{workload}-{image}")))
                };
                let runs = if cache_name == "filling" { 1 } else { RUNS };
                let mut cols: [Vec<f64>; 6] = Default::default();
                for _ in 0..runs {
                    let f = spawn(workload, image, &cache)?;
                    for (c, v) in cols.iter_mut().zip(f) {
                        c.push(v);
                    }
                }
                let m = cols.map(median);
                println!(
                    "| {workload} | {image} | {cache_name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    m[0],
                    m[1],
                    m[2],
                    m[3],
                    m[4],
                    m[5],
                    m[5] - m[1]
                );
                summary.push((workload, image, cache_name, m));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    for (workload, image, cache, m) in &summary {
        if *image == "fatbin" && *cache != "filling" {
            println!(
                "# {workload}, embedded SASS, cache {cache}: module load {:.1} ms{}; start → first result − context = {:.1} ms (target ≤ 20)",
                m[2],
                if *workload == "suite" {
                    " (target ≤ 5)"
                } else {
                    ""
                },
                m[5] - m[1]
            );
        }
    }
    Ok(())
}

fn child(workload: &str, image: &str) -> Result<(), BoxError> {
    let main_ns = now_ns();
    let spawned: u128 = std::env::var(SPAWN_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(main_ns);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let ctx = Device::get(0)?.primary_context()?;
    let ctx_ms = ms(t);
    let t = Instant::now();
    let check = match (workload, image) {
        ("example", _) => {
            let module = if image == "fatbin" {
                ctx.load_module(ffi_examples_lto_kernels::FATBIN)?
            } else {
                ctx.load_module(ffi_examples_lto_kernels::PTX.as_bytes())?
            };
            let kernel = module.kernel(ffi_examples_lto_kernels::multiply_vectors)?;
            let load_ms = ms(t);
            let a_host: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
            let b_host: Vec<f32> = (0..N).map(|i| 0.5 + (i % 7) as f32).collect();
            let t = Instant::now();
            let (a, b) = (ctx.htod_copy(&a_host)?, ctx.htod_copy(&b_host)?);
            let mut out = ctx.alloc_zeros::<f32>(N)?;
            let inputs_ms = ms(t);
            let t = Instant::now();
            let n = N;
            ctx.default_stream().launch(
                &kernel,
                LaunchConfig::for_elements(n)?,
                (&a, &b, &mut out),
            )?;
            let result = out.to_host_vec()?;
            if let Some(i) = (0..n).find(|&i| result[i] != a_host[i] * b_host[i]) {
                return Err(format!("multiply_vectors is wrong at {i}: {}", result[i]).into());
            }
            (load_ms, inputs_ms, ms(t))
        }
        _ => {
            let (major, minor) = ctx.compute_capability()?;
            let modules = load_suite(&ctx, image == "fatbin", (major, minor) == (9, 0))?;
            let saxpy = modules[0].kernel(ffi_examples_kernels::saxpy)?;
            let load_ms = ms(t);
            let n = N;
            let xs: Vec<f32> = (0..n).map(|i| (i % 1021) as f32).collect();
            let ones = vec![1.0f32; n];
            let t = Instant::now();
            let x = ctx.htod_copy(&xs)?;
            let mut y = ctx.htod_copy(&ones)?;
            let inputs_ms = ms(t);
            let t = Instant::now();
            ctx.default_stream().launch(
                &saxpy,
                LaunchConfig::for_elements(n)?,
                (2.0f32, &x, &mut y),
            )?;
            let result = y.to_host_vec()?;
            if let Some(i) = (0..n).find(|&i| result[i] != 2.0f32.mul_add(xs[i], 1.0)) {
                return Err(format!("saxpy is wrong at {i}: {}", result[i]).into());
            }
            (load_ms, inputs_ms, ms(t))
        }
    };
    let total_ms = (now_ns() - spawned) as f64 / 1e6;
    let start_ms = (main_ns - spawned) as f64 / 1e6;
    println!(
        "COLD {start_ms:.3} {ctx_ms:.3} {:.3} {:.3} {:.3} {total_ms:.3}",
        check.0, check.1, check.2
    );
    Ok(())
}

/// Every suite kernel loaded and looked up: from the PTX through the Linker (as `bench_suite`
/// loads it) or from the embedded fatbin.
fn load_suite(ctx: &Context, fatbin: bool, hopper: bool) -> Result<Vec<Module>, BoxError> {
    let mut modules = Vec::new();
    if fatbin {
        modules.push(ctx.load_module(ffi_examples_kernels::FATBIN)?);
        if hopper {
            modules.push(ctx.load_module(ffi_examples_hopper_kernels::FATBIN)?);
        }
    } else {
        modules.push(
            Linker::new(ctx)?
                .add_ptx_kernels(ffi_examples_kernels::PTX, "kernels.ptx", SUITE)
                .link_and_load()?,
        );
        if hopper {
            modules.push(ctx.load_module(ffi_examples_hopper_kernels::PTX.as_bytes())?);
        }
    }
    for name in SUITE {
        modules[0].function(name)?;
    }
    if hopper {
        modules[1].function("gemm_bf16_wgmma")?;
    }
    Ok(modules)
}
