//! The host implementation checked against exact arithmetic: every bit pattern round-trips,
//! conversions and `+ - * mul_add` give the representable value nearest to the exact result
//! (ties to even), checked with integer arithmetic that shares no code with the rounding.

use super::*;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A finite value of the 16-bit format `f = (m, e)` as an integer multiple of `2^p` (it must
/// be one).
fn value_at(bits: u16, f: (u32, u32), p: i32) -> i128 {
    try_value_at(bits, f, p).unwrap_or_else(|| panic!("{bits:#06x} is not a multiple of 2^{p}"))
}

fn try_value_at(bits: u16, (m, e): (u32, u32), p: i32) -> Option<i128> {
    let bias = (1i32 << (e - 1)) - 1;
    let exp = ((bits >> m) & ((1 << e) - 1)) as i32;
    let frac = (bits & ((1 << m) - 1)) as i128;
    // value = k * 2^q
    let (k, q) = if exp == 0 {
        (frac, 1 - bias - m as i32)
    } else {
        (frac | 1 << m, exp - bias - m as i32)
    };
    let v = if q >= p {
        k << (q - p)
    } else {
        let d = (p - q) as u32;
        if k.trailing_zeros() < d {
            return None;
        }
        k >> d
    };
    Some(if bits & 0x8000 != 0 { -v } else { v })
}

/// Checks that `got` is the nearest-even rounding of the exact value `exact * 2^p` in the
/// format `f`: no neighbour of `got` is nearer, and ∞ only past the largest finite value plus
/// half its last place.
fn assert_nearest(
    got: u16,
    exact: i128,
    p: i32,
    f: (u32, u32),
    what: impl Fn() -> std::string::String,
) {
    let (m, e) = f;
    let inf = (((1u32 << e) - 1) << m) as u16;
    let bias = (1i32 << (e - 1)) - 1;
    if got & 0x7fff == inf {
        // max + half an ulp = 2^(emax+1) - 2^(emax - m - 1)
        let threshold = 2f64.powi(bias + 1) - 2f64.powi(bias - m as i32 - 1);
        assert!(
            (exact as f64).abs() * 2f64.powi(p) >= threshold,
            "{}: ∞ for a finite result",
            what()
        );
        assert_eq!(got & 0x8000 != 0, exact < 0, "{}: sign of ∞", what());
        return;
    }
    assert!(got & 0x7fff < inf, "{}: NaN", what());
    let g = value_at(got, f, p);
    let err = (exact - g).abs();
    for n in [got.wrapping_add(1), got.wrapping_sub(1), got ^ 0x8000] {
        if n & 0x7fff >= inf {
            continue;
        }
        // A neighbour finer than the units is farther than an exact result.
        let Some(v) = try_value_at(n, f, p).or_else(|| (err == 0).then_some(i128::MAX / 2)) else {
            panic!("{}: neighbour {n:#06x} finer than 2^{p}", what());
        };
        let other = (exact - v).abs();
        assert!(
            err < other || (err == other && (got & 1 == 0 || g == v)),
            "{}: {got:#06x} is not the nearest (neighbour {n:#06x})",
            what()
        );
    }
    if exact != 0 {
        assert_eq!(got & 0x8000 != 0, exact < 0, "{}: sign", what());
    }
}

#[test]
fn every_bit_pattern_round_trips() {
    for bits in 0..=u16::MAX {
        let (h, b) = (f16::from_bits(bits), bf16::from_bits(bits));
        if h.is_nan() {
            assert!(f16::from_f32(h.to_f32()).is_nan());
        } else {
            assert_eq!(f16::from_f32(h.to_f32()).to_bits(), bits, "f16 {bits:#06x}");
            assert_eq!(f16::from_f64(h.to_f64()).to_bits(), bits);
        }
        if b.is_nan() {
            assert!(bf16::from_f32(b.to_f32()).is_nan());
        } else {
            assert_eq!(
                bf16::from_f32(b.to_f32()).to_bits(),
                bits,
                "bf16 {bits:#06x}"
            );
        }
    }
}

#[test]
fn conversions_round_to_nearest_even() {
    assert_eq!(f16::from_f32(1.0 / 3.0).to_bits(), 0x3555);
    assert_eq!(f16::from_f32(65504.0).to_bits(), 0x7bff);
    assert_eq!(f16::from_f32(65519.99).to_bits(), 0x7bff);
    assert_eq!(f16::from_f32(65520.0).to_bits(), 0x7c00);
    assert_eq!(f16::from_f32(-1e10).to_bits(), 0xfc00);
    assert_eq!(f16::from_f32(2f32.powi(-24)).to_bits(), 0x0001);
    assert_eq!(f16::from_f32(2f32.powi(-25)).to_bits(), 0x0000);
    assert_eq!(f16::from_f32(-(2f32.powi(-25) * 1.0001)).to_bits(), 0x8001);
    assert_eq!(f16::from_f32(3.0 * 2f32.powi(-25)).to_bits(), 0x0002);
    assert_eq!(f16::from_f32(-0.0).to_bits(), 0x8000);
    assert!(f16::from_f32(f32::NAN).is_nan() && bf16::from_f32(f32::NAN).is_nan());
    assert_eq!(bf16::from_f32(1.0 / 3.0).to_bits(), 0x3eab);
    assert_eq!(bf16::from_f32(f32::MAX).to_bits(), 0x7f80);
    assert_eq!(
        bf16::from_f32(f32::from_bits(0x3f80_8000)).to_bits(),
        0x3f80
    );
    assert_eq!(
        bf16::from_f32(f32::from_bits(0x3f81_8000)).to_bits(),
        0x3f82
    );
    assert_eq!(
        bf16::from_f32(f32::from_bits(0x0000_0001)).to_bits(),
        0x0000
    );
    // Every midpoint between neighbours, and the f32 values just beside it.
    for (f, m, e) in [("f16", 10, 5), ("bf16", 7, 8)] {
        let from = |x: f32| match f {
            "f16" => f16::from_f32(x).to_bits(),
            _ => bf16::from_f32(x).to_bits(),
        };
        let to = |b: u16| match f {
            "f16" => f16::from_bits(b).to_f32(),
            _ => bf16::from_bits(b).to_f32(),
        };
        for bits in 0..0x7fffu16 {
            if to(bits + 1).is_infinite() {
                break;
            }
            let mid = (to(bits) as f64 + to(bits + 1) as f64) / 2.0;
            let mid32 = mid as f32;
            assert_eq!(mid32 as f64, mid, "{f}: the midpoint is an f32");
            let even = if bits & 1 == 0 { bits } else { bits + 1 };
            assert_eq!(from(mid32), even, "{f} midpoint after {bits:#06x}");
            assert_eq!(from(mid32.next_up()), bits + 1, "{f} above {bits:#06x}");
            assert_eq!(from(mid32.next_down()), bits, "{f} below {bits:#06x}");
            assert_eq!(from(-mid32.next_up()), 0x8000 | (bits + 1));
        }
        let _ = (m, e);
    }
}

#[test]
fn random_conversions_are_nearest() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..200_000 {
        let x = f32::from_bits(rng.next() as u32);
        if !x.is_finite() {
            continue;
        }
        // x = k * 2^p exactly; the candidates near x are multiples of 2^p too.
        let xb = x.to_bits();
        let (exp, frac) = (((xb >> 23) & 0xff) as i32, (xb & 0x7f_ffff) as i128);
        let (k, p) = if exp == 0 {
            (frac, -149)
        } else {
            (frac | 1 << 23, exp - 150)
        };
        let k = if x < 0.0 { -k } else { k };
        // f16 candidates are multiples of 2^-24: express everything in units of min(p, -24).
        let q = p.min(-24);
        if p - q < 100 {
            let h = f16::from_f32(x).to_bits();
            assert_nearest(h, k << (p - q), q, F16, || std::format!("f16 from {x:e}"));
        }
        let q = p.min(-133);
        if p - q < 100 {
            let b = bf16::from_f32(x).to_bits();
            assert_nearest(b, k << (p - q), q, BF16, || std::format!("bf16 from {x:e}"));
        }
    }
}

#[test]
fn arithmetic_rounds_the_exact_result_once() {
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    let f = F16;
    for i in 0..300_000 {
        let (a, b, c) = (
            f16::from_bits(rng.next() as u16),
            f16::from_bits(rng.next() as u16),
            f16::from_bits(rng.next() as u16),
        );
        if !(a.is_finite() && b.is_finite() && c.is_finite()) {
            continue;
        }
        let (ka, kb, kc) = (
            value_at(a.0, f, -24),
            value_at(b.0, f, -24),
            value_at(c.0, f, -24),
        );
        // Sums in units of 2^-24; products and fma in units of 2^-48.
        assert_nearest((a + b).0, ka + kb, -24, f, || {
            std::format!("{i}: {a:?} + {b:?}")
        });
        assert_nearest((a - b).0, ka - kb, -24, f, || {
            std::format!("{i}: {a:?} - {b:?}")
        });
        assert_nearest((a * b).0, ka * kb, -48, f, || {
            std::format!("{i}: {a:?} * {b:?}")
        });
        let fma = a.mul_add(b, c);
        let exact = ka * kb + (kc << 24);
        assert_nearest(fma.0, exact, -48, f, || {
            std::format!("{i}: fma({a:?}, {b:?}, {c:?})")
        });
    }
    // bf16 with exponents in [-20, 20], so that exact results fit an i128: units of 2^-28
    // (sums; a neighbour of 2^-20 is a multiple of 2^-28) and 2^-54 (products).
    let mut rng = Rng(0xfeed_beef_1234_5679);
    let f = BF16;
    let pick = |rng: &mut Rng| loop {
        let v = bf16::from_bits(rng.next() as u16);
        let exp = ((v.0 >> 7) & 0xff) as i32 - 127;
        if (-20..=20).contains(&exp) {
            return v;
        }
    };
    for i in 0..100_000 {
        let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
        let (ka, kb, kc) = (
            value_at(a.0, f, -28),
            value_at(b.0, f, -28),
            value_at(c.0, f, -28),
        );
        assert_nearest((a + b).0, ka + kb, -28, f, || {
            std::format!("{i}: {a:?} + {b:?}")
        });
        assert_nearest((a - b).0, ka - kb, -28, f, || {
            std::format!("{i}: {a:?} - {b:?}")
        });
        assert_nearest((a * b).0, ka * kb, -56, f, || {
            std::format!("{i}: {a:?} * {b:?}")
        });
        let fma = a.mul_add(b, c);
        let exact = ka * kb + (kc << 28);
        assert_nearest(fma.0, exact, -56, f, || {
            std::format!("{i}: fma({a:?}, {b:?}, {c:?})")
        });
    }
}

#[test]
fn comparisons_and_signs_follow_ieee() {
    assert!(f16::NAN != f16::NAN);
    assert!(f16::ZERO == -f16::ZERO);
    assert!(f16::from_f32(1.0) < f16::from_f32(1.001));
    assert!(f16::NAN.partial_cmp(&f16::ONE).is_none());
    assert!(bf16::NEG_INFINITY < bf16::MIN && bf16::MAX < bf16::INFINITY);
    assert_eq!((f16::ONE - f16::ONE).to_bits(), 0x0000);
    assert_eq!((-bf16::ZERO * bf16::ONE).to_bits(), 0x8000);
    assert_eq!((bf16::ONE - bf16::ONE).to_bits(), 0x0000);
    assert_eq!((-bf16::ZERO + -bf16::ZERO).to_bits(), 0x8000);
    assert_eq!((f16::ONE / f16::from_f32(3.0)).to_bits(), 0x3555);
    assert_eq!(f16::MAX + f16::MAX, f16::INFINITY);
    assert_eq!(f16::from_f32(2.0).min(f16::NAN).to_f32(), 2.0);
    let p = f16x2([f16::ONE, f16::from_f32(2.0)]);
    assert_eq!(p.to_bits(), 0x4000_3c00);
    assert_eq!(f16x2::from_bits(p.to_bits()), p);
    assert_eq!((p * p + p).0[1].to_f32(), 6.0);
    assert_eq!(
        bf16x2::splat(bf16::ONE)
            .mul_add(bf16x2::splat(bf16::ONE), bf16x2::splat(bf16::ONE))
            .0[0]
            .to_f32(),
        2.0
    );
}
