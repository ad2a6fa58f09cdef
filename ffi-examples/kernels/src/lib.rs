//! The example kernels of gpukernel.
//!
//! This crate compiles twice. For `nvptx64-nvidia-cuda` (driven by its `build.rs` through
//! `nvptx-builder`) every `#[kernel]` becomes a PTX entry; for the host, each kernel is a
//! marker type (and a function of the same name returning it) that the runtime looks up in a
//! module and launches, on the GPU with [`PTX`] or on the simulator.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::{math, prelude::*, thread};

pub mod collectives;
pub mod ffi;
pub mod ffi_int;
pub mod graph;
pub mod grid;
pub mod launch_shapes;
pub mod math_kernels;
pub mod numeric;
pub mod reduce;
pub mod suite;

/// The PTX of every kernel in this crate (for the architecture `GPUKERNEL_ARCH`, default sm_90).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Machine code of the kernels that call no run-time-linked foreign function, embedded at build time: SASS for each architecture nvptx-builder
/// names (`Builder::sass_archs`, default sm_80 and the build architecture) plus their PTX, in
/// one fatbin. `ctx.load_module(FATBIN)` JIT-compiles nothing on those GPUs; the simulator
/// runs the PTX it holds.
#[cfg(not(target_arch = "nvptx64"))]
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

/// Relocatable machine code (`ptxas -c`) of every kernel, those calling foreign functions
/// included, for each SASS architecture: give it to the run-time Linker beside [`PTX`]
/// (`Linker::add_ptx_with_sass(PTX, RELOCATABLE, ..)`), which links it with the foreign code
/// instead of JIT-compiling the PTX where it can.
#[cfg(not(target_arch = "nvptx64"))]
pub const RELOCATABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.rdc.fatbin"));

/// Does nothing: the launch-cost benchmark's kernel.
#[kernel]
pub fn empty_kernel() {}

/// `y[i] = a * x[i] + y[i]` for every `i < y.len()`, one thread per element, with one
/// rounding (a fused multiply-add, as nvcc compiles the same line of CUDA C).
// ANCHOR: saxpy
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(yi) = y.get_mut(&i) {
        *yi = math::fmaf(a, x[i.get()], *yi);
    }
}
// ANCHOR_END: saxpy

/// saxpy written as the CUDA C version is: the one-dimensional index, one bounds test, no
/// bounds check on `x`. The benchmark runs it beside [`saxpy`] to separate what the compiler
/// pipeline produces from what the safe `DisjointSlice` / `ThreadIndex` idiom costs.
///
/// # Safety
/// Launch with a one-dimensional grid and blocks (else two threads share an index), and with
/// `x.len() >= y.len()`.
#[kernel]
pub unsafe fn saxpy_cuda_style(a: f32, x: &[f32], y: &mut [f32]) {
    let i = thread::global_index_x();
    if i < y.len() {
        // SAFETY: i < y.len() <= x.len() (the caller's promise); one thread per index.
        unsafe {
            let yi = y.get_unchecked_mut(i);
            *yi = math::fmaf(a, *x.get_unchecked(i), *yi);
        }
    }
}

/// An affine map passed by value, to test `#[repr(C)]` struct parameters across the ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    /// Multiplier.
    pub scale: f32,
    /// Addend.
    pub offset: f32,
    /// A 64-bit field after two 32-bit ones (checks alignment and padding).
    pub bias: f64,
}

// SAFETY: `#[repr(C)]`, plain numbers only.
unsafe impl DeviceCopy for Affine {}

/// `y[i] = p.scale * x[i] + p.offset + p.bias`.
#[kernel]
pub fn affine(p: Affine, x: &[f32], mut y: DisjointSlice<f64>) {
    let i = thread::index();
    if let Some(yi) = y.get_mut(&i) {
        *yi = (p.scale * x[i.get()] + p.offset) as f64 + p.bias;
    }
}

/// Writes each scalar parameter, converted to f64, into `out[0..6]` (thread 0 only): checks
/// that every scalar kind crosses the ABI intact.
#[kernel]
pub fn scalar_abi(a: i8, b: u16, c: i32, d: u64, e: f64, f: bool, out: DisjointSlice<f64>) {
    let i = thread::index();
    if i.get() == 0 {
        let vals = [
            a as f64,
            b as f64,
            c as f64,
            d as f64,
            e,
            if f { 1.0 } else { 0.0 },
        ];
        for (k, v) in vals.into_iter().enumerate() {
            // SAFETY: only thread 0 writes, and nothing reads `out` during the launch.
            unsafe { out.write(k, v) };
        }
    }
}

/// Scales `x` in place with a grid-stride loop: an `unsafe` kernel, because every thread holds
/// `&mut` to the whole slice; it promises that thread `t` touches only indices `t + k*stride`.
///
/// # Safety
/// Launch with any configuration; the kernel itself keeps threads on disjoint indices.
#[kernel]
pub unsafe fn scale_in_place(x: &mut [f32], s: f32) {
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    while i < x.len() {
        x[i] *= s;
        i += stride;
    }
}
