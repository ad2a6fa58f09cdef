// A buffer a graph's nodes use cannot be dropped while the graph can still be instantiated.
use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Device, LaunchConfig, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let module = ctx.load_module(ffi_examples_kernels::PTX.as_bytes())?;
    let k = module.kernel(saxpy)?;
    let x = ctx.alloc_zeros::<f32>(16)?;
    let mut y = ctx.alloc_zeros::<f32>(16)?;
    let graph = ctx.new_graph("g")?;
    graph.add_kernel(&[], &k, LaunchConfig::for_elements(16)?, (1.0f32, &x, graph.buffer_mut(&mut y)))?;
    drop(x);
    let exec = graph.instantiate()?;
    exec.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
