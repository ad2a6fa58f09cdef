//! Compiles this crate's kernels to PTX (for the GPU); the host build is the simulator's.
fn main() {
    // At most 80 registers a thread: three blocks of 256 threads (or two of 384) per
    // multiprocessor for the onesweep passes.
    let mut b = nvptx_builder::Builder::from_build_script();
    for k in [
        "sort_onesweep_u32",
        "sort_onesweep_i32",
        "sort_onesweep_f32",
        "sort_onesweep_u64",
        "sort_onesweep_u32_tune_b",
        "sort_onesweep_pairs_u32_tune_a",
    ] {
        b = b.launch_bounds(k, 256, 3);
    }
    for k in [
        "sort_onesweep_pairs_u32",
        "sort_onesweep_pairs_i32",
        "sort_onesweep_pairs_f32",
        "sort_onesweep_u32_tune_c",
    ] {
        b = b.launch_bounds(k, 384, 2);
    }
    b.build_or_exit();
}
