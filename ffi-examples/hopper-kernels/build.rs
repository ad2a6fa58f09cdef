//! Compiles this crate's kernels to PTX for `sm_90a`: `wgmma` exists only on that
//! architecture-specific target, so the PTX loads on compute capability 9.0 only.
fn main() {
    nvptx_builder::Builder::from_build_script()
        .arch("sm_90a")
        // The warp-specialised GEMMs: three warpgroups, one block per multiprocessor (the
        // register cap at entry that `setmaxnreg` needs).
        .launch_bounds("gemm_bf16_tma", 384, 1)
        .launch_bounds("gemm_e4m3_tma", 384, 1)
        .launch_bounds("gemm_e4m3_tma_multicast", 384, 1)
        .build_or_exit();
}
