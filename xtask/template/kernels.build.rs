//! Compiles this crate's kernels to PTX (`$OUT_DIR/kernels.ptx`, checked with ptxas), and its
//! CUDA C sources for the host, where the simulator runs them.
fn main() {
    nvptx_builder::Builder::from_build_script()
        // Every .cu that defines a `declare_device!` symbol. The host binary embeds the same
        // files for the run-time Linker (`include_cuda!`).
        .foreign_sources(&["cuda/functions.cu"])
        .build_or_exit();
}
