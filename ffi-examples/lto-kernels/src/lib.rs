//! Example kernels whose foreign CUDA C is linked in at build time.
//!
//! `build.rs` names `cuda/functions.cu` once, with `nvptx_builder::Builder::foreign_cuda`: clang
//! compiles it to LLVM bitcode, which is linked with the kernels before optimisation, so the
//! calls below inline like Rust calls (no `call` is left in [`PTX`], and a status that cannot
//! be non-zero costs nothing). [`PTX`] needs no run-time link: load it as it is. The same file
//! is compiled for the host, where the simulator's foreign calls resolve to it.
//!
//! [`PTX_RUNTIME_LINK`] holds the same kernels with their foreign calls left as `.extern
//! .func`s for the run-time Linker (with [`FUNCTIONS_CU`]): the benchmark compares the two.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::{math, prelude::*, thread};

/// The PTX of every kernel, with `cuda/functions.cu` linked in (architecture `GPUKERNEL_ARCH`,
/// default sm_90): load it with `Context::load_module`.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Machine code of every kernel, embedded at build time: SASS for each architecture nvptx-builder
/// names (`Builder::sass_archs`, default sm_80 and the build architecture) plus their PTX, in
/// one fatbin. `ctx.load_module(FATBIN)` JIT-compiles nothing on those GPUs; the simulator
/// runs the PTX it holds.
#[cfg(not(target_arch = "nvptx64"))]
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

/// The same kernels with the foreign calls unresolved, for the run-time Linker (benchmark and
/// tests only).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX_RUNTIME_LINK: &str =
    include_str!(concat!(env!("OUT_DIR"), "/kernels_runtime_link.ptx"));

/// The text of `cuda/functions.cu`, for the run-time link of [`PTX_RUNTIME_LINK`].
pub const FUNCTIONS_CU: &str = include_str!("../cuda/functions.cu");

// Named unlike `ffi-examples-kernels`' functions: on the host, where the simulator runs foreign
// code, both crates link into one test program, and C symbols are global.
// ANCHOR: kernel
declare_device! {
    // you vouch (`unsafe`) that cuda/functions.cu defines it with this signature
    unsafe extern { pub "mul_f32", safe fn(a: f32, b: f32) -> f32; }
}

/// `out[i] = a[i] * b[i]`, computed by the foreign `mul_f32`.
#[kernel]
pub fn multiply_vectors(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = mul_f32(a[i.get()], b[i.get()]);
    }
}
// ANCHOR_END: kernel

declare_device! {
    unsafe extern {
        /// A degree-8 polynomial by Horner's rule (8 fused multiply-adds), bounded on [0, 1].
        pub "horner8", safe fn(x: f32) -> f32;
        /// `sqrt(x)`; fails with status 33 when `x < 0`.
        pub "checked_sqrt", safe fn(x: f32) -> f32;
        /// `a + t * (b - a)`: a plain C function.
        pub "lerp_c", safe extern "C" fn(a: f32, b: f32, t: f32) -> f32;
    }
}

/// The coefficients of `horner8` in `cuda/functions.cu`, highest power first.
pub const HORNER8: [f32; 9] = [
    0.001953125,
    -0.00390625,
    0.0078125,
    -0.015625,
    0.03125,
    -0.0625,
    0.125,
    -0.25,
    0.5,
];

/// `horner8` written in Rust (the inline twin): the same fused multiply-adds in the same order.
#[inline(always)]
pub fn horner8_rust(x: f32) -> f32 {
    let mut acc = HORNER8[0];
    let mut k = 1;
    while k < HORNER8.len() {
        acc = math::fmaf(acc, x, HORNER8[k]);
        k += 1;
    }
    acc
}

/// `y[i] = a * x[i] + y[i]` with the multiply written in Rust (a multiply, then an add).
///
/// # Safety
/// Launch with a one-dimensional grid and blocks, and with `x.len() >= y.len()`.
#[kernel]
pub unsafe fn saxpy_mul_inline(a: f32, x: &[f32], y: &mut [f32]) {
    let i = thread::global_index_x();
    if i < y.len() {
        // SAFETY: i < y.len() <= x.len() (the caller's promise); one thread per index.
        unsafe {
            let yi = y.get_unchecked_mut(i);
            *yi += a * *x.get_unchecked(i);
        }
    }
}

/// `y[i] = mul_f32(a, x[i]) + y[i]`: the multiply through the foreign function.
///
/// # Safety
/// As [`saxpy_mul_inline`].
#[kernel]
pub unsafe fn saxpy_mul_foreign(a: f32, x: &[f32], y: &mut [f32]) {
    let i = thread::global_index_x();
    if i < y.len() {
        // SAFETY: as in `saxpy_mul_inline`.
        unsafe {
            let yi = y.get_unchecked_mut(i);
            *yi += mul_f32(a, *x.get_unchecked(i));
        }
    }
}

/// `out[i]` = `horner8` applied `iters` times to `x[i]`, through the foreign function: a
/// compute-bound loop with a foreign call in its body.
///
/// # Safety
/// Launch with a one-dimensional grid and blocks, and with `x.len() >= out.len()`.
#[kernel]
pub unsafe fn poly_foreign(x: &[f32], iters: u32, out: &mut [f32]) {
    let i = thread::global_index_x();
    if i < out.len() {
        // SAFETY: i < out.len() <= x.len() (the caller's promise); one thread per index.
        unsafe {
            let mut v = *x.get_unchecked(i);
            for _ in 0..iters {
                v = horner8(v);
            }
            *out.get_unchecked_mut(i) = v;
        }
    }
}

/// As [`poly_foreign`] with the polynomial written in Rust ([`horner8_rust`]).
///
/// # Safety
/// As [`poly_foreign`].
#[kernel]
pub unsafe fn poly_inline(x: &[f32], iters: u32, out: &mut [f32]) {
    let i = thread::global_index_x();
    if i < out.len() {
        // SAFETY: as in `poly_foreign`.
        unsafe {
            let mut v = *x.get_unchecked(i);
            for _ in 0..iters {
                v = horner8_rust(v);
            }
            *out.get_unchecked_mut(i) = v;
        }
    }
}

/// `out[i] = sqrt(x[i])` through `checked_sqrt`, which fails for a negative input: the failure
/// is reported by the runtime (`Error::ForeignCallFailed`) after inlining as before.
#[kernel]
pub fn sqrt_checked(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = checked_sqrt(x[i.get()]);
    }
}

/// `out[i] = a[i] + t * (b[i] - a[i])` through the plain C function `lerp_c`.
#[kernel]
pub fn lerp(a: &[f32], b: &[f32], t: f32, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = lerp_c(a[i.get()], b[i.get()], t);
    }
}
