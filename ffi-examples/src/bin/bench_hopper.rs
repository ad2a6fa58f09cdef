//! Benchmark of Hopper's launch features on a CUDA device of compute capability 9.0, each
//! against its plain form in the same process (kernels of `ffi_examples_hopper_kernels`):
//!
//! * a sum of `n` f32 in one cooperative launch (`grid::sync`) against the same reduction in
//!   two launches (partials, then a one-block final pass), `n` = 2^20 and 2^28;
//! * a histogram of 2^26 u32 values into 16384 and 65536 bins, with the bins in the
//!   distributed shared memory of a cluster (2 and 8 blocks) against atomics in global memory;
//! * a chain of 200 kernel pairs (`y = 3x + 1`, then `z = 2y` on 2^16 floats) with the second
//!   kernel launched with programmatic stream serialization (`grid::wait_dependencies`)
//!   against plain launches; the same chain as a graph, the second kernel of each pair
//!   joined to the first by a programmatic edge, against the graph with full edges;
//! * a TMA tile copy (32 × 32 f32 boxes through shared memory) of an 8192 × 8192 matrix
//!   against a device-to-device copy.
//!
//! Every result is checked against the host before timing. Prints medians of event-timed
//! trials and each ratio (feature / plain; below 1 is faster). Never asserts on time; exits
//! non-zero only when a result is wrong or the GPU cannot be used. Without a CUDA device of
//! compute capability 9.0 it says so and exits 0 after the simulator's correctness run of the
//! smallest cases.

use std::process::ExitCode;

use ffi_examples::bench::{BoxError, median, timed};
use ffi_examples_hopper_kernels::{
    HIST_BLOCK, PTX, REDUCE_BLOCK, TILE, histogram_cluster, histogram_global, pdl_first,
    pdl_second, sum_cooperative, sum_final, sum_partials, tma_copy_tiles,
};
use gpukernel_runtime::{
    Context, Device, DevicePtr, GridBarrierWord, LaunchConfig, Module, Swizzle, TensorMap2D,
};

const TRIALS: usize = 20;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_hopper: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A deterministic xorshift stream.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn f32(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

fn run() -> Result<bool, BoxError> {
    let gpu = Device::get(0)
        .ok()
        .and_then(|d| d.primary_context().ok())
        .filter(|c| c.compute_capability().ok() == Some((9, 0)));
    let (ctx, full) = match gpu {
        Some(c) => (c, true),
        None => {
            println!(
                "bench_hopper: no CUDA device of compute capability 9.0; checking the smallest cases on the simulator only"
            );
            (Device::simulator().primary_context()?, false)
        }
    };
    let md = ctx.load_module(PTX.as_bytes())?;
    if full {
        let name = ctx.device().name()?;
        println!("bench_hopper on {name} (medians of {TRIALS} event-timed trials)");
    }
    let mut ok = true;
    ok &= sums(&ctx, &md, full)?;
    ok &= histograms(&ctx, &md, full)?;
    ok &= pdl(&ctx, &md, full)?;
    ok &= pdl_graph(&ctx, &md, full)?;
    ok &= tma(&ctx, &md, full)?;
    Ok(ok)
}

fn sums(ctx: &Context, md: &Module, full: bool) -> Result<bool, BoxError> {
    let coop = md.kernel(sum_cooperative)?;
    let (first, fin) = (md.kernel(sum_partials)?, md.kernel(sum_final)?);
    let max = LaunchConfig::max_cooperative_blocks(&coop, REDUCE_BLOCK, 0)?;
    let sms = ctx.device().multiprocessor_count()?;
    // Every block that fits, and one block per multiprocessor (fewer arrivals at the grid
    // barrier).
    let grids: Vec<u32> = if full {
        vec![max, sms.min(max)]
    } else {
        vec![max.min(8)]
    };
    let s = ctx.new_stream()?;
    let (e0, e1) = (ctx.new_event()?, ctx.new_event()?);
    let sizes: &[usize] = if full {
        &[1 << 20, 1 << 28]
    } else {
        &[100_003]
    };
    let mut ok = true;
    for (&n, &blocks) in sizes.iter().flat_map(|n| grids.iter().map(move |b| (n, b))) {
        let mut rng = Rng(0x9e37_79b9 ^ n as u64);
        let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let want = x.iter().map(|&v| v as f64).sum::<f64>();
        let dx = s.htod_copy(&x)?;
        let partials = s.alloc_zeros::<f32>(blocks as usize)?;
        let pp = DevicePtr::from_addr(partials.as_raw());
        let bar = GridBarrierWord::new(ctx)?;
        let mut out = s.alloc_zeros::<f32>(1)?;
        let mut out2 = s.alloc_zeros::<f32>(1)?;
        let coop_cfg = LaunchConfig::new(blocks, REDUCE_BLOCK).cooperative();
        let one = |out: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            // SAFETY: cooperative, blocks of REDUCE_BLOCK threads, one slot per block; one
            // launch at a time uses the barrier (one stream).
            unsafe { s.launch_unchecked(&coop, coop_cfg, (&dx, pp, bar.param(), out)) }?;
            Ok(())
        };
        let two = |out: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            // SAFETY: blocks of REDUCE_BLOCK threads, one slot per block.
            unsafe {
                s.launch_unchecked(&first, LaunchConfig::new(blocks, REDUCE_BLOCK), (&dx, pp))
            }?;
            s.launch(&fin, LaunchConfig::new(1, REDUCE_BLOCK), (&partials, out))?;
            Ok(())
        };
        one(&mut out)?;
        two(&mut out2)?;
        let (g1, g2) = (out.to_host_vec()?[0] as f64, out2.to_host_vec()?[0] as f64);
        let tol = 1e-4 * want.abs().max(1.0) + 1e-3 * (n as f64).sqrt();
        if (g1 - want).abs() > tol || (g2 - want).abs() > tol {
            eprintln!("sum n={n}: cooperative {g1}, two launches {g2}, host {want}");
            ok = false;
            continue;
        }
        if !full {
            println!("sum n={n}: cooperative and two-launch results match the host");
            continue;
        }
        let mut t1 = Vec::new();
        let mut t2 = Vec::new();
        for _ in 0..TRIALS {
            t1.push(timed(&s, &e0, &e1, || one(&mut out))?);
            t2.push(timed(&s, &e0, &e1, || two(&mut out2))?);
        }
        let (m1, m2) = (median(t1), median(t2));
        let gbs = |ms: f64| n as f64 * 4.0 / (ms * 1e-3) / 1e9;
        println!(
            "sum of 2^{} f32, {blocks} blocks: cooperative 1 launch {:.4} ms ({:.0} GB/s) | 2 launches {:.4} ms ({:.0} GB/s) | ratio {:.3}",
            n.trailing_zeros(),
            m1,
            gbs(m1),
            m2,
            gbs(m2),
            m1 / m2
        );
    }
    Ok(ok)
}

fn histograms(ctx: &Context, md: &Module, full: bool) -> Result<bool, BoxError> {
    let hc = md.kernel(histogram_cluster)?;
    let hg = md.kernel(histogram_global)?;
    let s = ctx.new_stream()?;
    let (e0, e1) = (ctx.new_event()?, ctx.new_event()?);
    let n = if full { 1 << 26 } else { 40_000 };
    let mut rng = Rng(0x51ed_270b);
    let data: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let d = s.htod_copy(&data)?;
    let sms = ctx.device().multiprocessor_count()?;
    let mut ok = true;
    // Each block owns 8192 bins: the share of additions that go to another block's shared
    // memory grows with the cluster (1/2, 3/4, 7/8).
    for (cluster, bins) in [(2u32, 16_384u32), (4, 32_768), (8, 65_536)] {
        let mut want = vec![0u32; bins as usize];
        for &v in &data {
            want[(v % bins) as usize] += 1;
        }
        let blocks = if full {
            (sms * 2).div_ceil(cluster) * cluster
        } else {
            2 * cluster
        };
        let ccfg = LaunchConfig::new(blocks, HIST_BLOCK).with_cluster(cluster);
        let gcfg = LaunchConfig::new(if full { sms * 4 } else { 4 }, HIST_BLOCK);
        let mut h1 = s.alloc_zeros::<u32>(bins as usize)?;
        let mut h2 = s.alloc_zeros::<u32>(bins as usize)?;
        s.launch(&hc, ccfg, (&d, bins, &mut h1))?;
        s.launch(&hg, gcfg, (&d, bins, &mut h2))?;
        if h1.to_host_vec()? != want || h2.to_host_vec()? != want {
            eprintln!("histogram of {bins} bins: a result differs from the host's");
            ok = false;
            continue;
        }
        if !full {
            println!("histogram of {bins} bins, clusters of {cluster}: both forms match the host");
            continue;
        }
        let (mut t1, mut t2) = (Vec::new(), Vec::new());
        for _ in 0..TRIALS {
            t1.push(timed(&s, &e0, &e1, || {
                h1.memset_zeros()?;
                s.launch(&hc, ccfg, (&d, bins, &mut h1))?;
                Ok(())
            })?);
            t2.push(timed(&s, &e0, &e1, || {
                h2.memset_zeros()?;
                s.launch(&hg, gcfg, (&d, bins, &mut h2))?;
                Ok(())
            })?);
        }
        let (m1, m2) = (median(t1), median(t2));
        let gv = |ms: f64| n as f64 / (ms * 1e-3) / 1e9;
        println!(
            "histogram 2^26 u32 into {bins} bins: cluster of {cluster} (DSMEM, {blocks} blocks) {:.3} ms ({:.1} Gvalues/s) | global atomics {:.3} ms ({:.1} Gvalues/s) | ratio {:.3}",
            m1,
            gv(m1),
            m2,
            gv(m2),
            m1 / m2
        );
    }
    Ok(ok)
}

fn pdl(ctx: &Context, md: &Module, full: bool) -> Result<bool, BoxError> {
    let (k1, k2) = (md.kernel(pdl_first)?, md.kernel(pdl_second)?);
    let s = ctx.new_stream()?;
    let (e0, e1) = (ctx.new_event()?, ctx.new_event()?);
    let n = 1 << 16;
    let pairs = if full { 200 } else { 2 };
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let dx = s.htod_copy(&x)?;
    let mut y = s.alloc_zeros::<f32>(n)?;
    let mut z = s.alloc_zeros::<f32>(n)?;
    let cfg = LaunchConfig::for_elements(n)?;
    let chain = |with: bool,
                 y: &mut gpukernel_runtime::DeviceBuffer<f32>,
                 z: &mut gpukernel_runtime::DeviceBuffer<f32>|
     -> Result<(), BoxError> {
        let c2 = if with {
            // SAFETY: `pdl_second` calls `grid::wait_dependencies` before it touches `y` or
            // `z`, and `pdl_first` does not wait on `pdl_second`.
            unsafe { cfg.programmatic_dependent() }
        } else {
            cfg
        };
        for _ in 0..pairs {
            s.launch(&k1, cfg, (3.0f32, &dx, &mut *y))?;
            s.launch(&k2, c2, (&*y, &mut *z))?;
        }
        Ok(())
    };
    chain(true, &mut y, &mut z)?;
    let got = z.to_host_vec()?;
    if got
        .iter()
        .zip(&x)
        .any(|(&g, &v)| g != 2.0 * (3.0 * v + 1.0))
    {
        eprintln!("programmatic dependent launch: z differs from 2 (3x + 1)");
        return Ok(false);
    }
    if !full {
        println!("programmatic dependent launch: results match the host");
        return Ok(true);
    }
    let (mut t1, mut t2) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        t1.push(timed(&s, &e0, &e1, || chain(true, &mut y, &mut z))?);
        t2.push(timed(&s, &e0, &e1, || chain(false, &mut y, &mut z))?);
    }
    let (m1, m2) = (median(t1), median(t2));
    println!(
        "{pairs} dependent kernel pairs on 2^16 f32: programmatic dependent launch {:.2} us/pair | plain launches {:.2} us/pair | ratio {:.3}",
        m1 * 1e3 / pairs as f64,
        m2 * 1e3 / pairs as f64,
        m1 / m2
    );
    Ok(true)
}

/// The `pdl` chain as one graph: each pair's second kernel joined to its first by a
/// programmatic edge (built with `programmatic_dependent`), against the same graph with full
/// edges.
fn pdl_graph(ctx: &Context, md: &Module, full: bool) -> Result<bool, BoxError> {
    let s = ctx.new_stream()?;
    let n = 1 << 16;
    let pairs = if full { 200 } else { 2 };
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let dx = s.htod_copy(&x)?;
    let mut y = s.alloc_zeros::<f32>(n)?;
    let mut z = s.alloc_zeros::<f32>(n)?;
    let tp = pdl_graph_times(ctx, md, &s, &dx, &mut y, &mut z, pairs, true, full)?;
    let got = z.to_host_vec()?;
    if got
        .iter()
        .zip(&x)
        .any(|(&g, &v)| g != 2.0 * (3.0 * v + 1.0))
    {
        eprintln!("programmatic edges in a graph: z differs from 2 (3x + 1)");
        return Ok(false);
    }
    let tf = pdl_graph_times(ctx, md, &s, &dx, &mut y, &mut z, pairs, false, full)?;
    if !full {
        println!("programmatic edges in a graph: results match the host");
        return Ok(true);
    }
    let (m1, m2) = (median(tp), median(tf));
    println!(
        "{pairs} dependent kernel pairs on 2^16 f32 in one graph: programmatic edges {:.2} us/pair | full edges {:.2} us/pair | ratio {:.3}",
        m1 * 1e3 / pairs as f64,
        m2 * 1e3 / pairs as f64,
        m1 / m2
    );
    Ok(true)
}

/// Builds the graph of `pairs` pairs (programmatic edges `with`), launches it once, then
/// times `TRIALS` launches when `full`.
#[allow(clippy::too_many_arguments, reason = "one benchmark's inputs")]
fn pdl_graph_times(
    ctx: &Context,
    md: &Module,
    s: &gpukernel_runtime::Stream,
    dx: &gpukernel_runtime::DeviceBuffer<f32>,
    y: &mut gpukernel_runtime::DeviceBuffer<f32>,
    z: &mut gpukernel_runtime::DeviceBuffer<f32>,
    pairs: usize,
    with: bool,
    full: bool,
) -> Result<Vec<f64>, BoxError> {
    let (k1, k2) = (md.kernel(pdl_first)?, md.kernel(pdl_second)?);
    let (e0, e1) = (ctx.new_event()?, ctx.new_event()?);
    let cfg = LaunchConfig::for_elements(dx.len())?;
    let g = ctx.new_graph(if with { "pdl pairs" } else { "plain pairs" })?;
    let (xb, yb, zb) = (g.buffer(dx), g.buffer_mut(y), g.buffer_mut(z));
    let c2 = if with {
        // SAFETY: `pdl_second` calls `grid::wait_dependencies` before it touches `y` or `z`,
        // and `pdl_first` does not wait on `pdl_second`.
        unsafe { cfg.programmatic_dependent() }
    } else {
        cfg
    };
    for _ in 0..pairs {
        let first = g.add_kernel(&[], &k1, cfg, (3.0f32, xb, yb))?;
        g.add_kernel(&[first], &k2, c2, (yb.read(), zb))?;
    }
    let exec = g.instantiate()?;
    exec.launch(s)?;
    s.synchronize()?;
    let mut t = Vec::new();
    if full {
        for _ in 0..TRIALS {
            t.push(timed(s, &e0, &e1, || Ok(exec.launch(s)?))?);
        }
    }
    s.synchronize()?;
    Ok(t)
}

fn tma(ctx: &Context, md: &Module, full: bool) -> Result<bool, BoxError> {
    let k = md.kernel(tma_copy_tiles)?;
    let s = ctx.new_stream()?;
    let (e0, e1) = (ctx.new_event()?, ctx.new_event()?);
    let side = if full { 8192usize } else { 96 };
    let src: Vec<f32> = (0..side * side).map(|i| (i % 4093) as f32).collect();
    let ds = s.htod_copy(&src)?;
    let dd = s.alloc_zeros::<f32>(side * side)?;
    let mut dc = s.alloc_zeros::<f32>(side * side)?;
    let shape = [side as u64, side as u64];
    let ms = TensorMap2D::new(ctx, &ds, shape, side as u64, [TILE, TILE], Swizzle::None)?;
    let md_ = TensorMap2D::new(ctx, &dd, shape, side as u64, [TILE, TILE], Swizzle::None)?;
    let grid = ((side as u32).div_ceil(TILE), (side as u32).div_ceil(TILE));
    let copy = || -> Result<(), BoxError> {
        // SAFETY: maps of same-shaped f32 tensors with TILE × TILE boxes, no swizzle; blocks
        // of TILE threads cover `dd`, which only these launches write (one stream).
        unsafe {
            s.launch_unchecked(
                &k,
                LaunchConfig::new(grid, TILE),
                (ms.param(), md_.param(), 0.0f32),
            )
        }?;
        Ok(())
    };
    copy()?;
    s.synchronize()?;
    if dd.to_host_vec()? != src {
        eprintln!("TMA tile copy: the copy differs from the source");
        return Ok(false);
    }
    if !full {
        println!("TMA tile copy: the copy matches the source");
        return Ok(true);
    }
    let (mut t1, mut t2) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        t1.push(timed(&s, &e0, &e1, copy)?);
        t2.push(timed(&s, &e0, &e1, || {
            dc.copy_from_device(&ds)?;
            Ok(())
        })?);
    }
    let (m1, m2) = (median(t1), median(t2));
    let gbs = |ms: f64| 2.0 * (side * side * 4) as f64 / (ms * 1e-3) / 1e9;
    println!(
        "copy of an 8192 x 8192 f32 matrix (read+write): TMA 32 x 32 tiles {:.3} ms ({:.0} GB/s) | device copy {:.3} ms ({:.0} GB/s) | ratio {:.3}",
        m1,
        gbs(m1),
        m2,
        gbs(m2),
        m1 / m2
    );
    Ok(true)
}
