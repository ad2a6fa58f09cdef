//! Compiles this crate's kernels to PTX with `cuda/functions.cu` linked in at build time
//! (clang → LLVM bitcode → linked with the kernels before optimisation), and `functions.cu`
//! for the host, for the simulator: the source is named once.
fn main() {
    // ANCHOR: build
    nvptx_builder::Builder::from_build_script()
        .foreign_cuda(["cuda/functions.cu"])
        .build_or_exit();
    // ANCHOR_END: build

    // For the benchmark and the tests only: the same kernels with their foreign calls left to
    // the run-time Linker (`kernels_runtime_link.ptx`), to compare the two links.
    if !nvptx_builder::is_device_build()
        && let Err(e) = nvptx_builder::Builder::from_build_script()
            .output_name("kernels_runtime_link")
            .embed_sass(false)
            .build()
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
