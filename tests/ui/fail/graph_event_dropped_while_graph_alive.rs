// An event node borrows its event: the event cannot be dropped while the graph that records
// it can still be instantiated.
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let done = ctx.new_event()?;
    let graph = ctx.new_graph("g")?;
    graph.add_event_record(&[], &done)?;
    drop(done);
    let exec = graph.instantiate()?;
    exec.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
