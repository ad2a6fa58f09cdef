//! A Rust kernel calling a CUDA C device function (`mul_f32` from
//! `lto-kernels/cuda/functions.cu`), linked into the kernels' PTX at build time: the kernels
//! crate's build.rs names the `.cu` once, in `Builder::foreign_cuda`, so the call inlines and
//! the PTX loads as it is, from any directory. Runs on the GPU if there is one, else on the
//! simulator (which runs the same kernel with `functions.cu` compiled for the host).
//! `sum_reduce` shows the other shape: a `.cu` linked at run time by the `Linker`.
use ffi_examples_lto_kernels::{PTX, multiply_vectors};
use gpukernel_runtime::{Context, LaunchConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: host
    let ctx = Context::default_context()?; // the GPU if present, else the simulator
    let module = ctx.load_module(PTX.as_bytes())?; // functions.cu is inside: no run-time link

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

    let got = out.to_host_vec()?; // waits; faults and foreign errors surface here
    // ANCHOR_END: host
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    println!(
        "multiply_vectors ran on {}: out[..5] = {:?}",
        ctx.device(),
        &got[..5]
    );
    ffi_examples::check_close("multiply_vectors", &got, &want, 0.0)?;
    Ok(())
}
