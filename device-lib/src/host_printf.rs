//! The simulator's side of `gpu_println!`: formats the C format strings that
//! [`print::build`](crate::print::build) makes, as C's `printf` does (checked against the C
//! library's `snprintf` in the tests), and writes each call to stdout in one locked write.

use std::string::String;
use std::vec::Vec;

/// Formats `format` with `args` and writes it to stdout.
pub(crate) fn print_formatted(format: &[u8], args: &[u64]) {
    use std::io::Write;
    let text = format_c(format, args);
    let mut out = std::io::stdout().lock();
    // Output is best effort, as on the GPU (a full printf buffer drops text there).
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// One parsed conversion.
#[derive(Default)]
struct Conv {
    left: bool,
    zero: bool,
    plus: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
}

/// Formats the subset of C conversions `build` emits: `%[-0+#][width][.prec]` then `lld`,
/// `llu`, `llx`, `llX`, `llo`, `f`, `e`, `E`, `g`, `s`, or `%%`.
pub(crate) fn format_c(format: &[u8], args: &[u64]) -> String {
    let end = format.iter().position(|&b| b == 0).unwrap_or(format.len());
    let f = &format[..end];
    let mut out = Vec::new();
    let mut args = args.iter().copied();
    let mut i = 0;
    while i < f.len() {
        if f[i] != b'%' {
            out.push(f[i]);
            i += 1;
            continue;
        }
        i += 1;
        if f.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let mut c = Conv::default();
        while let Some(&b) = f.get(i) {
            match b {
                b'-' => c.left = true,
                b'0' => c.zero = true,
                b'+' => c.plus = true,
                b'#' => c.alt = true,
                _ => break,
            }
            i += 1;
        }
        while let Some(d) = f.get(i).filter(|b| b.is_ascii_digit()) {
            c.width = c.width * 10 + (d - b'0') as usize;
            i += 1;
        }
        if f.get(i) == Some(&b'.') {
            i += 1;
            let mut p = 0;
            while let Some(d) = f.get(i).filter(|b| b.is_ascii_digit()) {
                p = p * 10 + (d - b'0') as usize;
                i += 1;
            }
            c.precision = Some(p);
        }
        while f.get(i) == Some(&b'l') {
            i += 1;
        }
        let Some(&conv) = f.get(i) else { break };
        i += 1;
        let v = args.next().unwrap_or(0);
        let (sign, body, numeric) = match conv {
            b'd' | b'i' => {
                let v = v as i64;
                (
                    if v < 0 { "-" } else { "" },
                    v.unsigned_abs().to_string(),
                    true,
                )
            }
            b'u' => ("", v.to_string(), true),
            b'x' => ("", hex(v, c.alt, false), true),
            b'X' => ("", hex(v, c.alt, true), true),
            b'o' => ("", octal(v, c.alt), true),
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => {
                let x = f64::from_bits(v);
                let body = float(x.abs(), conv, c.precision.unwrap_or(6), c.alt);
                (
                    if x.is_sign_negative() { "-" } else { "" },
                    body,
                    x.is_finite(),
                )
            }
            b's' => {
                // SAFETY: `bool`'s slot points at one of two NUL-terminated statics.
                let s =
                    unsafe { core::ffi::CStr::from_ptr(v as usize as *const core::ffi::c_char) };
                ("", s.to_string_lossy().into_owned(), false)
            }
            _ => ("", String::new(), false),
        };
        let signed = matches!(conv, b'd' | b'i' | b'f' | b'F' | b'e' | b'E' | b'g' | b'G');
        let sign = if sign.is_empty() && c.plus && signed {
            "+"
        } else {
            sign
        };
        let len = sign.len() + body.len();
        let pad = c.width.saturating_sub(len);
        if c.left {
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(body.as_bytes());
            out.extend(core::iter::repeat_n(b' ', pad));
        } else if c.zero && numeric {
            out.extend_from_slice(sign.as_bytes());
            // After a `0x` prefix.
            let (prefix, digits) = if body.starts_with("0x") || body.starts_with("0X") {
                body.split_at(2)
            } else {
                ("", body.as_str())
            };
            out.extend_from_slice(prefix.as_bytes());
            out.extend(core::iter::repeat_n(b'0', pad));
            out.extend_from_slice(digits.as_bytes());
        } else {
            out.extend(core::iter::repeat_n(b' ', pad));
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(body.as_bytes());
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

use std::borrow::ToOwned;
use std::string::ToString;

fn hex(v: u64, alt: bool, upper: bool) -> String {
    let digits = if upper {
        std::format!("{v:X}")
    } else {
        std::format!("{v:x}")
    };
    match (alt && v != 0, upper) {
        (true, false) => std::format!("0x{digits}"),
        (true, true) => std::format!("0X{digits}"),
        _ => digits,
    }
}

fn octal(v: u64, alt: bool) -> String {
    if alt && v != 0 {
        std::format!("0{v:o}")
    } else {
        std::format!("{v:o}")
    }
}

/// A non-negative float (sign handled by the caller) as `%f`, `%e` or `%g` print it.
fn float(x: f64, conv: u8, precision: usize, alt: bool) -> String {
    let upper = conv.is_ascii_uppercase();
    let special = if x.is_nan() {
        Some("nan")
    } else if x.is_infinite() {
        Some("inf")
    } else {
        None
    };
    if let Some(s) = special {
        return if upper {
            s.to_uppercase()
        } else {
            s.to_owned()
        };
    }
    let s = match conv.to_ascii_lowercase() {
        b'f' => fixed(x, precision, alt),
        b'e' => exponent(x, precision, alt),
        _ => {
            // %g: P significant digits; %e's exponent X decides: %f if P > X >= -4.
            let p = if precision == 0 { 1 } else { precision };
            let e = exponent(x, p - 1, false);
            let x_exp: i64 = e[e.find('e').map_or(0, |i| i + 1)..].parse().unwrap_or(0);
            let s = if (p as i64) > x_exp && x_exp >= -4 {
                fixed(x, (p as i64 - 1 - x_exp) as usize, alt)
            } else {
                exponent(x, p - 1, alt)
            };
            if alt { s } else { strip_zeros(&s) }
        }
    };
    if upper { s.to_uppercase() } else { s }
}

fn fixed(x: f64, precision: usize, alt: bool) -> String {
    let s = std::format!("{x:.precision$}");
    if alt && precision == 0 { s + "." } else { s }
}

/// `%e`: `d.ddde±XX` (at least two exponent digits).
fn exponent(x: f64, precision: usize, alt: bool) -> String {
    let s = std::format!("{x:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let dot = if alt && precision == 0 { "." } else { "" };
    let sign = if exp < 0 { '-' } else { '+' };
    std::format!("{mantissa}{dot}e{sign}{:02}", exp.unsigned_abs())
}

/// `%g` without `#`: trailing zeros of the fraction, and a bare `.`, removed.
fn strip_zeros(s: &str) -> String {
    let (mantissa, exp) = match s.find('e') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    std::format!("{mantissa}{exp}")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    unsafe extern "C" {
        fn snprintf(
            buf: *mut core::ffi::c_char,
            n: usize,
            format: *const core::ffi::c_char,
            ...
        ) -> i32;
    }

    /// What the C library prints for one conversion of one slot.
    fn c(format: &str, v: u64) -> String {
        let f = std::ffi::CString::new(format).unwrap();
        let mut buf = [0u8; 512];
        let conv = format
            .bytes()
            .rfind(|b| b.is_ascii_alphabetic())
            .unwrap_or(b'd');
        // SAFETY: a NUL-terminated format with one conversion whose type matches the value.
        let n = unsafe {
            match conv {
                b'f' | b'e' | b'E' | b'g' | b'G' => {
                    snprintf(buf.as_mut_ptr().cast(), 512, f.as_ptr(), f64::from_bits(v))
                }
                b'd' => snprintf(buf.as_mut_ptr().cast(), 512, f.as_ptr(), v as i64),
                _ => snprintf(buf.as_mut_ptr().cast(), 512, f.as_ptr(), v),
            }
        };
        String::from_utf8_lossy(&buf[..n as usize]).into_owned()
    }

    #[test]
    fn formats_as_the_c_library_does() {
        let ints: [i64; 9] = [0, 1, -1, 42, -42, 255, i64::MIN, i64::MAX, 1 << 40];
        let int_formats = [
            "%lld", "%llu", "%llx", "%llX", "%llo", "%8lld", "%-8lld|", "%08lld", "%+lld", "%#llx",
            "%#010llx", "%#llo",
        ];
        for f in int_formats {
            for v in ints {
                let conv_f = f;
                assert_eq!(
                    format_c(std::format!("{conv_f}\0").as_bytes(), &[v as u64]),
                    c(conv_f, v as u64),
                    "{f} {v}"
                );
            }
        }
        let floats = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            0.1,
            1.0 / 3.0,
            2.5,
            0.5,
            1e-5,
            1.25e-4,
            123456.0,
            1234567.0,
            1e20,
            6.02e23,
            -7.5e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.000123456789,
            99999.95,
            999999.5,
        ];
        let float_formats = [
            "%g", "%f", "%e", "%E", "%.3f", "%.0f", "%.0e", "%.10g", "%.1g", "%12.4f", "%-12.4e|",
            "%012.3f", "%+g", "%#.0f", "%G",
        ];
        // (`%#g` is left out: glibc prints 999999.5 as `1.e+06`, dropping the zeros `#` keeps.)
        for f in float_formats {
            for v in floats {
                assert_eq!(
                    format_c(std::format!("{f}\0").as_bytes(), &[f64::to_bits(v)]),
                    c(f, v.to_bits()),
                    "{f} {v:e}"
                );
            }
        }
        assert_eq!(
            format_c(b"100%% %s!\n\0", &[c"true".as_ptr() as u64]),
            "100% true!\n"
        );
    }
}
