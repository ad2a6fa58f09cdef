// A host node's closure is owned by the graph and called by a driver thread: it must be
// `'static`, so it cannot borrow a local.
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let graph = ctx.new_graph("g")?;
    let mut count = 0;
    graph.add_host(&[], || count += 1)?;
    Ok(())
}

fn main() {
    run().unwrap();
}
