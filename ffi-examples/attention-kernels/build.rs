//! Compiles this crate's kernels to PTX for `sm_90a` (the Hopper target on which `wgmma`
//! exists), so the PTX loads on compute capability 9.0 only.
fn main() {
    nvptx_builder::Builder::from_build_script()
        .arch("sm_90a")
        .build_or_exit();
}
