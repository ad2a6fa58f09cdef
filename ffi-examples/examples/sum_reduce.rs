//! Pointer passing to a foreign function: each thread hands a pointer into a row of a matrix
//! and the row's length to `sum_reduce` (functions.cu). GPU if present, else the simulator.
use ffi_examples_kernels::{PTX, ffi::sum_rows};
use gpukernel_runtime::{Context, LaunchConfig, link::Linker};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::default_context()?;
    // ANCHOR: link
    let module = Linker::new(&ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &["sum_rows"])
        .add_cuda_source(include_str!("../kernels/cuda/functions.cu"), "functions.cu")
        .header(
            "gpukernel_abi.h",
            include_str!("../kernels/cuda/gpukernel_abi.h"),
        )
        .link_and_load()?;
    // ANCHOR_END: link

    let (rows, width) = (4096usize, 96usize);
    let x: Vec<f32> = (0..rows * width)
        .map(|i| ((i * 37) % 101) as f32 * 0.125 - 6.0)
        .collect();
    let (dx, mut out) = (ctx.htod_copy(&x)?, ctx.alloc_zeros(rows)?);
    let kernel = module.kernel(sum_rows)?;
    let cfg = LaunchConfig::for_elements(rows)?;
    ctx.default_stream()
        .launch(&kernel, cfg, (&dx, width as u32, &mut out))?;

    let got = out.to_host_vec()?;
    let want: Vec<f32> = x.chunks(width).map(|row| row.iter().sum()).collect();
    println!(
        "sum_rows on {}: {rows} rows of {width}, sums[..4] = {:?}",
        ctx.device(),
        &got[..4]
    );
    ffi_examples::check_close("sum_rows", &got, &want, 1e-5)?;
    Ok(())
}
