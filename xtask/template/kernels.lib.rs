//! The project's GPU kernels.
//!
//! This crate compiles twice: for `nvptx64-nvidia-cuda` (driven by `build.rs`), where every
//! `#[kernel]` becomes a PTX entry, and for the host, where each kernel is a typed launch
//! descriptor that the runtime looks up in a module, on the GPU or on the simulator.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::{prelude::*, thread};

/// The PTX of every kernel of this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The kernels' machine code for sm_80 and sm_90 and their PTX (for newer GPUs), in one fatbin
/// built with the crate: loading it on those GPUs compiles nothing. The simulator runs the PTX.
#[cfg(not(target_arch = "nvptx64"))]
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

// Defined in cuda/functions.cu: `extern "C" __device__ int scale_f32(float* ret, float x, float factor)`.
// `unsafe extern`: we vouch that the foreign code defines it so; `safe fn`: it is sound for
// any arguments (it takes no pointer), so safe kernels may call it.
declare_device!(unsafe extern { pub "scale_f32", safe fn(x: f32, factor: f32) -> f32 });

/// `out[i] = x[i] * factor`, computed by the CUDA C function `scale_f32`.
#[kernel]
pub fn scale(x: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = scale_f32(x[i.get()], factor);
    }
}

/// `y[i] = a * x[i] + y[i]`, in Rust only.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(yi) = y.get_mut(&i) {
        *yi += a * x[i.get()];
    }
}
