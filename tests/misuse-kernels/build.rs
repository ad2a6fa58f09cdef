//! Compiles this crate's kernels to PTX (`OUT_DIR/kernels.ptx`), which the tests load on the
//! simulator and, with the `gpu` feature, on a GPU.
fn main() {
    nvptx_builder::Builder::from_build_script().build_or_exit();
}
