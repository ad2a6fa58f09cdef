// A buffer a graph writes cannot be read by the host (nor used by other work) while an
// instantiation may still write it.
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let mut y = ctx.alloc_zeros::<f32>(16)?;
    let graph = ctx.new_graph("g")?;
    graph.add_memset_d8(&[], graph.buffer_mut(&mut y), 7)?;
    let exec = graph.instantiate()?;
    drop(graph);
    exec.launch(&ctx.default_stream())?;
    let _ = y.to_host_vec()?;
    exec.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
