use gpukernel_device::prelude::*;
use gpukernel_runtime::{Device, DevicePtr, LaunchConfig, Result};

/// Adds `input` into `*out` atomically.
///
/// # Safety
/// `out` must point to an `f32` in device memory that is only accessed atomically.
#[kernel]
pub unsafe fn atomic_sum(input: &[f32], out: *mut f32) {
    let _ = (input, out);
}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry atomic_sum")?.kernel(atomic_sum)?;
    let x = ctx.alloc_zeros::<f32>(4)?;
    // Every argument is safe to pass, but the kernel is an `unsafe fn`: its contract (a valid
    // `out`) is not checked by any type, so only `launch_unchecked` may launch it.
    ctx.default_stream().launch(&k, LaunchConfig::for_elements(4)?, (&x, DevicePtr::null()))
}

fn main() {
    run().unwrap();
}
