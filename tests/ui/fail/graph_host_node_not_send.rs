// A host node's closure is called by a driver thread: it must be `Send`, so it cannot hold
// an `Rc`.
use std::rc::Rc;

use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let graph = ctx.new_graph("g")?;
    let shared = Rc::new(0);
    graph.add_host(&[], move || drop(shared.clone()))?;
    Ok(())
}

fn main() {
    run().unwrap();
}
