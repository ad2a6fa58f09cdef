//! Compiles this crate's kernels to PTX (for the GPU); the host build is the simulator's.
fn main() {
    // The onesweep passes of 32-bit keys: two blocks of 384 threads per multiprocessor (CUB's
    // shape on sm_90), which caps ptxas at 80 registers a thread.
    let mut b = nvptx_builder::Builder::from_build_script();
    for k in [
        "sort_onesweep_u32",
        "sort_onesweep_i32",
        "sort_onesweep_f32",
        "sort_onesweep_u32_tune_e",
        "sort_onesweep_u32_tune_f",
    ] {
        b = b.launch_bounds(k, 384, 2);
    }
    b.build_or_exit();
}
