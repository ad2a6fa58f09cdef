//! The kernels of the launch-shape benchmark (`bench_launch`): bodies that do nothing, so that
//! a launch costs what its arguments cost. The shapes are the ones launch benchmarks of other
//! GPU compilers publish: no argument, one array, 16 scalars, 16 arrays, 256 scalars (here one
//! `#[repr(C)]` struct of 256 `f32`s: a typed launch takes at most 16 arguments).

use gpukernel_device::prelude::*;

/// One array (a pointer and a length).
#[kernel]
pub fn shape_one_array(x: &[f32]) {
    let _ = x;
}

/// 16 scalars.
#[kernel]
pub fn shape_16_scalars(
    a0: f32,
    a1: f32,
    a2: f32,
    a3: f32,
    a4: f32,
    a5: f32,
    a6: f32,
    a7: f32,
    a8: f32,
    a9: f32,
    a10: f32,
    a11: f32,
    a12: f32,
    a13: f32,
    a14: f32,
    a15: f32,
) {
    let _ = (
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
    );
}

/// 16 arrays (32 parameters: a pointer and a length each).
#[kernel]
pub fn shape_16_arrays(
    x0: &[f32],
    x1: &[f32],
    x2: &[f32],
    x3: &[f32],
    x4: &[f32],
    x5: &[f32],
    x6: &[f32],
    x7: &[f32],
    x8: &[f32],
    x9: &[f32],
    x10: &[f32],
    x11: &[f32],
    x12: &[f32],
    x13: &[f32],
    x14: &[f32],
    x15: &[f32],
) {
    let _ = (
        x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15,
    );
}

/// 256 `f32` scalars in one by-value parameter (1 KiB).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scalars256 {
    /// The values.
    pub v: [f32; 256],
}

// SAFETY: `#[repr(C)]`, plain numbers only.
unsafe impl DeviceCopy for Scalars256 {}

/// 256 scalars, as one struct.
#[kernel]
pub fn shape_256_scalars(s: Scalars256) {
    let _ = s;
}
