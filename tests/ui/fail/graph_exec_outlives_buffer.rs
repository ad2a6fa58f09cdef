// An instantiation borrows what its graph's nodes use: it cannot outlive a buffer, even once
// the graph itself is gone.
use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Device, GraphExec, LaunchConfig, Result, TypedKernel};

fn build<'a>(ctx: &gpukernel_runtime::Context, k: &TypedKernel<saxpy>) -> Result<GraphExec<'a>> {
    let x = ctx.alloc_zeros::<f32>(16)?;
    let mut y = ctx.alloc_zeros::<f32>(16)?;
    let graph = ctx.new_graph("g")?;
    graph.add_kernel(&[], k, LaunchConfig::for_elements(16)?, (1.0f32, &x, graph.buffer_mut(&mut y)))?;
    graph.instantiate()
}

fn main() {
    let ctx = Device::simulator().primary_context().unwrap();
    let module = ctx.load_module(ffi_examples_kernels::PTX.as_bytes()).unwrap();
    let k = module.kernel(saxpy).unwrap();
    build(&ctx, &k).unwrap().launch(&ctx.default_stream()).unwrap();
}
