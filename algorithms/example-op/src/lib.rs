//! A user's kernels crate: two associative operators that are not commutative, with the
//! device-wide reduce and scans of `gpukernel-algorithms` instantiated for them by
//! [`gpukernel_algorithms_kernels::device_algorithms!`]. The algorithms' tests run them
//! against sequential host folds, which any reordering of the operands would fail.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::ops::{Identity, ReduceOp};

/// The PTX of this crate's kernels.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The product of 2×2 matrices of integers modulo 2^16, each packed in a `u64` as
/// `a | b << 16 | c << 32 | d << 48` for `[[a, b], [c, d]]`: associative (a ring's matrix
/// product), not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatMul2;

impl MatMul2 {
    /// `[[a, b], [c, d]]` packed.
    pub const fn pack(m: [u16; 4]) -> u64 {
        m[0] as u64 | (m[1] as u64) << 16 | (m[2] as u64) << 32 | (m[3] as u64) << 48
    }
    /// The entries `[a, b, c, d]`.
    pub const fn unpack(x: u64) -> [u16; 4] {
        [
            x as u16,
            (x >> 16) as u16,
            (x >> 32) as u16,
            (x >> 48) as u16,
        ]
    }
}

impl ReduceOp<u64> for MatMul2 {
    #[inline(always)]
    fn combine(&self, x: u64, y: u64) -> u64 {
        let [a, b, c, d] = Self::unpack(x);
        let [e, f, g, h] = Self::unpack(y);
        let m = |p: u16, q: u16, r: u16, s: u16| p.wrapping_mul(q).wrapping_add(r.wrapping_mul(s));
        Self::pack([m(a, e, b, g), m(a, f, b, h), m(c, e, d, g), m(c, f, d, h)])
    }
}

impl Identity<u64> for MatMul2 {
    #[inline(always)]
    fn identity(&self) -> u64 {
        Self::pack([1, 0, 0, 1])
    }
}

/// `(first, last)` of a sequence of non-zero `u32`s, packed `first | last << 32` (0 is
/// "nothing yet", the identity): associative, not commutative.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstLast;

impl ReduceOp<u64> for FirstLast {
    #[inline(always)]
    fn combine(&self, x: u64, y: u64) -> u64 {
        if x == 0 {
            y
        } else if y == 0 {
            x
        } else {
            (x & 0xffff_ffff) | (y & !0xffff_ffff)
        }
    }
}

impl Identity<u64> for FirstLast {
    #[inline(always)]
    fn identity(&self) -> u64 {
        0
    }
}

gpukernel_algorithms_kernels::device_algorithms! {
    /// The device-wide algorithms of [`MatMul2`].
    pub struct MatMul2Algorithms for u64, MatMul2;
    reduce: matmul2_reduce;
    scan: matmul2_scan_inclusive, matmul2_scan_exclusive;
}

gpukernel_algorithms_kernels::device_algorithms! {
    /// The device-wide algorithms of [`FirstLast`].
    pub struct FirstLastAlgorithms for u64, FirstLast;
    reduce: first_last_reduce;
    scan: first_last_scan_inclusive, first_last_scan_exclusive;
}

/// The sum of `u32`s that stops the kernel when it overflows (`checked_add`): an operator that
/// panics on some inputs (a trap on the GPU, an error in the simulator).
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckedSum;

impl ReduceOp<u32> for CheckedSum {
    #[inline(always)]
    fn combine(&self, x: u32, y: u32) -> u32 {
        match x.checked_add(y) {
            Some(s) => s,
            None => panic!("CheckedSum overflowed"),
        }
    }
}

impl Identity<u32> for CheckedSum {
    #[inline(always)]
    fn identity(&self) -> u32 {
        0
    }
}

gpukernel_algorithms_kernels::device_algorithms! {
    /// The device-wide algorithms of [`CheckedSum`].
    pub struct CheckedSumAlgorithms for u32, CheckedSum;
    reduce: checked_sum_reduce;
    scan: checked_sum_scan_inclusive, checked_sum_scan_exclusive;
}
