//! Loads the Rust kernels' machine code (their CUDA C is linked in at build time) and launches
//! them.

use gpukernel_runtime::{Context, LaunchConfig, Result};
use kernels::{FATBIN, saxpy, scale};

/// `x[i] * factor` for every element, on `ctx` (a GPU, or the simulator).
pub fn scale_on(ctx: &Context, x: &[f32], factor: f32) -> Result<Vec<f32>> {
    // Embedded at compile time (SASS for sm_80 and sm_90, and the PTX): works from any
    // directory, and the driver compiles nothing on those GPUs. functions.cu is inside.
    let module = ctx.load_module(FATBIN)?;
    let kernel = module.kernel(scale)?;
    let dx = ctx.htod_copy(x)?;
    let mut out = ctx.alloc_zeros::<f32>(x.len())?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(x.len())?, (&dx, factor, &mut out))?;
    out.to_host_vec() // waits; kernel faults and foreign-call failures surface here
}

/// `a * x[i] + y[i]` for every element, on `ctx`.
pub fn saxpy_on(ctx: &Context, a: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
    let module = ctx.load_module(FATBIN)?;
    let kernel = module.kernel(saxpy)?;
    let dx = ctx.htod_copy(x)?;
    let mut dy = ctx.htod_copy(y)?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(y.len())?, (a, &dx, &mut dy))?;
    dy.to_host_vec()
}
