//! What the linking examples share: the embedded foreign sources and precompiled code, and
//! the "needs a GPU" check of the examples whose foreign code is a binary format.
#![allow(dead_code)] // Each example uses a part.

use gpukernel_runtime::Context;

// The precompiled foreign code, embedded by the build script (`build/foreign.rs`):
// `CUBIN`, `FATBIN`, `ARCHIVE`, `OBJECT`, `WRONG_ARCH_FATBIN`.
include!(concat!(env!("OUT_DIR"), "/foreign_artifacts.rs"));

/// `functions.cu`, compiled by NVRTC at run time.
pub const FUNCTIONS_CU: &str = include_str!("../../kernels/cuda/functions.cu");
/// The header every example `.cu` includes.
pub const ABI_H: &str = include_str!("../../kernels/cuda/gpukernel_abi.h");

/// The precompiled artifact, or an error saying how to get it.
pub fn artifact(
    what: &str,
    built: Result<&'static [u8], &'static str>,
) -> Result<&'static [u8], String> {
    built.map_err(|why| {
        format!(
            "the {what} was not built when this example was compiled ({why}); \
             run `cargo xtask doctor` to install nvcc, then rebuild"
        )
    })
}

/// The default context (GPU if present, else the simulator), or `None` after printing the
/// skip message when it is the simulator: cubins, fatbins and archives hold GPU machine code,
/// which the simulator cannot run.
pub fn gpu_context(example: &str) -> gpukernel_runtime::Result<Option<Context>> {
    let ctx = gpukernel_runtime::Device::default_device()?.primary_context()?;
    if ctx.is_simulator() {
        println!("{example}: skipped on the simulator: needs a GPU");
        return Ok(None);
    }
    Ok(Some(ctx))
}
