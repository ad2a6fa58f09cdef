//! A Rust kernel calling `fatbin_affine` from a fatbin precompiled by nvcc (an sm_90 image
//! and compute_90 PTX, built by the build script). On the simulator the same function
//! runs from its CUDA C source compiled for the host. Also shows the error for a fatbin without code for the
//! device (an sm_80-only fatbin).
mod common;

use ffi_examples_kernels::{PTX, ffi::affine_fatbin};
use gpukernel_runtime::{
    Error, LaunchConfig,
    link::{InputKind, Linker},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = common::context()?;
    let fatbin = common::artifact("fatbin", common::FATBIN)?;
    let mut linker = Linker::new(&ctx)?;
    linker.add_ptx_kernels(PTX, "kernels.ptx", &["affine_fatbin"]);
    // A fatbin keeps no C types, so the linker cannot check its definitions against the
    // `declare_device!` declarations: the call says so.
    // SAFETY: built from cuda/fatbin_lib.cu, whose definition has the signature src/ffi.rs declares.
    unsafe { linker.add_data_unchecked(InputKind::Fatbin, fatbin, "fatbin_lib.fatbin") };
    let module = linker.link_and_load()?;

    let n = 100_000;
    let (scale, bias) = (1.5f32, -2.0f32);
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
    let (dx, mut out) = (ctx.htod_copy(&x)?, ctx.alloc_zeros(n)?);
    let kernel = module.kernel(affine_fatbin)?;
    let cfg = LaunchConfig::for_elements(n)?;
    ctx.default_stream()
        .launch(&kernel, cfg, (&dx, scale, bias, &mut out))?;

    let got = out.to_host_vec()?;
    let want: Vec<f32> = x.iter().map(|v| v * scale + bias).collect();
    println!(
        "link_fatbin on {}: out[..4] = {:?}",
        ctx.device(),
        &got[..4]
    );
    ffi_examples::check_close("affine_fatbin", &got, &want, 1e-6)?;

    if ctx.is_simulator() {
        return Ok(()); // architectures are a GPU matter
    }
    // A fatbin with an sm_80 image only: no code this device can run.
    let wrong = common::artifact("wrong-architecture fatbin", common::WRONG_ARCH_FATBIN)?;
    let err = Linker::new(&ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &["affine_fatbin"])
        .add_data(InputKind::Fatbin, wrong, "wrong_arch.fatbin")
        .link()
        .err()
        .ok_or("linking an sm_80-only fatbin succeeded")?;
    if !matches!(err, Error::WrongArchitecture { .. }) {
        return Err(format!("expected a wrong-architecture error, got: {err}").into());
    }
    println!("link_fatbin: the sm_80-only fatbin is refused as expected:\n  {err}");
    Ok(())
}
