//! Tensor maps (`TensorMapNd`) at the limits of their checks: a box whose bytes exceed what
//! `box_bytes` (a `u32`) can say, or what a block's shared memory can ever hold.

use gpukernel_runtime::{Device, Error, Swizzle, TensorMapNd};

/// 256⁴ · 4 f32 = 2³⁶ bytes in one box: every side within 1 to 256, the rows whole 16-byte
/// chunks, the tensor (4 elements) inside the memory. `box_bytes` overflowed its `u32` (a
/// panic in debug builds, a wrong count in release) and no block can hold such a box; the map
/// is refused, naming the box.
#[test]
fn a_box_larger_than_any_shared_memory_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.alloc_zeros::<f32>(4).unwrap();
    let r = TensorMapNd::contiguous(
        &ctx,
        &m,
        [1, 1, 1, 1, 4],
        [256, 256, 256, 256, 4],
        Swizzle::None,
    );
    let e = match r {
        Err(e) => e,
        Ok(map) => panic!(
            "a box of 2^36 bytes was accepted (box_bytes says {})",
            map.box_bytes()
        ),
    };
    assert!(matches!(e, Error::TensorMapInvalid { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("shared memory") && msg.contains("box"),
        "{msg}"
    );
}

/// 256 × 256 f32 (256 KiB): larger than the 227 KiB a block may have, so no load can land it.
#[test]
fn a_box_beyond_the_block_shared_memory_limit_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.alloc_zeros::<f32>(256 * 256).unwrap();
    let e = TensorMapNd::contiguous(&ctx, &m, [256, 256], [256, 256], Swizzle::None).unwrap_err();
    assert!(e.to_string().contains("262144 bytes"), "{e}");
    // The largest square box that fits is accepted, and says its bytes.
    let map = TensorMapNd::contiguous(&ctx, &m, [256, 256], [128, 256], Swizzle::None).unwrap();
    assert_eq!(map.box_bytes(), 128 * 256 * 4);
}

/// Maps the checks accept at their edges must be accepted by the driver too (else the caller
/// gets a bare `CUDA_ERROR_INVALID_VALUE`), and move what the simulator moves: a box larger
/// than the tensor (the elements outside read as zero), and a 2048-byte unswizzled box row.
/// Every device: the simulator here, the GPU with the `gpu` feature (compute capability 9.0).
#[test]
fn maps_at_the_edges_of_the_checks_load_the_same_everywhere() {
    use ffi_examples_hopper_kernels::PTX;
    use ffi_examples_hopper_kernels::adv::adv_tma_load_box;
    use gpukernel_runtime::{LaunchConfig, TensorMap2D};
    for (name, ctx) in gpukernel_tests::devices() {
        if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
            println!("{name}: not compute capability 9.0");
            continue;
        }
        let md = ctx.load_module(PTX.as_bytes()).unwrap();
        let k = md.kernel(adv_tma_load_box).unwrap();
        let s = ctx.default_stream();
        // A 4 × 4 tensor in an 8 × 8 box.
        let vals: Vec<f32> = (1..=16).map(|v| v as f32).collect();
        let m = ctx.htod_copy(&vals).unwrap();
        let map = TensorMap2D::new(&ctx, &m, [4, 4], 4, [8, 8], Swizzle::None);
        let map = match map {
            Ok(map) => map,
            Err(e) => {
                println!("PROBE tma_box_over_tensor [{name}] HOLE encode refused: {e}");
                panic!("{name}: {e}");
            }
        };
        let mut out = ctx.alloc_zeros::<u32>(64).unwrap();
        // SAFETY: a 2D f32 map of this launch's memory, nobody writes it; the box is 256 bytes.
        unsafe {
            s.launch_unchecked(
                &k,
                LaunchConfig::new(1, 64),
                (map.param(), map.box_bytes(), &mut out),
            )
        }
        .unwrap();
        let got = out.to_host_vec().unwrap();
        let want: Vec<u32> = (0..64)
            .map(|t| {
                let (r, c) = (t / 8, t % 8);
                if r < 4 && c < 4 {
                    vals[r * 4 + c].to_bits()
                } else {
                    0
                }
            })
            .collect();
        println!(
            "PROBE tma_box_over_tensor [{name}] {}",
            if got == want { "OK" } else { "HOLE" }
        );
        assert_eq!(got, want, "{name}");
        drop(map);
        // One row of 256 f64 (2048 bytes) in one unswizzled box.
        let wide: Vec<f64> = (0..256).map(|v| v as f64 * 0.5).collect();
        let m = ctx.htod_copy(&wide).unwrap();
        let map = TensorMap2D::new(&ctx, &m, [1, 256], 256, [1, 256], Swizzle::None);
        let map = match map {
            Ok(map) => map,
            Err(e) => {
                println!("PROBE tma_wide_row [{name}] HOLE encode refused: {e}");
                panic!("{name}: {e}");
            }
        };
        let mut out = ctx.alloc_zeros::<u32>(512).unwrap();
        // SAFETY: as above; the box is 2048 bytes.
        unsafe {
            s.launch_unchecked(
                &k,
                LaunchConfig::new(1, 512),
                (map.param(), map.box_bytes(), &mut out),
            )
        }
        .unwrap();
        let got = out.to_host_vec().unwrap();
        let want: Vec<u32> = wide
            .iter()
            .flat_map(|v| {
                let b = v.to_bits();
                [b as u32, (b >> 32) as u32]
            })
            .collect();
        println!(
            "PROBE tma_wide_row [{name}] {}",
            if got == want { "OK" } else { "HOLE" }
        );
        assert_eq!(got, want, "{name}");
    }
}

/// Simulator fidelity: a load whose box (8192 bytes) overruns its 4096-byte shared tile. The
/// simulator copied the box past the tile's allocation, over its own heap; it reports it.
#[test]
fn a_box_that_overruns_its_shared_tile_is_reported() {
    use ffi_examples_hopper_kernels::PTX;
    use ffi_examples_hopper_kernels::adv::adv_tma_load_box;
    use gpukernel_runtime::{LaunchConfig, TensorMap2D};
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = md.kernel(adv_tma_load_box).unwrap();
    let m = ctx.alloc_zeros::<f32>(32 * 64).unwrap();
    let map = TensorMap2D::new(&ctx, &m, [32, 64], 64, [32, 64], Swizzle::None).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(32).unwrap();
    let s = ctx.default_stream();
    // SAFETY: the simulator only; the kernel's contract (a box of at most 4096 bytes) is
    // broken on purpose.
    let r = unsafe {
        s.launch_unchecked(
            &k,
            LaunchConfig::new(1, 32),
            (map.param(), map.box_bytes(), &mut out),
        )
    };
    match r {
        Err(Error::SimulatorFault { message, .. }) => assert!(
            message.contains("tma::load") && message.contains("only 4096 bytes"),
            "{message}"
        ),
        other => panic!("a box overrunning its shared tile was copied: {other:?}"),
    }
}
