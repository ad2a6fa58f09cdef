// The `Capture` a stream capture hands to its closure cannot leave the closure (it would
// record into a capture that has ended).
use gpukernel_runtime::{Capture, Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let stream = ctx.new_stream()?;
    let mut kept: Option<&Capture<'_, '_>> = None;
    let _graph = stream.capture("g", |c| {
        kept = Some(c);
        Ok(())
    })?;
    let _ = kept;
    Ok(())
}

fn main() {
    run().unwrap();
}
