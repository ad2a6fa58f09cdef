//! A Rust kernel calling `cubin_add_one` from a cubin precompiled by nvcc
//! (`nvcc -cubin -rdc=true`, done by the build script). On the simulator the same function
//! runs from its CUDA C source compiled for the host.
mod common;

use ffi_examples_kernels::{PTX, ffi::add_one_cubin};
use gpukernel_runtime::{
    LaunchConfig,
    link::{InputKind, Linker},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = common::context()?;
    let cubin = common::artifact("cubin", common::CUBIN)?;
    // ANCHOR: link
    let mut linker = Linker::new(&ctx)?;
    linker.add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"]);
    // A cubin keeps no C types, so the linker cannot check its definitions against the
    // `declare_device!` declarations: the call says so.
    // SAFETY: built from cuda/cubin_lib.cu, whose definition has the signature src/ffi.rs
    // declares.
    unsafe { linker.add_data_unchecked(InputKind::Cubin, cubin, "cubin_lib.cubin") };
    let image = linker.link()?;
    let module = ctx.load_module(image.module_image())?;
    // ANCHOR_END: link

    let n = 100_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let (dx, mut out) = (ctx.htod_copy(&x)?, ctx.alloc_zeros(n)?);
    let kernel = module.kernel(add_one_cubin)?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(n)?, (&dx, &mut out))?;

    let got = out.to_host_vec()?;
    let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    println!(
        "link_cubin on {}: linked in {:?} ({:?}), out[..4] = {:?}",
        ctx.device(),
        image.timings().total,
        image.cache_status(),
        &got[..4]
    );
    ffi_examples::check_close("add_one_cubin", &got, &want, 0.0)?;
    Ok(())
}
