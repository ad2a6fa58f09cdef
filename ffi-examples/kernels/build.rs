//! Compiles this crate's kernels to PTX (for the GPU) and, on the host, its foreign CUDA C
//! sources for the simulator.
fn main() {
    if nvptx_builder::is_device_build() {
        return;
    }
    nvptx_builder::Builder::from_build_script().build_or_exit();
}
