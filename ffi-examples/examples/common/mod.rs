//! What the linking examples share: the embedded foreign sources and precompiled code, and
//! the choice of device.
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

/// The default context: the GPU if present, else the simulator. On the simulator the
/// precompiled input is still checked and its symbols counted by the Linker, and the foreign
/// function runs from the same CUDA C source compiled for the host (the kernels crate's
/// build script), so the example runs there too.
pub fn context() -> gpukernel_runtime::Result<Context> {
    gpukernel_runtime::Device::default_device()?.primary_context()
}
