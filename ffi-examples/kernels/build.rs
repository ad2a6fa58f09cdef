//! Compiles this crate's kernels to PTX (for the GPU) and, for the host build, its foreign
//! CUDA C sources into a static library that the simulator's foreign calls resolve to.
fn main() {
    if nvptx_builder::is_device_build() {
        return;
    }
    let Some(ptx) = nvptx_builder::Builder::from_build_script().build_or_exit() else {
        return;
    };
    // Every source that defines a symbol a `declare_device!` in src/ffi.rs names; on the GPU
    // they arrive through the run-time Linker (as .cu, cubin, fatbin, object or archive).
    let sources = [
        "cuda/functions.cu",
        "cuda/cubin_lib.cu",
        "cuda/fatbin_lib.cu",
        "cuda/archive_lib.cu",
        "cuda/object_lib.cu",
    ];
    // Each definition is checked against the declaration the PTX records for it.
    if let Err(e) = nvptx_builder::host_cc::compile_foreign_for_host_checked(
        &sources,
        "ffi_examples_foreign",
        &ptx.foreign,
    ) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
