//! Launch bounds (`.maxntid`, what `Builder::launch_bounds` and CUDA C's `__launch_bounds__`
//! write into a kernel's entry) on the simulator: the driver reports them as the kernel's
//! `max_threads_per_block` and refuses a launch of more threads, so the simulator must too
//! (it ran any block of up to 1024 threads). On every test device: the GPU's driver is the
//! reference.

use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Error, LaunchConfig};
use gpukernel_tests::devices;

/// The kernels' PTX with `directives` after `kernel`'s parameter list, as nvptx-builder
/// writes launch bounds.
fn with_bounds(kernel: &str, directives: &str) -> String {
    let entry = format!(".entry {kernel}(");
    let at = PTX.find(&entry).expect("the entry") + entry.len();
    let close = at + PTX[at..].find("\n)").expect("its parameter list") + 2;
    format!("{}\n{directives}\n{}", &PTX[..close], &PTX[close..])
}

#[test]
fn a_launch_beyond_the_kernel_s_launch_bounds_is_refused() {
    for (dev, ctx) in devices() {
        println!("{dev}");
        check(&ctx);
    }
}

fn check(ctx: &gpukernel_runtime::Context) {
    // Only `saxpy` (the crate's other kernels call foreign functions defined elsewhere).
    let bounded = with_bounds("saxpy", ".maxntid 64, 1, 1\n.minnctapersm 1");
    let module = Linker::new(ctx)
        .expect("linker")
        .add_ptx_kernels(&bounded, "bounded.ptx", &["saxpy"])
        .link_and_load()
        .expect("load");
    let k = module.kernel(saxpy).expect("lookup");
    assert_eq!(k.max_threads_per_block(), 64);
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1.0f32; 128]).expect("copy in");
    let mut y = stream.alloc_zeros::<f32>(128).expect("alloc");
    match stream.launch(&k, LaunchConfig::new(1, 128), (2.0f32, &x, &mut y)) {
        Err(e @ Error::InvalidLaunchConfig { .. }) => {
            assert!(e.to_string().contains("saxpy"), "{e}");
        }
        other => panic!("expected InvalidLaunchConfig, got {other:?}"),
    }
    // Within the bounds: runs.
    stream
        .launch(&k, LaunchConfig::new(2, 64), (2.0f32, &x, &mut y))
        .expect("launch within the bounds");
    assert_eq!(y.to_host_vec().expect("copy out"), [2.0f32; 128]);
    // Without bounds: blocks of up to 1024 threads, as before.
    let plain = Linker::new(ctx)
        .expect("linker")
        .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
        .link_and_load()
        .expect("load");
    let k = plain.kernel(saxpy).expect("lookup");
    assert_eq!(k.max_threads_per_block(), 1024);
}
