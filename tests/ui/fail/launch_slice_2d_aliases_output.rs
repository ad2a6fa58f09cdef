use core::ffi::c_void;
use gpukernel_device::{DisjointSlice2D, Kernel, SimEntry, Slice2D};
use gpukernel_runtime::{Device, LaunchConfig, Result};

#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct transpose;
unsafe fn entry(_: *const *mut c_void) {}
unsafe impl Kernel for transpose {
    const NAME: &'static str = "transpose";
    type Params = (Slice2D<'static, f32>, DisjointSlice2D<'static, f32>);
    const SIM_ENTRY: SimEntry = entry;
    const SIGNATURE: u64 = 0;
}
unsafe impl gpukernel_device::SafeKernel for transpose {}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry transpose")?.kernel(transpose)?;
    let mut m = ctx.alloc_zeros::<f32>(16)?;
    // In place: the input view borrows `m` shared while the output borrows it exclusively.
    let input = m.view_2d(4, 4, 4)?;
    let output = m.view_2d_mut(4, 4, 4)?;
    ctx.default_stream()
        .launch(&k, LaunchConfig::new(1, (4, 4)), (input, output))
}

fn main() {
    run().unwrap();
}
