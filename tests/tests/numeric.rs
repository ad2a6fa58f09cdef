//! Half-precision arithmetic, vector loads and stores, and `gpu_println!` on every test
//! device. The host reference is `gpukernel_device`'s host implementation (exact rounding,
//! checked against integer arithmetic in its unit tests); on the GPU every result must have
//! the same bits as that reference, NaN payloads aside.

use ffi_examples_kernels::numeric::*;
use gpukernel_device::half::{bf16, bf16x2, f16, f16x2};
use gpukernel_device::vector::f32x4;
use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::{Rng, devices, plain_kernels};

/// Interesting 16-bit patterns (zeros, subnormals, extremes, infinities, NaN) then random ones.
fn halves(rng: &mut Rng, n: usize) -> Vec<u16> {
    let special = [
        0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3555, 0x7bff, 0xfbff,
        0x7c00, 0xfc00, 0x7e00, 0x0080, 0x007f, 0x3f80, 0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x4000,
    ];
    let mut v: Vec<u16> = special.to_vec();
    v.extend((v.len()..n).map(|_| rng.next_u64() as u16));
    v
}

/// Equal bits, or both NaN in the 16-bit `format` (`is_nan` of the bits).
fn same(a: u16, b: u16, is_nan: impl Fn(u16) -> bool) -> bool {
    a == b || (is_nan(a) && is_nan(b))
}

#[test]
fn half_arithmetic_matches_the_exact_host_reference() {
    let mut rng = Rng::from_env("half_ops");
    let n = 20_000;
    // Rotations of one list give every special value against every other.
    let a = halves(&mut rng, n);
    let mut b = a.clone();
    b.rotate_left(7);
    let mut c = a.clone();
    c.rotate_left(13);
    type Op<T> = fn(T, T, T) -> [u16; 8];
    fn ops<T>(a: T, b: T, c: T) -> [u16; 8]
    where
        T: Copy
            + PartialOrd
            + core::ops::Add<Output = T>
            + core::ops::Sub<Output = T>
            + core::ops::Mul<Output = T>
            + core::ops::Div<Output = T>
            + Half,
    {
        [
            (a + b).bits(),
            (a - b).bits(),
            (a * b).bits(),
            (a / b).bits(),
            a.fma(b, c).bits(),
            T::from32(a.to32() * 1.7).bits(),
            a.maximum(b).bits(),
            (a < b) as u16 | ((a == b) as u16) << 1 | ((a > b) as u16) << 2,
        ]
    }
    trait Half {
        fn bits(self) -> u16;
        fn fma(self, b: Self, c: Self) -> Self;
        fn from32(x: f32) -> Self;
        fn to32(self) -> f32;
        fn maximum(self, b: Self) -> Self;
    }
    macro_rules! half {
        ($t:ty) => {
            impl Half for $t {
                fn bits(self) -> u16 {
                    self.to_bits()
                }
                fn fma(self, b: Self, c: Self) -> Self {
                    self.mul_add(b, c)
                }
                fn from32(x: f32) -> Self {
                    <$t>::from_f32(x)
                }
                fn to32(self) -> f32 {
                    self.to_f32()
                }
                fn maximum(self, b: Self) -> Self {
                    self.max(b)
                }
            }
        };
    }
    half!(f16);
    half!(bf16);
    let f16_ref: Op<f16> = ops::<f16>;
    let bf16_ref: Op<bf16> = ops::<bf16>;
    let want16: Vec<[u16; 8]> = (0..n)
        .map(|i| {
            f16_ref(
                f16::from_bits(a[i]),
                f16::from_bits(b[i]),
                f16::from_bits(c[i]),
            )
        })
        .collect();
    let wantb: Vec<[u16; 8]> = (0..n)
        .map(|i| {
            bf16_ref(
                bf16::from_bits(a[i]),
                bf16::from_bits(b[i]),
                bf16::from_bits(c[i]),
            )
        })
        .collect();
    let to16 = |v: &[u16]| v.iter().map(|&x| f16::from_bits(x)).collect::<Vec<_>>();
    let tob = |v: &[u16]| v.iter().map(|&x| bf16::from_bits(x)).collect::<Vec<_>>();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let s = ctx.default_stream();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let (da, db, dc) = (
            ctx.htod_copy(&to16(&a)).unwrap(),
            ctx.htod_copy(&to16(&b)).unwrap(),
            ctx.htod_copy(&to16(&c)).unwrap(),
        );
        let mut out = ctx.alloc_zeros::<[u16; 8]>(n).unwrap();
        let k = module.kernel(f16_ops).unwrap();
        s.launch(&k, cfg, (&da, &db, &dc, &mut out)).unwrap();
        let got = out.to_host_vec().unwrap();
        let nan16 = |x: u16| f16::from_bits(x).is_nan();
        for i in 0..n {
            for j in 0..8 {
                assert!(
                    same(got[i][j], want16[i][j], nan16),
                    "{name}: f16 op {j} of ({:#06x}, {:#06x}, {:#06x}): {:#06x}, expected {:#06x}",
                    a[i],
                    b[i],
                    c[i],
                    got[i][j],
                    want16[i][j]
                );
            }
        }
        let (da, db, dc) = (
            ctx.htod_copy(&tob(&a)).unwrap(),
            ctx.htod_copy(&tob(&b)).unwrap(),
            ctx.htod_copy(&tob(&c)).unwrap(),
        );
        let k = module.kernel(bf16_ops).unwrap();
        s.launch(&k, cfg, (&da, &db, &dc, &mut out)).unwrap();
        let got = out.to_host_vec().unwrap();
        let nanb = |x: u16| bf16::from_bits(x).is_nan();
        for i in 0..n {
            for j in 0..8 {
                assert!(
                    same(got[i][j], wantb[i][j], nanb),
                    "{name}: bf16 op {j} of ({:#06x}, {:#06x}, {:#06x}): {:#06x}, expected {:#06x}",
                    a[i],
                    b[i],
                    c[i],
                    got[i][j],
                    wantb[i][j]
                );
            }
        }
    }
}

#[test]
fn conversions_and_pairs_match_the_host_reference() {
    let mut rng = Rng::from_env("to_half");
    let n = 50_000;
    let mut x: Vec<f32> = (0..n)
        .map(|_| f32::from_bits(rng.next_u64() as u32))
        .collect();
    // Values near the 16-bit formats' ranges and ties.
    for (k, v) in [
        65504.0f32,
        65519.99,
        65520.0,
        5.96e-8,
        2.98e-8,
        1.0 + 1.0 / 2048.0,
        1.0 + 3.0 / 2048.0,
        3.4e38,
        1e-40,
    ]
    .into_iter()
    .enumerate()
    {
        x[k] = v;
        x[k + 10] = -v;
    }
    let want: Vec<[u16; 4]> = x
        .iter()
        .map(|&v| {
            let w = v as f64 * (1.0 - 1.0 / 3.0 * f64::EPSILON);
            [
                f16::from_f32(v).to_bits(),
                bf16::from_f32(v).to_bits(),
                f16::from_f64(w).to_bits(),
                bf16::from_f64(w).to_bits(),
            ]
        })
        .collect();
    let m = 4096;
    let h = |rng: &mut Rng| f16x2::from_bits(rng.next_u64() as u32);
    let b = |rng: &mut Rng| bf16x2::from_bits(rng.next_u64() as u32);
    let (px, py): (Vec<f16x2>, Vec<f16x2>) = (0..m).map(|_| (h(&mut rng), h(&mut rng))).unzip();
    let (pu, pv): (Vec<bf16x2>, Vec<bf16x2>) = (0..m).map(|_| (b(&mut rng), b(&mut rng))).unzip();
    let want_pairs: Vec<[u32; 4]> = (0..m)
        .map(|i| {
            let (x, y, u, v) = (px[i], py[i], pu[i], pv[i]);
            [
                x.mul_add(y, x).to_bits(),
                (x + y - y * y).to_bits(),
                u.mul_add(v, u).to_bits(),
                (u - v).to_bits(),
            ]
        })
        .collect();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let s = ctx.default_stream();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut out = ctx.alloc_zeros::<[u16; 4]>(n).unwrap();
        let k = module.kernel(to_half).unwrap();
        s.launch(&k, LaunchConfig::for_elements(n).unwrap(), (&dx, &mut out))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for i in 0..n {
            let nan = |j: usize, v: u16| {
                if j.is_multiple_of(2) {
                    f16::from_bits(v).is_nan()
                } else {
                    bf16::from_bits(v).is_nan()
                }
            };
            for j in 0..4 {
                assert!(
                    got[i][j] == want[i][j] || (nan(j, got[i][j]) && nan(j, want[i][j])),
                    "{name}: conversion {j} of {:e} ({:#010x}): {:#06x}, expected {:#06x}",
                    x[i],
                    x[i].to_bits(),
                    got[i][j],
                    want[i][j]
                );
            }
        }
        let (dx, dy) = (ctx.htod_copy(&px).unwrap(), ctx.htod_copy(&py).unwrap());
        let (du, dv) = (ctx.htod_copy(&pu).unwrap(), ctx.htod_copy(&pv).unwrap());
        let mut out = ctx.alloc_zeros::<[u32; 4]>(m).unwrap();
        let k = module.kernel(half2_ops).unwrap();
        s.launch(
            &k,
            LaunchConfig::for_elements(m).unwrap(),
            (&dx, &dy, &du, &dv, &mut out),
        )
        .unwrap();
        let got = out.to_host_vec().unwrap();
        for i in 0..m {
            for j in 0..4 {
                let (g, w) = (got[i][j], want_pairs[i][j]);
                let lanes_nan = |x: u32, y: u32, bf: bool| {
                    (0..2).all(|l| {
                        let (p, q) = ((x >> (16 * l)) as u16, (y >> (16 * l)) as u16);
                        let nan = |v: u16| {
                            if bf {
                                bf16::from_bits(v).is_nan()
                            } else {
                                f16::from_bits(v).is_nan()
                            }
                        };
                        p == q || (nan(p) && nan(q))
                    })
                };
                assert!(
                    lanes_nan(g, w, j >= 2),
                    "{name}: pair op {j} of element {i}: {g:#010x}, expected {w:#010x}"
                );
            }
        }
    }
}

#[test]
fn vector_loads_and_stores() {
    let mut rng = Rng::from_env("vectors");
    let n = 4099;
    let x = rng.vec_f32(4 * n);
    let y = rng.vec_f32(4 * n);
    let pack = |v: &[f32]| {
        v.chunks(4)
            .map(|c| f32x4([c[0], c[1], c[2], c[3]]))
            .collect::<Vec<_>>()
    };
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let s = ctx.default_stream();
        let (dx, dy) = (
            ctx.htod_copy(&pack(&x)).unwrap(),
            ctx.htod_copy(&pack(&y)).unwrap(),
        );
        let mut out = ctx.alloc_zeros::<f32x4>(n).unwrap();
        let k = module.kernel(saxpy4).unwrap();
        s.launch(
            &k,
            LaunchConfig::for_elements(n).unwrap(),
            (1.5f32, &dx, &dy, &mut out),
        )
        .unwrap();
        let got: Vec<f32> = out
            .to_host_vec()
            .unwrap()
            .into_iter()
            .flat_map(|v| v.0)
            .collect();
        for i in 0..4 * n {
            assert_eq!(got[i], 1.5 * x[i] + y[i], "{name}: saxpy4 element {i}");
        }
        // Every relative alignment of input and output.
        let k = module.kernel(double_split).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        for (xo, oo) in [(0, 0), (1, 1), (3, 3), (0, 2), (1, 0)] {
            let mut out = ctx.alloc_zeros::<f32>(100).unwrap();
            let len = 90;
            {
                let xv = dx.slice(xo..xo + len).unwrap();
                let ov = out.slice_mut(oo..oo + len).unwrap();
                s.launch(&k, LaunchConfig::for_elements(len).unwrap(), (&xv, ov))
                    .unwrap();
            }
            let got = out.to_host_vec().unwrap();
            for (i, &g) in got.iter().enumerate() {
                let want = if (oo..oo + len).contains(&i) {
                    2.0 * x[xo + i - oo]
                } else {
                    0.0
                };
                assert_eq!(g, want, "{name}: double_split ({xo}, {oo}) element {i}");
            }
        }
    }
}

/// The lines `print_values` prints for `x` and `flags`, as Rust would format them.
fn expected_lines(x: &[f32], flags: &[u32]) -> Vec<String> {
    (0..x.len())
        .map(|i| {
            let v = x[i];
            // `{}` of a float is C's `%g`; `{:e}` is `%e`.
            let g = c_g(v as f64);
            let e = c_e(v as f64);
            format!(
                "[{i}] x={v:.3} g={g} e={e} hex={} neg={} {:<5}|{:05} 100% h={} ok={}",
                // C's `%#x` prints zero without the `0x`.
                if flags[i] == 0 {
                    "0".to_owned()
                } else {
                    format!("{:#x}", flags[i])
                },
                -(i as i32) - 1,
                i,
                i as i64 - 3,
                c_g(f16::from_f32(v).to_f64()),
                flags[i] & 1 == 1
            )
        })
        .collect()
}

/// `%g` for the values the test prints (moderate magnitudes).
fn c_g(v: f64) -> String {
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    let e = c_e_prec(v, 5);
    let exp: i32 = e[e.find('e').unwrap() + 1..].parse().unwrap();
    let s = if (-4..6).contains(&exp) {
        format!("{v:.*}", (5 - exp) as usize)
    } else {
        e
    };
    let (m, x) = s.split_at(s.find('e').unwrap_or(s.len()));
    let m = if m.contains('.') {
        m.trim_end_matches('0').trim_end_matches('.')
    } else {
        m
    };
    format!("{m}{x}")
}

fn c_e(v: f64) -> String {
    c_e_prec(v, 6)
}

fn c_e_prec(v: f64, p: usize) -> String {
    let s = format!("{v:.p$e}");
    let (m, x) = s.split_once('e').unwrap();
    let x: i32 = x.parse().unwrap();
    format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs())
}

/// Runs the printing kernel in a child process (this test binary, filtered to
/// `print_child`) per device and checks its stdout: the simulator formats on the host, the
/// GPU prints through `vprintf` at the next synchronization.
#[test]
fn gpu_println_prints_the_same_lines_on_every_device() {
    let x = [0.5f32, -1.25, 7.0625, 1e-5, 123456.7, 0.0];
    let flags = [0u32, 1, 0xbeef, 7, 255, 0x8000_0001];
    let want = expected_lines(&x, &flags);
    for (index, (name, _)) in devices().into_iter().enumerate() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "print_child", "--nocapture", "--test-threads=1"])
            .env("GPUKERNEL_PRINT_CHILD", index.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The test harness's own output may share a line with the first printed one.
        let mut got: Vec<String> = stdout
            .lines()
            .filter_map(|l| {
                l.find("] x=")
                    .and_then(|p| l[..p].rfind('['))
                    .map(|s| l[s..].to_owned())
            })
            .collect();
        // Threads print in any order.
        got.sort();
        let mut want = want.clone();
        want.sort();
        assert_eq!(got, want, "{name}: stdout was\n{stdout}");
    }
}

/// The child of [`gpu_println_prints_the_same_lines_on_every_device`]; does nothing unless
/// that test started it.
#[test]
fn print_child() {
    let Ok(index) = std::env::var("GPUKERNEL_PRINT_CHILD") else {
        return;
    };
    let (_, ctx) = devices().remove(index.parse::<usize>().unwrap());
    let module = plain_kernels(&ctx);
    let k = module.kernel(print_values).unwrap();
    let x = [0.5f32, -1.25, 7.0625, 1e-5, 123456.7, 0.0];
    let flags = [0u32, 1, 0xbeef, 7, 255, 0x8000_0001];
    let (dx, df) = (ctx.htod_copy(&x).unwrap(), ctx.htod_copy(&flags).unwrap());
    let s = ctx.default_stream();
    s.launch(&k, LaunchConfig::new(1, 32), (&dx, &df)).unwrap();
    s.synchronize().unwrap();
}

/// Host code names the vector and half types of kernel and foreign-function parameters through
/// the runtime, as the same types the kernels crate uses.
#[test]
fn parameter_types_are_reexported_for_host_code() {
    use std::any::TypeId;
    assert_eq!(
        TypeId::of::<gpukernel_runtime::vector::u32x4>(),
        TypeId::of::<gpukernel_device::vector::u32x4>()
    );
    assert_eq!(
        TypeId::of::<gpukernel_runtime::vector::f32x4>(),
        TypeId::of::<f32x4>()
    );
    assert_eq!(
        TypeId::of::<gpukernel_runtime::half::bf16x2>(),
        TypeId::of::<bf16x2>()
    );
    let v = gpukernel_runtime::vector::u32x4([1, 2, 3, 4]);
    assert_eq!(<[u32; 4]>::from(v), [1, 2, 3, 4]);
    assert_eq!(std::mem::align_of::<gpukernel_runtime::vector::u32x4>(), 16);
}
