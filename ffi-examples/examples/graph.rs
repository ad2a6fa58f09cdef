//! A CUDA graph: copy the input up, run saxpy, copy the result down, then a host node counts
//! the runs; built once, launched ten times. Then a graph with a `while` node that loops on
//! the device until a kernel says the values converged, with no host round trip. GPU if
//! present, else the simulator.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ffi_examples_kernels::graph::halve_until;
use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Kernel, LaunchConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::default_context()?;
    // The crate's PTX also holds kernels that call foreign functions: keep only saxpy.
    let module = Linker::new(&ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &[saxpy::NAME, halve_until::NAME])
        .link_and_load()?;
    let kernel = module.kernel(saxpy)?;

    let n = 1 << 16;
    let launches = 10;
    let host_x: Vec<f32> = (0..n).map(|i| (i % 251) as f32 * 0.5).collect();
    let mut host_y = vec![0.0f32; n];
    let (mut x, mut y) = (ctx.alloc_zeros::<f32>(n)?, ctx.alloc_zeros::<f32>(n)?);
    let runs = Arc::new(AtomicUsize::new(0));
    {
        // ANCHOR: build
        let graph = ctx.new_graph("saxpy pipeline")?;
        let (xb, yb) = (graph.buffer_mut(&mut x), graph.buffer_mut(&mut y));
        let up = graph.add_memcpy_htod(&[], xb, &host_x)?;
        let cfg = LaunchConfig::for_elements(n)?;
        let k = graph.add_kernel(&[up], &kernel, cfg, (2.0f32, xb, yb))?;
        let down = graph.add_memcpy_dtoh(&[k], &mut host_y, yb)?;
        let counter = runs.clone();
        graph.add_host(&[down], move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })?;
        let exec = graph.instantiate()?;
        let stream = ctx.new_stream()?;
        for _ in 0..launches {
            exec.launch(&stream)?;
        }
        stream.synchronize()?;
        // ANCHOR_END: build
    } // the graph is gone: `host_y`, `x` and `y` are the host's again

    let want: Vec<f32> = host_x.iter().map(|&v| launches as f32 * 2.0 * v).collect();
    println!(
        "graph on {}: {launches} launches of 4 nodes, host node ran {} times, y[..4] = {:?}",
        ctx.device(),
        runs.load(Ordering::SeqCst),
        &host_y[..4]
    );
    if runs.load(Ordering::SeqCst) != launches {
        return Err("the host node did not run once per launch".into());
    }
    ffi_examples::check_close("graph saxpy", &host_y, &want, 1e-6)?;
    ffi_examples::check_close("graph saxpy (device)", &y.to_host_vec()?, &want, 1e-6)?;
    converge(&ctx, &module.kernel(halve_until)?)
}

/// Halves 1000 values on the device until none is above 1: a `while` node whose body is one
/// kernel that halves and sets the loop's condition (one block votes).
fn converge(
    ctx: &Context,
    halve: &gpukernel_runtime::TypedKernel<halve_until>,
) -> Result<(), Box<dyn std::error::Error>> {
    let start: Vec<f32> = (0..1000).map(|i| (i * 7919 % 100_000) as f32).collect();
    let mut out = vec![0.0f32; start.len()];
    let mut x = ctx.alloc_zeros::<f32>(start.len())?;
    {
        let graph = ctx.new_graph("converge")?;
        // ANCHOR: while
        let again = graph.conditional_handle(true)?;
        let xb = graph.buffer_mut(&mut x);
        let up = graph.add_memcpy_htod(&[], xb, &start)?;
        let lp = graph.add_while(&[up], again, |body| {
            body.add_kernel(&[], halve, LaunchConfig::new(1, 1024), (xb, 1.0f32, again))?;
            Ok(())
        })?;
        graph.add_memcpy_dtoh(&[lp], &mut out, xb)?;
        let stream = ctx.new_stream()?;
        graph.instantiate()?.launch(&stream)?;
        stream.synchronize()?;
        // ANCHOR_END: while
    }
    let (mut want, mut rounds) = (start.clone(), 0);
    while rounds == 0 || want.iter().any(|&v| v > 1.0) {
        want.iter_mut().for_each(|v| *v *= 0.5);
        rounds += 1;
    }
    println!(
        "while node on {}: {rounds} rounds on the device, max = {}",
        ctx.device(),
        out.iter().fold(0.0f32, |a, &b| a.max(b))
    );
    ffi_examples::check_close("graph while loop", &out, &want, 0.0)?;
    Ok(())
}
