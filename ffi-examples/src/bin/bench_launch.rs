//! The launch-shape benchmark: what a typed launch costs next to raw `cuLaunchKernel` with the
//! same arguments and a CUDA C kernel of the same parameters launched as `<<<>>>` launches it
//! (NVRTC in this process, raw `cuLaunchKernel`; `bench/launch_shapes.cu`, built by nvcc where
//! the GPU machine has it, times the real `<<<>>>`), for the shapes other GPU compilers publish:
//! no argument, one array, 16 scalars, 16 arrays, 256 scalars.
//!
//! Each launch runs an empty body on one thread; 2000 back-to-back launches per trial,
//! event-timed, the three methods interleaved within each trial (their order rotating), median
//! of 31 trials; the host time of the call is measured beside. Never asserts on time; exits
//! non-zero only when the GPU cannot be used.
//!
//! `bench_launch perf <shape> <typed|raw> <launches>` launches one shape in a loop and nothing
//! else (for `perf record`, `perf stat`), and counts the heap allocations per launch; shape 6 is
//! `bench_runtime`'s saxpy whose inputs were written on another stream, 7 times
//! `cuCtxGetCurrent` alone (what binding the context costs each launch).

use std::process::ExitCode;
use std::time::Instant;

use core::ffi::c_void;

use ffi_examples::bench::{BoxError, median, raw_launch, timed};
use ffi_examples_kernels::empty_kernel;
use ffi_examples_kernels::launch_shapes::*;
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, Function, LaunchConfig, Stream, TypedKernel,
};

/// Counts the heap allocations the process makes, so that `perf` mode can report them per launch.
struct Counting;

static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// SAFETY: forwards to the system allocator; the counter is a relaxed atomic.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CUDA_C: &str = include_str!("../../bench/launch_shapes_kernels.cu");
const LAUNCHES_PER_TRIAL: usize = 2000;
const TRIALS: usize = 31;
const SHAPES: [&str; 6] = [
    "empty",
    "one array",
    "16 scalars",
    "16 arrays",
    "256 scalars",
    "256 scalars, CUDA C as 256 parameters",
];

struct Kernels {
    empty: TypedKernel<empty_kernel>,
    one: TypedKernel<shape_one_array>,
    s16: TypedKernel<shape_16_scalars>,
    a16: TypedKernel<shape_16_arrays>,
    s256: TypedKernel<shape_256_scalars>,
    c: Vec<Function>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_launch: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The arguments every launch passes: one buffer (lent to every array parameter) and the
/// scalars.
struct Args {
    /// One buffer per array parameter, as a real call passes them.
    xs: Vec<DeviceBuffer<f32>>,
    s256: Scalars256,
}

/// The raw launches' parameters, made once (what a caller of raw `cuLaunchKernel` keeps between
/// launches): per shape, one pointer per parameter, pointing into `values`.
struct RawParams {
    /// Slices as (pointer, length) pairs, the 256 scalars, the struct.
    ptr_len: [u64; 32],
    scalars: [f32; 256],
    s256: Scalars256,
    params: Vec<Vec<*mut c_void>>,
}

impl RawParams {
    /// Boxed, so that the pointers into it stay valid.
    fn new(a: &Args) -> Box<RawParams> {
        let mut r = Box::new(RawParams {
            ptr_len: core::array::from_fn(|i| {
                if i % 2 == 0 {
                    a.xs[i / 2].as_raw()
                } else {
                    256
                }
            }),
            scalars: core::array::from_fn(|i| 0.5 + i as f32),
            s256: a.s256,
            params: Vec::new(),
        });
        let pl: Vec<*mut c_void> = r
            .ptr_len
            .iter_mut()
            .map(|v| (v as *mut u64).cast())
            .collect();
        let sc: Vec<*mut c_void> = r
            .scalars
            .iter_mut()
            .map(|v| (v as *mut f32).cast())
            .collect();
        let st: *mut c_void = (&raw mut r.s256).cast();
        r.params = vec![
            Vec::new(),
            pl[..2].to_vec(),
            sc[..16].to_vec(),
            pl.clone(),
            vec![st],
            sc,
        ];
        r
    }
}

fn run() -> Result<(), BoxError> {
    let device = Device::get(0)?;
    let ctx: Context = device.primary_context()?;
    let (major, minor) = device.compute_capability()?;
    println!("# launch shapes: {} (sm_{major}{minor})", device.name()?);
    let module = ctx.load_module(ffi_examples_kernels::FATBIN)?;
    let c_ptx = link::compile_cuda(
        CUDA_C,
        "launch_shapes_kernels.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    let c_module = ctx.load_module(&c_ptx)?;
    let k = Kernels {
        empty: module.kernel(empty_kernel)?,
        one: module.kernel(shape_one_array)?,
        s16: module.kernel(shape_16_scalars)?,
        a16: module.kernel(shape_16_arrays)?,
        s256: module.kernel(shape_256_scalars)?,
        c: [
            "shape_empty",
            "shape_one_array",
            "shape_16_scalars",
            "shape_16_arrays",
            "shape_256_scalars",
            "shape_256_separate",
        ]
        .iter()
        .map(|n| c_module.function(n))
        .collect::<Result<_, _>>()?,
    };
    let stream = ctx.new_stream()?;
    let args = Args {
        xs: (0..16)
            .map(|_| stream.htod_copy(&[1.0f32; 256]))
            .collect::<Result<_, _>>()?,
        s256: Scalars256 {
            v: core::array::from_fn(|i| i as f32),
        },
    };
    let mut raw = RawParams::new(&args);
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("perf") {
        let shape: usize = argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let method = argv.get(3).map(String::as_str).unwrap_or("typed");
        let n: usize = argv
            .get(4)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        let m = if method == "raw" { 1 } else { 0 };
        if shape == 6 {
            return perf_cross_stream(&ctx, &module, &stream, m == 0, n);
        }
        if shape == 7 {
            // What binding the context costs a launch: the runtime asks the driver which
            // context is current before each call (`cuCtxGetCurrent`).
            let mut cur = core::ptr::null_mut();
            let t = Instant::now();
            for _ in 0..n {
                // SAFETY: a valid out-pointer.
                let r = unsafe { cudarc::driver::sys::cuCtxGetCurrent(&mut cur) };
                if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                    return Err(format!("cuCtxGetCurrent: {r:?}").into());
                }
            }
            println!(
                "# cuCtxGetCurrent: {:.1} ns each ({n} calls)",
                t.elapsed().as_secs_f64() * 1e9 / n as f64
            );
            return Ok(());
        }
        let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
        let t = Instant::now();
        for i in 0..n {
            launch(&k, &args, &mut raw, &stream, shape, m)?;
            if i % 10_000 == 9_999 {
                stream.synchronize()?;
            }
        }
        stream.synchronize()?;
        let elapsed = t.elapsed().as_secs_f64();
        let allocated = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - allocations;
        println!(
            "# {n} {method} launches of shape {:?}: {:.3} µs each (host, with a sync every 10000); heap allocations: {:.4} per launch",
            SHAPES[shape],
            elapsed * 1e6 / n as f64,
            allocated as f64 / n as f64
        );
        return Ok(());
    }
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    println!(
        "| shape | typed launch, µs | raw `cuLaunchKernel`, µs | CUDA C (NVRTC, raw launch), µs | typed / raw | typed / CUDA C | host time of the call: typed / raw, µs |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (shape, shape_name) in SHAPES.iter().enumerate() {
        // The Rust side has no 256-parameter form: its row repeats the struct.
        let rust_shape = shape.min(4);
        let methods: [(usize, usize); 3] = [(rust_shape, 0), (rust_shape, 1), (shape, 2)];
        for &(s, m) in &methods {
            for _ in 0..200 {
                launch(&k, &args, &mut raw, &stream, s, m)?;
            }
        }
        stream.synchronize()?;
        let mut gpu = [Vec::new(), Vec::new(), Vec::new()];
        let mut host = [Vec::new(), Vec::new(), Vec::new()];
        for trial in 0..TRIALS {
            for j in 0..3 {
                let (s, m) = methods[(j + trial) % 3];
                let mut h = 0.0;
                let ms = timed(&stream, &start, &end, || {
                    let t = Instant::now();
                    for _ in 0..LAUNCHES_PER_TRIAL {
                        launch(&k, &args, &mut raw, &stream, s, m)?;
                    }
                    h = t.elapsed().as_secs_f64();
                    Ok(())
                })?;
                gpu[m].push(ms * 1e3 / LAUNCHES_PER_TRIAL as f64);
                host[m].push(h * 1e6 / LAUNCHES_PER_TRIAL as f64);
            }
        }
        stream.synchronize()?;
        let g = gpu.map(median);
        let h = host.map(median);
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} / {:.3} |",
            shape_name,
            g[0],
            g[1],
            g[2],
            g[0] / g[1],
            g[0] / g[2],
            h[0],
            h[1]
        );
    }
    Ok(())
}

/// One launch of `shape` by `method`: 0 typed, 1 raw `cuLaunchKernel` of the Rust kernel with
/// the typed launch's ABI values, 2 the CUDA C kernel by raw `cuLaunchKernel`.
fn launch(
    k: &Kernels,
    a: &Args,
    raw: &mut RawParams,
    stream: &Stream,
    shape: usize,
    method: usize,
) -> Result<(), BoxError> {
    let one = LaunchConfig::new(1, 1);
    let x = &a.xs;
    if method == 0 {
        match shape {
            0 => stream.launch(&k.empty, one, ())?,
            1 => stream.launch(&k.one, one, (&x[0],))?,
            2 => stream.launch(
                &k.s16,
                one,
                (
                    0.5f32, 1.5f32, 2.5f32, 3.5f32, 4.5f32, 5.5f32, 6.5f32, 7.5f32, 8.5f32, 9.5f32,
                    10.5f32, 11.5f32, 12.5f32, 13.5f32, 14.5f32, 15.5f32,
                ),
            )?,
            3 => stream.launch(
                &k.a16,
                one,
                (
                    &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &x[6], &x[7], &x[8], &x[9], &x[10],
                    &x[11], &x[12], &x[13], &x[14], &x[15],
                ),
            )?,
            _ => stream.launch(&k.s256, one, (a.s256,))?,
        }
        return Ok(());
    }
    let f: &Function = match (method, shape) {
        (2, s) => &k.c[s],
        (_, 0) => &k.empty,
        (_, 1) => &k.one,
        (_, 2) => &k.s16,
        (_, 3) => &k.a16,
        _ => &k.s256,
    };
    let params = &mut raw.params[shape];
    let params = if params.is_empty() {
        core::ptr::null_mut()
    } else {
        params.as_mut_ptr()
    };
    // SAFETY: `params` holds one pointer per parameter of `f`, in order, with the types it
    // declares (the Rust kernels' lowering: a slice is a pointer and a length; the CUDA C
    // twins declare the same), pointing into `raw`, which outlives the launch's enqueue; the
    // buffers are live and synchronized before they drop.
    unsafe { raw_launch(f, stream, one, params) }
}

/// `perf` mode's shape 6: bench_runtime's small saxpy whose inputs were written on another
/// stream (and read on a third), launched typed or raw in a loop.
fn perf_cross_stream(
    ctx: &Context,
    module: &gpukernel_runtime::Module,
    stream: &Stream,
    typed: bool,
    n: usize,
) -> Result<(), BoxError> {
    use ffi_examples_kernels::saxpy;
    const N: usize = 256;
    let k = module.kernel(saxpy)?;
    let writer = ctx.new_stream()?;
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = writer.htod_copy(&xs)?;
    let mut y = writer.htod_copy(&vec![1.0f32; N])?;
    let cfg = LaunchConfig::for_elements(N)?;
    stream.launch(&k, cfg, (0.5f32, &x, &mut y))?;
    let other = ctx.new_stream()?;
    other.launch(&k, cfg, (0.5f32, &x, &mut writer.alloc_zeros::<f32>(N)?))?;
    other.synchronize()?;
    let (xp, yp) = (x.as_raw(), y.as_raw());
    let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let t = Instant::now();
    for i in 0..n {
        if typed {
            stream.launch(&k, cfg, (0.5f32, &x, &mut y))?;
        } else {
            let (mut a, mut xp, mut xn, mut yp, mut yn) = (0.5f32, xp, N as u64, yp, N as u64);
            let mut params: [*mut c_void; 5] = [
                (&raw mut a).cast(),
                (&raw mut xp).cast(),
                (&raw mut xn).cast(),
                (&raw mut yp).cast(),
                (&raw mut yn).cast(),
            ];
            // SAFETY: saxpy's lowering; x and y are live and synchronized before they drop.
            unsafe { raw_launch(&k, stream, cfg, params.as_mut_ptr())? };
        }
        if i % 10_000 == 9_999 {
            stream.synchronize()?;
        }
    }
    stream.synchronize()?;
    let elapsed = t.elapsed().as_secs_f64();
    let allocated = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - allocations;
    println!(
        "# {n} {} launches of the cross-stream saxpy: {:.3} µs each (host); heap allocations: {:.4} per launch",
        if typed { "typed" } else { "raw" },
        elapsed * 1e6 / n as f64,
        allocated as f64 / n as f64
    );
    Ok(())
}
