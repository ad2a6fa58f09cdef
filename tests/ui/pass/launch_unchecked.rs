//! An `unsafe fn` kernel taking a raw pointer launches through
//! `unsafe { stream.launch_unchecked(..) }` (the safe `launch` refuses it:
//! `ui/fail/launch_unsafe_fn_kernel.rs`). It runs on the simulator.
#![deny(warnings)]

use gpukernel_device::prelude::*;
use gpukernel_device::{Kernel, atomic, thread};
use gpukernel_runtime::{Device, LaunchConfig, Result};

/// Adds every element of `input` into `*out`.
///
/// # Safety
/// `out` must point to an `f32` in device memory that is only accessed atomically.
#[kernel]
pub unsafe fn atomic_sum(input: &[f32], out: *mut f32) {
    if let Some(v) = input.get(thread::global_index_x()) {
        // SAFETY: the caller's contract.
        unsafe { atomic::add(out, *v) };
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
    let module = ctx.load_module(ptx_of::<atomic_sum>().as_bytes())?;
    let atomic_sum = module.kernel(atomic_sum)?;
    let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
    let out = ctx.alloc_zeros::<f32>(1)?;
    let stream = ctx.new_stream()?;
    // SAFETY: `out` is a live `f32` that only this launch touches, atomically.
    unsafe {
        stream.launch_unchecked(
            &atomic_sum,
            LaunchConfig::for_elements(4)?,
            (&x, out.device_ptr()),
        )
    }?;
    assert_eq!(out.to_host_vec()?, [10.0]);
    Ok(())
}

fn main() {
    run().unwrap();
}
