use core::ffi::c_void;
use gpukernel_device::{DisjointSlice2D, Kernel, SimEntry};
use gpukernel_runtime::{Device, LaunchConfig, Result};

#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct fill;
unsafe fn entry(_: *const *mut c_void) {}
unsafe impl Kernel for fill {
    const NAME: &'static str = "fill";
    type Params = (DisjointSlice2D<'static, f32>,);
    const SIM_ENTRY: SimEntry = entry;
    const SIGNATURE: u64 = 0;
}
unsafe impl gpukernel_device::SafeKernel for fill {}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry fill")?.kernel(fill)?;
    let y = ctx.alloc_zeros::<f32>(16)?;
    // A shared (read-only) view cannot be written: an output takes `y.view_2d_mut(..)?`.
    ctx.default_stream()
        .launch(&k, LaunchConfig::new(1, (4, 4)), (y.view_2d(4, 4, 4)?,))
}

fn main() {
    run().unwrap();
}
