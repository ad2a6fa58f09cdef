//! Compiles this crate's kernels to PTX (for the GPU); the host build is the simulator's.
fn main() {
    nvptx_builder::Builder::from_build_script().build_or_exit();
}
