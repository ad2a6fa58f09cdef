//! Every CUDA device of the machine in one process (feature `gpu`; runs with one device). The
//! tests that need two GPUs (peer access between them, NCCL with two ranks) are in
//! `gpu_peer.rs`.

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
        // Without peer access: the named error, with the way out.
        match &e {
            Error::ContextMismatch { hint: Some(h), .. } => {
                assert!(h.contains("enable_peer_access"), "{e}")
            }
            e => panic!("unexpected {e}"),
        }
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_device_is_its_own_peer_and_the_simulator_is_nobodys() {
    let ctx = common::gpu();
    assert!(ctx.can_access_peer(&ctx).unwrap());
    ctx.enable_peer_access(&ctx).unwrap();
    assert!(ctx.peer_access_enabled(&ctx));
    let sim = Device::simulator().primary_context().unwrap();
    assert!(!ctx.can_access_peer(&sim).unwrap());
    assert!(!sim.can_access_peer(&ctx).unwrap());
    match ctx.enable_peer_access(&sim).unwrap_err() {
        Error::PeerAccessUnsupported { from, to } => {
            assert!(
                from.starts_with("CUDA device 0") && to == "the simulator",
                "{from} {to}"
            )
        }
        e => panic!("unexpected {e}"),
    }
    let n = Device::count().unwrap();
    for i in 1..n {
        let other = Device::get(i).unwrap().primary_context().unwrap();
        println!(
            "peer access 0 -> {i}: {}",
            ctx.can_access_peer(&other).unwrap()
        );
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn copies_between_a_gpu_and_the_simulator_go_through_host_memory() {
    // The staged path of a copy between devices without peer access, on one GPU: the
    // simulator is a second device that no GPU can reach.
    let gpu = common::gpu();
    let sim = Device::simulator().primary_context().unwrap();
    let n = 10 << 20; // 40 MiB: more than two 16 MiB staging buffers
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let on_gpu = gpu.htod_copy(&data).unwrap();
    let mut on_sim = sim.alloc_zeros::<u32>(n).unwrap();
    on_sim.copy_from_device(&on_gpu).unwrap();
    assert!(on_sim.to_host_vec().unwrap() == data);
    let mut back = gpu.alloc_zeros::<u32>(n).unwrap();
    {
        let mut view = back.slice_mut(3..).unwrap();
        let s = gpu.new_stream().unwrap();
        s.memcpy_dtod_async(&mut view, &on_sim.slice(..n - 3).unwrap())
            .unwrap();
    }
    let got = back.to_host_vec().unwrap();
    assert_eq!(&got[..3], &[0, 0, 0]);
    assert!(got[3..] == data[..n - 3]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn one_link_loads_on_every_device() {
    let ctxs: Vec<_> = (0..Device::count().unwrap())
        .map(|i| Device::get(i).unwrap().primary_context().unwrap())
        .collect();
    let mut linker = gpukernel_runtime::link::Linker::new(&ctxs[0]).unwrap();
    linker.add_ptx(common::PTX, "test_kernels.ptx");
    let modules = linker.link_and_load_on(&ctxs).unwrap();
    assert_eq!(modules.len(), ctxs.len());
    for (i, (m, ctx)) in modules.iter().zip(&ctxs).enumerate() {
        assert_eq!(m.context().device(), ctx.device());
        let k = common::kernel(m, saxpy).unwrap();
        let x = ctx.htod_copy(&vec![1.0f32; 4096]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(4096).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(4096).unwrap(),
                (i as f32 + 1.0, &x, &mut y),
            )
            .unwrap();
        assert_eq!(y.to_host_vec().unwrap(), vec![i as f32 + 1.0; 4096]);
    }
    // A cubin does not load on the simulator: a named error, not a driver crash.
    let image = linker.link().unwrap();
    let sim = Device::simulator().primary_context().unwrap();
    assert!(matches!(image.load(&sim), Err(Error::Unsupported { .. })));
}
