use gpukernel_runtime::{Context, Error};

fn main() -> Result<(), Error> {
    // The GPU if there is one, else the simulator (GPUKERNEL_BACKEND=sim|cuda chooses).
    let ctx = Context::default_context()?;
    let x: Vec<f32> = (0..4096).map(|i| i as f32 * 0.5).collect();
    let out = host::scale_on(&ctx, &x, 3.0)?;
    let want: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
    if out != want {
        eprintln!("scale on {}: the result does not match the host", ctx.device());
        std::process::exit(1);
    }
    println!(
        "scale ran on {}: {} results match the host (out[..4] = {:?})",
        ctx.device(),
        out.len(),
        &out[..4]
    );
    Ok(())
}
