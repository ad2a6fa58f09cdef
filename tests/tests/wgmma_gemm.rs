//! The Hopper bf16 GEMM on warpgroup MMA (`ffi_examples_hopper_kernels`, built for sm_90a)
//! at small sizes, checked against the host: on the simulator always, and on the GPU (with
//! the `gpu` feature) when it is compute capability 9.0, the only one its PTX loads on. The
//! benchmark (`bench_suite`) runs it at 8192³.

use ffi_examples_hopper_kernels::{
    PTX, WG_BM, WG_BN, WG_SHARED_BYTES, WG_STAGES, WG_THREADS, gemm_bf16_wgmma,
};
use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
use gpukernel_runtime::{Context, LaunchConfig, Module};
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

/// `a · bᵀ` in f64, rounded to f32 (`a` is `m × k`, `b` is `n × k`, bf16 bits).
fn reference(a: &[u16], b: &[u16], m: usize, n: usize, k: usize) -> Vec<f32> {
    (0..m * n)
        .map(|i| {
            (0..k)
                .map(|q| {
                    bf16_to_f32(a[(i / n) * k + q]) as f64 * bf16_to_f32(b[(i % n) * k + q]) as f64
                })
                .sum::<f64>() as f32
        })
        .collect()
}

#[test]
fn wgmma_gemm_matches_the_host() {
    let mut rng = Rng::from_env("wgmma_gemm");
    // Two block rows (the grouped block order), and five 64-deep k tiles: more than the
    // pipeline's stages, so every slot is reused and the last iterations load nothing.
    let (m, n, k) = (2 * WG_BM as usize, WG_BN as usize, 5 * 64);
    const { assert!(5 > WG_STAGES) };
    let a: Vec<u16> = rng.vec_f32(m * k).into_iter().map(bf16_bits).collect();
    let b: Vec<u16> = rng.vec_f32(n * k).into_iter().map(bf16_bits).collect();
    let want = reference(&a, &b, m, n, k);
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let kernel = md.kernel(gemm_bf16_wgmma).unwrap();
        kernel
            .set_max_dynamic_shared_bytes(WG_SHARED_BYTES)
            .unwrap();
        let s = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        // A pitched C: the padding must stay untouched.
        let pitch = n + 2;
        let mut c = ctx.htod_copy(&vec![-1.0f32; m * pitch]).unwrap();
        let cfg = LaunchConfig::new(((n as u32) / WG_BN, (m as u32) / WG_BM, 1), WG_THREADS)
            .with_shared_mem_bytes(WG_SHARED_BYTES);
        let args = (
            &da,
            &db,
            m as u32,
            n as u32,
            k as u32,
            c.view_2d_mut(n, m, pitch).unwrap(),
        );
        s.launch(&kernel, cfg, args).unwrap();
        let got = c.to_host_vec().unwrap();
        for (y, row) in got.chunks(pitch).enumerate() {
            assert!(
                row[n..].iter().all(|&p| p == -1.0),
                "wgmma gemm on {name}: padding of row {y} was written"
            );
        }
        let got: Vec<f32> = got.chunks(pitch).flat_map(|r| r[..n].to_vec()).collect();
        assert_close(&format!("wgmma gemm on {name}"), &got, &want, 1e-5);
    }
}

// Named to sort last: on the GPU its trap ends the context the other tests of this binary
// share (the test harness runs them in name order with one thread).
#[test]
fn wgmma_gemm_without_its_shared_memory_is_refused() {
    let (m, n, k) = (WG_BM as usize, WG_BN as usize, 64);
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let kernel = md.kernel(gemm_bf16_wgmma).unwrap();
        let s = ctx.default_stream();
        let (da, db) = (
            ctx.htod_copy(&vec![0u16; m * k]).unwrap(),
            ctx.htod_copy(&vec![0u16; n * k]).unwrap(),
        );
        let mut c = ctx.alloc_zeros::<f32>(m * n).unwrap();
        // 16 KiB instead of WG_SHARED_BYTES: the kernel's entry check traps.
        let cfg = LaunchConfig::new((1, 1, 1), WG_THREADS).with_shared_mem_bytes(16 << 10);
        let args = (
            &da,
            &db,
            m as u32,
            n as u32,
            k as u32,
            c.view_2d_mut(n, m, n).unwrap(),
        );
        let result = s.launch(&kernel, cfg, args).and_then(|()| s.synchronize());
        let err = result.expect_err("a launch with too little shared memory must fail");
        println!("{name}: {err}");
        if ctx.is_simulator() {
            assert!(err.to_string().contains("gemm_bf16_wgmma"), "{err}");
        }
    }
}

#[test]
fn wgmma_gemm_tile_m64n128_in_bf16_and_f16_matches_the_host() {
    use ffi_examples_hopper_kernels::{TILE_SHARED_BYTES, wgmma_tile_n128};
    use gpukernel_device::mma::f16_to_f32;
    let mut rng = Rng::from_env("wgmma_tile");
    let (m, n, k) = (64usize, 128usize, 64usize);
    let (av, bv) = (rng.vec_f32(m * k), rng.vec_f32(n * k));
    for (f16, bits, value) in [
        (
            0u32,
            bf16_bits as fn(f32) -> u16,
            bf16_to_f32 as fn(u16) -> f32,
        ),
        (1, f32_to_f16_bits, f16_to_f32),
    ] {
        let a: Vec<u16> = av.iter().map(|&x| bits(x)).collect();
        let b: Vec<u16> = bv.iter().map(|&x| bits(x)).collect();
        let want: Vec<f64> = (0..m * n)
            .map(|i| {
                (0..k)
                    .map(|q| value(a[(i / n) * k + q]) as f64 * value(b[(i % n) * k + q]) as f64)
                    .sum()
            })
            .collect();
        for (name, ctx) in devices() {
            let Some(md) = hopper_module(&name, &ctx) else {
                continue;
            };
            let s = ctx.default_stream();
            let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
            let mut c = ctx.alloc_zeros::<[f32; 64]>(128).unwrap();
            let cfg = LaunchConfig::new(1, 128).with_shared_mem_bytes(TILE_SHARED_BYTES);
            s.launch(
                &md.kernel(wgmma_tile_n128).unwrap(),
                cfg,
                (&da, &db, f16, &mut c),
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
            let want32: Vec<f32> = want.iter().map(|&x| x as f32).collect();
            assert_close(
                &format!("wgmma m64n128k16 (f16 = {f16}) on {name}"),
                &got,
                &want32,
                1e-5,
            );
        }
    }
}

/// `x` rounded to IEEE half precision (the device library's conversion), as bits.
fn f32_to_f16_bits(x: f32) -> u16 {
    gpukernel_device::half::f16::from_f32(x).to_bits()
}
