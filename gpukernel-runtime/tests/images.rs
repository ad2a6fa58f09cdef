//! Module images and the simulator backend, through the public API (no GPU needed).

mod common;

use common::{CUBIN, FATBIN, KERNELS, PTX, fails_foreign, saxpy};
use gpukernel_runtime::{Device, Error, ImageKind, LaunchConfig};

#[test]
fn real_images_are_classified() {
    assert_eq!(ImageKind::detect(PTX.as_bytes()).unwrap(), ImageKind::Ptx);
    assert_eq!(ImageKind::detect(CUBIN).unwrap(), ImageKind::Cubin);
    assert_eq!(ImageKind::detect(FATBIN).unwrap(), ImageKind::Fatbin);
    let e = ImageKind::detect(&CUBIN[..100]).unwrap_err();
    assert!(e.to_string().contains("truncated cubin"), "{e}");
    let e = ImageKind::detect(&FATBIN[..FATBIN.len() - 1]).unwrap_err();
    assert!(e.to_string().contains("truncated fatbin"), "{e}");
}

#[test]
fn simulator_module_lists_the_ptx_entries() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.load_module(PTX.as_bytes()).unwrap();
    let mut names = m.kernel_names().to_vec();
    names.sort();
    assert_eq!(names, KERNELS);
    let e = m.function("sxapy").unwrap_err();
    assert!(matches!(e, Error::KernelNotFound { .. }));
    assert!(e.to_string().contains("`saxpy`"), "{e}");
    let e = ctx.load_module(CUBIN).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsupported {
                backend: "simulator",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn simulator_runs_the_same_typed_launches() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = s.htod_copy(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = s.htod_copy(&[10.0f32; 3]).unwrap();
    s.launch(
        &k,
        LaunchConfig::for_elements(3).unwrap(),
        (2.0f32, &x, &mut y),
    )
    .unwrap();
    assert_eq!(y.to_host_vec().unwrap(), [12.0, 14.0, 16.0]);

    let f = common::kernel(&m, fails_foreign).unwrap();
    s.launch(&f, LaunchConfig::new(1, 8), (5,)).unwrap();
    match s.synchronize().unwrap_err() {
        Error::ForeignCallFailed {
            function,
            status,
            thread,
            kernel,
            ..
        } => {
            assert_eq!((function.as_str(), status, thread), ("mul_f32_f32", 5, 3));
            assert_eq!(kernel.as_deref(), Some("fails_foreign"));
        }
        e => panic!("unexpected {e}"),
    }
    s.synchronize().unwrap();
}
