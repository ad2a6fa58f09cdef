//! Data parallelism over every device: each rank multiplies its shard of rows of `A` by `B`
//! with the example kernels' tiled `sgemm`, writing its rows of a zeroed matrix `P` of the
//! whole result; an all-reduce (sum) of the ranks' `P` gives every rank the whole product
//! `C = A · B`, the same bits one device computes alone (each element is computed by the same
//! code, and adding the other ranks' zeros is exact). A pattern to copy: shard the input, run
//! the same kernels on every device, combine with a collective.
//!
//! First a small product is checked against the host, with all ranks and with one. On GPUs
//! (two or more) two steps are then timed, each on one GPU and on all of them:
//! - compute-bound: `sgemm` 4096 × 4096 × 32768 (1.1 TFLOP), all-reduce of the 64 MiB result;
//! - communication-bound: `sgemm` 8192 × 8192 × 8 (1 GFLOP), all-reduce of the 256 MiB result;
//!
//! and the scaling (one GPU's time over all GPUs') printed for both; the compute-bound step
//! aims at 1.9× or more on two GPUs, the communication-bound one shows what the all-reduce
//! costs. Both results are compared with one GPU's, bit for bit.
//!
//! On the simulator it runs the small product with `GPUKERNEL_SIM_DEVICES=2` (or more)
//! simulated devices. With one device it says it needs two and exits with status 2. Sets
//! `NCCL_NVLS_ENABLE=0` when unset (NVLink multicast stays off on shared machines); build with
//! `--features nccl` for GPUs.

use std::process::ExitCode;
use std::time::Instant;

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::suite::gemm::{SGEMM_BM, SGEMM_BN, SGEMM_THREADS, sgemm};
use gpukernel_runtime::collective::{self, Communicator, ReduceOp};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Device, DeviceBuffer, Kernel, LaunchConfig, Stream, TypedKernel};

type BoxError = Box<dyn std::error::Error>;

/// A product `m × k` by `k × n` (row-major).
#[derive(Clone, Copy)]
struct Shape {
    m: usize,
    n: usize,
    k: usize,
}

/// One rank's part: its device, stream, kernel, its rows of `A`, all of `B`, its partial
/// result `P` (its rows written, the others zero) and the whole result `C`.
struct Rank<'k> {
    stream: Stream,
    kernel: &'k TypedKernel<sgemm>,
    rows: std::ops::Range<usize>,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    p: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
}

/// The ranks of one run: one per context, with its communicator (none for one rank: one
/// device needs no collective).
struct Ranks<'k> {
    shape: Shape,
    ranks: Vec<Rank<'k>>,
    comms: Vec<Communicator>,
}

/// Deterministic inputs in [-0.5, 0.5).
fn values(seed: u64, len: usize) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let h =
                (i ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            ((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

impl<'k> Ranks<'k> {
    /// Shards `a` by rows over `ctxs` (one rank each) and copies `b` to every device.
    fn new(
        ctxs: &[Context],
        kernels: &'k [TypedKernel<sgemm>],
        shape: Shape,
        a: &[f32],
        b: &[f32],
    ) -> Result<Ranks<'k>, BoxError> {
        let r = ctxs.len();
        let per = shape.m / r;
        if !per.is_multiple_of(SGEMM_BM as usize) || !shape.m.is_multiple_of(r) {
            return Err(format!(
                "{} rows over {r} ranks: each rank's rows must be a multiple of {SGEMM_BM}",
                shape.m
            )
            .into());
        }
        let mut ranks = Vec::new();
        for (i, (ctx, kernel)) in ctxs.iter().zip(kernels).enumerate() {
            let rows = i * per..(i + 1) * per;
            ranks.push(Rank {
                stream: ctx.new_stream()?,
                kernel,
                a: ctx.htod_copy(&a[rows.start * shape.k..rows.end * shape.k])?,
                b: ctx.htod_copy(b)?,
                p: ctx.alloc_zeros(shape.m * shape.n)?,
                c: ctx.alloc_zeros(shape.m * shape.n)?,
                rows,
            });
        }
        let comms = if r > 1 {
            Communicator::for_contexts(ctxs)?
        } else {
            Vec::new()
        };
        Ok(Ranks {
            shape,
            ranks,
            comms,
        })
    }

    /// One step: every rank multiplies its rows into `P`, then `C` = the sum of the ranks'
    /// `P`s (all-reduce); waits for every device.
    fn step(&mut self) -> Result<(), BoxError> {
        let Shape { n, k, .. } = self.shape;
        for r in &mut self.ranks {
            let rows = r.rows.len();
            let cfg = LaunchConfig::new(
                ((n as u32) / SGEMM_BN, (rows as u32) / SGEMM_BM, 1),
                SGEMM_THREADS,
            );
            let mut mine = r.p.slice_mut(r.rows.start * n..r.rows.end * n)?;
            let out = mine.view_2d_mut(n, rows, n)?;
            r.stream.launch(
                r.kernel,
                cfg,
                (&r.a, &r.b, rows as u32, n as u32, k as u32, out),
            )?;
        }
        if !self.comms.is_empty() {
            let comms = &self.comms;
            // ANCHOR: all_reduce
            collective::group(|g| {
                for (r, comm) in self.ranks.iter_mut().zip(comms) {
                    g.all_reduce(comm, &r.stream, &r.p, &mut r.c, ReduceOp::Sum)?;
                }
                Ok(())
            })?;
            // ANCHOR_END: all_reduce
        }
        for r in &self.ranks {
            r.stream.synchronize()?;
        }
        Ok(())
    }

    /// The whole product as rank `i` holds it.
    fn result(&self, i: usize) -> Result<Vec<f32>, BoxError> {
        let r = &self.ranks[i];
        // One rank: its partial result is the whole product.
        let whole = if self.comms.is_empty() { &r.p } else { &r.c };
        Ok(whole.to_host_vec()?)
    }

    /// Median wall time of `trials` steps (after one untimed), in milliseconds.
    fn time(&mut self, trials: usize) -> Result<f64, BoxError> {
        self.step()?;
        let mut ms: Vec<f64> = (0..trials)
            .map(|_| {
                let t = Instant::now();
                self.step().map(|()| t.elapsed().as_secs_f64() * 1e3)
            })
            .collect::<Result<_, _>>()?;
        ms.sort_by(f64::total_cmp);
        Ok(ms[ms.len() / 2])
    }
}

/// The product of one device alone, the inputs, and the runs on one device and on all.
type Both<'k> = (Vec<f32>, Vec<f32>, Vec<f32>, Ranks<'k>, Ranks<'k>);

/// The product on all ranks and on the first alone: both must be the same bits, on every rank.
fn run_both<'k>(
    ctxs: &[Context],
    kernels: &'k [TypedKernel<sgemm>],
    shape: Shape,
) -> Result<Both<'k>, BoxError> {
    let a = values(1, shape.m * shape.k);
    let b = values(2, shape.k * shape.n);
    let mut one = Ranks::new(&ctxs[..1], &kernels[..1], shape, &a, &b)?;
    one.step()?;
    let alone = one.result(0)?;
    let mut all = Ranks::new(ctxs, kernels, shape, &a, &b)?;
    all.step()?;
    for i in 0..ctxs.len() {
        if all.result(i)? != alone {
            return Err(format!(
                "rank {i} of {}: the {}×{}×{} product differs from one device's",
                ctxs.len(),
                shape.m,
                shape.n,
                shape.k
            )
            .into());
        }
    }
    Ok((alone, a, b, one, all))
}

fn main() -> ExitCode {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("data_parallel: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode, BoxError> {
    let ctxs: Vec<Context> = Device::all()?
        .iter()
        .map(|d| d.primary_context())
        .collect::<Result<_, _>>()?;
    let r = ctxs.len();
    if r < 2 {
        println!(
            "data_parallel: SKIPPED: needs 2 devices, found 1 (GPUKERNEL_SIM_DEVICES=2 on the simulator) (not a pass)"
        );
        return Ok(ExitCode::from(2));
    }
    // One link of the kernel, loaded on every device.
    let modules = Linker::new(&ctxs[0])?
        .add_ptx_kernels(PTX, "kernels.ptx", &[sgemm::NAME])
        .link_and_load_on(&ctxs)?;
    let kernels = modules
        .iter()
        .map(|m| m.kernel(sgemm))
        .collect::<Result<Vec<_>, _>>()?;

    // A small product, against the host.
    let small = Shape {
        m: SGEMM_BM as usize * r,
        n: SGEMM_BN as usize,
        k: 64,
    };
    let (got, a, b, _, _) = run_both(&ctxs, &kernels, small)?;
    let want: Vec<f32> = (0..small.m * small.n)
        .map(|e| {
            let (i, j) = (e / small.n, e % small.n);
            (0..small.k)
                .map(|q| a[i * small.k + q] as f64 * b[q * small.n + j] as f64)
                .sum::<f64>() as f32
        })
        .collect();
    ffi_examples::check_close(
        &format!(
            "data_parallel: {}×{}×{} product on {r} ranks",
            small.m, small.n, small.k
        ),
        &got,
        &want,
        1e-4,
    )?;
    if ctxs[0].is_simulator() {
        println!(
            "data_parallel: {r} simulated devices agree with one and with the host (timings need GPUs)"
        );
        return Ok(ExitCode::SUCCESS);
    }

    // Rows: about `rows`, a multiple of 128 per rank.
    let rows = |rows: usize| (rows / (128 * r)).max(1) * 128 * r;
    for (what, shape) in [
        (
            "compute-bound",
            Shape {
                m: rows(4096),
                n: 4096,
                k: 32768,
            },
        ),
        (
            "communication-bound",
            Shape {
                m: rows(8192),
                n: 8192,
                k: 8,
            },
        ),
    ] {
        let (_, _, _, mut one, mut all) = run_both(&ctxs, &kernels, shape)?;
        let t1 = one.time(5)?;
        drop(one);
        let tr = all.time(5)?;
        let flop = 2.0 * (shape.m * shape.n * shape.k) as f64;
        println!(
            "data_parallel {what} step: sgemm {}×{}×{} ({:.1} GFLOP) + all-reduce of {} MiB: 1 GPU {t1:.2} ms, {r} GPUs {tr:.2} ms, scaling {:.2}x{}",
            shape.m,
            shape.n,
            shape.k,
            flop / 1e9,
            (shape.m * shape.n * 4) >> 20,
            t1 / tr,
            if what == "compute-bound" {
                " (target >= 1.9x on 2 GPUs)"
            } else {
                " (the all-reduce dominates)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
