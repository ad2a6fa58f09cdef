//! The kernels on the simulator (no GPU needed), checked against the host.

use gpukernel_runtime::Device;

#[test]
fn scale_calls_the_cuda_c_function_and_matches_the_host() {
    let ctx = Device::simulator().primary_context().unwrap();
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let out = host::scale_on(&ctx, &x, 2.5).unwrap();
    assert_eq!(out, x.iter().map(|v| v * 2.5).collect::<Vec<_>>());
}

#[test]
fn saxpy_matches_the_host() {
    let ctx = Device::simulator().primary_context().unwrap();
    let x: Vec<f32> = (0..777).map(|i| i as f32).collect();
    let y = vec![1.0f32; x.len()];
    let out = host::saxpy_on(&ctx, 2.0, &x, &y).unwrap();
    assert_eq!(out, x.iter().map(|v| 2.0 * v + 1.0).collect::<Vec<_>>());
}
