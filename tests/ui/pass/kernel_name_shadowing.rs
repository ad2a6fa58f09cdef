//! On the host a kernel's name can be rebound to its typed kernel,
//! `let saxpy = module.kernel(saxpy)?;`, and the marker type keeps its name
//! (`saxpy::NAME`, `TypedKernel<saxpy>`). The launch runs on the simulator.
#![deny(warnings)]

use gpukernel_device::Kernel;
use gpukernel_device::prelude::*;
use gpukernel_runtime::{Device, LaunchConfig, Result, TypedKernel};

/// `y = a * x + y`, one element per thread.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = gpukernel_device::thread::index();
    if let (Some(xi), Some(yi)) = (x.get(i.get()), y.get_mut(&i)) {
        *yi += a * xi;
    }
}

/// A stand-in for the kernel's PTX: its entry and its signature global, in the form the
/// device build emits them (`.b8 NAME[8]`, the little-endian bytes of `Kernel::SIGNATURE`).
fn ptx_of<K: Kernel>() -> String {
    let bytes: Vec<String> = K::SIGNATURE.to_le_bytes().iter().map(u8::to_string).collect();
    format!(
        ".visible .global .align 8 .b8 {}[8] = {{{}}};\n.visible .entry {}() {{ ret; }}\n",
        gpukernel_device::signature_symbol(K::NAME),
        bytes.join(", "),
        K::NAME
    )
}

fn run() -> Result<()> {
    let ctx = Device::simulator().primary_context()?;
    let module = ctx.load_module(ptx_of::<saxpy>().as_bytes())?;
    let saxpy = module.kernel(saxpy)?;
    let _: &TypedKernel<saxpy> = &saxpy;
    assert_eq!(saxpy::NAME, "saxpy");

    let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0])?;
    let mut y = ctx.htod_copy(&[10.0f32; 3])?;
    let stream = ctx.new_stream()?;
    stream.launch(&saxpy, LaunchConfig::for_elements(3)?, (2.0f32, &x, &mut y))?;
    assert_eq!(y.to_host_vec()?, [12.0, 14.0, 16.0]);
    Ok(())
}

fn main() {
    run().unwrap();
}
