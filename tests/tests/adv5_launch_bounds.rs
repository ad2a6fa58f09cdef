//! Launch bounds (`.maxntid`, what `Builder::launch_bounds` and CUDA C's `__launch_bounds__`
//! write into a kernel's entry) on the simulator: the driver reports them as the kernel's
//! `max_threads_per_block` and refuses a launch of more threads, so the simulator must too
//! (it ran any block of up to 1024 threads).

use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::{Device, Error, LaunchConfig};

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
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let module = ctx
        .load_module(with_bounds("saxpy", ".maxntid 64, 1, 1\n.minnctapersm 1").as_bytes())
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
    let plain = ctx.load_module(PTX.as_bytes()).expect("load");
    let k = plain.kernel(saxpy).expect("lookup");
    assert_eq!(k.max_threads_per_block(), 1024);
}
