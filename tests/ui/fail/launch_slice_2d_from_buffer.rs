use core::ffi::c_void;
use gpukernel_device::{Kernel, SimEntry, Slice2D};
use gpukernel_runtime::{Device, LaunchConfig, Result};

#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct sum_rows;
unsafe fn entry(_: *const *mut c_void) {}
unsafe impl Kernel for sum_rows {
    const NAME: &'static str = "sum_rows";
    type Params = (Slice2D<'static, f32>,);
    const SIM_ENTRY: SimEntry = entry;
    const SIGNATURE: u64 = 0;
}
unsafe impl gpukernel_device::SafeKernel for sum_rows {}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let k = ctx.load_module(b".entry sum_rows")?.kernel(sum_rows)?;
    let m = ctx.alloc_zeros::<f32>(16)?;
    // A 2D input needs a shape checked against the buffer: `m.view_2d(cols, rows, pitch)?`.
    ctx.default_stream().launch(&k, LaunchConfig::new(1, 4), (&m,))
}

fn main() {
    run().unwrap();
}
