//! Compiles this crate's kernels to PTX, and `cuda/vendor.cu` for the host (the simulator),
//! with the CUDA headers' `include/cccl` (libcu++) as an include directory. On the GPU the
//! same file goes to the run-time Linker, whose NVRTC finds the toolkit's headers itself.
fn main() {
    if nvptx_builder::is_device_build() {
        return;
    }
    let cccl = match nvptx_builder::lto::cuda_headers_root() {
        Ok(root) => root.join("include").join("cccl"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!("cargo:rerun-if-env-changed=GPUKERNEL_CUDA_TOOLS");
    nvptx_builder::Builder::from_build_script()
        .include_dir(cccl)
        .foreign_sources(&["cuda/vendor.cu"])
        .build_or_exit();
}
