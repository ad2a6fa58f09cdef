//! Benchmark of CUDA graphs on a CUDA device: what one small kernel costs as a node of a
//! replayed graph, next to the same typed launches without a graph and to a CUDA C graph
//! built with the driver API from the same kernel compiled by NVRTC in this process.
//!
//! The work: a chain of `NODES` (100, then 1000) saxpy kernels `y = x + y` on one buffer of
//! 1024 floats, each after the previous one. The Rust graph is captured from ordinary typed
//! launches (`Stream::capture`); the CUDA C graph is `cuGraphAddKernelNode` in a chain.
//! Results are checked first (after one replay, `y == NODES`). Per node: event-timed replays
//! divided by the node count, the median of several trials.
//!
//! Prints a table with ratios (ours / CUDA C graph; target <= 1.05x). Never asserts on time;
//! exits non-zero only when a result is wrong or the GPU cannot be used. Without a CUDA
//! device it runs the correctness part on the simulator and says so.

use std::process::ExitCode;

use core::ffi::c_void;

use cudarc::driver::sys;
use ffi_examples::bench::{BoxError, median};
use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::link::{self, Arch, CudaOutput};
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, Event, Kernel, LaunchConfig, Stream, TypedKernel,
};

const CUDA_C: &str = r#"
extern "C" __global__ void saxpy_c(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"#;

const LEN: usize = 1024;
const REPLAYS: usize = 20;
const TRIALS: usize = 15;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_graph: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(what: &str, y: &DeviceBuffer<f32>, want: f32) -> Result<bool, BoxError> {
    let got = y.to_host_vec()?;
    let ok = got.iter().all(|&v| v == want);
    if !ok {
        eprintln!("bench_graph: {what}: y[0] = {}, want {want}", got[0]);
    }
    Ok(ok)
}

/// Checks that the captured graph of `nodes` saxpys and the same typed launches both give
/// `y == nodes` (on the simulator too).
fn correctness(
    ctx: &Context,
    stream: &Stream,
    k: &TypedKernel<saxpy>,
    nodes: usize,
) -> Result<bool, BoxError> {
    let cfg = LaunchConfig::for_elements(LEN)?;
    let x = ctx.htod_copy(&[1.0f32; LEN])?;
    let mut y = ctx.alloc_zeros::<f32>(LEN)?;
    {
        let graph = stream.capture("saxpy chain", |c| {
            let yb = c.buffer_mut(&mut y);
            for _ in 0..nodes {
                c.launch(k, cfg, (1.0f32, &x, yb))?;
            }
            Ok(())
        })?;
        let exec = graph.instantiate()?;
        exec.launch(stream)?;
        stream.synchronize()?;
    }
    let mut ok = check("captured graph", &y, nodes as f32)?;
    y = ctx.alloc_zeros::<f32>(LEN)?;
    for _ in 0..nodes {
        stream.launch(k, cfg, (1.0f32, &x, &mut y))?;
    }
    ok &= check("typed launches", &y, nodes as f32)?;
    Ok(ok)
}

fn cu(what: &str, r: sys::CUresult) -> Result<(), BoxError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what}: {r:?}").into())
    }
}

/// A CUDA C graph: `nodes` kernel nodes of `f` in a chain, built with the driver API.
struct CGraph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

impl CGraph {
    /// # Safety
    /// The context of `f` is current; `params` point at values matching `f`'s parameters
    /// (the driver copies them).
    unsafe fn new(
        f: sys::CUfunction,
        cfg: LaunchConfig,
        nodes: usize,
        params: &mut [*mut c_void],
    ) -> Result<CGraph, BoxError> {
        let mut graph: sys::CUgraph = core::ptr::null_mut();
        // SAFETY: valid out-pointer.
        cu("cuGraphCreate", unsafe {
            sys::cuGraphCreate(&mut graph, 0)
        })?;
        let mut g = CGraph {
            graph,
            exec: core::ptr::null_mut(),
        };
        // Every field spelled out (no zeroed driver struct).
        let p = sys::CUDA_KERNEL_NODE_PARAMS {
            func: f,
            gridDimX: cfg.grid.x,
            gridDimY: cfg.grid.y,
            gridDimZ: cfg.grid.z,
            blockDimX: cfg.block.x,
            blockDimY: cfg.block.y,
            blockDimZ: cfg.block.z,
            sharedMemBytes: 0,
            kernelParams: params.as_mut_ptr(),
            extra: core::ptr::null_mut(),
            kern: core::ptr::null_mut(),
            ctx: core::ptr::null_mut(),
        };
        let mut prev: Option<sys::CUgraphNode> = None;
        for _ in 0..nodes {
            let mut n: sys::CUgraphNode = core::ptr::null_mut();
            let (deps, count) = match &prev {
                Some(d) => (core::ptr::from_ref(d), 1),
                None => (core::ptr::null(), 0),
            };
            // SAFETY: the graph is live; `deps` is one node of it or none; `p` is complete.
            cu("cuGraphAddKernelNode", unsafe {
                sys::cuGraphAddKernelNode_v2(&mut n, g.graph, deps, count, &p)
            })?;
            prev = Some(n);
        }
        // SAFETY: the graph is live and acyclic.
        cu("cuGraphInstantiate", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0)
        })?;
        Ok(g)
    }

    fn launch(&self, s: &Stream) -> Result<(), BoxError> {
        // SAFETY: the instantiation and the stream are live, of the current context.
        cu("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(self.exec, s.raw())
        })
    }
}

impl Drop for CGraph {
    fn drop(&mut self) {
        // SAFETY: both are ours; the caller synchronized the streams they ran on.
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}

/// Event-timed microseconds per node of `REPLAYS` calls of `f`, median of `TRIALS`.
fn per_node_us(
    stream: &Stream,
    start: &Event,
    end: &Event,
    nodes: usize,
    mut f: impl FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    for _ in 0..3 {
        f()?;
    }
    stream.synchronize()?;
    let mut v = Vec::new();
    for _ in 0..TRIALS {
        start.record(stream)?;
        for _ in 0..REPLAYS {
            f()?;
        }
        end.record(stream)?;
        v.push(start.elapsed_ms(end)? as f64 * 1e3 / (REPLAYS * nodes) as f64);
    }
    Ok(median(v))
}

fn run() -> Result<bool, BoxError> {
    let device = Device::auto()?;
    let ctx = device.primary_context()?;
    let rust = link::Linker::new(&ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &[saxpy::NAME])
        .link_and_load()?;
    let k = rust.kernel(saxpy)?;
    let stream = ctx.new_stream()?;
    if device.is_simulator() {
        let ok = correctness(&ctx, &stream, &k, 100)?;
        println!(
            "# bench_graph: no CUDA device; the correctness part ran on the simulator ({}), \
             no timings",
            if ok { "ok" } else { "WRONG" }
        );
        return Ok(ok);
    }
    let (major, minor) = device.compute_capability()?;
    println!(
        "# gpukernel-runtime graph benchmark: {} (sm_{major}{minor})",
        device.name()?
    );
    let c_ptx = link::compile_cuda(
        CUDA_C,
        "bench_graph_reference.cu",
        &[],
        Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::Ptx,
    )?;
    let c_module = ctx.load_module(&c_ptx)?;
    let c_saxpy = c_module.function("saxpy_c")?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let cfg = LaunchConfig::for_elements(LEN)?;
    let mut ok = true;
    let rust_fn = rust.function(saxpy::NAME)?;
    println!(
        "| nodes | Rust graph, captured µs/node | Rust graph, built node by node µs/node | driver-API graph of the Rust kernel µs/node | typed launches µs/node | CUDA C graph µs/node | captured / CUDA C | built / CUDA C | captured / driver-API graph of the same kernel | launches / CUDA C |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for nodes in [100usize, 1000] {
        ok &= correctness(&ctx, &stream, &k, nodes)?;
        let x = ctx.htod_copy(&[1.0f32; LEN])?;
        let mut y = ctx.alloc_zeros::<f32>(LEN)?;
        let yc = ctx.alloc_zeros::<f32>(LEN)?;
        let (ours, built, raw_rust, c_graph) = {
            let graph = stream.capture("saxpy chain", |c| {
                let yb = c.buffer_mut(&mut y);
                for _ in 0..nodes {
                    c.launch(&k, cfg, (1.0f32, &x, yb))?;
                }
                Ok(())
            })?;
            let exec = graph.instantiate()?;
            let ours = per_node_us(&stream, &start, &end, nodes, || Ok(exec.launch(&stream)?))?;
            stream.synchronize()?;
            drop(exec);
            drop(graph);
            // The same chain built node by node.
            let graph = ctx.new_graph("saxpy chain, built")?;
            let yb = graph.buffer_mut(&mut y);
            let mut last = None;
            for _ in 0..nodes {
                let deps: Vec<_> = last.into_iter().collect();
                last = Some(graph.add_kernel(&deps, &k, cfg, (1.0f32, &x, yb))?);
            }
            let exec = graph.instantiate()?;
            let built = per_node_us(&stream, &start, &end, nodes, || Ok(exec.launch(&stream)?))?;
            stream.synchronize()?;
            drop(exec);
            drop(graph);
            // The Rust kernel in a driver-API graph: what the runtime's launch path adds, apart
            // from the kernels' own code. On its own buffer, checked after one replay.
            let yr = ctx.alloc_zeros::<f32>(LEN)?;
            let (mut a, mut xp, mut xn, mut yp, mut yn) =
                (1.0f32, x.as_raw(), LEN as u64, yr.as_raw(), LEN as u64);
            let mut rparams: [*mut c_void; 5] = [
                (&raw mut a).cast(),
                (&raw mut xp).cast(),
                (&raw mut xn).cast(),
                (&raw mut yp).cast(),
                (&raw mut yn).cast(),
            ];
            // SAFETY: the context is current; the parameters are the Rust saxpy's ABI
            // (f32, ptr, len, ptr, len); `x` and `yr` outlive the graph.
            let rg = unsafe { CGraph::new(rust_fn.raw(), cfg, nodes, &mut rparams) }?;
            stream.synchronize()?;
            rg.launch(&stream)?;
            stream.synchronize()?;
            ok &= check("driver-API graph of the Rust kernel", &yr, nodes as f32)?;
            let raw_rust = per_node_us(&stream, &start, &end, nodes, || rg.launch(&stream))?;
            stream.synchronize()?;
            drop(rg);
            // The CUDA C graph, checked after one replay, on its own buffer.
            let (mut a, mut xp, mut yp, mut n) = (1.0f32, x.as_raw(), yc.as_raw(), LEN as u64);
            let mut params: [*mut c_void; 4] = [
                (&raw mut a).cast(),
                (&raw mut xp).cast(),
                (&raw mut yp).cast(),
                (&raw mut n).cast(),
            ];
            // SAFETY: the context is current (runtime calls above); the parameters are
            // (f32, const float*, float*, u64) as `saxpy_c` takes; `x` and `yc` outlive it.
            let cg = unsafe { CGraph::new(c_saxpy.raw(), cfg, nodes, &mut params) }?;
            stream.synchronize()?;
            cg.launch(&stream)?;
            stream.synchronize()?;
            ok &= check("CUDA C graph", &yc, nodes as f32)?;
            let c_graph = per_node_us(&stream, &start, &end, nodes, || cg.launch(&stream))?;
            stream.synchronize()?;
            (ours, built, raw_rust, c_graph)
        };
        let launches = per_node_us(&stream, &start, &end, nodes, || {
            for _ in 0..nodes {
                stream.launch(&k, cfg, (1.0f32, &x, &mut y))?;
            }
            Ok(())
        })?;
        stream.synchronize()?;
        println!(
            "| {nodes} | {ours:.3} | {built:.3} | {raw_rust:.3} | {launches:.3} | {c_graph:.3} | {:.3}x | {:.3}x | {:.3}x | {:.3}x |",
            ours / c_graph,
            built / c_graph,
            ours / raw_rust,
            launches / c_graph
        );
    }
    println!(
        "# target: Rust graph / CUDA C graph <= 1.05x per node; `captured / driver-API graph of \
         the same kernel` is what the runtime's launch path adds, the rest is the kernels' code"
    );
    if !ok {
        eprintln!("bench_graph: a result was wrong");
    }
    Ok(ok)
}
