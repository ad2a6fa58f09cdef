//! Links the Rust kernels' PTX with the CUDA C they call, and launches them.

use gpukernel_runtime::{Context, LaunchConfig, Result, include_cuda, link::Linker};
use kernels::{PTX, saxpy, scale};

/// `x[i] * factor` for every element, on `ctx` (a GPU, or the simulator).
pub fn scale_on(ctx: &Context, x: &[f32], factor: f32) -> Result<Vec<f32>> {
    let module = Linker::new(ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &["scale"])
        // Embedded at compile time, relative to this crate: works from any directory.
        .add_cuda(include_cuda!("../kernels/cuda/functions.cu"))
        .link_and_load()?;
    let kernel = module.kernel(scale)?;
    let dx = ctx.htod_copy(x)?;
    let mut out = ctx.alloc_zeros::<f32>(x.len())?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(x.len())?, (&dx, factor, &mut out))?;
    out.to_host_vec() // waits; kernel faults and foreign-call failures surface here
}

/// `a * x[i] + y[i]` for every element, on `ctx`.
pub fn saxpy_on(ctx: &Context, a: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
    let module = Linker::new(ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
        .link_and_load()?;
    let kernel = module.kernel(saxpy)?;
    let dx = ctx.htod_copy(x)?;
    let mut dy = ctx.htod_copy(y)?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(y.len())?, (a, &dx, &mut dy))?;
    dy.to_host_vec()
}
