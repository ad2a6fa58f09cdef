//! Example kernels that call NVIDIA's own device code through small CUDA C wrappers
//! (`cuda/vendor.cu`): CUB's block-wide reduce and scan (with the temporary storage in the
//! Rust kernel's shared memory), libcu++'s `cuda::std::complex`, and cuRAND's device API
//! (Philox4x32-10 and XORWOW).
//!
//! On the GPU, link [`PTX`] with [`VENDOR_CU`] through the run-time `Linker` (NVRTC compiles
//! it with the toolkit's headers). The simulator runs the wrappers' portable branches: a
//! plain block sum and scan, the same libcu++ code, and Philox written out; XORWOW reports
//! status [`NOT_SIMULATED`] there (its skip-ahead needs cuRAND's tables).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::shared::shared_array;
use gpukernel_device::vector::f32x4;
use gpukernel_device::{prelude::*, thread};

/// The PTX of every kernel (architecture `GPUKERNEL_ARCH`, default sm_90).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The text of `cuda/vendor.cu`, for the run-time link of [`PTX`].
pub const VENDOR_CU: &str = include_str!("../cuda/vendor.cu");

/// The block size the CUB kernels must be launched with.
pub const BLOCK: u32 = 256;

/// The floats of shared memory each CUB call gets for its `TempStorage`.
pub const TEMP_FLOATS: usize = 1024;

/// The status `vendor_xorwow` returns in the simulator.
pub const NOT_SIMULATED: i32 = 3;

/// The status the cuRAND wrappers return on the GPU when `vendor.cu` was compiled without
/// cuRAND's headers (they come with the full CUDA toolkit, not with the compiler wheels).
pub const NO_CURAND: i32 = 5;

/// A complex number, `struct Complex32 { float re; float im; }` in `cuda/vendor.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, DeviceCopy)]
pub struct Complex32 {
    /// Real part.
    pub re: f32,
    /// Imaginary part.
    pub im: f32,
}

declare_device! {
    unsafe extern {
        /// The sum of `x` over the block (`cub::BlockReduce`), in every thread; `temp` is
        /// [`TEMP_FLOATS`] floats of 16-byte-aligned shared memory.
        pub "vendor_block_sum", fn(x: f32, temp: *mut f32) -> f32;
        /// The exclusive prefix sum of `x` over the block's threads (`cub::BlockScan`).
        pub "vendor_block_exclusive_sum", fn(x: f32, temp: *mut f32) -> f32;
        /// `exp(a) * b` with `cuda::std::complex<float>`.
        pub "vendor_complex_exp_mul", safe fn(ar: f32, ai: f32, br: f32, bi: f32) -> Complex32;
        /// cuRAND's Philox4x32-10: the output at `offset` of `subsequence` for `seed`.
        pub "vendor_philox", safe fn(seed: u64, subsequence: u64, offset: u64) -> u32;
        /// cuRAND's XORWOW: the output at `offset` of `subsequence` for `seed`.
        pub "vendor_xorwow", safe fn(seed: u64, subsequence: u64, offset: u64) -> u32;
    }
}

/// `totals[i]` = the sum of `x` over thread `i`'s block (blocks of [`BLOCK`] threads; threads
/// past the end add 0), by CUB.
#[kernel]
pub fn cub_block_totals(x: &[f32], mut totals: DisjointSlice<f32>) {
    let temp = shared_array!(f32x4, 256);
    let i = thread::index();
    let v = x.get(i.get()).copied().unwrap_or(0.0);
    // SAFETY: every thread of the block passes the same shared array of TEMP_FLOATS floats,
    // 16-byte aligned; the wrapper synchronizes the block around its use.
    let total = unsafe { vendor_block_sum(v, temp.as_mut_ptr().cast::<f32>()) };
    if let Some(t) = totals.get_mut(&i) {
        *t = total;
    }
}

/// `prefix[i]` = the sum of `x` over the threads of `i`'s block before it, by CUB.
#[kernel]
pub fn cub_block_prefix(x: &[f32], mut prefix: DisjointSlice<f32>) {
    let temp = shared_array!(f32x4, 256);
    let i = thread::index();
    let v = x.get(i.get()).copied().unwrap_or(0.0);
    // SAFETY: as in `cub_block_totals`.
    let p = unsafe { vendor_block_exclusive_sum(v, temp.as_mut_ptr().cast::<f32>()) };
    if let Some(o) = prefix.get_mut(&i) {
        *o = p;
    }
}

/// `out[i] = exp(a[i]) * b[i]`, by libcu++.
#[kernel]
pub fn complex_exp_mul(a: &[Complex32], b: &[Complex32], mut out: DisjointSlice<Complex32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (a, b) = (a[i.get()], b[i.get()]);
        *o = vendor_complex_exp_mul(a.re, a.im, b.re, b.im);
    }
}

/// Where output `n` of a generator that goes round `subsequences` streams, `run` consecutive
/// values from each, comes from: (subsequence, offset). cuRAND's host generators order their
/// output so (`subsequences` threads; `run` 1, or 4 for a generator made 4 values at a time).
pub fn interleaved(n: u64, subsequences: u32, run: u32) -> (u64, u64) {
    let (s, r) = (u64::from(subsequences.max(1)), u64::from(run.max(1)));
    ((n / r) % s, n / (r * s) * r + n % r)
}

/// `out[n]` = cuRAND Philox4x32-10's output for `seed` at [`interleaved`]`(n, subsequences,
/// run)`.
#[kernel]
pub fn curand_philox(seed: u64, subsequences: u32, run: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (s, p) = interleaved(i.get() as u64, subsequences, run);
        *o = vendor_philox(seed, s, p);
    }
}

/// As [`curand_philox`], with cuRAND's XORWOW.
#[kernel]
pub fn curand_xorwow(seed: u64, subsequences: u32, run: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (s, p) = interleaved(i.get() as u64, subsequences, run);
        *o = vendor_xorwow(seed, s, p);
    }
}
