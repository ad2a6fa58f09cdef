//! Compiles this crate's kernels to PTX (`$OUT_DIR/kernels.ptx`, checked with ptxas) with
//! their CUDA C linked in at build time (clang-19: the foreign calls inline, and the PTX needs
//! no run-time link), then to machine code for sm_80 and sm_90 (`$OUT_DIR/kernels.fatbin`,
//! with the PTX; `.sass_archs([...])` names others), and the same CUDA C for the host, where
//! the simulator runs it.
fn main() {
    nvptx_builder::Builder::from_build_script()
        // Every .cu that defines a `declare_device!` symbol, named once.
        .foreign_cuda(["cuda/functions.cu"])
        .build_or_exit();
}
