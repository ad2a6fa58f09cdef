//! A foreign-call failure in a kernel loaded from the embedded machine code (`FATBIN`, through
//! the Linker's `LoadPath::MachineCode` on a GPU) is reported at the next synchronization,
//! naming the function and the kernel, as for the PTX.

use ffi_examples_lto_kernels::{FATBIN, sqrt_checked};
use gpukernel_runtime::link::{InputKind, Linker, LoadPath};
use gpukernel_runtime::{Device, Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_foreign_failure_in_machine_code_is_reported() {
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    let mut linker = Linker::new(&ctx).unwrap();
    linker.add_data(InputKind::Fatbin, FATBIN, "lto.fatbin");
    let path = linker.load_path().unwrap();
    assert!(matches!(path, LoadPath::MachineCode { .. }), "{path:?}");
    let module = linker.link_and_load().unwrap();
    let k = module.kernel(sqrt_checked).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = s.htod_copy(&[4.0f32, -1.0, 9.0, -4.0]).unwrap();
    let mut out = s.alloc_zeros::<f32>(4).unwrap();
    s.launch(&k, LaunchConfig::for_elements(4).unwrap(), (&x, &mut out))
        .unwrap();
    match s.synchronize() {
        Err(Error::ForeignCallFailed {
            function,
            kernel,
            more,
            ..
        }) => {
            assert_eq!(kernel.as_deref(), Some("sqrt_checked"));
            assert_eq!(more, 1, "two negative inputs");
            println!("PROBE sass_foreign_failure OK {function}");
        }
        other => panic!("PROBE sass_foreign_failure HOLE: {other:?}"),
    }
}

/// The typed-launch check reads the signature global of a kernel loaded from machine code: a
/// kernel of the same name from another crate (another fingerprint) is refused.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn the_signature_check_sees_machine_code() {
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    let mut linker = Linker::new(&ctx).unwrap();
    linker.add_data(InputKind::Fatbin, FATBIN, "lto.fatbin");
    assert!(matches!(
        linker.load_path().unwrap(),
        LoadPath::MachineCode { .. }
    ));
    let module = linker.link_and_load().unwrap();
    // Right crate: accepted.
    module
        .kernel(ffi_examples_lto_kernels::multiply_vectors)
        .unwrap();
    // `multiply_vectors` of `ffi-examples-kernels`: the same name, another declaration.
    match module.kernel(ffi_examples_kernels::ffi::multiply_vectors) {
        Err(e) => println!("PROBE sass_signature OK refused: {e}"),
        Ok(_) => panic!("PROBE sass_signature HOLE: another crate's kernel accepted"),
    }
}
