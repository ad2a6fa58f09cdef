//! 8-bit floating point (sm_89 and later): [`e4m3`] (4 exponent bits, 3 fraction bits, no
//! infinities, largest finite 448; the OCP `E4M3FN`, CUDA's `__nv_fp8_e4m3`) and [`e5m2`] (5
//! exponent bits, 2 fraction bits, IEEE-like with infinities, largest finite 57344; CUDA's
//! `__nv_fp8_e5m2`). The tensor cores of Hopper multiply them ([`crate::wgmma`]'s `e4m3`
//! forms).
//!
//! On the device the conversions are PTX `cvt`: from `f32` `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`
//! (round to nearest-even; a value beyond the largest finite one, infinities included,
//! becomes the largest finite one of its sign; NaN becomes the canonical NaN `0x7f`), to `f32`
//! `cvt.rn.f16x2.{e4m3,e5m2}x2` then `cvt.f32.f16` (both exact). `bf16` goes through `f32`
//! (exact both ways, so still one rounding): Hopper has no `cvt` between `bf16` and FP8. On
//! the host the twins compute the same bits exactly.
//!
//! ```
//! use gpukernel_device::fp8::{e4m3, e5m2};
//! assert_eq!(e4m3::from_f32(1.0).to_bits(), 0x38);
//! assert_eq!(e4m3::from_f32(1000.0).to_f32(), 448.0); // saturated
//! assert_eq!(e5m2::from_f32(1000.0).to_f32(), 1024.0);
//! assert!(e4m3::from_f32(f32::NAN).to_f32().is_nan());
//! ```

use crate::half::bf16;

/// An FP8 E4M3 value (`E4M3FN`): sign, 4 exponent bits (bias 7), 3 fraction bits; no
/// infinities, NaN is `S.1111.111`; finite values up to ±448.
///
/// ```
/// use gpukernel_device::fp8::e4m3;
/// let x = e4m3::from_f32(0.3);
/// assert_eq!(x.to_f32(), 0.3125);
/// ```
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct e4m3(u8);

/// An FP8 E5M2 value: sign, 5 exponent bits (bias 15), 2 fraction bits; infinities and NaNs as
/// in IEEE 754; finite values up to ±57344.
///
/// ```
/// use gpukernel_device::fp8::e5m2;
/// assert_eq!(e5m2::from_f32(0.3).to_f32(), 0.3125);
/// assert!(e5m2::from_bits(0x7c).to_f32().is_infinite());
/// ```
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct e5m2(u8);

// SAFETY: plain 8-bit data, the same layout on every target; every bit pattern is a value.
unsafe impl crate::DeviceCopy for e4m3 {}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for e4m3 {}
// SAFETY: as above.
unsafe impl crate::DeviceCopy for e5m2 {}
// SAFETY: as above.
unsafe impl crate::AnyBitPattern for e5m2 {}

/// The parameters of a format: fraction bits, exponent bits, the largest finite code, the
/// NaN the conversions produce.
struct Format {
    m: u32,
    e: u32,
    max_code: u8,
    nan: u8,
}

const E4M3: Format = Format {
    m: 3,
    e: 4,
    max_code: 0x7e,
    nan: 0x7f,
};
const E5M2: Format = Format {
    m: 2,
    e: 5,
    max_code: 0x7b,
    nan: 0x7f,
};

/// `x` rounded to nearest-even in `f`, saturated to its largest finite value (the host twin
/// of `cvt.rn.satfinite`).
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
const fn round_sat(x: f32, f: &Format) -> u8 {
    if x.is_nan() {
        return f.nan;
    }
    let bits = x.to_bits();
    let sign = ((bits >> 31) as u8) << 7;
    if x.is_infinite() {
        return sign | f.max_code;
    }
    let biased = ((bits >> 23) & 0xff) as i32;
    let frac = (bits & 0x7f_ffff) as u64;
    if biased == 0 && frac == 0 {
        return sign;
    }
    // The value is significand · 2^(ea - 23).
    let (ea, significand) = if biased == 0 {
        (-126, frac)
    } else {
        (biased - 127, frac | 1 << 23)
    };
    let bias = (1i32 << (f.e - 1)) - 1;
    let emin = 1 - bias;
    // The exponent of the result's last place (for f32 subnormals `ea` overstates the leading
    // bit, but they are far below `emin`, where the last place is fixed anyway).
    let q = if ea > emin { ea } else { emin } - f.m as i32;
    let shift = q - (ea - 23);
    if shift >= 26 {
        // Below half the smallest subnormal (the significand is below 2^24).
        return sign;
    }
    let shift = shift as u32;
    let mut n = significand >> shift;
    let rem = significand & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && n & 1 == 1) {
        n += 1;
    }
    let out = (((q - (emin - f.m as i32)) as u64) << f.m) + n;
    if out > f.max_code as u64 {
        sign | f.max_code
    } else {
        sign | out as u8
    }
}

/// The value of `code` in `f`, as `f32` (exact).
const fn decode(code: u8, f: &Format, has_inf: bool) -> f32 {
    let sign = if code & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let mag = code & 0x7f;
    let e_field = (mag >> f.m) as i32;
    let frac = (mag & ((1 << f.m) - 1)) as u32;
    let top = (1i32 << f.e) - 1;
    if has_inf && e_field == top {
        return if frac == 0 {
            sign * f32::INFINITY
        } else {
            f32::NAN
        };
    }
    if !has_inf && mag == 0x7f {
        return f32::NAN;
    }
    let bias = (1i32 << (f.e - 1)) - 1;
    let (n, exp) = if e_field == 0 {
        (frac, 1 - bias - f.m as i32)
    } else {
        (frac | 1 << f.m, e_field - bias - f.m as i32)
    };
    // n · 2^exp, exact in f32 (at most 4 significant bits, exponents within f32's range).
    sign * n as f32 * pow2(exp)
}

/// 2^e for the exponents FP8 needs (-20 ..= 20).
const fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

#[cfg(target_arch = "nvptx64")]
mod ptx {
    use core::arch::asm;

    macro_rules! convert {
        ($to:ident, $from:ident, $fmt:literal) => {
            /// `x` rounded, saturated (low byte of the packed pair).
            #[inline(always)]
            pub fn $to(x: f32) -> u8 {
                let d: u16;
                // SAFETY: a register-only conversion; no memory access.
                unsafe {
                    asm!(concat!("cvt.rn.satfinite.", $fmt, "x2.f32 {0}, {1}, {2};"),
                        out(reg16) d, in(reg32) 0f32, in(reg32) x,
                        options(pure, nomem, nostack))
                };
                d as u8
            }

            /// The value of `b` as `f32` (through f16, exact).
            #[inline(always)]
            pub fn $from(b: u8) -> f32 {
                let h: u32;
                let d: f32;
                // SAFETY: register-only conversions; no memory access.
                unsafe {
                    asm!(concat!("cvt.rn.f16x2.", $fmt, "x2 {0}, {1};"),
                        out(reg32) h, in(reg16) b as u16, options(pure, nomem, nostack));
                    asm!("cvt.f32.f16 {0}, {1};",
                        out(reg32) d, in(reg16) h as u16, options(pure, nomem, nostack));
                }
                d
            }
        };
    }
    convert!(f32_to_e4m3, e4m3_to_f32, "e4m3");
    convert!(f32_to_e5m2, e5m2_to_f32, "e5m2");
}

macro_rules! fp8_type {
    ($t:ident, $fmt:ident, $has_inf:literal, $to:ident, $from:ident, $one:literal, $max:literal) => {
        impl $t {
            /// The largest finite value.
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::MAX.to_f32(), ", stringify!($max), ");")]
            /// ```
            pub const MAX: $t = $t($fmt.max_code);
            /// One.
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::ONE.to_f32(), 1.0);")]
            /// ```
            pub const ONE: $t = $t($one);

            /// The value with these bits.
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::from_bits(0).to_f32(), 0.0);")]
            /// ```
            #[inline(always)]
            pub const fn from_bits(bits: u8) -> $t {
                $t(bits)
            }

            /// The bits.
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::ONE.to_bits(), ", stringify!($one), ");")]
            /// ```
            #[inline(always)]
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// `x` rounded to nearest-even, saturated to ±[`MAX`](Self::MAX) (infinities
            /// included); NaN becomes `0x7f` (`cvt.rn.satfinite`).
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::from_f32(-1.0e9), ", stringify!($t), "::from_bits(0x80 | ", stringify!($t), "::MAX.to_bits()));")]
            /// ```
            #[inline(always)]
            pub fn from_f32(x: f32) -> $t {
                #[cfg(target_arch = "nvptx64")]
                return $t(ptx::$to(x));
                #[cfg(not(target_arch = "nvptx64"))]
                $t(round_sat(x, &$fmt))
            }

            /// The value as `f32` (exact).
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::from_f32(-0.5).to_f32(), -0.5);")]
            /// ```
            #[inline(always)]
            pub fn to_f32(self) -> f32 {
                #[cfg(target_arch = "nvptx64")]
                return ptx::$from(self.0);
                #[cfg(not(target_arch = "nvptx64"))]
                decode(self.0, &$fmt, $has_inf)
            }

            /// `x` rounded once (its `f32` value is exact), as [`from_f32`](Self::from_f32).
            ///
            /// ```
            /// use gpukernel_device::half::bf16;
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::from_bf16(bf16::ONE), ", stringify!($t), "::ONE);")]
            /// ```
            #[inline(always)]
            pub fn from_bf16(x: bf16) -> $t {
                $t::from_f32(x.to_f32())
            }

            /// The value as `bf16` (exact: every FP8 value is a `bf16` value).
            ///
            /// ```
            #[doc = concat!("use gpukernel_device::fp8::", stringify!($t), ";")]
            #[doc = concat!("assert_eq!(", stringify!($t), "::ONE.to_bf16().to_f32(), 1.0);")]
            /// ```
            #[inline(always)]
            pub fn to_bf16(self) -> bf16 {
                bf16::from_f32(self.to_f32())
            }
        }
    };
}

fp8_type!(e4m3, E4M3, false, f32_to_e4m3, e4m3_to_f32, 0x38, 448.0);
fp8_type!(e5m2, E5M2, true, f32_to_e5m2, e5m2_to_f32, 0x3c, 57344.0);

/// The host twin of [`e4m3::from_f32`], usable in constants.
///
/// ```
/// use gpukernel_device::fp8::{e4m3_bits, e4m3};
/// const ONE: u8 = e4m3_bits(1.0);
/// assert_eq!(ONE, e4m3::ONE.to_bits());
/// ```
pub const fn e4m3_bits(x: f32) -> u8 {
    round_sat(x, &E4M3)
}

/// The host twin of [`e4m3::to_f32`], usable in constants.
///
/// ```
/// use gpukernel_device::fp8::e4m3_to_f32;
/// assert_eq!(e4m3_to_f32(0x7e), 448.0);
/// ```
pub const fn e4m3_to_f32(bits: u8) -> f32 {
    decode(bits, &E4M3, false)
}

/// The host twin of [`e5m2::from_f32`], usable in constants.
///
/// ```
/// use gpukernel_device::fp8::e5m2_bits;
/// assert_eq!(e5m2_bits(57344.0), 0x7b);
/// ```
pub const fn e5m2_bits(x: f32) -> u8 {
    round_sat(x, &E5M2)
}

/// The host twin of [`e5m2::to_f32`], usable in constants.
///
/// ```
/// use gpukernel_device::fp8::e5m2_to_f32;
/// assert_eq!(e5m2_to_f32(0x7b), 57344.0);
/// ```
pub const fn e5m2_to_f32(bits: u8) -> f32 {
    decode(bits, &E5M2, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite code's value converts back to the code (both formats), and codes are
    /// ordered like their values.
    #[test]
    fn every_finite_code_round_trips() {
        for (bits, val, name) in [
            (
                e4m3_bits as fn(f32) -> u8,
                e4m3_to_f32 as fn(u8) -> f32,
                "e4m3",
            ),
            (e5m2_bits, e5m2_to_f32, "e5m2"),
        ] {
            let mut prev = -1.0f32;
            for c in 0..=0x7fu8 {
                let v = val(c);
                if !v.is_finite() {
                    continue;
                }
                assert_eq!(bits(v), c, "{name} {c:#04x} = {v}");
                assert_eq!(bits(-v), c | 0x80, "{name} -{c:#04x}");
                assert!(v > prev, "{name}: {c:#04x} = {v} after {prev}");
                prev = v;
            }
        }
    }

    /// Midpoints round to the even neighbour; just above and below them to the nearer one.
    #[test]
    fn midpoints_round_to_even() {
        for (bits, val, max) in [
            (
                e4m3_bits as fn(f32) -> u8,
                e4m3_to_f32 as fn(u8) -> f32,
                0x7e,
            ),
            (e5m2_bits, e5m2_to_f32, 0x7b),
        ] {
            for c in 0..max {
                let (lo, hi) = (val(c), val(c + 1));
                let mid = (lo + hi) / 2.0;
                let even = if c % 2 == 0 { c } else { c + 1 };
                assert_eq!(bits(mid), even, "midpoint of {c:#04x} and {:#04x}", c + 1);
                assert_eq!(bits(mid.next_up()), c + 1);
                assert_eq!(bits(mid.next_down()), c);
            }
        }
    }

    #[test]
    fn saturation_nan_and_tiny_values() {
        assert_eq!(e4m3_bits(448.0), 0x7e);
        assert_eq!(e4m3_bits(464.0), 0x7e); // the midpoint to the NaN code: even, 448
        assert_eq!(e4m3_bits(1e30), 0x7e);
        assert_eq!(e4m3_bits(f32::NEG_INFINITY), 0xfe);
        assert_eq!(e5m2_bits(f32::INFINITY), 0x7b);
        assert_eq!(e5m2_bits(-1e6), 0xfb);
        assert_eq!(e4m3_bits(f32::NAN), 0x7f);
        assert_eq!(e5m2_bits(f32::NAN), 0x7f);
        assert!(e4m3_to_f32(0xff).is_nan() && e5m2_to_f32(0x7d).is_nan());
        assert_eq!(e5m2_to_f32(0xfc), f32::NEG_INFINITY);
        // Smallest subnormals: 2^-9 and 2^-16; half of them rounds to zero (even).
        assert_eq!(e4m3_to_f32(1), 2f32.powi(-9));
        assert_eq!(e5m2_to_f32(1), 2f32.powi(-16));
        assert_eq!(e4m3_bits(2f32.powi(-10)), 0);
        assert_eq!(e4m3_bits(2f32.powi(-10).next_up()), 1);
        assert_eq!(e4m3_bits(-f32::from_bits(1)), 0x80);
        assert_eq!(e4m3_bits(-0.0), 0x80);
    }

    #[test]
    fn bf16_goes_through_f32_exactly() {
        for c in 0..=0xffu8 {
            let x = e4m3::from_bits(c);
            if x.to_f32().is_nan() {
                continue;
            }
            assert_eq!(x.to_bf16().to_f32(), x.to_f32());
            assert_eq!(e4m3::from_bf16(x.to_bf16()), x);
            let y = e5m2::from_bits(c);
            if y.to_f32().is_finite() {
                assert_eq!(e5m2::from_bf16(y.to_bf16()), y);
            } else if y.to_f32().is_infinite() {
                // Saturated, as from f32.
                assert_eq!(e5m2::from_bf16(y.to_bf16()).to_bits(), (c & 0x80) | 0x7b);
            }
        }
    }
}
