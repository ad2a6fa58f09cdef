//! Compiles this crate's kernels to PTX for `sm_90a` (the Hopper target on which `wgmma`
//! exists), so the PTX loads on compute capability 9.0 only.
fn main() {
    nvptx_builder::Builder::from_build_script()
        .arch("sm_90a")
        // The warp-specialised kernels: a producer and two or three consumer warpgroups, one
        // block per multiprocessor (the register cap at entry that `setmaxnreg` needs).
        .launch_bounds("attention_fwd_d128_tma", 384, 1)
        .launch_bounds("attention_fwd_d64_tma", 512, 1)
        .launch_bounds("attention_fwd_d64_tma_q128", 384, 1)
        .build_or_exit();
}
