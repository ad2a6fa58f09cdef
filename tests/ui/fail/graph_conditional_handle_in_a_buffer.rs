// A conditional handle is not `DeviceCopy`: no buffer can hold one, so a kernel only sees
// handles the runtime passed for a node of their graph.
use gpukernel_device::graph::ConditionalHandle;
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let _forged = ctx.alloc_zeros::<ConditionalHandle>(1)?;
    Ok(())
}

fn main() {
    run().unwrap();
}
