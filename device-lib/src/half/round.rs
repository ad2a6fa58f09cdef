//! Exact rounding to the 16-bit formats, for the host (the simulator) and the tests.
#![cfg_attr(target_arch = "nvptx64", allow(dead_code))]

/// Rounds `x` to nearest-even in a 16-bit format of `m` fraction bits and `e` exponent bits
/// (overflow to infinity, subnormals kept, NaN stays NaN with its top payload bits).
pub(super) const fn round_f64(x: f64, m: u32, e: u32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let inf = (((1u32 << e) - 1) << m) as u16;
    if x.is_nan() {
        let payload = ((bits >> (52 - m)) as u16) & ((1 << m) - 1);
        return sign | inf | (1 << (m - 1)) | payload;
    }
    if x.is_infinite() {
        return sign | inf;
    }
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Zero or an f64 subnormal: far below half the smallest 16-bit subnormal.
        return sign;
    }
    let ea = biased - 1023;
    let bias = (1i32 << (e - 1)) - 1;
    let emin = 1 - bias;
    let significand = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    // The exponent of the result's last place, and how many bits of the significand fall
    // below it.
    let q = if ea > emin { ea } else { emin } - m as i32;
    let shift = q - (ea - 52);
    if shift >= 54 {
        // Below half the smallest subnormal.
        return sign;
    }
    let shift = shift as u32;
    let mut n = significand >> shift;
    let rem = significand & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && n & 1 == 1) {
        n += 1;
    }
    let out = (((q - (emin - m as i32)) as u64) << m) + n;
    if out >= inf as u64 {
        sign | inf
    } else {
        sign | out as u16
    }
}

/// `a * b + c` for values of a 16-bit format (exact in `f64` for the product), rounded once:
/// the sum is rounded to odd in `f64` (53 bits, more than the 16-bit format's precision plus
/// two), so the final rounding to nearest-even is correct.
pub(super) fn fma_round(a: f64, b: f64, c: f64, m: u32, e: u32) -> u16 {
    let p = a * b;
    let s = p + c;
    if !s.is_finite() || p.is_infinite() || c.is_infinite() {
        return round_f64(s, m, e);
    }
    // TwoSum: the exact error of `p + c` (no overflow: 16-bit values are far inside f64).
    let bp = s - c;
    let err = (p - bp) + (c - (s - bp));
    let mut s_bits = s.to_bits();
    if err != 0.0 && s_bits & 1 == 0 {
        // Round to odd: step to the neighbour of `s` towards the exact value.
        let toward_larger_magnitude = (err > 0.0) == (s > 0.0);
        if s == 0.0 {
            return round_f64(err, m, e);
        }
        if toward_larger_magnitude {
            s_bits += 1;
        } else {
            s_bits -= 1;
        }
    }
    round_f64(f64::from_bits(s_bits), m, e)
}
