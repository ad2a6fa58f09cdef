//! Kernels that call foreign CUDA C device functions, declared with `declare_device!`.
//!
//! Where each symbol comes from (all in `ffi-examples/kernels/cuda/`):
//! * `functions.cu`, compiled by NVRTC at run time: `mul_f32_f32`, `sum_reduce`,
//!   `checked_div`, `dot2`, `swap_scale`, `add_in_place`, and the plain C function `axpy_c`;
//! * `cubin_lib.cu`, precompiled to a cubin: `cubin_add_one`;
//! * `fatbin_lib.cu`, precompiled to a fatbin: `fatbin_affine`;
//! * `archive_lib.cu`, precompiled to a static library: `archive_square`;
//! * `object_lib.cu`, precompiled to an object file: `object_sub_one`.
//!
//! The crate's PTX holds every kernel; a link that needs only some of them selects them with
//! `Linker::add_ptx_kernels`, so it needs only the foreign code those kernels call.

use gpukernel_device::{prelude::*, thread};

/// Two floats, passed by value to and returned from foreign functions. Its C twin is
/// `struct Float2 { float x; float y; }` in `cuda/gpukernel_abi.h`.
/// Derived, so that every link checks the C struct's fields against these (`x` at 0, `y` at 4).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, DeviceCopy)]
pub struct Float2 {
    /// First component.
    pub x: f32,
    /// Second component.
    pub y: f32,
}

declare_device! {
    unsafe extern {
        /// `a * b`.
        pub "mul_f32_f32", safe fn(a: f32, b: f32) -> f32;
        /// The sum of `n` floats at `array`.
        pub "sum_reduce", fn(array: *const f32, n: i32) -> f32;
        /// `a / b`; fails with status 22 when `b == 0`.
        pub "checked_div", safe fn(a: f32, b: f32) -> f32;
        /// `a.x * b.x + a.y * b.y`: structs by value.
        pub "dot2", safe fn(a: Float2, b: Float2) -> f32;
        /// `(a.y * s, a.x * s)`: a struct returned.
        pub "swap_scale", safe fn(a: Float2, s: f32) -> Float2;
        /// `*x += delta`: no result, an effect through a pointer.
        pub "add_in_place", fn(x: *mut f32, delta: f32);
        /// `x + 1`, from a precompiled cubin.
        pub "cubin_add_one", safe fn(x: f32) -> f32;
        /// `x * scale + bias`, from a precompiled fatbin.
        pub "fatbin_affine", safe fn(x: f32, scale: f32, bias: f32) -> f32;
        /// `x * x`, from a static library.
        pub "archive_square", safe fn(x: f32) -> f32;
        /// `x - 1`, from an object file.
        pub "object_sub_one", safe fn(x: f32) -> f32;
        /// `a * x + y`: a plain C function (C ABI: no status, the value returned).
        pub "axpy_c", safe extern "C" fn(a: f32, x: f32, y: f32) -> f32;
    }
}

/// `out[i] = a * x[i] + y[i]`, through the plain C function `axpy_c`.
#[kernel]
pub fn axpy_with_c_abi(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = axpy_c(a, x[i.get()], y[i.get()]);
    }
}

/// `out[i] = a[i] * b[i]`, computed by the foreign `mul_f32_f32`.
#[kernel]
pub fn multiply_vectors(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = mul_f32_f32(a[i.get()], b[i.get()]);
    }
}

/// `out[r] = sum(x[r * width .. (r + 1) * width])`: each thread passes a pointer into `x`
/// and a length to the foreign `sum_reduce`.
#[kernel]
pub fn sum_rows(x: &[f32], width: u32, mut out: DisjointSlice<f32>) {
    let r = thread::index();
    let w = width as usize;
    let start = r.get() * w;
    if let (Some(o), Some(row)) = (out.get_mut(&r), x.get(start..start + w)) {
        // SAFETY: `row` is a live slice of `w` floats that `sum_reduce` only reads.
        *o = unsafe { sum_reduce(row.as_ptr(), w as i32) };
    }
}

/// `out[i] = a[i] / b[i]` through the foreign `checked_div`, which fails on a zero divisor:
/// the runtime then reports `Error::ForeignCallFailed` at the next host read or synchronization.
#[kernel]
pub fn divide_checked(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = checked_div(a[i.get()], b[i.get()]);
    }
}

/// `out[i] = dot2(a[i], w)`: a struct kernel parameter and structs by value to C.
#[kernel]
pub fn dot_with(a: &[Float2], w: Float2, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = dot2(a[i.get()], w);
    }
}

/// `out[i] = swap_scale(a[i], s)`: a struct returned by C.
#[kernel]
pub fn swap_and_scale(a: &[Float2], s: f32, mut out: DisjointSlice<Float2>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = swap_scale(a[i.get()], s);
    }
}

/// `out[i] = x[i] + delta` through the foreign `add_in_place` (a function without result).
#[kernel]
pub fn add_through_pointer(x: &[f32], delta: f32, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let mut v = x[i.get()];
        // SAFETY: `v` is a live local that `add_in_place` reads and writes once.
        unsafe { add_in_place(&raw mut v, delta) };
        *o = v;
    }
}

/// `out[i] = x[i] + 1`, from the precompiled cubin.
#[kernel]
pub fn add_one_cubin(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = cubin_add_one(x[i.get()]);
    }
}

/// `out[i] = x[i] * scale + bias`, from the precompiled fatbin.
#[kernel]
pub fn affine_fatbin(x: &[f32], scale: f32, bias: f32, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = fatbin_affine(x[i.get()], scale, bias);
    }
}

/// `out[i] = x[i] * x[i]`, from the static library.
#[kernel]
pub fn square_archive(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = archive_square(x[i.get()]);
    }
}

/// `out[i] = x[i] - 1`, from the object file.
#[kernel]
pub fn sub_one_object(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = object_sub_one(x[i.get()]);
    }
}
