//! Every CUDA device of the machine in one process (feature `gpu`; passes with one device).

mod common;

use common::saxpy;
use gpukernel_runtime::{Device, Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn every_device_runs_saxpy_in_its_own_context() {
    let n = Device::count().unwrap();
    assert!(n >= 1);
    let mut buffers = Vec::new();
    for ordinal in 0..n {
        let ctx = Device::get(ordinal).unwrap().primary_context().unwrap();
        let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
        let k = common::kernel(&m, saxpy).unwrap();
        let x = ctx.htod_copy(&vec![ordinal as f32; 1024]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(1024).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(1024).unwrap(),
                (2.0f32, &x, &mut y),
            )
            .unwrap();
        buffers.push((ctx, m, y));
    }
    // Read back in reverse order: each read makes its own context current.
    for (ordinal, (ctx, _, y)) in buffers.iter().enumerate().rev() {
        assert_eq!(y.to_host_vec().unwrap(), vec![2.0 * ordinal as f32; 1024]);
        ctx.synchronize().unwrap();
    }
    if n >= 2 {
        let (ctx0, m0, _) = &buffers[0];
        let (_, _, y1) = &buffers[1];
        let k0 = common::kernel(m0, saxpy).unwrap();
        let mut y0 = ctx0.alloc_zeros::<f32>(1024).unwrap();
        let e = ctx0
            .default_stream()
            .launch(
                &k0,
                LaunchConfig::for_elements(1024).unwrap(),
                (1.0f32, y1, &mut y0),
            )
            .unwrap_err();
        assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    }
}
