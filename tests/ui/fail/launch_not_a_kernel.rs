use gpukernel_runtime::{Device, Result};

/// Not a `#[kernel]`: a plain host function.
fn saxpy() -> u32 {
    0
}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let module = ctx.load_module(b".visible .entry saxpy()")?;
    let _k = module.kernel(saxpy)?;
    Ok(())
}

fn main() {
    run().unwrap();
}
