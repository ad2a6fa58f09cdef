// A kernel node's arguments must outlive the graph (`A: 'a`): a buffer of an inner scope
// cannot be an argument of a graph that lives on.
use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Device, LaunchConfig, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let module = ctx.load_module(ffi_examples_kernels::PTX.as_bytes())?;
    let k = module.kernel(saxpy)?;
    let mut y = ctx.alloc_zeros::<f32>(16)?;
    let graph = ctx.new_graph("g")?;
    let yb = graph.buffer_mut(&mut y);
    {
        let x = ctx.alloc_zeros::<f32>(16)?;
        graph.add_kernel(&[], &k, LaunchConfig::for_elements(16)?, (1.0f32, &x, yb))?;
    }
    graph.instantiate()?.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
