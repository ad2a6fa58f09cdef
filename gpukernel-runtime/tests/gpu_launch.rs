//! Typed and untyped launches on a CUDA device (feature `gpu`).

mod common;

use core::ffi::c_void;

use common::{empty, fails_foreign, gpu, saxpy};
use gpukernel_runtime::{Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn typed_saxpy_with_views_and_occupancy() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 1_000_003;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let x = ctx.htod_copy(&xs).unwrap();
    let mut y = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    let s = ctx.default_stream();
    let cfg = LaunchConfig::for_elements_optimal(n, &k).unwrap();
    assert!(cfg.block.x >= 32 && cfg.block.x <= 1024, "{cfg:?}");
    s.launch(&k, cfg, (2.0f32, &x, &mut y)).unwrap();
    let h = y.to_host_vec().unwrap();
    for (i, v) in h.iter().enumerate() {
        assert_eq!(*v, 2.0 * xs[i] + 1.0, "element {i}");
    }
    // Views: only the upper half changes.
    {
        let (_, mut hi) = y.split_at_mut(n / 2).unwrap();
        let xv = x.slice(n / 2..).unwrap();
        s.launch(
            &k,
            LaunchConfig::for_elements(n - n / 2).unwrap(),
            (1.0f32, xv, &mut hi),
        )
        .unwrap();
    }
    let h2 = y.to_host_vec().unwrap();
    assert_eq!(h2[..n / 2], h[..n / 2]);
    for i in n / 2..n {
        assert_eq!(h2[i], h[i] + xs[i], "element {i}");
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn invalid_configs_name_the_kernel_and_dimension() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, empty).unwrap();
    let s = ctx.default_stream();
    for (cfg, dim) in [
        (LaunchConfig::new(0, 32), "grid.x"),
        (LaunchConfig::new(1, 2048), "block.x"),
        (LaunchConfig::new(1, (32, 64)), "threads per block"),
        (LaunchConfig::new((1, 1, 1 << 20), 1), "grid.z"),
        (
            LaunchConfig::new(1, 32).with_shared_mem_bytes(1 << 24),
            "shared_mem_bytes",
        ),
    ] {
        match s.launch(&k, cfg, ()).unwrap_err() {
            Error::InvalidLaunchConfig {
                kernel, dimension, ..
            } => {
                assert_eq!((kernel.as_str(), dimension), ("empty", dim));
            }
            e => panic!("unexpected {e}"),
        }
    }
    s.launch(&k, LaunchConfig::new(1, 1), ()).unwrap();
    s.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn untyped_launch_of_foreign_ptx() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let f = m.function("saxpy").unwrap();
    let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0]).unwrap();
    let y = ctx.htod_copy(&[0.5f32; 3]).unwrap();
    let mut a = 4.0f32;
    let (mut xp, mut xn, mut yp, mut yn) = (x.as_raw(), 3u64, y.as_raw(), 3u64);
    let mut params: [*mut c_void; 5] = [
        (&raw mut a).cast(),
        (&raw mut xp).cast(),
        (&raw mut xn).cast(),
        (&raw mut yp).cast(),
        (&raw mut yn).cast(),
    ];
    let s = ctx.default_stream();
    // SAFETY: the parameters match `saxpy`'s (f32, u64, u64, u64, u64); x and y are live
    // buffers of 3 elements on this stream, and we synchronize before they are dropped.
    unsafe { s.launch_untyped(&f, LaunchConfig::new(1, 32), &mut params) }.unwrap();
    s.synchronize().unwrap();
    assert_eq!(y.to_host_vec().unwrap(), [4.5, 8.5, 12.5]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn foreign_call_failure_is_reported_at_synchronize_then_cleared() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, fails_foreign).unwrap();
    let s = ctx.new_stream().unwrap();
    s.launch(&k, LaunchConfig::new(1, 32), (9,)).unwrap();
    match s.synchronize().unwrap_err() {
        Error::ForeignCallFailed {
            function,
            status,
            thread,
            kernel,
            ..
        } => {
            assert_eq!((function.as_str(), status, thread), ("mul_f32_f32", 9, 3));
            assert_eq!(kernel.as_deref(), Some("fails_foreign"));
        }
        e => panic!("unexpected {e}"),
    }
    s.synchronize().unwrap();
    s.launch(&k, LaunchConfig::new(1, 32), (4,)).unwrap();
    let e = ctx.synchronize().unwrap_err();
    assert!(
        matches!(e, Error::ForeignCallFailed { status: 4, .. }),
        "{e}"
    );
    ctx.synchronize().unwrap();
}
