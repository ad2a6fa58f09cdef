//! cudarc interop (features `cudarc-interop` and `gpu`): a kernel reads a cudarc-allocated
//! slice and writes one; our buffer is read by cudarc; streams convert both ways. cudarc has
//! no simulator, so these run on the GPU.
#![cfg(feature = "cudarc-interop")]

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Stream};
use gpukernel_tests::plain_kernels;

fn gpu() -> Context {
    Device::get(0)
        .expect("the `gpu` feature is on but CUDA device 0 is not usable")
        .primary_context()
        .unwrap()
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_kernel_reads_a_cudarc_slice_and_cudarc_reads_ours() {
    let ctx = gpu();
    let cx = ctx.to_cudarc().unwrap();
    let theirs = cx.new_stream().unwrap();
    let n = 100_000;
    let host_x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    // cudarc allocates and fills x on its own stream; no synchronization before our kernel.
    let x = theirs.clone_htod(&host_x).unwrap();
    let mut y_theirs = theirs.alloc_zeros::<f32>(n).unwrap();
    let module = plain_kernels(&ctx);
    let k = module.kernel(saxpy).unwrap();
    let cfg = LaunchConfig::for_elements(n).unwrap();
    let mut y = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    {
        // ANCHOR: borrow
        let xb = ctx.borrow_cudarc(&x).unwrap();
        ctx.default_stream()
            .launch(&k, cfg, (2.0f32, &*xb, &mut y))
            .unwrap();
        // ANCHOR_END: borrow
        // A cudarc slice as a kernel output too.
        let mut yb = ctx.borrow_cudarc_mut(&mut y_theirs).unwrap();
        ctx.default_stream()
            .launch(&k, cfg, (4.0f32, &*xb, yb.view_mut()))
            .unwrap();
    }
    // Our buffer read by cudarc on its stream, without a copy into a cudarc allocation.
    let ours_as_theirs = y.as_cudarc(&theirs).unwrap();
    let back = theirs.clone_dtoh(&ours_as_theirs.view()).unwrap();
    drop(ours_as_theirs);
    let back_theirs = theirs.clone_dtoh(&y_theirs).unwrap();
    for i in 0..n {
        assert_eq!(back[i], 2.0 * host_x[i] + 1.0, "element {i}");
        assert_eq!(back_theirs[i], 4.0 * host_x[i], "element {i}");
    }
    // Streams both ways: a kernel launched on cudarc's stream through ours, then read back.
    let s = Stream::from_cudarc(&ctx, theirs.clone()).unwrap();
    let mut w = ctx.alloc_zeros::<f32>(n).unwrap();
    s.launch(&k, cfg, (1.0f32, &y, &mut w)).unwrap();
    s.synchronize().unwrap();
    assert_eq!(w.to_host_vec().unwrap(), back);
    let ours = ctx.new_stream().unwrap();
    // SAFETY: `ours` outlives the cudarc stream's use below.
    let as_theirs = unsafe { ours.to_cudarc(&cx) }.unwrap();
    let z = as_theirs.clone_htod(&[7.0f32; 16]).unwrap();
    assert_eq!(as_theirs.clone_dtoh(&z).unwrap(), vec![7.0f32; 16]);
    println!(
        "cudarc interop: a kernel read a cudarc slice ({n} floats) and wrote one; cudarc read ours; streams converted both ways"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_non_primary_cudarc_context_is_refused() {
    let ctx = gpu();
    let other = cudarc::driver::CudaContext::new_non_primary(0, 0).unwrap();
    let s = other.default_stream();
    let e = Stream::from_cudarc(&ctx, s.clone()).unwrap_err();
    assert!(matches!(e, Error::InteropMismatch { .. }), "{e}");
    let slice = s.alloc_zeros::<f32>(4).unwrap();
    assert!(matches!(
        ctx.borrow_cudarc(&slice),
        Err(Error::InteropMismatch { .. })
    ));
    println!("non-primary cudarc context: {e}");
}

#[test]
fn cudarc_interop_is_refused_on_the_simulator() {
    let sim = Device::simulator().primary_context().unwrap();
    assert!(matches!(sim.to_cudarc(), Err(Error::NotOnSimulator { .. })));
}
