//! Compiles this crate's kernels to PTX (for the GPU) and, for the host build, its foreign
//! CUDA C sources into a static library that the simulator's foreign calls resolve to.
fn main() {
    nvptx_builder::Builder::from_build_script()
        // Every source that defines a symbol a `declare_device!` in src/ffi.rs names; on the
        // GPU they arrive through the run-time Linker (as .cu, cubin, fatbin, object or archive).
        .foreign_sources(&[
            "cuda/functions.cu",
            "cuda/cubin_lib.cu",
            "cuda/fatbin_lib.cu",
            "cuda/archive_lib.cu",
            "cuda/object_lib.cu",
        ])
        .build_or_exit();
}
