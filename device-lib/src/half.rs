//! Half-precision floats: [`f16`](struct@f16) (IEEE 754 binary16) and [`bf16`] (bfloat16), with
//! conversions, arithmetic and comparisons, and their two-lane forms [`f16x2`] / [`bf16x2`]
//! (CUDA's `__half`, `__nv_bfloat16`, `__half2`, `__nv_bfloat162`).
//!
//! On nvptx64 conversions are `cvt.rn` instructions and arithmetic the PTX half instructions
//! (`add.rn.f16`, `mul.rn.f16`, `fma.rn.f16`, `fma.rn.bf16`, and their `x2` forms); division
//! goes through `f32` (`div.rn.f32`). On the host (the simulator) every operation is computed
//! exactly and rounded once to nearest-even, so both give the same bits for every input
//! (NaN payloads aside): `+ - * /` in `f32` are then rounded correctly to 16 bits (`f32` has
//! more than twice the precision plus two bits), and `mul_add` rounds the exact `a * b + c`
//! once. Comparisons convert to `f32`, which is exact.
//!
//! Both types are [`DeviceCopy`](crate::DeviceCopy) (kernel arguments by value, buffer
//! elements) and [`AnyBitPattern`](crate::AnyBitPattern).
//!
//! ```
//! use gpukernel_device::half::{bf16, f16};
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::thread;
//!
//! /// `y[i] = a * x[i] + y[i]` in half precision, one rounding per element (`fma.rn.f16`).
//! #[kernel]
//! pub fn haxpy(a: f16, x: &[f16], mut y: DisjointSlice<f16>) {
//!     let i = thread::index();
//!     if let Some(yi) = y.get_mut(&i) {
//!         *yi = a.mul_add(x[i.get()], *yi);
//!     }
//! }
//!
//! assert_eq!(f16::from_f32(1.0 / 3.0).to_bits(), 0x3555);
//! assert_eq!(bf16::from_f32(1.0 / 3.0).to_bits(), 0x3eab);
//! assert_eq!((f16::ONE + f16::ONE).to_f32(), 2.0);
//! assert!(f16::NAN != f16::NAN && f16::ZERO == -f16::ZERO);
//! ```
#![allow(non_camel_case_types)]

use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// IEEE 754 binary16: 1 sign bit, 5 exponent bits, 10 fraction bits (CUDA's `__half`).
///
/// ```
/// use gpukernel_device::half::f16;
/// let x = f16::from_f32(0.1);
/// assert_eq!(x.to_bits(), 0x2e66);
/// assert!((x.to_f32() - 0.1).abs() < 1e-4);
/// ```
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f16(u16);

/// bfloat16: 1 sign bit, 8 exponent bits, 7 fraction bits, the top half of an `f32` (CUDA's
/// `__nv_bfloat16`).
///
/// ```
/// use gpukernel_device::half::bf16;
/// let x = bf16::from_f32(0.1);
/// assert_eq!(x.to_bits(), 0x3dcd);
/// ```
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct bf16(u16);

/// Two [`f16`](struct@f16) lanes in 32 bits, 4-byte aligned (CUDA's `__half2`): one 32-bit load or store
/// moves both, and its arithmetic is one packed instruction (`add.rn.f16x2`, ...).
///
/// ```
/// use gpukernel_device::half::{f16, f16x2};
/// let p = f16x2([f16::ONE, f16::from_f32(2.0)]);
/// assert_eq!((p + p).0[1].to_f32(), 4.0);
/// ```
#[derive(Clone, Copy, Default, Debug, PartialEq)]
#[repr(C, align(4))]
pub struct f16x2(pub [f16; 2]);

/// Two [`bf16`] lanes in 32 bits, 4-byte aligned (CUDA's `__nv_bfloat162`).
///
/// ```
/// use gpukernel_device::half::{bf16, bf16x2};
/// let p = bf16x2::splat(bf16::ONE);
/// assert_eq!((p * p).0[0].to_f32(), 1.0);
/// ```
#[derive(Clone, Copy, Default, Debug, PartialEq)]
#[repr(C, align(4))]
pub struct bf16x2(pub [bf16; 2]);

// SAFETY: plain 16-bit data (or two of them, no padding); the same layout on every target;
// every bit pattern is a value (NaN payloads included).
unsafe impl crate::DeviceCopy for f16 {
    const LAYOUT: crate::signature::TypeLayout =
        crate::signature::TypeLayout::scalar::<f16>(crate::signature::kind::FLOAT);
}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for f16 {}
// SAFETY: as above.
unsafe impl crate::DeviceCopy for bf16 {
    const LAYOUT: crate::signature::TypeLayout =
        crate::signature::TypeLayout::scalar::<bf16>(crate::signature::kind::BFLOAT);
}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for bf16 {}
// SAFETY: as above.
unsafe impl crate::DeviceCopy for f16x2 {
    const LAYOUT: crate::signature::TypeLayout = crate::signature::TypeLayout::array::<Self>(
        crate::signature::TypeLayout::scalar::<f16>(crate::signature::kind::FLOAT),
        2,
    );
}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for f16x2 {}
// SAFETY: as above.
unsafe impl crate::DeviceCopy for bf16x2 {
    const LAYOUT: crate::signature::TypeLayout = crate::signature::TypeLayout::array::<Self>(
        crate::signature::TypeLayout::scalar::<bf16>(crate::signature::kind::BFLOAT),
        2,
    );
}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for bf16x2 {}

mod round;
#[cfg(not(target_arch = "nvptx64"))]
use round::{fma_round, round_f64};

#[cfg(target_arch = "nvptx64")]
mod ptx {
    use core::arch::asm;

    macro_rules! unary {
        ($name:ident, $in:ty => $out:ty, $ins:literal, $oc:ident, $ic:ident) => {
            #[inline(always)]
            pub fn $name(a: $in) -> $out {
                let d: $out;
                // SAFETY: a register-only conversion; no memory access.
                unsafe { asm!(concat!($ins, " {0}, {1};"), out($oc) d, in($ic) a, options(pure, nomem, nostack)) };
                d
            }
        };
    }
    unary!(f32_to_f16, f32 => u16, "cvt.rn.f16.f32", reg16, reg32);
    unary!(f64_to_f16, f64 => u16, "cvt.rn.f16.f64", reg16, reg64);
    unary!(f16_to_f32, u16 => f32, "cvt.f32.f16", reg32, reg16);
    unary!(f32_to_bf16, f32 => u16, "cvt.rn.bf16.f32", reg16, reg32);
    unary!(f64_to_f32_rz, f64 => f32, "cvt.rz.f32.f64", reg32, reg64);

    /// `x` rounded once to bf16: `cvt.rn.bf16.f64` needs sm_90, so `x` is first rounded to
    /// odd in `f32` (toward zero, then the last bit set when inexact; 24 bits are more than
    /// bf16's 8 plus 2), which `cvt.rn.bf16.f32` then rounds correctly.
    #[inline(always)]
    pub fn f64_to_bf16(x: f64) -> u16 {
        let t = f64_to_f32_rz(x);
        let inexact = (t as f64 != x) as u32;
        f32_to_bf16(f32::from_bits(t.to_bits() | inexact))
    }

    macro_rules! binary {
        ($name:ident, $t:ty, $ins:literal, $c:ident) => {
            #[inline(always)]
            pub fn $name(a: $t, b: $t) -> $t {
                let d: $t;
                // SAFETY: register-only arithmetic; no memory access.
                unsafe { asm!(concat!($ins, " {0}, {1}, {2};"), out($c) d, in($c) a, in($c) b, options(pure, nomem, nostack)) };
                d
            }
        };
    }
    binary!(add_f16, u16, "add.rn.f16", reg16);
    binary!(sub_f16, u16, "sub.rn.f16", reg16);
    binary!(mul_f16, u16, "mul.rn.f16", reg16);
    binary!(add_f16x2, u32, "add.rn.f16x2", reg32);
    binary!(sub_f16x2, u32, "sub.rn.f16x2", reg32);
    binary!(mul_f16x2, u32, "mul.rn.f16x2", reg32);

    macro_rules! ternary {
        ($name:ident, $t:ty, $ins:literal, $c:ident) => {
            #[inline(always)]
            pub fn $name(a: $t, b: $t, c: $t) -> $t {
                let d: $t;
                // SAFETY: register-only arithmetic; no memory access.
                unsafe { asm!(concat!($ins, " {0}, {1}, {2}, {3};"), out($c) d, in($c) a, in($c) b, in($c) c, options(pure, nomem, nostack)) };
                d
            }
        };
    }
    ternary!(fma_f16, u16, "fma.rn.f16", reg16);
    ternary!(fma_bf16, u16, "fma.rn.bf16", reg16);
    ternary!(fma_f16x2, u32, "fma.rn.f16x2", reg32);
    ternary!(fma_bf16x2, u32, "fma.rn.bf16x2", reg32);
}

/// `(fraction bits, exponent bits)` of each format (the host's rounding uses them).
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
const F16: (u32, u32) = (10, 5);
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
const BF16: (u32, u32) = (7, 8);

impl f16 {
    /// 0.0
    pub const ZERO: f16 = f16(0);
    /// 1.0
    pub const ONE: f16 = f16(0x3c00);
    /// The largest finite value, 65504.
    pub const MAX: f16 = f16(0x7bff);
    /// The smallest finite value, -65504.
    pub const MIN: f16 = f16(0xfbff);
    /// The smallest positive normal value, 2^-14.
    pub const MIN_POSITIVE: f16 = f16(0x0400);
    /// The difference between 1.0 and the next value, 2^-10.
    pub const EPSILON: f16 = f16(0x1400);
    /// +∞
    pub const INFINITY: f16 = f16(0x7c00);
    /// -∞
    pub const NEG_INFINITY: f16 = f16(0xfc00);
    /// A quiet NaN.
    pub const NAN: f16 = f16(0x7e00);

    /// The value with these bits.
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::from_bits(0x3c00), f16::ONE);
    /// ```
    #[inline(always)]
    pub const fn from_bits(bits: u16) -> f16 {
        f16(bits)
    }

    /// The bits.
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::ONE.to_bits(), 0x3c00);
    /// ```
    #[inline(always)]
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// `x` rounded to nearest-even (`cvt.rn.f16.f32`; `__float2half`).
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::from_f32(1.0 / 3.0).to_bits(), 0x3555);
    /// ```
    #[inline(always)]
    pub fn from_f32(x: f32) -> f16 {
        #[cfg(target_arch = "nvptx64")]
        return f16(ptx::f32_to_f16(x));
        #[cfg(not(target_arch = "nvptx64"))]
        f16(round_f64(x as f64, F16.0, F16.1))
    }

    /// `x` rounded once to nearest-even (`cvt.rn.f16.f64`).
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::from_f64(1.0 / 3.0).to_bits(), 0x3555);
    /// ```
    #[inline(always)]
    pub fn from_f64(x: f64) -> f16 {
        #[cfg(target_arch = "nvptx64")]
        return f16(ptx::f64_to_f16(x));
        #[cfg(not(target_arch = "nvptx64"))]
        f16(round_f64(x, F16.0, F16.1))
    }

    /// The value as `f32` (exact; `__half2float`).
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::from_f32(-2.5).to_f32(), -2.5);
    /// ```
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx::f16_to_f32(self.0);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let (sign, exp, frac) = (self.0 >> 15, (self.0 >> 10) & 0x1f, self.0 & 0x3ff);
            let magnitude = match exp {
                0 => frac as f32 * (1.0 / (1u32 << 24) as f32),
                0x1f if frac == 0 => f32::INFINITY,
                0x1f => f32::from_bits(0x7fc0_0000 | ((frac as u32) << 13)),
                _ => f32::from_bits((((exp as u32) + 112) << 23) | ((frac as u32) << 13)),
            };
            if sign == 1 { -magnitude } else { magnitude }
        }
    }

    /// The value as `f64` (exact).
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// assert_eq!(f16::ONE.to_f64(), 1.0);
    /// ```
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }

    /// `self * a + b` with one rounding (`fma.rn.f16`; `__hfma`).
    ///
    /// ```
    /// use gpukernel_device::half::f16;
    /// let two = f16::from_f32(2.0);
    /// assert_eq!(two.mul_add(two, f16::ONE).to_f32(), 5.0);
    /// ```
    #[inline(always)]
    pub fn mul_add(self, a: f16, b: f16) -> f16 {
        #[cfg(target_arch = "nvptx64")]
        return f16(ptx::fma_f16(self.0, a.0, b.0));
        #[cfg(not(target_arch = "nvptx64"))]
        f16(fma_round(
            self.to_f64(),
            a.to_f64(),
            b.to_f64(),
            F16.0,
            F16.1,
        ))
    }
}

impl bf16 {
    /// 0.0
    pub const ZERO: bf16 = bf16(0);
    /// 1.0
    pub const ONE: bf16 = bf16(0x3f80);
    /// The largest finite value, about 3.39e38.
    pub const MAX: bf16 = bf16(0x7f7f);
    /// The smallest finite value.
    pub const MIN: bf16 = bf16(0xff7f);
    /// The smallest positive normal value, 2^-126.
    pub const MIN_POSITIVE: bf16 = bf16(0x0080);
    /// The difference between 1.0 and the next value, 2^-7.
    pub const EPSILON: bf16 = bf16(0x3c00);
    /// +∞
    pub const INFINITY: bf16 = bf16(0x7f80);
    /// -∞
    pub const NEG_INFINITY: bf16 = bf16(0xff80);
    /// A quiet NaN.
    pub const NAN: bf16 = bf16(0x7fc0);

    /// The value with these bits.
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::from_bits(0x3f80), bf16::ONE);
    /// ```
    #[inline(always)]
    pub const fn from_bits(bits: u16) -> bf16 {
        bf16(bits)
    }

    /// The bits.
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::ONE.to_bits(), 0x3f80);
    /// ```
    #[inline(always)]
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// `x` rounded to nearest-even (`cvt.rn.bf16.f32`; `__float2bfloat16`).
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::from_f32(1.0 / 3.0).to_bits(), 0x3eab);
    /// ```
    #[inline(always)]
    pub fn from_f32(x: f32) -> bf16 {
        #[cfg(target_arch = "nvptx64")]
        return bf16(ptx::f32_to_bf16(x));
        #[cfg(not(target_arch = "nvptx64"))]
        bf16(round_f64(x as f64, BF16.0, BF16.1))
    }

    /// `x` rounded once to nearest-even (through `f32` rounded to odd, then `cvt.rn.bf16.f32`).
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::from_f64(1.0 / 3.0).to_bits(), 0x3eab);
    /// ```
    #[inline(always)]
    pub fn from_f64(x: f64) -> bf16 {
        #[cfg(target_arch = "nvptx64")]
        return bf16(ptx::f64_to_bf16(x));
        #[cfg(not(target_arch = "nvptx64"))]
        bf16(round_f64(x, BF16.0, BF16.1))
    }

    /// The value as `f32` (exact: the bits shifted up; `__bfloat162float`).
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::from_f32(-2.5).to_f32(), -2.5);
    /// ```
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }

    /// The value as `f64` (exact).
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// assert_eq!(bf16::ONE.to_f64(), 1.0);
    /// ```
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }

    /// `self * a + b` with one rounding (`fma.rn.bf16`; `__hfma`).
    ///
    /// ```
    /// use gpukernel_device::half::bf16;
    /// let two = bf16::from_f32(2.0);
    /// assert_eq!(two.mul_add(two, bf16::ONE).to_f32(), 5.0);
    /// ```
    #[inline(always)]
    pub fn mul_add(self, a: bf16, b: bf16) -> bf16 {
        #[cfg(target_arch = "nvptx64")]
        return bf16(ptx::fma_bf16(self.0, a.0, b.0));
        #[cfg(not(target_arch = "nvptx64"))]
        bf16(fma_round(
            self.to_f64(),
            a.to_f64(),
            b.to_f64(),
            BF16.0,
            BF16.1,
        ))
    }
}

macro_rules! common {
    ($t:ident) => {
        impl $t {
            /// Whether the value is NaN.
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert!(", stringify!($t), "::NAN.is_nan() && !", stringify!($t), "::ONE.is_nan());", "\n```")]
            #[inline(always)]
            pub const fn is_nan(self) -> bool {
                self.0 & 0x7fff > Self::INFINITY.0
            }

            /// Whether the value is ±∞.
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert!(", stringify!($t), "::NEG_INFINITY.is_infinite() && !", stringify!($t), "::MAX.is_infinite());", "\n```")]
            #[inline(always)]
            pub const fn is_infinite(self) -> bool {
                self.0 & 0x7fff == Self::INFINITY.0
            }

            /// Whether the value is neither NaN nor ±∞.
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert!(", stringify!($t), "::MAX.is_finite() && !", stringify!($t), "::INFINITY.is_finite());", "\n```")]
            #[inline(always)]
            pub const fn is_finite(self) -> bool {
                self.0 & 0x7fff < Self::INFINITY.0
            }

            /// Whether the sign bit is set (also for -0.0 and NaNs).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert!((-", stringify!($t), "::ZERO).is_sign_negative() && !", stringify!($t), "::ONE.is_sign_negative());", "\n```")]
            #[inline(always)]
            pub const fn is_sign_negative(self) -> bool {
                self.0 & 0x8000 != 0
            }

            /// The absolute value (clears the sign bit).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert_eq!((-", stringify!($t), "::ONE).abs(), ", stringify!($t), "::ONE);", "\n```")]
            #[inline(always)]
            pub const fn abs(self) -> $t {
                $t(self.0 & 0x7fff)
            }

            /// The smaller value; a NaN operand gives the other (`min.f16`'s rule).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert_eq!(", stringify!($t), "::ONE.min(", stringify!($t), "::NAN), ", stringify!($t), "::ONE);\nassert_eq!(", stringify!($t), "::ONE.min(", stringify!($t), "::ZERO), ", stringify!($t), "::ZERO);", "\n```")]
            #[inline(always)]
            pub fn min(self, other: $t) -> $t {
                if self.is_nan() || other < self {
                    other
                } else {
                    self
                }
            }

            /// The larger value; a NaN operand gives the other.
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert_eq!(", stringify!($t), "::NAN.max(", stringify!($t), "::ONE), ", stringify!($t), "::ONE);\nassert_eq!(", stringify!($t), "::ONE.max(", stringify!($t), "::ZERO), ", stringify!($t), "::ONE);", "\n```")]
            #[inline(always)]
            pub fn max(self, other: $t) -> $t {
                if self.is_nan() || other > self {
                    other
                } else {
                    self
                }
            }
        }

        impl Neg for $t {
            type Output = $t;
            #[inline(always)]
            fn neg(self) -> $t {
                $t(self.0 ^ 0x8000)
            }
        }

        impl PartialEq for $t {
            /// IEEE equality: NaN equals nothing, `0.0 == -0.0`.
            #[inline(always)]
            fn eq(&self, other: &$t) -> bool {
                self.to_f32() == other.to_f32()
            }
        }

        impl PartialOrd for $t {
            #[inline(always)]
            fn partial_cmp(&self, other: &$t) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        impl From<$t> for f32 {
            #[inline(always)]
            fn from(x: $t) -> f32 {
                x.to_f32()
            }
        }

        impl From<$t> for f64 {
            #[inline(always)]
            fn from(x: $t) -> f64 {
                x.to_f64()
            }
        }

        impl Div for $t {
            type Output = $t;
            /// Division, rounded once (through `f32`, whose quotient rounds correctly to 16 bits).
            #[inline(always)]
            fn div(self, rhs: $t) -> $t {
                $t::from_f32(self.to_f32() / rhs.to_f32())
            }
        }

        assign_ops!($t);
    };
}

macro_rules! assign_ops {
    ($t:ident) => {
        impl AddAssign for $t {
            #[inline(always)]
            fn add_assign(&mut self, rhs: $t) {
                *self = *self + rhs;
            }
        }
        impl SubAssign for $t {
            #[inline(always)]
            fn sub_assign(&mut self, rhs: $t) {
                *self = *self - rhs;
            }
        }
        impl MulAssign for $t {
            #[inline(always)]
            fn mul_assign(&mut self, rhs: $t) {
                *self = *self * rhs;
            }
        }
        impl DivAssign for $t {
            #[inline(always)]
            fn div_assign(&mut self, rhs: $t) {
                *self = *self / rhs;
            }
        }
    };
}

common!(f16);
common!(bf16);

/// `+ - *` for one 16-bit type: a PTX instruction on the device; on the host the `f32`
/// result rounded once (correct, see the module docs).
macro_rules! arith {
    ($t:ident, $($op:ident $method:ident $sym:tt $dev:expr;)*) => { $(
        impl $op for $t {
            type Output = $t;
            #[inline(always)]
            fn $method(self, rhs: $t) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $dev(self, rhs);
                #[cfg(not(target_arch = "nvptx64"))]
                $t::from_f32(self.to_f32() $sym rhs.to_f32())
            }
        }
    )* };
}

arith! { f16,
    Add add + |a: f16, b: f16| f16(ptx::add_f16(a.0, b.0));
    Sub sub - |a: f16, b: f16| f16(ptx::sub_f16(a.0, b.0));
    Mul mul * |a: f16, b: f16| f16(ptx::mul_f16(a.0, b.0));
}
// bf16 `+ - *` as one `fma.rn.bf16` each (sm_80; the plain `add.bf16` needs sm_90):
// `a * 1 + b`, `b * -1 + a` and `a * b + -0` round once, and keep IEEE signed zeros.
arith! { bf16,
    Add add + |a: bf16, b: bf16| a.mul_add(bf16::ONE, b);
    Sub sub - |a: bf16, b: bf16| b.mul_add(-bf16::ONE, a);
    Mul mul * |a: bf16, b: bf16| a.mul_add(b, -bf16::ZERO);
}

macro_rules! pair {
    ($t:ident, $e:ident, $add:expr, $sub:expr, $mul:expr, $fma:expr) => {
        impl $t {
            /// Both lanes set to `v`.
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert_eq!(", stringify!($t), "::splat(", stringify!($e), "::ONE).0, [", stringify!($e), "::ONE; 2]);", "\n```")]
            #[inline(always)]
            pub const fn splat(v: $e) -> $t {
                $t([v, v])
            }

            /// The lanes as one 32-bit word (lane 0 in the low half).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "assert_eq!(", stringify!($t), "::splat(", stringify!($e), "::ONE).to_bits(), (", stringify!($e), "::ONE.to_bits() as u32) * 0x1_0001);", "\n```")]
            #[inline(always)]
            pub const fn to_bits(self) -> u32 {
                self.0[0].to_bits() as u32 | (self.0[1].to_bits() as u32) << 16
            }

            /// The pair whose lanes are this word's halves (lane 0 the low half).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "let p = ", stringify!($t), "::splat(", stringify!($e), "::ONE);\nassert_eq!(", stringify!($t), "::from_bits(p.to_bits()), p);", "\n```")]
            #[inline(always)]
            pub const fn from_bits(bits: u32) -> $t {
                $t([
                    $e::from_bits(bits as u16),
                    $e::from_bits((bits >> 16) as u16),
                ])
            }

            /// `self * a + b` per lane, each rounded once (one packed `fma.rn` on the device).
            #[doc = concat!("\n```\nuse gpukernel_device::half::*;\n", "let one = ", stringify!($t), "::splat(", stringify!($e), "::ONE);\nassert_eq!(one.mul_add(one, one).0[1].to_f32(), 2.0);", "\n```")]
            #[inline(always)]
            pub fn mul_add(self, a: $t, b: $t) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $t::from_bits($fma(self.to_bits(), a.to_bits(), b.to_bits()));
                #[cfg(not(target_arch = "nvptx64"))]
                $t([
                    self.0[0].mul_add(a.0[0], b.0[0]),
                    self.0[1].mul_add(a.0[1], b.0[1]),
                ])
            }
        }

        impl Add for $t {
            type Output = $t;
            #[inline(always)]
            fn add(self, rhs: $t) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $add(self, rhs);
                #[cfg(not(target_arch = "nvptx64"))]
                $t([self.0[0] + rhs.0[0], self.0[1] + rhs.0[1]])
            }
        }

        impl Sub for $t {
            type Output = $t;
            #[inline(always)]
            fn sub(self, rhs: $t) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $sub(self, rhs);
                #[cfg(not(target_arch = "nvptx64"))]
                $t([self.0[0] - rhs.0[0], self.0[1] - rhs.0[1]])
            }
        }

        impl Mul for $t {
            type Output = $t;
            #[inline(always)]
            fn mul(self, rhs: $t) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $mul(self, rhs);
                #[cfg(not(target_arch = "nvptx64"))]
                $t([self.0[0] * rhs.0[0], self.0[1] * rhs.0[1]])
            }
        }
    };
}

pair!(
    f16x2,
    f16,
    |a: f16x2, b: f16x2| f16x2::from_bits(ptx::add_f16x2(a.to_bits(), b.to_bits())),
    |a: f16x2, b: f16x2| f16x2::from_bits(ptx::sub_f16x2(a.to_bits(), b.to_bits())),
    |a: f16x2, b: f16x2| f16x2::from_bits(ptx::mul_f16x2(a.to_bits(), b.to_bits())),
    ptx::fma_f16x2
);
pair!(
    bf16x2,
    bf16,
    |a: bf16x2, b: bf16x2| a.mul_add(bf16x2::splat(bf16::ONE), b),
    |a: bf16x2, b: bf16x2| b.mul_add(bf16x2::splat(-bf16::ONE), a),
    |a: bf16x2, b: bf16x2| a.mul_add(b, bf16x2::splat(-bf16::ZERO)),
    ptx::fma_bf16x2
);

#[cfg(test)]
mod tests;
