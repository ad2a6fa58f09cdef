//! Benchmark of the runtime on a CUDA device: what a typed launch costs next to a raw
//! `cuLaunchKernel` and a CUDA C kernel, and whether the Rust saxpy reaches the bandwidth of
//! the same kernel written in CUDA C.
//!
//! * Empty-kernel launch: `Stream::launch` of the Rust `empty_kernel` vs raw `cuLaunchKernel`
//!   of the same function vs raw `cuLaunchKernel` of a CUDA C `__global__` kernel compiled by
//!   NVRTC in this process (what `<<<>>>` does). Event-timed per launch over back-to-back
//!   launches, plus the host time of the launch call; medians of many trials.
//! * saxpy on 2^28 floats, GB/s counting read + write bytes, results checked before timing:
//!   the CUDA C kernel (NVRTC, default device optimisation = nvcc -O3, arch from the device);
//!   the same kernel in Rust (`saxpy_cuda_style`: 1D index, one bounds test, unchecked
//!   accesses, an `unsafe fn`); the safe Rust idiom (`saxpy`: `DisjointSlice` at
//!   `thread::index()`, `x` and `y` of one length by `same_len(x, y)`, checked on the host with
//!   the one-dimensional launch, so the device tests `i < y.len()` alone, as CUDA C does) and
//!   the same without `same_len` (`x` bounds-checked per thread), whose ratio shows what that
//!   check costs; the safe
//!   grid-stride form (`thread::grid_stride`, four elements per thread); the safe `f32x4`
//!   form (16-byte loads and stores); and `cuMemcpyDtoDAsync`.
//! * What the safe synchronization forms cost (`safe_sync_rows`): the block tree reduction
//!   with the safe non-aligned barrier (`barrier.sync 0`) vs the aligned one (`bar.sync 0`,
//!   CUDA's `__syncthreads`), and the warp shuffle reduction with the mask check vs without.
//!
//! * Launch cost when the inputs were written on another stream (a small saxpy): the typed
//!   launch orders itself after that stream once and is then as cheap as raw
//!   `cuLaunchKernel` with the same arguments.
//! * What the foreign-call failure check costs at a host read (`host_read_rows`): `to_host_vec`
//!   of 64 `u32`s (which reads the context's failure word after its wait) vs raw
//!   `cuMemcpyDtoHAsync` + `cuStreamSynchronize`, alone and after a launch of a kernel whose
//!   module holds a failure record (every Rust kernels PTX does), host time per iteration.
//!
//! Prints a table with ratios (ours / reference). Never asserts on time; exits non-zero only
//! when a result is wrong or the GPU cannot be used. Targets: launch <= 1.03x raw, the same
//! saxpy kernel in Rust >= 0.99x CUDA C, the safe idiom >= 0.995x.

use std::process::ExitCode;
use std::time::Instant;

use core::ffi::c_void;

use ffi_examples::bench::{BoxError, median, raw_launch, timed};
use ffi_examples_kernels::grid::saxpy_grid_stride;
use ffi_examples_kernels::numeric::saxpy4;
use ffi_examples_kernels::suite::saxpy_same_len;
use ffi_examples_kernels::{PTX, empty_kernel, saxpy, saxpy_cuda_style};
use gpukernel_device::vector::f32x4;
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{Context, Device, Event, Function, Kernel, LaunchConfig, Stream};

const CUDA_C: &str = r#"
extern "C" __global__ void empty_kernel_c() {}

extern "C" __global__ void saxpy_c(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"#;

const LAUNCHES_PER_TRIAL: usize = 2000;
const LAUNCH_TRIALS: usize = 31;
const SAXPY_TRIALS: usize = 21;
const SAXPY_N: usize = 1 << 28;

struct Row {
    what: String,
    value: String,
    ratio: String,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, BoxError> {
    let device = Device::get(0)?;
    let ctx: Context = device.primary_context()?;
    let (major, minor) = device.compute_capability()?;
    println!(
        "# gpukernel-runtime benchmark: {} (sm_{major}{minor})",
        device.name()?
    );

    // Rust kernels (nvptx64 PTX) and the CUDA C reference (NVRTC, this process).
    // The crate's PTX also holds kernels that call foreign functions: keep only these two.
    let rust = link::Linker::new(&ctx)?
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[
                empty_kernel::NAME,
                saxpy::NAME,
                saxpy_cuda_style::NAME,
                saxpy_grid_stride::NAME,
                saxpy4::NAME,
                saxpy_same_len::NAME,
            ],
        )
        .link_and_load()?;
    let k_empty = rust.kernel(empty_kernel)?;
    let k_saxpy = rust.kernel(saxpy)?;
    let k_saxpy_cuda_style = rust.kernel(saxpy_cuda_style)?;
    let k_saxpy_grid_stride = rust.kernel(saxpy_grid_stride)?;
    let k_saxpy4 = rust.kernel(saxpy4)?;
    let k_idiom = rust.kernel(saxpy_same_len)?;
    let t = Instant::now();
    let c_ptx = link::compile_cuda(
        CUDA_C,
        "bench_reference.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    println!(
        "# NVRTC compile of the CUDA C reference: {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let c_module = ctx.load_module(&c_ptx)?;
    let c_empty = c_module.function("empty_kernel_c")?;
    let c_saxpy = c_module.function("saxpy_c")?;

    let stream = ctx.new_stream()?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let mut rows = Vec::new();
    let mut ok = true;

    // ---- empty-kernel launch cost ----
    let one = LaunchConfig::new(1, 1);
    let raw_empty: &Function = &k_empty;
    let methods = ["typed", "raw", "cuda_c"];
    let launch = |m: &str| -> Result<(), BoxError> {
        match m {
            "typed" => Ok(stream.launch(&k_empty, one, ())?),
            // SAFETY: both kernels take no parameters.
            "raw" => unsafe { raw_launch(raw_empty, &stream, one, core::ptr::null_mut()) },
            // SAFETY: as above.
            _ => unsafe { raw_launch(&c_empty, &stream, one, core::ptr::null_mut()) },
        }
    };
    for m in methods {
        for _ in 0..200 {
            launch(m)?;
        }
    }
    stream.synchronize()?;
    let mut gpu_us = vec![Vec::new(); 3];
    let mut host_us = vec![Vec::new(); 3];
    for _ in 0..LAUNCH_TRIALS {
        for (j, m) in methods.iter().enumerate() {
            let mut host = 0.0;
            let ms = timed(&stream, &start, &end, || {
                let t = Instant::now();
                for _ in 0..LAUNCHES_PER_TRIAL {
                    launch(m)?;
                }
                host = t.elapsed().as_secs_f64();
                Ok(())
            })?;
            gpu_us[j].push(ms * 1e3 / LAUNCHES_PER_TRIAL as f64);
            host_us[j].push(host * 1e6 / LAUNCHES_PER_TRIAL as f64);
        }
    }
    stream.synchronize()?;
    let g: Vec<f64> = gpu_us.into_iter().map(median).collect();
    let h: Vec<f64> = host_us.into_iter().map(median).collect();
    let names = [
        "empty-kernel launch, typed `Stream::launch` (Rust PTX)",
        "empty-kernel launch, raw `cuLaunchKernel` (Rust PTX)",
        "empty-kernel launch, CUDA C (NVRTC) via raw `cuLaunchKernel`",
    ];
    for j in 0..3 {
        rows.push(Row {
            what: format!("{} — per launch, event-timed", names[j]),
            value: format!("{:.2} µs", g[j]),
            ratio: if j == 0 {
                format!("{:.3} × raw (target ≤ 1.03)", g[0] / g[1])
            } else if j == 2 {
                format!("typed = {:.3} × CUDA C", g[0] / g[2])
            } else {
                "reference".into()
            },
        });
        rows.push(Row {
            what: format!("{} — host time of the call", names[j]),
            value: format!("{:.3} µs", h[j]),
            ratio: if j == 0 {
                format!("{:.3} × raw", h[0] / h[1])
            } else {
                String::new()
            },
        });
    }

    // ---- launch cost when the inputs were written on another stream ----
    let (cross, cross_ratio) = cross_stream_launch(&ctx, &k_saxpy, &stream, &start, &end)?;
    rows.extend(cross);

    // ---- saxpy bandwidth ----
    let n = SAXPY_N;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1021) as f32 * 0.25).collect();
    let x = stream.htod_copy(&xs)?;
    let y0 = stream.htod_copy(&vec![1.0f32; n])?;
    let mut y = stream.alloc_zeros::<f32>(n)?;
    let mut z = stream.alloc_zeros::<f32>(n)?;
    let a = 2.0f32;
    let cfg = LaunchConfig::for_elements(n)?;
    // The grid-stride form: a quarter of the threads, four elements each.
    let cfg_stride = LaunchConfig::for_elements(n / 4)?;
    let cfg4 = LaunchConfig::for_elements(n / 4)?;
    let x4 = stream.htod_copy(
        &xs.chunks(4)
            .map(|c| f32x4([c[0], c[1], c[2], c[3]]))
            .collect::<Vec<_>>(),
    )?;
    let y4 = stream.htod_copy(&vec![f32x4::splat(1.0); n / 4])?;
    let mut out4 = stream.alloc_zeros::<f32x4>(n / 4)?;
    let run_c = |y: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
        let (mut a, mut xp, mut yp, mut nn) = (a, x.as_raw(), y.as_raw(), n as u64);
        let mut params: [*mut c_void; 4] = [
            (&raw mut a).cast(),
            (&raw mut xp).cast(),
            (&raw mut yp).cast(),
            (&raw mut nn).cast(),
        ];
        // SAFETY: (f32, const float*, float*, u64) as `saxpy_c` declares; x and y are live
        // buffers of n floats used on this stream only, and the launch is synchronized before
        // they are dropped.
        unsafe { raw_launch(&c_saxpy, &stream, cfg, params.as_mut_ptr()) }
    };
    // Correctness first: one launch of each on fresh data, checked on the host.
    let expect = |i: usize| a * xs[i] + 1.0;
    for which in [
        "Rust",
        "Rust, CUDA-style",
        "CUDA C",
        "Rust, grid-stride",
        "Rust, f32x4",
        "Rust, same_len",
    ] {
        y.copy_from_device(&y0)?;
        if which == "Rust" {
            stream.launch(&k_saxpy, cfg, (a, &x, &mut y))?;
        } else if which == "Rust, same_len" {
            stream.launch(&k_idiom, cfg, (a, &x, &mut y))?;
        } else if which == "Rust, grid-stride" {
            stream.launch(&k_saxpy_grid_stride, cfg_stride, (a, &x, &mut y))?;
        } else if which == "Rust, f32x4" {
            // `out4 = a * x4 + y4`, compared through `y` below.
            stream.launch(&k_saxpy4, cfg4, (a, &x4, &y4, &mut out4))?;
            let flat: Vec<f32> = out4.to_host_vec()?.into_iter().flat_map(|v| v.0).collect();
            y.copy_from_host(&flat)?;
        } else if which == "Rust, CUDA-style" {
            // SAFETY: one-dimensional launch, x.len() == y.len().
            unsafe { stream.launch_unchecked(&k_saxpy_cuda_style, cfg, (a, &x, &mut y))? };
        } else {
            run_c(&mut y)?;
        }
        let got = y.to_host_vec()?;
        if let Some(i) = (0..n).find(|&i| got[i] != expect(i)) {
            eprintln!(
                "saxpy ({which}) is wrong at {i}: {} != {}",
                got[i],
                expect(i)
            );
            ok = false;
        }
    }
    z.copy_from_device(&y0)?;
    if z.slice(n - 4..)?.to_host_vec()? != [1.0; 4] {
        eprintln!("device-to-device copy is wrong");
        ok = false;
    }
    stream.synchronize()?;
    let mut gbs = vec![Vec::new(); 7];
    let saxpy_bytes = 3.0 * 4.0 * n as f64;
    let copy_bytes = 2.0 * 4.0 * n as f64;
    for _ in 0..SAXPY_TRIALS {
        let ms = timed(&stream, &start, &end, || {
            Ok(stream.launch(&k_saxpy, cfg, (a, &x, &mut y))?)
        })?;
        gbs[0].push(saxpy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || run_c(&mut y))?;
        gbs[1].push(saxpy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || {
            Ok(stream.memcpy_dtod_async(&mut z, &y0)?)
        })?;
        gbs[2].push(copy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || {
            // SAFETY: one-dimensional launch, x.len() == y.len().
            unsafe { stream.launch_unchecked(&k_saxpy_cuda_style, cfg, (a, &x, &mut y))? };
            Ok(())
        })?;
        gbs[3].push(saxpy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || {
            Ok(stream.launch(&k_saxpy_grid_stride, cfg_stride, (a, &x, &mut y))?)
        })?;
        gbs[4].push(saxpy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || {
            Ok(stream.launch(&k_saxpy4, cfg4, (a, &x4, &y4, &mut out4))?)
        })?;
        gbs[5].push(saxpy_bytes / (ms * 1e-3) / 1e9);
        let ms = timed(&stream, &start, &end, || {
            Ok(stream.launch(&k_idiom, cfg, (a, &x, &mut y))?)
        })?;
        gbs[6].push(saxpy_bytes / (ms * 1e-3) / 1e9);
    }
    stream.synchronize()?;
    let b: Vec<f64> = gbs.into_iter().map(median).collect();
    rows.push(Row {
        what: "saxpy 2^28 floats, Rust safe idiom with `same_len(x, y)` (typed launch)".into(),
        value: format!("{:.0} GB/s", b[6]),
        ratio: format!("{:.3} × CUDA C (safe idiom, target ≥ 0.995)", b[6] / b[1]),
    });
    rows.push(Row {
        what: "saxpy 2^28 floats, Rust safe idiom without `same_len` (x checked per thread)".into(),
        value: format!("{:.0} GB/s", b[0]),
        ratio: format!("{:.3} × CUDA C", b[0] / b[1]),
    });
    rows.push(Row {
        what: "saxpy 2^28 floats, Rust safe grid-stride loop (`thread::grid_stride`, 4 per thread)"
            .into(),
        value: format!("{:.0} GB/s", b[4]),
        ratio: format!("{:.3} × CUDA C", b[4] / b[1]),
    });
    rows.push(Row {
        what: "saxpy 2^28 floats, Rust safe `f32x4` loads and stores (16-byte)".into(),
        value: format!("{:.0} GB/s", b[5]),
        ratio: format!("{:.3} × CUDA C", b[5] / b[1]),
    });
    rows.push(Row {
        what: "saxpy 2^28 floats, Rust kernel written CUDA-style (`unsafe fn`, 1D index)".into(),
        value: format!("{:.0} GB/s", b[3]),
        ratio: format!("{:.3} × CUDA C (target ≥ 0.99)", b[3] / b[1]),
    });
    rows.push(Row {
        what: "saxpy 2^28 floats, CUDA C (NVRTC) kernel".into(),
        value: format!("{:.0} GB/s", b[1]),
        ratio: "reference".into(),
    });
    rows.push(Row {
        what: "device-to-device copy 2^28 floats (`cuMemcpyDtoDAsync`)".into(),
        value: format!("{:.0} GB/s", b[2]),
        ratio: format!("Rust saxpy = {:.3} × copy", b[0] / b[2]),
    });

    ok &= safe_sync_rows(&ctx, &stream, &start, &end, &mut rows)?;
    host_read_rows(&stream, &k_empty, &mut rows)?;

    let w = rows
        .iter()
        .map(|r| r.what.chars().count())
        .max()
        .unwrap_or(0);
    println!(
        "| {:w$} | {:>12} | ratio (ours / reference) |",
        "what", "median"
    );
    println!(
        "|{}|{}|{}|",
        "-".repeat(w + 2),
        "-".repeat(14),
        "-".repeat(34)
    );
    for r in &rows {
        println!("| {:w$} | {:>12} | {} |", r.what, r.value, r.ratio);
    }
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "# cross-stream launch target (typed ≤ 1.03 × raw, inputs written on another stream): {} ({cross_ratio:.3})",
        verdict(cross_ratio <= 1.03)
    );
    println!(
        "# launch target (typed ≤ 1.03 × raw): {} ({:.3}); saxpy target (the same kernel in Rust ≥ 0.99 × CUDA C): {} ({:.3}); \
         safe-idiom saxpy target (DisjointSlice at thread::index(), same_len(x, y) checked on the host with the 1D launch ≥ 0.995 × CUDA C): {} ({:.3})",
        verdict(g[0] <= 1.03 * g[1]),
        g[0] / g[1],
        verdict(b[3] >= 0.99 * b[1]),
        b[3] / b[1],
        verdict(b[6] >= 0.995 * b[1]),
        b[6] / b[1],
    );
    Ok(ok)
}

/// A small saxpy launched on `stream` while its inputs were written on another stream: the
/// typed launch orders itself after that stream once, then costs what a raw `cuLaunchKernel`
/// of the same kernel and arguments costs. Returns the rows and the typed / raw ratio.
fn cross_stream_launch(
    ctx: &Context,
    k_saxpy: &gpukernel_runtime::TypedKernel<saxpy>,
    stream: &Stream,
    start: &Event,
    end: &Event,
) -> Result<(Vec<Row>, f64), BoxError> {
    const N: usize = 256;
    let writer = ctx.new_stream()?;
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = writer.htod_copy(&xs)?;
    let mut y = writer.htod_copy(&vec![1.0f32; N])?;
    let cfg = LaunchConfig::for_elements(N)?;
    let a = 0.5f32;
    // Correct first: one typed launch, ordered after the writes on `writer`.
    stream.launch(k_saxpy, cfg, (a, &x, &mut y))?;
    let got = y.to_host_vec()?;
    if let Some(i) = (0..N).find(|&i| got[i] != a * xs[i] + 1.0) {
        return Err(format!("cross-stream saxpy is wrong at {i}: {}", got[i]).into());
    }
    // Readers on a third stream keep `x` shared by several streams, as a real pipeline would.
    let other = ctx.new_stream()?;
    other.launch(k_saxpy, cfg, (a, &x, &mut writer.alloc_zeros::<f32>(N)?))?;
    other.synchronize()?;
    let (xp, yp) = (x.as_raw(), y.as_raw());
    let raw = |stream: &Stream| -> Result<(), BoxError> {
        let (mut a, mut xp, mut xn, mut yp, mut yn) = (a, xp, N as u64, yp, N as u64);
        let mut params: [*mut c_void; 5] = [
            (&raw mut a).cast(),
            (&raw mut xp).cast(),
            (&raw mut xn).cast(),
            (&raw mut yp).cast(),
            (&raw mut yn).cast(),
        ];
        // SAFETY: (f32, ptr, len, ptr, len) is the lowering of saxpy's parameters; x and y
        // are live buffers of N floats, and the stream is synchronized before they drop.
        unsafe { raw_launch(k_saxpy, stream, cfg, params.as_mut_ptr()) }
    };
    let mut us = [Vec::new(), Vec::new()];
    let mut host = [Vec::new(), Vec::new()];
    for trial in 0..LAUNCH_TRIALS {
        // Alternate which goes first, so neither pays for starting from an idle GPU.
        let order = if trial % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let mut h = 0.0;
            let ms = timed(stream, start, end, || {
                let t = Instant::now();
                for _ in 0..LAUNCHES_PER_TRIAL {
                    if which == 0 {
                        stream.launch(k_saxpy, cfg, (a, &x, &mut y))?;
                    } else {
                        raw(stream)?;
                    }
                }
                h = t.elapsed().as_secs_f64();
                Ok(())
            })?;
            us[which].push(ms * 1e3 / LAUNCHES_PER_TRIAL as f64);
            host[which].push(h * 1e6 / LAUNCHES_PER_TRIAL as f64);
        }
    }
    stream.synchronize()?;
    let [typed, raw_us] = us.map(median);
    let [typed_host, raw_host] = host.map(median);
    let ratio = typed / raw_us;
    Ok((
        vec![
            Row {
                what:
                    "saxpy 256 floats, typed launch, inputs written on another stream — per launch"
                        .into(),
                value: format!("{typed:.2} µs"),
                ratio: format!("{ratio:.3} × raw (target ≤ 1.03)"),
            },
            Row {
                what: "saxpy 256 floats, typed launch, inputs written on another stream — host time of the call".into(),
                value: format!("{typed_host:.3} µs"),
                ratio: format!("{:.3} × raw", typed_host / raw_host),
            },
            Row {
                what: "saxpy 256 floats, raw `cuLaunchKernel`, same arguments — per launch".into(),
                value: format!("{raw_us:.2} µs"),
                ratio: "reference".into(),
            },
            Row {
                what: "saxpy 256 floats, raw `cuLaunchKernel`, same arguments — host time of the call".into(),
                value: format!("{raw_host:.3} µs"),
                ratio: String::new(),
            },
        ],
        ratio,
    ))
}

const REDUCE_N: usize = 1 << 26;
const REDUCE_BLOCK: u32 = 256;
const REDUCE_TRIALS: usize = 21;
const REDUCE_LAUNCHES_PER_TRIAL: usize = 10;

/// Rows "reduction safe barrier / aligned barrier" and "warp reduction checked mask /
/// unchecked mask": each pair of kernels computes the same sums (checked against the host
/// and against each other first), then is timed alternately in the same trials (event-timed
/// medians per launch). Returns whether the results were right.
/// Host time of a small device-to-host read: `to_host_vec` (tracked, failure word checked
/// after the wait) vs raw `cuMemcpyDtoHAsync` + `cuStreamSynchronize` of the same bytes, alone
/// and after an empty-kernel launch (typed vs raw `cuLaunchKernel`).
fn host_read_rows(
    stream: &Stream,
    k_empty: &gpukernel_runtime::TypedKernel<empty_kernel>,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    use cudarc::driver::sys;
    const N: usize = 64;
    const ITERS: usize = 500;
    let buf = stream.htod_copy(&[7u32; N])?;
    let raw_empty: &Function = k_empty;
    let one = LaunchConfig::new(1, 1);
    let mut host = vec![0u32; N];
    let raw_read = |host: &mut [u32]| -> Result<(), BoxError> {
        // SAFETY: `buf` holds `N` u32s of this context, idle (no work pending on it here);
        // `host` has room for them, and the stream is synchronized before it is read.
        let r = unsafe {
            sys::cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), buf.as_raw(), N * 4, stream.raw())
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemcpyDtoHAsync: {r:?}").into());
        }
        // SAFETY: a live stream of the current context.
        let r = unsafe { sys::cuStreamSynchronize(stream.raw()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamSynchronize: {r:?}").into());
        }
        Ok(())
    };
    // 0: to_host_vec, 1: raw read, 2: typed launch + to_host_vec, 3: raw launch + raw read.
    let mut us = vec![Vec::new(); 4];
    for trial in 0..LAUNCH_TRIALS + 1 {
        for (j, v) in us.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..ITERS {
                match j {
                    0 => drop(buf.to_host_vec()?),
                    1 => raw_read(&mut host)?,
                    2 => {
                        stream.launch(k_empty, one, ())?;
                        drop(buf.to_host_vec()?);
                    }
                    _ => {
                        // SAFETY: the kernel takes no parameters.
                        unsafe { raw_launch(raw_empty, stream, one, core::ptr::null_mut()) }?;
                        raw_read(&mut host)?;
                    }
                }
            }
            // The first trial warms up.
            if trial > 0 {
                v.push(t.elapsed().as_secs_f64() * 1e6 / ITERS as f64);
            }
        }
    }
    if buf.to_host_vec()? != [7u32; N] || host != [7u32; N] {
        return Err("the host read is wrong".into());
    }
    let m: Vec<f64> = us.into_iter().map(median).collect();
    rows.push(Row {
        what: "`to_host_vec` of 64 u32 (tracked; failure word read after the wait) — host time"
            .into(),
        value: format!("{:.2} µs", m[0]),
        ratio: format!(
            "{:.3} × raw cuMemcpyDtoHAsync + cuStreamSynchronize",
            m[0] / m[1]
        ),
    });
    rows.push(Row {
        what: "raw cuMemcpyDtoHAsync + cuStreamSynchronize of 64 u32 — host time".into(),
        value: format!("{:.2} µs", m[1]),
        ratio: "reference".into(),
    });
    rows.push(Row {
        what: "typed launch (module with a failure record) + `to_host_vec` — host time".into(),
        value: format!("{:.2} µs", m[2]),
        ratio: format!("{:.3} × raw launch + raw read", m[2] / m[3]),
    });
    rows.push(Row {
        what: "raw cuLaunchKernel + raw read — host time".into(),
        value: format!("{:.2} µs", m[3]),
        ratio: "reference".into(),
    });
    Ok(())
}

fn safe_sync_rows(
    ctx: &Context,
    stream: &Stream,
    start: &Event,
    end: &Event,
    rows: &mut Vec<Row>,
) -> Result<bool, BoxError> {
    use ffi_examples_kernels::reduce::{
        block_reduce_sum, block_reduce_sum_aligned, warp_reduce_sum, warp_reduce_sum_unchecked,
    };
    let module = link::Linker::new(ctx)?
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[
                block_reduce_sum::NAME,
                block_reduce_sum_aligned::NAME,
                warp_reduce_sum::NAME,
                warp_reduce_sum_unchecked::NAME,
            ],
        )
        .link_and_load()?;
    let (k_safe, k_aligned) = (
        module.kernel(block_reduce_sum)?,
        module.kernel(block_reduce_sum_aligned)?,
    );
    let (k_checked, k_unchecked) = (
        module.kernel(warp_reduce_sum)?,
        module.kernel(warp_reduce_sum_unchecked)?,
    );

    let n = REDUCE_N;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1013) as f32 * 0.125).collect();
    let x = stream.htod_copy(&xs)?;
    let blocks = n.div_ceil(REDUCE_BLOCK as usize);
    let warps = n.div_ceil(32);
    let cfg = LaunchConfig {
        grid: (blocks as u32, 1, 1).into(),
        block: (REDUCE_BLOCK, 1, 1).into(),
        shared_mem_bytes: 0,
        attributes: Default::default(),
    };
    let mut out_a = stream.alloc_zeros::<f32>(blocks)?;
    let mut out_b = stream.alloc_zeros::<f32>(blocks)?;
    let mut warp_a = stream.alloc_zeros::<f32>(warps)?;
    let mut warp_b = stream.alloc_zeros::<f32>(warps)?;

    // Correctness first: each kernel against the host (f64 sums of each chunk), and each pair
    // bit for bit (the same additions in the same order).
    let mut ok = true;
    let sums = |chunk: usize| -> Vec<f64> {
        xs.chunks(chunk)
            .map(|c| c.iter().map(|&v| v as f64).sum())
            .collect()
    };
    let (block_want, warp_want) = (sums(REDUCE_BLOCK as usize), sums(32));
    stream.launch(&k_safe, cfg, (&x, &mut out_a))?;
    stream.launch(&k_aligned, cfg, (&x, &mut out_b))?;
    stream.launch(&k_checked, cfg, (&x, &mut warp_a))?;
    stream.launch(&k_unchecked, cfg, (&x, &mut warp_b))?;
    for (what, got, want) in [
        ("block_reduce_sum", out_a.to_host_vec()?, &block_want),
        (
            "block_reduce_sum_aligned",
            out_b.to_host_vec()?,
            &block_want,
        ),
        ("warp_reduce_sum", warp_a.to_host_vec()?, &warp_want),
        (
            "warp_reduce_sum_unchecked",
            warp_b.to_host_vec()?,
            &warp_want,
        ),
    ] {
        if let Some(i) = (0..want.len()).find(|&i| {
            let w = want[i];
            (got[i] as f64 - w).abs() > 1e-4 * w.abs().max(1.0)
        }) {
            eprintln!("{what} is wrong at {i}: {} != {}", got[i], want[i]);
            ok = false;
        }
    }
    if out_a.to_host_vec()? != out_b.to_host_vec()? {
        eprintln!("block_reduce_sum and block_reduce_sum_aligned differ");
        ok = false;
    }
    if warp_a.to_host_vec()? != warp_b.to_host_vec()? {
        eprintln!("warp_reduce_sum and warp_reduce_sum_unchecked differ");
        ok = false;
    }

    // Timing: the two kernels of a pair alternate within each trial.
    let mut us = vec![Vec::new(); 4];
    for trial in 0..REDUCE_TRIALS {
        for j in 0..4 {
            // Alternate which of a pair goes first, so that neither always follows the other.
            let j = if trial % 2 == 0 { j } else { j ^ 1 };
            let ms = timed(stream, start, end, || {
                for _ in 0..REDUCE_LAUNCHES_PER_TRIAL {
                    match j {
                        0 => stream.launch(&k_safe, cfg, (&x, &mut out_a))?,
                        1 => stream.launch(&k_aligned, cfg, (&x, &mut out_b))?,
                        2 => stream.launch(&k_checked, cfg, (&x, &mut warp_a))?,
                        _ => stream.launch(&k_unchecked, cfg, (&x, &mut warp_b))?,
                    }
                }
                Ok(())
            })?;
            us[j].push(ms * 1e3 / REDUCE_LAUNCHES_PER_TRIAL as f64);
        }
    }
    stream.synchronize()?;
    let t: Vec<f64> = us.into_iter().map(median).collect();
    let gbs = |us: f64| 4.0 * n as f64 / (us * 1e-6) / 1e9;
    let what = format!(
        "2^{} floats, {REDUCE_BLOCK}-thread blocks",
        n.trailing_zeros()
    );
    rows.push(Row {
        what: format!("block tree reduction {what}, safe `sync_threads` (`barrier.sync 0`)"),
        value: format!("{:.1} µs", t[0]),
        ratio: format!(
            "reduction safe barrier / aligned barrier = {:.3} ({:.0} GB/s)",
            t[0] / t[1],
            gbs(t[0])
        ),
    });
    rows.push(Row {
        what: format!(
            "block tree reduction {what}, aligned `sync_threads_aligned` (`bar.sync 0`, unsafe)"
        ),
        value: format!("{:.1} µs", t[1]),
        ratio: format!("reference ({:.0} GB/s)", gbs(t[1])),
    });
    rows.push(Row {
        what: format!("warp shuffle reduction {what}, safe (lane-in-mask check)"),
        value: format!("{:.1} µs", t[2]),
        ratio: format!(
            "warp reduction checked mask / unchecked mask = {:.3} ({:.0} GB/s)",
            t[2] / t[3],
            gbs(t[2])
        ),
    });
    rows.push(Row {
        what: format!("warp shuffle reduction {what}, `*_unchecked` shuffles (unsafe)"),
        value: format!("{:.1} µs", t[3]),
        ratio: format!("reference ({:.0} GB/s)", gbs(t[3])),
    });
    Ok(ok)
}
