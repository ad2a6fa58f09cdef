//! The warp-specialised TMA GEMMs (bf16 and FP8 e4m3) and the FP8 device types and `wgmma`
//! forms of `ffi_examples_hopper_kernels` (built for sm_90a) at small sizes, checked against
//! the host: on the simulator always, and on the GPU (with the `gpu` feature) when it is
//! compute capability 9.0, the only one their PTX loads on. The benchmark (`bench_suite`,
//! rows `tma` and `fp8`) runs the GEMMs at 2048³ to 8192³ against cuBLAS and cuBLASLt.

use ffi_examples_hopper_kernels::{
    FP8_TILE_SHARED_BYTES, PTX, TMA_BM, TMA_BN, TMA_SHARED_BYTES, TMA_STAGES, TMA_THREADS,
    fp8_conversions, gemm_bf16_tma, gemm_e4m3_tma, gemm_e4m3_tma_multicast, tma_box_a, tma_box_b,
    tma_box_b_half, wgmma_tile_e4m3,
};
use gpukernel_device::fp8::{e4m3_bits, e4m3_to_f32, e5m2_bits, e5m2_to_f32};
use gpukernel_device::half::bf16;
use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
use gpukernel_runtime::{
    Context, DeviceBuffer, LaunchConfig, Module, Swizzle, TensorMap2D, TmaElement,
};
use gpukernel_tests::{Rng, assert_close, devices};

/// The module on `ctx`, or `None` (said) where the sm_90a PTX cannot load.
fn hopper_module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0, the sm_90a kernels are not run there");
        return None;
    }
    Some(
        ctx.load_module(PTX.as_bytes())
            .unwrap_or_else(|e| panic!("loading the sm_90a kernels on {name}: {e}")),
    )
}

/// `a · bᵀ` in f64 (`a` is `m × k`, `b` is `n × k`, element values given by `val`).
fn reference<T: Copy>(
    a: &[T],
    b: &[T],
    (m, n, k): (usize, usize, usize),
    val: impl Fn(T) -> f32,
) -> Vec<f64> {
    (0..m * n)
        .map(|i| {
            (0..k)
                .map(|q| val(a[(i / n) * k + q]) as f64 * val(b[(i % n) * k + q]) as f64)
                .sum::<f64>()
        })
        .collect()
}

/// `Σ_q |a[i, q] · b[j, q]|` for each output (the scale of the FP8 tensor cores' error).
fn magnitude(a: &[u8], b: &[u8], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let abs = |x: u8| e4m3_to_f32(x).abs();
    reference(a, b, (m, n, k), abs)
}

/// Asserts `|got - want| ≤ 2⁻¹¹ · scale · magnitude + rel · |want|` everywhere. The FP8
/// `wgmma` of Hopper adds its products with fewer bits than f32 (measured on an H100: 3.91699
/// for an exact 3.91650, 128 products of magnitude sum 56); 2⁻¹¹ of the magnitude sum bounds
/// that with a margin, and still fails a misplaced or missing tile by orders of magnitude.
/// `rel` covers the rounding of the output (bf16).
fn assert_fp8_close(
    what: &str,
    got: &[f32],
    want: &[f32],
    magnitude: &[f64],
    scale: f64,
    rel: f64,
) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((&g, &w), &mag)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let bound = scale * mag / 2048.0 + rel * (w as f64).abs() + 1e-6;
        assert!(
            ((g - w) as f64).abs() <= bound,
            "{what}: element {i} is {g}, expected {w} (bound {bound:.3e})"
        );
    }
}

/// A launch of the TMA GEMMs with `blocks` blocks.
/// A map of a row-major `rows × k` operand (K contiguous) with `box_shape` boxes and the
/// 128-byte swizzle, as every TMA GEMM here loads A and B.
fn k_major_map<'a, T: TmaElement>(
    ctx: &Context,
    memory: &'a DeviceBuffer<T>,
    rows: usize,
    k: usize,
    box_shape: [u32; 2],
) -> TensorMap2D<'a, T> {
    TensorMap2D::new(
        ctx,
        memory,
        [rows as u64, k as u64],
        k as u64,
        box_shape,
        Swizzle::B128,
    )
    .unwrap()
}

/// The `m` rows of `n` bf16 values of a `pitch`-wide output, as f32, after checking that the
/// padding (filled with 0xffff before the launch) was left alone.
fn bf16_rows_checked(got: &[u16], n: usize, pitch: usize, what: &str) -> Vec<f32> {
    for (y, row) in got.chunks(pitch).enumerate() {
        assert!(
            row[n..].iter().all(|&p| p == 0xffff),
            "{what}: padding of row {y} was written"
        );
    }
    got.chunks(pitch)
        .flat_map(|r| r[..n].iter().map(|&x| bf16_to_f32(x)))
        .collect()
}

fn tma_cfg(blocks: u32) -> LaunchConfig {
    LaunchConfig::new(blocks, TMA_THREADS).with_shared_mem_bytes(TMA_SHARED_BYTES)
}

/// The grids each GEMM test runs: one block per tile, and half as many blocks, so that each
/// block loops over several tiles and the ring's phases continue from one tile to the next.
fn grids(m: usize, n: usize) -> [u32; 2] {
    let tiles = ((m / TMA_BM as usize) * (n / TMA_BN as usize)) as u32;
    [tiles, (tiles / 2).max(1)]
}

#[test]
fn tma_gemm_bf16_matches_the_host() {
    let mut rng = Rng::from_env("tma_gemm_bf16");
    // Two block rows (the grouped order), and six 64-deep k tiles: more than the ring's
    // stages, so every stage is refilled after its release.
    let (m, n, k) = (2 * TMA_BM as usize, TMA_BN as usize, 6 * 64);
    const { assert!(6 > TMA_STAGES) };
    let a: Vec<u16> = rng.vec_f32(m * k).into_iter().map(bf16_bits).collect();
    let b: Vec<u16> = rng.vec_f32(n * k).into_iter().map(bf16_bits).collect();
    let want: Vec<f32> = reference(&a, &b, (m, n, k), bf16_to_f32)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let kernel = md.kernel(gemm_bf16_tma).unwrap();
        kernel
            .set_max_dynamic_shared_bytes(TMA_SHARED_BYTES)
            .unwrap();
        let s = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let ma = k_major_map(&ctx, &da, m, k, tma_box_a(2));
        let mb = k_major_map(&ctx, &db, n, k, tma_box_b(2));
        for blocks in grids(m, n) {
            // A pitched C: the padding must stay untouched.
            let pitch = n + 2;
            let mut c = ctx.htod_copy(&vec![-1.0f32; m * pitch]).unwrap();
            let args = (
                ma.param(),
                mb.param(),
                m as u32,
                n as u32,
                k as u32,
                c.view_2d_mut(n, m, pitch).unwrap(),
            );
            // SAFETY: the maps describe `da` and `db` as the kernel asks (boxes, 128-byte
            // swizzle), which nothing writes during the launch.
            unsafe { s.launch_unchecked(&kernel, tma_cfg(blocks), args) }.unwrap();
            let got = c.to_host_vec().unwrap();
            for (y, row) in got.chunks(pitch).enumerate() {
                assert!(
                    row[n..].iter().all(|&p| p == -1.0),
                    "tma gemm on {name}, {blocks} blocks: padding of row {y} was written"
                );
            }
            let got: Vec<f32> = got.chunks(pitch).flat_map(|r| r[..n].to_vec()).collect();
            assert_close(
                &format!("bf16 tma gemm on {name}, {blocks} blocks"),
                &got,
                &want,
                1e-5,
            );
        }
    }
}

/// `n` random e4m3 codes of values in [-2, 2), NaN-free.
fn e4m3_vec(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| e4m3_bits(2.0 * rng.f32())).collect()
}

#[test]
fn tma_gemm_e4m3_matches_the_host() {
    let mut rng = Rng::from_env("tma_gemm_e4m3");
    // Two block rows, five 128-deep k tiles (more than the stages).
    let (m, n, k) = (2 * TMA_BM as usize, TMA_BN as usize, 5 * 128);
    const { assert!(5 > TMA_STAGES) };
    let (a, b) = (e4m3_vec(&mut rng, m * k), e4m3_vec(&mut rng, n * k));
    let scale = 0.375f32;
    let exact = reference(&a, &b, (m, n, k), e4m3_to_f32);
    let mag = magnitude(&a, &b, (m, n, k));
    // The exact result rounded once to bf16; the kernel's sum (see `assert_fp8_close`) may
    // land on another bf16 value, one bf16 ulp (2^-8 relative) further.
    let want: Vec<f32> = exact
        .iter()
        .map(|&x| bf16::from_f64(x * scale as f64).to_f32())
        .collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let kernel = md.kernel(gemm_e4m3_tma).unwrap();
        kernel
            .set_max_dynamic_shared_bytes(TMA_SHARED_BYTES)
            .unwrap();
        let s = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let ma = k_major_map(&ctx, &da, m, k, tma_box_a(1));
        let mb = k_major_map(&ctx, &db, n, k, tma_box_b(1));
        for blocks in grids(m, n) {
            let pitch = n + 2;
            let mut c = ctx.htod_copy(&vec![0xffffu16; m * pitch]).unwrap();
            let args = (
                ma.param(),
                mb.param(),
                m as u32,
                n as u32,
                k as u32,
                scale,
                c.view_2d_mut(n, m, pitch).unwrap(),
            );
            // SAFETY: as in the bf16 test, with 1-byte elements.
            unsafe { s.launch_unchecked(&kernel, tma_cfg(blocks), args) }.unwrap();
            let got = bf16_rows_checked(
                &c.to_host_vec().unwrap(),
                n,
                pitch,
                &format!("e4m3 gemm on {name}, {blocks} blocks"),
            );
            assert_fp8_close(
                &format!("e4m3 tma gemm on {name}, {blocks} blocks"),
                &got,
                &want,
                &mag,
                scale as f64,
                1.0 / 128.0,
            );
        }
    }
}

#[test]
fn tma_gemm_e4m3_multicast_matches_the_host() {
    let mut rng = Rng::from_env("tma_gemm_e4m3_multicast");
    // Two pairs of block rows (two clusters' tiles) and two block columns, five 128-deep k
    // tiles (more than the stages: every stage is refilled after both blocks released it).
    let (m, n, k) = (4 * TMA_BM as usize, 2 * TMA_BN as usize, 5 * 128);
    let (a, b) = (e4m3_vec(&mut rng, m * k), e4m3_vec(&mut rng, n * k));
    let scale = 0.375f32;
    let exact = reference(&a, &b, (m, n, k), e4m3_to_f32);
    let mag = magnitude(&a, &b, (m, n, k));
    let want: Vec<f32> = exact
        .iter()
        .map(|&x| bf16::from_f64(x * scale as f64).to_f32())
        .collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let kernel = md.kernel(gemm_e4m3_tma_multicast).unwrap();
        kernel
            .set_max_dynamic_shared_bytes(TMA_SHARED_BYTES)
            .unwrap();
        let s = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let ma = k_major_map(&ctx, &da, m, k, tma_box_a(1));
        let mb = k_major_map(&ctx, &db, n, k, tma_box_b_half(1));
        // One block per tile (4 clusters), and one cluster looping over the 4 pairs.
        for blocks in [8u32, 2] {
            let pitch = n + 2;
            let mut c = ctx.htod_copy(&vec![0xffffu16; m * pitch]).unwrap();
            let args = (
                ma.param(),
                mb.param(),
                m as u32,
                n as u32,
                k as u32,
                scale,
                c.view_2d_mut(n, m, pitch).unwrap(),
            );
            // SAFETY: maps of the m × k A and n × k B bytes with the kernel's boxes (half of B's
            // tile) and the 128-byte swizzle; clusters of 2; nothing writes them meanwhile.
            unsafe { s.launch_unchecked(&kernel, tma_cfg(blocks).with_cluster(2), args) }.unwrap();
            let got = bf16_rows_checked(
                &c.to_host_vec().unwrap(),
                n,
                pitch,
                &format!("multicast e4m3 gemm on {name}, {blocks} blocks"),
            );
            assert_fp8_close(
                &format!("multicast e4m3 tma gemm on {name}, {blocks} blocks"),
                &got,
                &want,
                &mag,
                scale as f64,
                1.0 / 128.0,
            );
        }
    }
}

#[test]
fn wgmma_tile_e4m3_matches_the_host() {
    let mut rng = Rng::from_env("wgmma_tile_e4m3");
    let (m, n, k) = (64usize, 128usize, 128usize);
    let (a, b) = (e4m3_vec(&mut rng, m * k), e4m3_vec(&mut rng, n * k));
    let want: Vec<f32> = reference(&a, &b, (m, n, k), e4m3_to_f32)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    let mag = magnitude(&a, &b, (m, n, k));
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let s = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let mut c = ctx.alloc_zeros::<[f32; 64]>(128).unwrap();
        let cfg = LaunchConfig::new(1, 128).with_shared_mem_bytes(FP8_TILE_SHARED_BYTES);
        s.launch(
            &md.kernel(wgmma_tile_e4m3).unwrap(),
            cfg,
            (&da, &db, &mut c),
        )
        .unwrap();
        let frags = c.to_host_vec().unwrap();
        // Scatter each thread's accumulators by the documented layout.
        let mut got = vec![f32::NAN; m * n];
        for (t, acc) in frags.iter().enumerate() {
            let (w, l) = (t / 32, t % 32);
            for (i, &v) in acc.iter().enumerate() {
                let row = 16 * w + l / 4 + 8 * ((i / 2) % 2);
                let col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
                got[row * n + col] = v;
            }
        }
        assert_fp8_close(
            &format!("wgmma m64n128k32 e4m3 on {name}"),
            &got,
            &want,
            &mag,
            1.0,
            1e-6,
        );
    }
}

/// Values that probe every rounding case of both FP8 formats: each code's value, the
/// midpoints between neighbours and the floats just beside them, saturation, infinities, NaN,
/// values below the subnormals, f32 subnormals, then random values over the whole range.
fn conversion_inputs(rng: &mut Rng) -> Vec<f32> {
    let mut v = Vec::new();
    for val in [e4m3_to_f32 as fn(u8) -> f32, e5m2_to_f32] {
        for c in 0..=0xffu8 {
            let x = val(c);
            v.push(x);
            let y = val(c.wrapping_add(1));
            if x.is_finite() && y.is_finite() && c != 0x7f && c != 0xff {
                let mid = (x + y) / 2.0;
                v.extend([mid, mid.next_up(), mid.next_down()]);
            }
        }
    }
    v.extend([
        448.0,
        464.0,
        480.0,
        57344.0,
        61440.0,
        1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(1),
        -f32::from_bits(0x007f_ffff),
        2f32.powi(-10),
        2f32.powi(-17),
        -0.0,
    ]);
    while v.len() % 256 != 0 || v.len() < 4096 {
        let e = (rng.next_u64() % 48) as i32 - 24;
        v.push(rng.f32() * 2f32.powi(e));
    }
    v
}

#[test]
fn fp8_conversions_match_the_host_twins_bit_for_bit() {
    let mut rng = Rng::from_env("fp8_conversions");
    let x = conversion_inputs(&mut rng);
    let want: Vec<[u32; 7]> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let code = (i % 256) as u8;
            [
                e4m3_bits(v) as u32,
                e5m2_bits(v) as u32,
                e4m3_bits(bf16::from_f32(v).to_f32()) as u32,
                e4m3_to_f32(code).to_bits(),
                e5m2_to_f32(code).to_bits(),
                bf16_bits(e4m3_to_f32(code)) as u32,
                bf16_bits(e5m2_to_f32(code)) as u32,
            ]
        })
        .collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let s = ctx.default_stream();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut out = ctx.alloc_zeros::<[u32; 7]>(x.len()).unwrap();
        let cfg = LaunchConfig::for_elements(x.len()).unwrap();
        s.launch(&md.kernel(fp8_conversions).unwrap(), cfg, (&dx, &mut out))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        let what = [
            "e4m3 from f32",
            "e5m2 from f32",
            "e4m3 from bf16",
            "e4m3 to f32",
            "e5m2 to f32",
            "e4m3 to bf16",
            "e5m2 to bf16",
        ];
        let mut wrong = Vec::new();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            for j in 0..7 {
                // NaN results: any NaN of the format (the payload is not specified).
                let both_nan = match j {
                    3 | 4 => f32::from_bits(g[j]).is_nan() && f32::from_bits(w[j]).is_nan(),
                    5 | 6 => bf16_to_f32(g[j] as u16).is_nan() && bf16_to_f32(w[j] as u16).is_nan(),
                    _ => false,
                };
                if g[j] != w[j] && !both_nan {
                    wrong.push(format!(
                        "{}: input {} ({:#010x}) / code {:#04x}: got {:#x}, host {:#x}",
                        what[j],
                        x[i],
                        x[i].to_bits(),
                        i % 256,
                        g[j],
                        w[j]
                    ));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "fp8 conversions on {name}: {} differ from the host twins:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(40)].join("\n")
        );
    }
}

/// A `k` that is not a multiple of the stage depth would leave the last stage's bytes short
/// (the TMA clips the box at the tensor's edge, and the full barrier then never completes):
/// the kernel refuses it at entry, naming itself. On the simulator only: on the GPU the trap
/// ends the context the other tests of this binary share.
#[test]
fn tma_gemm_with_a_partial_k_tile_is_refused() {
    let (m, n, k) = (TMA_BM as usize, TMA_BN as usize, 96);
    let (name, ctx) = devices().swap_remove(0);
    assert!(ctx.is_simulator());
    let md = hopper_module(&name, &ctx).unwrap();
    let kernel = md.kernel(gemm_bf16_tma).unwrap();
    let s = ctx.default_stream();
    let (da, db) = (
        ctx.htod_copy(&vec![0u16; m * k]).unwrap(),
        ctx.htod_copy(&vec![0u16; n * k]).unwrap(),
    );
    let ma = k_major_map(&ctx, &da, m, k, tma_box_a(2));
    let mb = k_major_map(&ctx, &db, n, k, tma_box_b(2));
    let mut c = ctx.alloc_zeros::<f32>(m * n).unwrap();
    let args = (
        ma.param(),
        mb.param(),
        m as u32,
        n as u32,
        k as u32,
        c.view_2d_mut(n, m, n).unwrap(),
    );
    // SAFETY: the maps describe `da` and `db` with the kernel's boxes and swizzle.
    let result =
        unsafe { s.launch_unchecked(&kernel, tma_cfg(1), args) }.and_then(|()| s.synchronize());
    let err = result.expect_err("k = 96 is not a multiple of 64: the launch must fail");
    assert!(err.to_string().contains("gemm_bf16_tma"), "{err}");
}
