//! Kernels whose device build and host build disagree, on purpose, and kernels that use names
//! the macro's expansion once used.
//!
//! Each disagreement here once passed the kernel signature check (which hashed the parameter
//! types' tokens): a type alias that resolves to another type on the device, and a
//! `same_len` given to the device build only. Now the compiler computes each side's
//! fingerprint from the resolved types, and `Module::kernel` refuses these kernels, naming
//! the parameter (`gpukernel-tests`' `kernel_signature` tests, on the simulator and a GPU).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::{DeviceCopy, DisjointSlice, kernel, thread};

/// The PTX of every kernel in this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// `f64` in the device build.
#[cfg(target_arch = "nvptx64")]
pub type Real = f64;
/// `f32` in the host build (the device build has `f64`): one name, two sizes.
#[cfg(not(target_arch = "nvptx64"))]
pub type Real = f32;

/// `out[i] = x[i]`: on the device each element is 8 bytes, on the host 4, so a launch the host
/// checked for `n` elements would touch `8 n` bytes.
#[kernel]
pub fn copy_real(x: &[Real], mut out: DisjointSlice<Real>) {
    let i = thread::index();
    if let (Some(o), Some(v)) = (out.get_mut(&i), x.get(i.get())) {
        *o = *v;
    }
}

/// `u8` in the device build.
#[cfg(target_arch = "nvptx64")]
pub type Flag = u8;
/// `bool` in the host build (the device build has `u8`): one size, two kinds.
#[cfg(not(target_arch = "nvptx64"))]
pub type Flag = bool;

/// The value [`raise_flags`] writes: the byte 2 on the device, which no `bool` may hold.
#[cfg(target_arch = "nvptx64")]
const RAISED: Flag = 2;
#[cfg(not(target_arch = "nvptx64"))]
const RAISED: Flag = true;

/// `out[i] = RAISED`.
#[kernel]
pub fn raise_flags(mut out: DisjointSlice<Flag>) {
    out.set(thread::index(), RAISED);
}

/// A by-value parameter whose field is a [`Flag`]: one size on both builds, so only a
/// fingerprint that sees the fields (`#[derive(DeviceCopy)]`) tells the two apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, DeviceCopy)]
pub struct Setting {
    /// Multiplies each element.
    pub scale: f32,
    /// Whether to write at all.
    pub enabled: Flag,
}

/// `out[i] = s.scale` when `s.enabled`.
#[kernel]
pub fn apply_setting(s: Setting, mut out: DisjointSlice<f32>) {
    if s.enabled == RAISED {
        out.set(thread::index(), s.scale);
    }
}

/// `out[i] = x[i]` for every `i < out.len()`, with `same_len(x, out)` in the device build only:
/// the device's body assumes equal lengths (no bounds check on `x`) that the host never
/// checks.
#[cfg_attr(target_arch = "nvptx64", kernel(same_len(x, out)))]
#[cfg_attr(not(target_arch = "nvptx64"), kernel)]
pub fn copy_assuming_same_len(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = x[i.get()];
    }
}

/// `out[i] = x[i]` with `same_len(x, out)` on both builds: the control, accepted.
#[kernel(same_len(x, out))]
pub fn copy_same_len(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = x[i.get()];
    }
}

/// A crate-level function named like the function `#[kernel]` once generated for a kernel's
/// body (which the body's own calls then reached, recursing): [`calls_gk_body`] must call
/// this one. It takes the kernel's parameters, so either would type-check.
pub fn __gk_body(mut out: DisjointSlice<'_, u32>) {
    out.set(thread::index(), 7);
}

/// Calls the crate's [`__gk_body`]: every element becomes 7.
#[kernel]
pub fn calls_gk_body(out: DisjointSlice<u32>) {
    __gk_body(out);
}

pub mod collectives_misuse;
