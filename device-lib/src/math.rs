//! Floating-point operations with the GPU's single-instruction forms.
//!
//! Rust never contracts `a * b + c` into a fused multiply-add on its own (IEEE semantics),
//! while nvcc and NVRTC do by default (`--fmad=true`). Write [`fmaf`] / [`fma`] where CUDA C
//! would contract, to get the same `fma.rn` instruction and the same results.
//!
//! On the host (simulator) these call `std`'s correctly rounded versions, so simulator and GPU
//! agree bit for bit.
//!
//! ```
//! use gpukernel_device::math;
//!
//! assert_eq!(math::fmaf(2.0, 3.0, 1.0), 7.0); // on the host too (the simulator's path)
//! assert_eq!(math::sqrtf(16.0), 4.0);
//! ```

/// `a * b + c` rounded once (`fma.rn.f32`), like CUDA's `fmaf`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// assert_eq!(math::fmaf(2.0, 3.0, 1.0), 7.0);
/// // One rounding: the tiny product survives where `a * b + c` loses it.
/// let e = f32::EPSILON;
/// assert_eq!(math::fmaf(1.0 + e, 1.0 - e, -1.0), -e * e);
/// ```
#[inline(always)]
pub fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `a * b + c` rounded once (`fma.rn.f64`), like CUDA's `fma`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// let e = f64::EPSILON;
/// assert_eq!(math::fma(1.0 + e, 1.0 - e, -1.0), -e * e); // (1+e)(1-e) - 1, rounded once
/// ```
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf64(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// The correctly rounded square root (`sqrt.rn.f32`), like CUDA's `sqrtf`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{math, thread};
/// assert_eq!(math::sqrtf(2.25), 1.5);
/// #[kernel]
/// pub fn norms(xy: &[[f32; 2]], mut out: DisjointSlice<f32>) {
///     let i = thread::index();
///     let [x, y] = xy[i.get()];
///     out.set(i, math::sqrtf(math::fmaf(x, x, y * y)));
/// }
/// ```
#[inline(always)]
pub fn sqrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// The correctly rounded square root (`sqrt.rn.f64`), like CUDA's `sqrt`.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::math;
/// assert_eq!(math::sqrt(6.25), 2.5);
/// assert!(math::sqrt(-1.0).is_nan());
/// ```
#[inline(always)]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_multiply_add_rounds_once() {
        let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
        assert_eq!(fmaf(a, b, -1.0), -f32::EPSILON * f32::EPSILON);
        assert_eq!(a * b - 1.0, 0.0);
        let (a, b) = (1.0 + f64::EPSILON, 1.0 - f64::EPSILON);
        assert_eq!(fma(a, b, -1.0), -f64::EPSILON * f64::EPSILON);
        assert_eq!(sqrtf(16.0), 4.0);
        assert_eq!(sqrt(2.0), core::f64::consts::SQRT_2);
    }
}
