// Shared setup of the crate's doc examples, included by their hidden first line:
// `# include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));`
// It stands in for what an application has: `#[kernel]`s from its kernels crate and the PTX
// nvptx-builder wrote for them. The simulator runs the kernels' host bodies; it reads only the
// entry names and signature fingerprints from the PTX, which is generated here from those.
#[allow(unused_imports)]
use gpukernel_runtime::prelude::*;
#[allow(unused_imports)]
use gpukernel_runtime::{Device, Error, LaunchConfig, Module};

/// `y[i] += a * x[i]`.
#[gpukernel_device::kernel]
fn saxpy(a: f32, x: &[f32], mut y: gpukernel_device::DisjointSlice<f32>) {
    let i = gpukernel_device::thread::index();
    if let Some(yi) = y.get_mut(&i) {
        *yi += a * x[i.get()];
    }
}

/// `out[i] = i`.
#[gpukernel_device::kernel]
fn iota(mut out: gpukernel_device::DisjointSlice<u32>) {
    let i = gpukernel_device::thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = i.get() as u32;
    }
}

/// `data[i] *= a`; `unsafe`: it takes `&mut [f32]`, so no two threads may touch one element.
#[gpukernel_device::kernel]
unsafe fn scale(a: f32, data: &mut [f32]) {
    let i = gpukernel_device::thread::index().get();
    if i < data.len() {
        data[i] *= a;
    }
}

/// `x[i] *= 0.5`, then sets `again` to whether any element is still above 1 (one block: its
/// threads vote): the body of a graph's `while` node.
#[gpukernel_device::kernel]
fn halve(
    mut x: gpukernel_device::DisjointSlice<f32>,
    again: gpukernel_device::graph::ConditionalHandle,
) {
    let mut above = false;
    if let Some(v) = x.get_mut(gpukernel_device::thread::index()) {
        *v *= 0.5;
        above = *v > 1.0;
    }
    again.set_by_first_thread(gpukernel_device::sync::sync_threads_or(above));
}

/// The PTX of `halve` alone (the graph examples load it as a module of its own).
#[allow(dead_code)]
fn halve_ptx() -> String {
    use gpukernel_device::Kernel;
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry halve()\n{{\n\tret;\n}}\n\
         .visible .global .align 8 .u64 __gpukernel_sig_halve = {};\n",
        <halve as Kernel>::SIGNATURE
    )
}

/// The PTX of the kernels above, as far as the simulator reads it.
#[allow(dead_code)]
fn kernels_ptx() -> String {
    use gpukernel_device::Kernel;
    let mut ptx = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
    let kernels = [
        ("saxpy", <saxpy as Kernel>::SIGNATURE),
        ("iota", <iota as Kernel>::SIGNATURE),
        ("scale", <scale as Kernel>::SIGNATURE),
    ];
    for (name, sig) in kernels {
        ptx.push_str(&format!(
            ".visible .entry {name}()\n{{\n\tret;\n}}\n.visible .global .align 8 .u64 __gpukernel_sig_{name} = {sig};\n"
        ));
    }
    ptx
}

/// The simulator's context and the module of the kernels above.
#[allow(dead_code)]
fn doc_setup() -> (Context, Module) {
    let ctx = Device::simulator()
        .primary_context()
        .expect("the simulator always has a context");
    let module = ctx
        .load_module(kernels_ptx().as_bytes())
        .expect("the kernels' module loads");
    (ctx, module)
}

/// A CUDA C++ source with one device function, as a kernels crate's `cuda/functions.cu` has.
#[allow(dead_code)]
const FUNCTIONS_CU: &str = "extern \"C\" __device__ float twice(float x) { return 2.0f * x; }\n";

/// Writes `text` to a file `name` in a new temporary folder (removed when the guard drops).
#[allow(dead_code)]
fn doc_file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("the file is written");
    (dir, path)
}

/// An offline link (no device) of the kernels above and `FUNCTIONS_CU` for sm_90.
#[allow(dead_code)]
fn doc_image() -> gpukernel_runtime::Result<gpukernel_runtime::link::LinkedImage> {
    gpukernel_runtime::link::Linker::for_arch("sm_90")?
        .add_ptx(&kernels_ptx(), "kernels.ptx")
        .add_cuda_source(FUNCTIONS_CU, "functions.cu")
        .link()
}

/// The declaration record `declare_device! { fn mul_f32_f32(a: f32, b: f32) -> f32; }` at
/// `src/ffi.rs:12` exports beside the kernels.
#[allow(dead_code)]
const DECL_RECORD: &str = "gpukernel-foreign-v1\nsymbol=mul_f32_f32\nabi=numba\nat=src/ffi.rs:12\n\
                           ret=float\narg=float\narg=float\n";
