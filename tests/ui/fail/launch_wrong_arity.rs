use core::ffi::c_void;
use gpukernel_device::{DisjointSlice, Kernel, SimEntry};
use gpukernel_runtime::{Device, LaunchConfig, Result};

#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct saxpy;
unsafe fn entry(_: *const *mut c_void) {}
unsafe impl Kernel for saxpy {
    const NAME: &'static str = "saxpy";
    type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
    const SIM_ENTRY: SimEntry = entry;
    const SIGNATURE: u64 = 0;
}
unsafe impl gpukernel_device::SafeKernel for saxpy {}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry saxpy")?.kernel(saxpy)?;
    let x = ctx.alloc_zeros::<f32>(4)?;
    // Three parameters, two arguments.
    ctx.default_stream().launch(&k, LaunchConfig::for_elements(4)?, (2.0f32, &x))
}

fn main() {
    run().unwrap();
}
