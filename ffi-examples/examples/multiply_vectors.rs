//! A Rust kernel calling a CUDA C device function (`mul_f32_f32` from `functions.cu`),
//! compiled by NVRTC and linked at run time. Runs on the GPU if there is one, else on the
//! simulator (which runs the same kernel with `functions.cu` compiled for the host).
use ffi_examples_kernels::{PTX, ffi::multiply_vectors};
use gpukernel_runtime::{Context, LaunchConfig, include_cuda, link::Linker};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::default_context()?;
    let module = Linker::new(&ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_cuda(include_cuda!("kernels/cuda/functions.cu")) // embedded, relative to the crate
        // Its #include, embedded too: the binary also runs where the sources are not.
        .header(
            "gpukernel_abi.h",
            include_str!("../kernels/cuda/gpukernel_abi.h"),
        )
        .link_and_load()?;

    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let (da, db, mut out) = (ctx.htod_copy(&a)?, ctx.htod_copy(&b)?, ctx.alloc_zeros(n)?);
    let kernel = module.kernel(multiply_vectors)?;
    ctx.default_stream().launch(
        &kernel,
        LaunchConfig::for_elements(n)?,
        (&da, &db, &mut out),
    )?;

    let got = out.to_host_vec()?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    println!(
        "multiply_vectors ran on {}: out[..5] = {:?}",
        ctx.device(),
        &got[..5]
    );
    ffi_examples::check_close("multiply_vectors", &got, &want, 0.0)?;
    Ok(())
}
