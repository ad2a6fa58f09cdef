// A child graph borrows for the parent's lifetime: a buffer its nodes use cannot be dropped
// while the parent, which runs a copy of the child, can still be instantiated.
use gpukernel_runtime::{Device, Result};

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let parent = ctx.new_graph("parent")?;
    {
        let mut y = ctx.alloc_zeros::<f32>(16)?;
        let child = ctx.new_graph("child")?;
        child.add_memset_zeros(&[], child.buffer_mut(&mut y))?;
        parent.add_child(&[], &child)?;
    } // `y` is dropped here, the parent still uses it
    let exec = parent.instantiate()?;
    exec.launch(&ctx.default_stream())
}

fn main() {
    run().unwrap();
}
