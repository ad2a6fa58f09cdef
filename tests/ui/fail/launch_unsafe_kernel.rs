use core::ffi::c_void;
use gpukernel_device::{Kernel, SimEntry};
use gpukernel_runtime::{Device, LaunchConfig, Result};

// What `#[kernel] pub unsafe fn scale_in_place(x: &mut [f32], s: f32)` implements.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct scale_in_place;
unsafe fn entry(_: *const *mut c_void) {}
unsafe impl Kernel for scale_in_place {
    const NAME: &'static str = "scale_in_place";
    type Params = (&'static mut [f32], f32);
    const SIM_ENTRY: SimEntry = entry;
    const SIGNATURE: u64 = 0;
}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry scale_in_place")?.kernel(scale_in_place)?;
    let mut x = ctx.alloc_zeros::<f32>(4)?;
    // A kernel taking `&mut [f32]` needs `unsafe { launch_unchecked(..) }`.
    ctx.default_stream().launch(&k, LaunchConfig::for_elements(4)?, (&mut x, 2.0f32))
}

fn main() {
    run().unwrap();
}
