//! The kernel benchmark suite: each Rust `#[kernel]` of `ffi_examples_kernels::suite` beside
//! its CUDA C twin (`ffi-examples/bench/suite.cu`, compiled by NVRTC in this process), cuBLAS
//! for the GEMMs (loaded at run time; rows are skipped with a note when it is absent), the
//! device copy for saxpy, and Numba-CUDA for the sum and the stencil (timed by
//! `ffi-examples/bench/numba_suite.py` on the same machine just before; its results file is
//! read from `GPUKERNEL_NUMBA_RESULTS`).
//!
//! Every result is checked against a host reference before any timing (exact for integer and
//! copy-like kernels; the relative error is printed; the GEMMs and n-body on sampled
//! outputs). Timing: CUDA events around each launch, 3 warm-up launches, median of 21,
//! inputs of at least 256 MiB (beyond the 50 MB L2) except the compute-bound GEMMs and
//! n-body. The table gives time, throughput, and each reference's ratio as our throughput /
//! its throughput (> 1: Rust faster). Exits non-zero only when a result is wrong or the GPU
//! cannot be used; never asserts on time.

mod gemm;
mod gemm_hopper;
mod math_rows;
mod rows;

use std::process::ExitCode;
use std::time::Instant;

use core::ffi::c_void;
use cudarc::driver::sys;
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{Device, Event, Function, LaunchConfig, Module, Stream};

pub(crate) type BoxError = Box<dyn std::error::Error>;

/// The CUDA C twins.
const SUITE_CU: &str = include_str!("../../../bench/suite.cu");
/// NVRTC options beyond `--gpu-architecture` (the runtime adds `-rdc=true`): none, so
/// NVRTC's defaults hold (device `-O3`, `--fmad=true`, no fast math).
pub(crate) const C_FLAGS: &str = "NVRTC defaults (-O3, --fmad=true), -rdc=true";
/// What the Rust kernels are compiled with.
pub(crate) const RUST_FLAGS: &str = "nvptx-builder: opt O3, llc -mcpu=sm_90, driver JIT";

pub(crate) const WARMUP: usize = 3;
pub(crate) const TRIALS: usize = 21;

/// One line of the table.
pub(crate) struct Row {
    pub name: String,
    pub ms: f64,
    /// Throughput and its unit ("GB/s", "GFLOP/s").
    pub rate: (f64, &'static str),
    /// "ratio to <reference>" entries, ours / theirs in throughput.
    pub ratios: Vec<String>,
    /// Relative error against the host reference (None for references themselves).
    pub err: Option<f64>,
    pub flags: String,
}

/// What every row needs: a stream, two events, both modules.
pub(crate) struct Bench {
    pub stream: Stream,
    start: Event,
    end: Event,
    pub rust: Module,
    pub c: Module,
    /// The `sm_90a` kernels (wgmma), on compute capability 9.0 only.
    pub hopper: Option<Module>,
    pub sms: u32,
    pub rows: Vec<Row>,
    pub ok: std::cell::Cell<bool>,
    /// (row, milliseconds, which Numba variant ran).
    pub numba: Vec<(String, f64, String)>,
}

impl Bench {
    /// Median event-timed milliseconds of `f` (one launch per trial) after warm-up.
    pub fn time(&self, mut f: impl FnMut() -> Result<(), BoxError>) -> Result<f64, BoxError> {
        for _ in 0..WARMUP {
            f()?;
        }
        self.stream.synchronize()?;
        let mut v = Vec::with_capacity(TRIALS);
        for _ in 0..TRIALS {
            self.start.record(&self.stream)?;
            f()?;
            self.end.record(&self.stream)?;
            v.push(self.start.elapsed_ms(&self.end)? as f64);
        }
        v.sort_by(|a, b| a.total_cmp(b));
        Ok(v[v.len() / 2])
    }

    /// A CUDA C twin by name.
    pub fn c_fn(&self, name: &str) -> Result<Function, BoxError> {
        Ok(self.c.function(name)?)
    }

    /// Records a failed check (the benchmark then exits non-zero).
    pub fn fail(&self, what: &str, msg: String) {
        eprintln!("WRONG: {what}: {msg}");
        self.ok.set(false);
    }

    /// The Numba time of `key` and the variant that ran, from the results file, if any.
    pub fn numba_ms(&self, key: &str) -> Option<(f64, String)> {
        self.numba
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, how)| (*v, how.clone()))
    }
}

/// Raw `cuLaunchKernel` of a CUDA C twin.
///
/// # Safety
/// `params` must match the kernel's parameters and point at live values; the buffers they
/// name must outlive the launch.
pub(crate) unsafe fn launch_c(
    f: &Function,
    stream: &Stream,
    cfg: LaunchConfig,
    params: &mut [*mut c_void],
) -> Result<(), BoxError> {
    // SAFETY: the caller's contract; the function and stream are live, of the current context.
    let r = unsafe {
        sys::cuLaunchKernel(
            f.raw(),
            cfg.grid.x,
            cfg.grid.y,
            cfg.grid.z,
            cfg.block.x,
            cfg.block.y,
            cfg.block.z,
            cfg.shared_mem_bytes,
            stream.raw(),
            params.as_mut_ptr(),
            core::ptr::null_mut(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuLaunchKernel({}): {r:?}", f.name()).into())
    }
}

/// A kernel parameter's address, for [`launch_c`].
pub(crate) fn p<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// `max |got - want| / max |want|`.
pub(crate) fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    let mut num = 0.0f64;
    let mut den = 0.0f64;
    for (g, w) in got.iter().zip(want) {
        let d = (*g as f64 - w).abs();
        num = if d.is_nan() {
            f64::INFINITY
        } else {
            num.max(d)
        };
        den = den.max(w.abs());
    }
    if den == 0.0 { num } else { num / den }
}

/// A deterministic pseudo-random sequence (SplitMix64), the same on every run.
pub(crate) fn hash(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value in [-1, 1) from index `i` and stream `s`.
pub(crate) fn unit(s: u64, i: u64) -> f32 {
    (hash(i ^ (s << 40)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_suite: {e}");
            ExitCode::FAILURE
        }
    }
}

fn read_numba() -> Vec<(String, f64, String)> {
    let Ok(path) = std::env::var("GPUKERNEL_NUMBA_RESULTS") else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("# no Numba results at {path}");
        return Vec::new();
    };
    // Lines "key ms variant" (written by numba_suite.py).
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let key = it.next()?.to_string();
            let ms = it.next()?.parse().ok()?;
            Some((key, ms, it.next().unwrap_or("shared").to_string()))
        })
        .collect()
}

fn run() -> Result<bool, BoxError> {
    let device = Device::get(0)?;
    let ctx = device.primary_context()?;
    let (major, minor) = device.compute_capability()?;
    let sms = device.multiprocessor_count()?;
    println!(
        "# gpukernel kernel suite: {} (sm_{major}{minor}, {sms} SMs)",
        device.name()?
    );
    let t = Instant::now();
    let rust = link::Linker::new(&ctx)?
        .add_ptx_kernels(ffi_examples_kernels::PTX, "kernels.ptx", rows::RUST_KERNELS)
        .link_and_load()?;
    println!(
        "# Rust kernels linked (driver JIT): {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    let c_ptx = link::compile_cuda(
        SUITE_CU,
        "suite.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    let c = ctx.load_module(&c_ptx)?;
    println!(
        "# CUDA C twins compiled by NVRTC and loaded: {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let hopper = if (major, minor) == (9, 0) {
        Some(ctx.load_module(ffi_examples_hopper_kernels::PTX.as_bytes())?)
    } else {
        println!("# not compute capability 9.0: the wgmma (sm_90a) GEMM row is skipped");
        None
    };
    let stream = ctx.new_stream()?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let mut b = Bench {
        stream,
        start,
        end,
        rust,
        c,
        hopper,
        sms,
        rows: Vec::new(),
        ok: std::cell::Cell::new(true),
        numba: read_numba(),
    };
    println!("# Rust: {RUST_FLAGS}; CUDA C: {C_FLAGS}; {WARMUP} warm-up, median of {TRIALS}");
    // `GPUKERNEL_SUITE_ROWS=sum,bf16` runs only the named rows (e.g. under a profiler).
    let only = std::env::var("GPUKERNEL_SUITE_ROWS").ok();
    type RowFn = fn(&mut Bench) -> Result<(), BoxError>;
    let all: [(&str, RowFn); 11] = [
        ("saxpy", rows::saxpy),
        ("sum", rows::sum),
        ("histogram", rows::histogram),
        ("transpose", rows::transpose),
        ("stencil", rows::stencil),
        ("softmax", math_rows::softmax),
        ("nbody", math_rows::nbody),
        ("sgemm", gemm::sgemm),
        ("bf16", gemm::gemm_bf16),
        ("tma", gemm_hopper::gemm_tma_bf16),
        ("fp8", gemm_hopper::gemm_fp8),
    ];
    for (name, row) in all {
        if only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == name))
        {
            row(&mut b)?;
        }
    }
    print_table(&b.rows);
    if !b.ok.get() {
        println!("# SOME RESULTS WERE WRONG (see WRONG: lines)");
    }
    Ok(b.ok.get())
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| kernel | time | throughput | ratios (ours / reference, throughput) | rel. error vs host | flags |"
    );
    println!("|---|---:|---:|---|---:|---|");
    for r in rows {
        println!(
            "| {} | {:.3} ms | {:.0} {} | {} | {} | {} |",
            r.name,
            r.ms,
            r.rate.0,
            r.rate.1,
            if r.ratios.is_empty() {
                "reference".to_string()
            } else {
                r.ratios.join("; ")
            },
            r.err.map_or("—".to_string(), |e| format!("{e:.1e}")),
            r.flags,
        );
    }
}
