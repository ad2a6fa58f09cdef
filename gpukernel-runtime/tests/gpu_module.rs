//! Loading modules on a CUDA device (feature `gpu`).

mod common;

use common::{CUBIN, FATBIN, KERNELS, PTX, gpu, saxpy};
use gpukernel_runtime::{Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn ptx_cubin_and_fatbin_load_and_list_their_kernels() {
    let ctx = gpu();
    for (what, image) in [
        ("ptx", PTX.as_bytes()),
        ("cubin", CUBIN),
        ("fatbin", FATBIN),
    ] {
        let m = ctx
            .load_module(image)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(m.kernel_names(), KERNELS, "{what}");
        let k = common::kernel(&m, saxpy).unwrap();
        assert!(k.max_threads_per_block() >= 256);
        let x = ctx.htod_copy(&[1.0f32, 2.0]).unwrap();
        let mut y = ctx.htod_copy(&[1.0f32, 1.0]).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(2).unwrap(),
                (2.0f32, &x, &mut y),
            )
            .unwrap();
        assert_eq!(y.to_host_vec().unwrap(), [3.0, 5.0], "{what}");
        let (g, size) = m.global("__gpukernel_ffi_error").unwrap();
        assert!(!g.is_null());
        // The record's current layout (a module with another is refused at load).
        assert_eq!(
            size,
            size_of::<gpukernel_device::ffi::FfiErrorRecord>(),
            "{what}"
        );
        assert!(matches!(
            m.global("nope"),
            Err(Error::GlobalNotFound { .. })
        ));
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn wrong_kernel_name_lists_the_kernels() {
    let ctx = gpu();
    let m = ctx.load_module(PTX.as_bytes()).unwrap();
    let e = m.function("saxpi").unwrap_err();
    match &e {
        Error::KernelNotFound { name, available } => {
            assert_eq!(name, "saxpi");
            assert_eq!(available, &KERNELS);
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(
        e.to_string(),
        "the module has no kernel `saxpi`; its kernels are: `empty`, `fails_foreign`, `saxpy`, `write_null`"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn bad_images_are_errors_before_the_driver() {
    let ctx = gpu();
    for (image, expect) in [
        (&b"\x7fELF\x02\x01"[..], "truncated ELF header"),
        (&CUBIN[..200], "truncated cubin"),
        (&FATBIN[..40], "truncated fatbin"),
        (b"!<arch>\n", "static library"),
        (b"\x00\x01\x02\x03", "not PTX"),
    ] {
        let e = ctx.load_module(image).unwrap_err();
        assert!(matches!(e, Error::InvalidModuleImage { .. }), "{e}");
        assert!(e.to_string().contains(expect), "{e}");
    }
    // PTX the driver rejects: the driver's code and the JIT's error log are kept.
    let e = ctx
        .load_module(b".version 7.8\n.target sm_90\n.address_size 64\n.entry broken( {")
        .unwrap_err();
    println!("{e}");
    match &e {
        Error::ModuleLoad {
            kind,
            error,
            error_log,
            ..
        } => {
            assert_eq!(*kind, gpukernel_runtime::ImageKind::Ptx);
            assert!(error.name().starts_with("CUDA_ERROR_"), "{e}");
            assert!(error_log.contains("ptxas"), "no JIT log in: {e}");
        }
        other => panic!("unexpected {other}"),
    }
}

/// A PTX that calls two foreign device functions it only declares.
const PTX_CALLING_FOREIGN: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.extern .func (.param .b32 func_retval0) mul_f32_f32
(
	.param .b64 mul_f32_f32_param_0,
	.param .b32 mul_f32_f32_param_1
)
;
.extern .func (.param .b32 func_retval0) add_one
(
	.param .b64 add_one_param_0
)
;

.visible .entry calls_foreign(.param .u64 p)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1], 0;
	.param .b32 retval0;
	call.uni (retval0), mul_f32_f32, (param0, param1);
	ld.param.b32 %r1, [retval0];
	}
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 retval0;
	call.uni (retval0), add_one, (param0);
	ld.param.b32 %r2, [retval0];
	}
	ret;
}
"#;

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn unresolved_foreign_functions_are_named_with_a_hint() {
    let ctx = gpu();
    let e = ctx.load_module(PTX_CALLING_FOREIGN.as_bytes()).unwrap_err();
    println!("{e}");
    match &e {
        Error::UnresolvedForeignSymbols {
            symbols,
            also_declared,
            error,
            error_log,
            ..
        } => {
            assert!(!symbols.is_empty(), "{e}");
            let mut all: Vec<&str> = symbols
                .iter()
                .chain(also_declared)
                .map(String::as_str)
                .collect();
            all.sort();
            assert_eq!(all, ["add_one", "mul_f32_f32"], "{e}");
            assert_eq!(error.name(), "CUDA_ERROR_INVALID_PTX");
            assert!(error_log.contains("Unresolved extern function"), "{e}");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("Linker::add_ptx_kernels"), "{e}");
}

/// A `Kernel` whose Rust signature says `saxpy(f64, &[f32])`: three `.param`s of 8 bytes,
/// where the image's `saxpy` takes (f32, u64, u64, u64, u64).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct saxpy_wrong_signature;
// SAFETY: never launched: the test checks that `Module::kernel` refuses it.
unsafe impl gpukernel_runtime::Kernel for saxpy_wrong_signature {
    const NAME: &'static str = "saxpy";
    type Params = (f64, &'static [f32]);
    const SIGNATURE: u64 = 0;
    const SIM_ENTRY: gpukernel_device::SimEntry = {
        unsafe fn never(_: *const *mut core::ffi::c_void) {}
        never
    };
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_typed_kernel_must_match_the_entry_parameters() {
    let ctx = gpu();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    // The matching signature is accepted...
    common::kernel(&module, saxpy).unwrap();
    // ...a different one is refused before any launch could misread the arguments.
    match common::kernel(&module, saxpy_wrong_signature) {
        Err(Error::KernelSignatureMismatch {
            kernel,
            expected,
            found,
        }) => {
            assert_eq!(kernel, "saxpy");
            assert_eq!(expected, [8, 8, 8]);
            assert_eq!(found, [4, 8, 8, 8, 8]);
        }
        Err(e) => panic!("expected KernelSignatureMismatch, got {e}"),
        Ok(_) => panic!("a kernel with the wrong signature was accepted"),
    }
}

/// A CUDA C input with a `__device__` global that its setup hook initializes.
const SCALED_CU: &str = r#"
__device__ float k_scale = 1.0f;
extern "C" __global__ void apply_scale(float* x, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= k_scale;
    }
}
"#;

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn setup_initializes_a_device_global_and_teardown_sees_it() {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<f32>> = Mutex::new(Vec::new());
    let ctx = gpu();
    let mut l = gpukernel_runtime::link::Linker::new(&ctx).unwrap();
    l.add_cuda_source(SCALED_CU, "scaled.cu")
        .setup(|m| m.write_global("k_scale", &3.0f32))
        .teardown(|v| {
            SEEN.lock().unwrap().push(v.read_global::<f32>("k_scale")?);
            Ok(())
        });
    let m = l.link_and_load().unwrap();
    assert_eq!(m.read_global::<f32>("k_scale").unwrap(), 3.0);
    let e = m.write_global("k_scale", &1.0f64).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let f = m.function("apply_scale").unwrap();
    let n = 1000usize;
    let x = ctx.htod_copy(&vec![2.0f32; n]).unwrap();
    let s = ctx.default_stream();
    let (mut ptr, mut len) = (x.as_raw(), n as u64);
    let mut params = [
        (&raw mut ptr).cast::<core::ffi::c_void>(),
        (&raw mut len).cast(),
    ];
    // SAFETY: (float*, unsigned long long) as the kernel declares; `x` is live and synchronized
    // below before it is read or dropped.
    unsafe {
        s.launch_untyped(&f, LaunchConfig::for_elements(n).unwrap(), &mut params)
            .unwrap()
    };
    s.synchronize().unwrap();
    assert_eq!(x.to_host_vec().unwrap(), vec![6.0f32; n]);
    drop(f);
    drop(m);
    assert_eq!(*SEEN.lock().unwrap(), [3.0]);
    // A failing setup fails the load, naming the input.
    let mut l = gpukernel_runtime::link::Linker::new(&ctx).unwrap();
    l.add_cuda_source(SCALED_CU, "scaled.cu")
        .setup(|m| m.write_global("no_such_global", &0u32));
    let e = l.link_and_load().unwrap_err();
    assert!(
        matches!(&e, Error::ModuleHook { hook: "setup", input, .. } if input == "scaled.cu"),
        "{e}"
    );
}
