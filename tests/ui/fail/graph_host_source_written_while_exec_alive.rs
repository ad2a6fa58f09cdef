// The host source of a copy node is read at every launch: the host cannot change it while an
// instantiation exists.
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let mut host = vec![1.0f32; 16];
    let mut y = ctx.alloc_zeros::<f32>(16)?;
    let graph = ctx.new_graph("g")?;
    graph.add_memcpy_htod(&[], graph.buffer_mut(&mut y), &host)?;
    let exec = graph.instantiate()?;
    drop(graph);
    host[0] = 2.0;
    exec.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
