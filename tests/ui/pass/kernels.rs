//! Every accepted form of `#[kernel]` compiles on the host, and the marker types implement
//! `Kernel` with the expected names.
#![deny(warnings)]

use gpukernel_device::Kernel;
use gpukernel_device::prelude::*;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Affine {
    pub scale: f32,
    pub offset: f32,
}

// SAFETY: `#[repr(C)]` struct of two `f32`s.
unsafe impl DeviceCopy for Affine {}

/// `y = a * x + y`, one element per thread.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = gpukernel_device::thread::index();
    if let (Some(xi), Some(yi)) = (x.get(i.get()), y.get_mut(&i)) {
        *yi += a * xi;
    }
}

/// Every parameter kind at once, with the anonymous lifetime `'_`, `-> ()`, `_` and `mut`
/// bindings.
///
/// # Safety
/// `data` and `raw` must not be accessed by other threads during the launch.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn everything(
    flag: bool,
    n: usize,
    t: Affine,
    x: &'_ [f64],
    out: DisjointSlice<'_, i64>,
    mut data: &mut [u8],
    raw: *mut u32,
    _: *const Affine,
) -> () {
    let _ = (flag, n, t.scale + t.offset, x, out.len());
    data = &mut data[..];
    data.fill(0);
    // SAFETY: the caller's promise.
    unsafe { raw.write(1) };
}

mod nested {
    use gpukernel_device::prelude::*;

    #[kernel]
    pub(crate) fn private_kernel(n: u32) {
        let _ = n;
    }

    #[cfg(any())]
    #[kernel]
    pub fn never_compiled(n: UndefinedType) {}

    #[kernel]
    #[cfg(any())]
    pub fn also_never_compiled(n: UndefinedType) {}
}

#[kernel]
fn r#match(x: &[i8]) {
    let _ = x;
}

/// `same_len` over a safe output and, in an `unsafe fn`, a `&mut [T]`.
#[kernel(same_len(x, y))]
pub fn paired(x: &[f32], mut y: DisjointSlice<f32>) {
    let i = gpukernel_device::thread::index();
    if i.get() < x.len() {
        y.set(&i, x[i.get()]);
    }
}

/// # Safety
/// One thread per element.
#[kernel(same_len(x, y), same_len(a, b))]
pub unsafe fn paired_unsafe(x: &[f32], y: &mut [f32], a: &[u8], b: &[u8]) {
    let _ = (x, y, a, b);
}

fn main() {
    assert_eq!(
        <paired as Kernel>::SAME_LEN,
        &[&[("x", 0), ("y", 1)][..]]
    );
    assert_eq!(
        <paired_unsafe as Kernel>::SAME_LEN,
        &[&[("x", 0), ("y", 1)][..], &[("a", 2), ("b", 3)][..]]
    );
    assert_eq!(saxpy::NAME, "saxpy");
    assert_eq!(everything::NAME, "everything");
    assert_eq!(nested::private_kernel::NAME, "private_kernel");
    assert_eq!(r#match::NAME, "match");
    let _: fn() -> (u8, u16) = || (0, 0);
}
