//! Attention forward (`ffi_examples_attention_kernels`) against PyTorch's
//! `scaled_dot_product_attention` on the same GPU, in one run.
//!
//! For each shape (B=4, H=16, S=4096, D=128 and B=8, H=16, S=2048, D=64; causal and not) and
//! each of the Rust kernels (`mma`: `mma.sync` fed by `cp.async`; `wgmma`: warpgroup MMA fed by
//! `cp.async`; `tma`: warp-specialised, warpgroup MMA fed by TMA; at D=64 also `tmaq128`, the
//! same with 128 query rows per block instead of 192) it launches the kernel once, checks sampled rows against the f64 host reference, times
//! it with events (median of 21 after 3 warm-ups) and prints TFLOP/s (4·B·H·S²·D, halved when
//! causal). It then writes the first batch element's `q`, `k`, `v` and our `o` (bf16) and the
//! timings to a scratch folder and runs `bench_attention.py` (the folder `GPUKERNEL_DATA_DIR`
//! names, else `ffi-examples/bench/` of the checkout) with `python3`: PyTorch times SDPA with
//! each backend forced on the same shapes, compares our output with its own and with an f32
//! reference, and prints the ratios. Without PyTorch the reference rows are skipped, named.
//!
//! Exits non-zero when a check fails; never on time.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use ffi_examples_attention_kernels::{
    FATBIN, THREADS, WG_THREADS, WS_BLOCK_KV, WS_BOX_COLS, attention_fwd_d64,
    attention_fwd_d64_tma, attention_fwd_d64_tma_q128, attention_fwd_d64_wgmma, attention_fwd_d128,
    attention_fwd_d128_tma, attention_fwd_d128_wgmma, grid, reference_row, shared_bytes, wg_grid,
    wg_shared_bytes, ws_block_q, ws_consumers, ws_grid, ws_shared_bytes, ws_threads,
};
use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
use gpukernel_device::tma::TensorMap;
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, LaunchConfig, Module, Swizzle, TensorMap2D,
};

type BoxError = Box<dyn std::error::Error>;

const WARMUP: usize = 3;
const TRIALS: usize = 21;

/// One benchmark shape.
#[derive(Clone, Copy)]
struct Shape {
    b: usize,
    h: usize,
    s: usize,
    d: usize,
    causal: bool,
}

impl Shape {
    fn tag(&self) -> String {
        format!(
            "b{}_h{}_s{}_d{}_{}",
            self.b,
            self.h,
            self.s,
            self.d,
            if self.causal { "causal" } else { "full" }
        )
    }

    fn flops(&self) -> f64 {
        let f = 4.0 * (self.b * self.h) as f64 * (self.s as f64).powi(2) * self.d as f64;
        if self.causal { f / 2.0 } else { f }
    }
}

/// splitmix64 of `i`: the inputs, reproducible without storing them.
fn hash(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` bf16 values `amp · u`, `u` uniform in [-1, 1) from stream `stream`.
fn values(stream: u64, n: usize, amp: f32) -> Vec<u16> {
    (0..n as u64)
        .map(|i| {
            let u = (hash(i ^ (stream << 40)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
            bf16_bits(amp * u)
        })
        .collect()
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_attention: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The kernels of one head dimension.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `mma.sync`, `cp.async`.
    Mma,
    /// `wgmma`, `cp.async`.
    Wgmma,
    /// `wgmma`, warp-specialised, fed by TMA: the tensor maps of `q`, `k`, `v` (the head
    /// dimension's default consumer warpgroups).
    Tma([TensorMap; 3]),
    /// The head dimension 64 TMA kernel with two consumer warpgroups (128 query rows).
    TmaQ128([TensorMap; 3]),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Mma => "mma",
            Kind::Wgmma => "wgmma",
            Kind::Tma(_) => "tma",
            Kind::TmaQ128(_) => "tmaq128",
        }
    }
}

/// Launches the kernel `kind` for `shape` once on the context's default stream.
fn launch(
    md: &Module,
    ctx: &Context,
    shape: &Shape,
    kind: Kind,
    (q, k, v): (&DeviceBuffer<u16>, &DeviceBuffer<u16>, &DeviceBuffer<u16>),
    o: &mut DeviceBuffer<u16>,
) -> Result<(), BoxError> {
    let s = ctx.default_stream();
    let heads = (shape.b * shape.h) as u32;
    let scale = 1.0 / (shape.d as f32).sqrt();
    let (seq, d, causal) = (shape.s as u32, shape.d as u32, shape.causal as u32);
    if let Kind::Tma([mq, mk, mv]) | Kind::TmaQ128([mq, mk, mv]) = kind {
        let q128 = matches!(kind, Kind::TmaQ128(_));
        let consumers = if q128 { 2 } else { ws_consumers(d) };
        let cfg = LaunchConfig::new(ws_grid(heads, seq, consumers), ws_threads(consumers))
            .with_shared_mem_bytes(ws_shared_bytes(d, consumers));
        let args = (mq, mk, mv, seq, scale, causal, o);
        // SAFETY: `run` made the maps of q, k, v as [b · h · s, d] with the kernels' boxes and
        // swizzle, and keeps them and the buffers until the context is idle; o has as many
        // elements; nothing writes q, k, v meanwhile.
        unsafe {
            match shape.d {
                64 if q128 => {
                    s.launch_unchecked(&md.kernel(attention_fwd_d64_tma_q128)?, cfg, args)?
                }
                64 => s.launch_unchecked(&md.kernel(attention_fwd_d64_tma)?, cfg, args)?,
                _ => s.launch_unchecked(&md.kernel(attention_fwd_d128_tma)?, cfg, args)?,
            }
        }
        return Ok(());
    }
    let args = (q, k, v, shape.s as u32, scale, shape.causal as u32, o);
    if kind == Kind::Wgmma {
        let cfg = LaunchConfig::new(wg_grid(heads, shape.s as u32), WG_THREADS)
            .with_shared_mem_bytes(wg_shared_bytes(shape.d as u32));
        match shape.d {
            64 => s.launch(&md.kernel(attention_fwd_d64_wgmma)?, cfg, args)?,
            _ => s.launch(&md.kernel(attention_fwd_d128_wgmma)?, cfg, args)?,
        }
        return Ok(());
    }
    let cfg = LaunchConfig::new(grid(heads, shape.s as u32), THREADS)
        .with_shared_mem_bytes(shared_bytes(shape.d as u32));
    match shape.d {
        64 => s.launch(&md.kernel(attention_fwd_d64)?, cfg, args)?,
        _ => s.launch(&md.kernel(attention_fwd_d128)?, cfg, args)?,
    }
    Ok(())
}

fn write_u16(path: &Path, x: &[u16]) -> Result<(), BoxError> {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()).into())
}

fn run() -> Result<bool, BoxError> {
    let dev = Device::get(0)?;
    let name = dev.name()?;
    let cc = dev.compute_capability()?;
    println!(
        "# bench_attention on {name} (compute capability {}.{})",
        cc.0, cc.1
    );
    if cc != (9, 0) {
        println!("# the attention kernels are built for sm_90a (H100, H200): not run here");
        return Ok(true);
    }
    let ctx = dev.primary_context()?;
    let md = ctx.load_module(FATBIN)?;
    md.kernel(attention_fwd_d64)?
        .set_max_dynamic_shared_bytes(shared_bytes(64))?;
    md.kernel(attention_fwd_d128)?
        .set_max_dynamic_shared_bytes(shared_bytes(128))?;
    md.kernel(attention_fwd_d64_wgmma)?
        .set_max_dynamic_shared_bytes(wg_shared_bytes(64))?;
    md.kernel(attention_fwd_d128_wgmma)?
        .set_max_dynamic_shared_bytes(wg_shared_bytes(128))?;
    md.kernel(attention_fwd_d64_tma)?
        .set_max_dynamic_shared_bytes(ws_shared_bytes(64, ws_consumers(64)))?;
    md.kernel(attention_fwd_d64_tma_q128)?
        .set_max_dynamic_shared_bytes(ws_shared_bytes(64, 2))?;
    md.kernel(attention_fwd_d128_tma)?
        .set_max_dynamic_shared_bytes(ws_shared_bytes(128, ws_consumers(128)))?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let stream = ctx.default_stream();
    let out_dir = std::env::temp_dir().join(format!("gpukernel-attention-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir)?;
    let mut ok = true;
    let mut results = String::new();
    println!(
        "{:<28} {:<6} {:>9} {:>9} {:>10}",
        "shape", "kernel", "ms", "TFLOP/s", "max err"
    );
    for (b, h, s, d) in [(4, 16, 4096, 128), (8, 16, 2048, 64)] {
        let n = b * h * s * d;
        let (q, k, v) = (values(1, n, 4.0), values(2, n, 1.0), values(3, n, 1.0));
        let (dq, dk, dv) = (ctx.htod_copy(&q)?, ctx.htod_copy(&k)?, ctx.htod_copy(&v)?);
        let map = |x, box_rows| {
            TensorMap2D::new(
                &ctx,
                x,
                [(b * h * s) as u64, d as u64],
                d as u64,
                [box_rows, WS_BOX_COLS],
                Swizzle::B128,
            )
        };
        let (mq, mq128, mk, mv) = (
            map(&dq, ws_block_q(ws_consumers(d as u32)))?,
            map(&dq, ws_block_q(2))?,
            map(&dk, WS_BLOCK_KV)?,
            map(&dv, WS_BLOCK_KV)?,
        );
        let tma = Kind::Tma([mq.param(), mk.param(), mv.param()]);
        let mut kinds = vec![
            (false, Kind::Mma),
            (true, Kind::Mma),
            (false, Kind::Wgmma),
            (true, Kind::Wgmma),
            (false, tma),
            (true, tma),
        ];
        if d == 64 {
            let q128 = Kind::TmaQ128([mq128.param(), mk.param(), mv.param()]);
            kinds.extend([(false, q128), (true, q128)]);
        }
        for (causal, kind) in kinds {
            let kernel = kind.name();
            let shape = Shape { b, h, s, d, causal };
            let mut o = ctx.alloc_zeros::<u16>(n)?;
            launch(&md, &ctx, &shape, kind, (&dq, &dk, &dv), &mut o)?;
            stream.synchronize()?;
            let got = o.to_host_vec()?;
            // Sampled rows (head, row), the last row of the last head among them.
            let mut worst = 0.0f64;
            let mut want = vec![0.0f64; d];
            let scale = 1.0 / (d as f64).sqrt();
            for i in 0..24u64 {
                let (head, row) = if i == 0 {
                    (b * h - 1, s - 1)
                } else {
                    (
                        (hash(7 * i) as usize) % (b * h),
                        (hash(7 * i + 1) as usize) % s,
                    )
                };
                reference_row(&q, &k, &v, s, d, scale, causal, head, row, &mut want);
                for c in 0..d {
                    let g = bf16_to_f32(got[(head * s + row) * d + c]) as f64;
                    worst = worst.max((g - want[c]).abs());
                }
            }
            if worst.is_nan() || worst > 1e-2 {
                eprintln!(
                    "WRONG: {} ({kernel}): largest error {worst:.3e} on sampled rows",
                    shape.tag()
                );
                ok = false;
            }
            let mut times = Vec::with_capacity(TRIALS);
            for _ in 0..WARMUP {
                launch(&md, &ctx, &shape, kind, (&dq, &dk, &dv), &mut o)?;
            }
            stream.synchronize()?;
            for _ in 0..TRIALS {
                start.record(&stream)?;
                launch(&md, &ctx, &shape, kind, (&dq, &dk, &dv), &mut o)?;
                end.record(&stream)?;
                times.push(start.elapsed_ms(&end)? as f64);
            }
            times.sort_by(|a, b| a.total_cmp(b));
            let ms = times[TRIALS / 2];
            let tflops = shape.flops() / (ms * 1e-3) / 1e12;
            println!(
                "{:<28} {kernel:<6} {ms:>9.3} {tflops:>9.1} {worst:>10.2e}",
                shape.tag()
            );
            results.push_str(&format!("{} {kernel} {ms} {tflops}\n", shape.tag()));
            // The first batch element for PyTorch's check.
            let first = h * s * d;
            let tag = shape.tag();
            if !causal && kind == Kind::Mma {
                write_u16(&out_dir.join(format!("{tag}.q.bin")), &q[..first])?;
                write_u16(&out_dir.join(format!("{tag}.k.bin")), &k[..first])?;
                write_u16(&out_dir.join(format!("{tag}.v.bin")), &v[..first])?;
            }
            write_u16(
                &out_dir.join(format!("{tag}.{kernel}.o.bin")),
                &got[..first],
            )?;
        }
    }
    std::fs::write(out_dir.join("rust_results.txt"), results)?;
    println!("# Rust kernels: nvptx-builder (opt O3, llc -mcpu=sm_90a), SASS embedded (fatbin)");
    ok &= torch(&out_dir);
    let _ = std::fs::remove_dir_all(&out_dir);
    Ok(ok)
}

/// Runs the PyTorch side; false when it reports a failed check.
fn torch(dir: &Path) -> bool {
    let script = std::env::var_os("GPUKERNEL_DATA_DIR")
        .map(|d| PathBuf::from(d).join("bench_attention.py"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/bench_attention.py"));
    if !script.is_file() {
        println!("# bench_attention.py not found: PyTorch rows skipped");
        return true;
    }
    match Command::new("python3").arg(&script).arg(dir).status() {
        Ok(st) if st.success() => true,
        Ok(st) if st.code() == Some(3) => {
            println!("# PyTorch with CUDA not available: reference rows skipped");
            true
        }
        Ok(st) => {
            eprintln!("WRONG: {} exited with {st}", script.display());
            false
        }
        Err(e) => {
            println!("# python3 not runnable ({e}): PyTorch rows skipped");
            true
        }
    }
}
