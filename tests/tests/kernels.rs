//! The example kernels, launched with typed arguments on every test device (the simulator, and
//! the GPU with the `gpu` feature), checked against host references and against each other.

use ffi_examples_kernels::{Affine, affine, saxpy, scalar_abi, scale_in_place};
use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::{Rng, assert_close, devices, plain_kernels};

#[test]
fn saxpy_matches_host_on_every_device() {
    let mut rng = Rng::from_env("saxpy");
    // Not a multiple of the block size: the last block's tail threads must do nothing.
    let n = (1 << 16) + 77;
    let x = rng.vec_f32(n);
    let y0 = rng.vec_f32(n);
    let a = rng.f32() * 4.0;
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| a * x + y).collect();
    let mut results = Vec::new();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(saxpy).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut dy = ctx.htod_copy(&y0).unwrap();
        let stream = ctx.default_stream();
        stream
            .launch(
                &k,
                LaunchConfig::for_elements(n).unwrap(),
                (a, &dx, &mut dy),
            )
            .unwrap();
        let got = dy.to_host_vec().unwrap();
        assert_close(&format!("saxpy on {name}"), &got, &want, 1e-6);
        results.push((name, got));
    }
    for w in results.windows(2) {
        assert_close(
            &format!("saxpy {} vs {}", w[0].0, w[1].0),
            &w[1].1,
            &w[0].1,
            1e-6,
        );
    }
}

#[test]
fn saxpy_on_a_sub_view_touches_only_the_view() {
    let mut rng = Rng::from_env("saxpy_view");
    let n = 4096;
    let x = rng.vec_f32(n);
    let y0 = rng.vec_f32(n);
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(saxpy).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut dy = ctx.htod_copy(&y0).unwrap();
        let (lo, hi) = (1000, 3000);
        {
            let xv = dx.slice(lo..hi).unwrap();
            let mut yv = dy.slice_mut(lo..hi).unwrap();
            ctx.default_stream()
                .launch(
                    &k,
                    LaunchConfig::for_elements(hi - lo).unwrap(),
                    (2.0f32, &xv, &mut yv),
                )
                .unwrap();
        }
        let got = dy.to_host_vec().unwrap();
        let want: Vec<f32> = (0..n)
            .map(|i| {
                if (lo..hi).contains(&i) {
                    2.0 * x[i] + y0[i]
                } else {
                    y0[i]
                }
            })
            .collect();
        assert_close(&format!("saxpy view on {name}"), &got, &want, 1e-6);
    }
}

#[test]
fn repr_c_struct_parameter_crosses_the_abi() {
    let mut rng = Rng::from_env("affine");
    let n = 1000;
    let x = rng.vec_f32(n);
    let p = Affine {
        scale: 1.5,
        offset: -0.25,
        bias: 1e10 + 0.5,
    };
    let want: Vec<f64> = x
        .iter()
        .map(|&v| (p.scale * v + p.offset) as f64 + p.bias)
        .collect();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(affine).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut dy = ctx.alloc_zeros::<f64>(n).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(n).unwrap(),
                (p, &dx, &mut dy),
            )
            .unwrap();
        assert_close(
            &format!("affine on {name}"),
            &dy.to_host_vec().unwrap(),
            &want,
            1e-12,
        );
    }
}

#[test]
fn every_scalar_kind_crosses_the_abi() {
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(scalar_abi).unwrap();
        let mut out = ctx.alloc_zeros::<f64>(6).unwrap();
        let args = (
            -7i8,
            65_000u16,
            -123_456i32,
            (1u64 << 40) + 3,
            2.5f64,
            true,
            &mut out,
        );
        ctx.default_stream()
            .launch(&k, LaunchConfig::for_elements(32).unwrap(), args)
            .unwrap();
        let got = out.to_host_vec().unwrap();
        let want = [
            -7.0,
            65_000.0,
            -123_456.0,
            ((1u64 << 40) + 3) as f64,
            2.5,
            1.0,
        ];
        assert_eq!(got, want, "scalar_abi on {name}");
    }
}

#[test]
fn unsafe_kernel_with_mut_slice_and_grid_stride_loop() {
    let mut rng = Rng::from_env("scale_in_place");
    let n = 100_003;
    let x = rng.vec_f32(n);
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(scale_in_place).unwrap();
        let mut dx = ctx.htod_copy(&x).unwrap();
        // Fewer threads than elements: the grid-stride loop must cover the rest.
        let cfg = LaunchConfig {
            grid: (8, 1, 1).into(),
            block: (128, 1, 1).into(),
            shared_mem_bytes: 0,
            attributes: Default::default(),
        };
        // SAFETY: `scale_in_place` keeps each thread on its own indices (grid-stride loop).
        unsafe {
            ctx.default_stream()
                .launch_unchecked(&k, cfg, (&mut dx, 3.0f32))
        }
        .unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
        assert_close(
            &format!("scale_in_place on {name}"),
            &dx.to_host_vec().unwrap(),
            &want,
            1e-6,
        );
    }
}

/// Host reference: sum of each `chunk`-sized piece, in f64.
fn chunk_sums(x: &[f32], chunk: usize, count: usize) -> Vec<f32> {
    (0..count)
        .map(|c| {
            x.iter()
                .skip(c * chunk)
                .take(chunk)
                .map(|&v| v as f64)
                .sum::<f64>() as f32
        })
        .collect()
}

#[test]
fn block_reductions_static_and_dynamic_shared_memory() {
    use ffi_examples_kernels::reduce::{
        block_reduce_sum, block_reduce_sum_aligned, block_reduce_sum_dynamic,
    };
    let mut rng = Rng::from_env("block_reduce");
    for &(n, block) in &[(1usize << 20, 256u32), (1000, 100), (33, 48)] {
        let x = rng.vec_f32(n);
        let blocks = n.div_ceil(block as usize);
        let want = chunk_sums(&x, block as usize, blocks);
        let mut per_device = Vec::new();
        for (name, ctx) in devices() {
            let module = plain_kernels(&ctx);
            let dx = ctx.htod_copy(&x).unwrap();
            let cfg = LaunchConfig {
                grid: (blocks as u32, 1, 1).into(),
                block: (block, 1, 1).into(),
                shared_mem_bytes: 0,
                attributes: Default::default(),
            };
            let mut out_static = ctx.alloc_zeros::<f32>(blocks).unwrap();
            let k = module.kernel(block_reduce_sum).unwrap();
            ctx.default_stream()
                .launch(&k, cfg, (&dx, &mut out_static))
                .unwrap();
            let mut out_dyn = ctx.alloc_zeros::<f32>(blocks).unwrap();
            let k = module.kernel(block_reduce_sum_dynamic).unwrap();
            let cfg_dyn = LaunchConfig {
                shared_mem_bytes: block * 4,
                ..cfg
            };
            ctx.default_stream()
                .launch(&k, cfg_dyn, (&dx, &mut out_dyn))
                .unwrap();
            // The same tree with the aligned (unsafe) barrier gives the same sums.
            let mut out_aligned = ctx.alloc_zeros::<f32>(blocks).unwrap();
            let k = module.kernel(block_reduce_sum_aligned).unwrap();
            ctx.default_stream()
                .launch(&k, cfg, (&dx, &mut out_aligned))
                .unwrap();
            let (s, d) = (
                out_static.to_host_vec().unwrap(),
                out_dyn.to_host_vec().unwrap(),
            );
            assert_eq!(
                out_aligned.to_host_vec().unwrap(),
                s,
                "block_reduce_sum_aligned n={n} block={block} on {name}"
            );
            assert_close(
                &format!("block_reduce_sum n={n} block={block} on {name}"),
                &s,
                &want,
                1e-4,
            );
            assert_close(
                &format!("block_reduce_sum_dynamic n={n} on {name}"),
                &d,
                &want,
                1e-4,
            );
            per_device.push((name, s));
        }
        for w in per_device.windows(2) {
            assert_close(
                &format!("block_reduce {} vs {}", w[0].0, w[1].0),
                &w[1].1,
                &w[0].1,
                1e-5,
            );
        }
    }
}

#[test]
fn warp_shuffle_reduction_full_and_partial_warps() {
    use ffi_examples_kernels::reduce::{warp_reduce_sum, warp_reduce_sum_unchecked};
    let mut rng = Rng::from_env("warp_reduce");
    // 48-thread blocks: every second warp is partial (16 lanes).
    for &(n, block) in &[(1usize << 16, 256u32), (1000, 48)] {
        let x = rng.vec_f32(n);
        let blocks = n.div_ceil(block as usize);
        let warps_per_block = (block as usize).div_ceil(32);
        let want: Vec<f32> = (0..blocks * warps_per_block)
            .map(|w| {
                let (b, wi) = (w / warps_per_block, w % warps_per_block);
                let start = b * block as usize + wi * 32;
                let end = (start + 32).min(b * block as usize + block as usize).min(n);
                x.get(start..end.max(start))
                    .map_or(0.0, |s| s.iter().map(|&v| v as f64).sum::<f64>())
                    as f32
            })
            .collect();
        for (name, ctx) in devices() {
            let module = plain_kernels(&ctx);
            let k = module.kernel(warp_reduce_sum).unwrap();
            let dx = ctx.htod_copy(&x).unwrap();
            let mut out = ctx.alloc_zeros::<f32>(want.len()).unwrap();
            let cfg = LaunchConfig {
                grid: (blocks as u32, 1, 1).into(),
                block: (block, 1, 1).into(),
                shared_mem_bytes: 0,
                attributes: Default::default(),
            };
            ctx.default_stream()
                .launch(&k, cfg, (&dx, &mut out))
                .unwrap();
            let got = out.to_host_vec().unwrap();
            assert_close(
                &format!("warp_reduce_sum n={n} block={block} on {name}"),
                &got,
                &want,
                1e-4,
            );
            // The unchecked shuffles give the same sums.
            let k = module.kernel(warp_reduce_sum_unchecked).unwrap();
            let mut out = ctx.alloc_zeros::<f32>(want.len()).unwrap();
            ctx.default_stream()
                .launch(&k, cfg, (&dx, &mut out))
                .unwrap();
            assert_eq!(
                out.to_host_vec().unwrap(),
                got,
                "warp_reduce_sum_unchecked n={n} block={block} on {name}"
            );
        }
    }
}

#[test]
fn grid_wide_atomic_sum() {
    use ffi_examples_kernels::reduce::atomic_sum;
    let mut rng = Rng::from_env("atomic_sum");
    let n = 300_001;
    let x = rng.vec_f32(n);
    let want = x.iter().map(|&v| v as f64).sum::<f64>();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(atomic_sum).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let out = ctx.alloc_zeros::<f32>(1).unwrap();
        let cfg = LaunchConfig {
            grid: (64, 1, 1).into(),
            block: (256, 1, 1).into(),
            shared_mem_bytes: 0,
            attributes: Default::default(),
        };
        // SAFETY: `out` is a live f32 that only this launch touches, atomically.
        unsafe {
            ctx.default_stream()
                .launch_unchecked(&k, cfg, (&dx, out.device_ptr()))
        }
        .unwrap();
        let got = out.to_host_vec().unwrap()[0] as f64;
        assert!(
            (got - want).abs() <= 1e-3 * want.abs().max(1.0) + 1e-2,
            "atomic_sum on {name}: {got} vs {want}"
        );
    }
}
