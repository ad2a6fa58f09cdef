//! A Rust kernel calling `archive_square` from a static library (`libforeign.a`, built by the
//! build script with `nvcc -lib -rdc=true`). On the simulator the same function runs
//! from its CUDA C source compiled for the host.
mod common;

use ffi_examples_kernels::{PTX, ffi::square_archive};
use gpukernel_runtime::{
    LaunchConfig,
    link::{InputKind, Linker},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = common::context()?;
    let archive = common::artifact("static library", common::ARCHIVE)?;
    let mut linker = Linker::new(&ctx)?;
    linker.add_ptx_kernels(PTX, "kernels.ptx", &["square_archive"]);
    // A static library keeps no C types, so the linker cannot check its definitions against the
    // `declare_device!` declarations: the call says so.
    // SAFETY: built from cuda/archive_lib.cu, whose definition has the signature src/ffi.rs declares.
    unsafe { linker.add_data_unchecked(InputKind::Library, archive, "libforeign.a") };
    let module = linker.link_and_load()?;

    let n = 100_000;
    let x: Vec<f32> = (0..n).map(|i| (i % 513) as f32 * 0.25 - 64.0).collect();
    let (dx, mut out) = (ctx.htod_copy(&x)?, ctx.alloc_zeros(n)?);
    let kernel = module.kernel(square_archive)?;
    ctx.default_stream()
        .launch(&kernel, LaunchConfig::for_elements(n)?, (&dx, &mut out))?;

    let got = out.to_host_vec()?;
    let want: Vec<f32> = x.iter().map(|v| v * v).collect();
    println!(
        "link_archive on {}: out[..4] = {:?}",
        ctx.device(),
        &got[..4]
    );
    ffi_examples::check_close("square_archive", &got, &want, 0.0)?;
    Ok(())
}
