//! Compiles the foreign CUDA C of the simulator tests (`cuda/`) for the host, into a static
//! library that `src/sim_faults.rs`'s `declare_device!` declarations resolve to.
//!
//! Those kernels are host-only (this crate has no device build, so no PTX records the
//! declarations): there is nothing to check the definitions against here. Kernels crates pass
//! `PtxOutput::foreign` (or use `Builder::foreign_sources`, which does).
fn main() {
    if let Err(e) = nvptx_builder::host_cc::compile_foreign_for_host(
        &["cuda/sim_faults.cu"],
        "gpukernel_tests_foreign",
        &[],
    ) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
