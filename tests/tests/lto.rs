//! Build-time LTO of foreign CUDA C (`ffi-examples/lto-kernels`, whose build.rs names
//! `cuda/functions.cu` in `Builder::foreign_cuda`): no call to a foreign function is left in the
//! PTX, the kernels run from the PTX alone on every test device (the simulator runs the same
//! source compiled for the host), a failing status still surfaces, and the run-time Linker
//! refuses the source when it is added again.

use ffi_examples_lto_kernels::{
    FUNCTIONS_CU, HORNER8, PTX, PTX_RUNTIME_LINK, horner8_rust, lerp, multiply_vectors,
    poly_foreign, poly_inline, saxpy_mul_foreign, saxpy_mul_inline, sqrt_checked,
};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Error, Kernel, LaunchConfig};
use gpukernel_tests::{Rng, devices};

/// The functions `cuda/functions.cu` defines.
const FOREIGN: [&str; 4] = ["mul_f32", "horner8", "checked_sqrt", "lerp_c"];

/// The lines of `ptx` that call `symbol` or declare it as a function.
fn mentions(ptx: &str, symbol: &str) -> Vec<String> {
    ptx.lines()
        .filter(|l| {
            let t = l.trim_start();
            (t.starts_with("call") || t.contains(".func"))
                && t.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == symbol)
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_lto_ptx_calls_no_foreign_function() {
    for symbol in FOREIGN {
        assert_eq!(
            mentions(PTX, symbol),
            Vec::<String>::new(),
            "`{symbol}` is still called or declared in the LTO PTX"
        );
        // The same kernels linked at run time do call it: the check can fail.
        assert!(
            mentions(PTX_RUNTIME_LINK, symbol)
                .iter()
                .any(|l| l.trim_start().starts_with("call")),
            "the run-time-link PTX should call `{symbol}`"
        );
    }
    // No `.extern .func` is left at all: the PTX loads without a link.
    assert!(
        !PTX.lines()
            .any(|l| l.trim_start().starts_with(".extern .func")),
        "an unresolved function is left in the LTO PTX"
    );
    // `sqrtf` in the foreign source is correctly rounded, as nvcc's default `-prec-sqrt=true`
    // makes it (libdevice's `__nvvm_reflect("__CUDA_PREC_SQRT")` answered 1), not
    // `sqrt.approx.f32`.
    assert!(
        PTX.contains("sqrt.rn.f32") && !PTX.contains("sqrt.approx.f32"),
        "checked_sqrt's sqrtf is not sqrt.rn.f32 in the LTO PTX"
    );
    // The polynomial's fused multiply-adds are in the kernel's loop (unrolled), as in the Rust twin.
    let body = |entry: &str| -> String {
        let start = PTX
            .find(&format!(".entry {entry}("))
            .expect("kernel present");
        let end = PTX[start..].find("\n}").map_or(PTX.len(), |e| start + e);
        PTX[start..end].to_owned()
    };
    let fmas = |entry: &str| body(entry).matches("fma.rn.f32").count();
    assert!(
        fmas(poly_foreign::NAME) >= HORNER8.len() - 1,
        "{}",
        body(poly_foreign::NAME)
    );
    assert!(fmas(poly_inline::NAME) >= HORNER8.len() - 1);
    // And unrolled at least as far as the Rust twin's loop (the benchmark's LTO row depends on
    // it: when libdevice's reflect queries were left to llc, the foreign loop stayed rolled,
    // 8 FMAs against the twin's 40, and ran at 0.95x the twin).
    assert!(
        fmas(poly_foreign::NAME) >= fmas(poly_inline::NAME),
        "foreign {} FMAs, Rust twin {}",
        fmas(poly_foreign::NAME),
        fmas(poly_inline::NAME)
    );
}

#[test]
fn lto_kernels_run_from_the_ptx_alone_on_every_device() {
    let mut rng = Rng::from_env("lto_kernels");
    let n = 5_003;
    let (a, b) = (rng.vec_f32(n), rng.vec_f32(n));
    let x: Vec<f32> = rng
        .vec_f32(n)
        .into_iter()
        .map(|v| v.abs().fract())
        .collect();
    for (name, ctx) in devices() {
        let module = ctx
            .load_module(PTX.as_bytes())
            .unwrap_or_else(|e| panic!("loading the LTO PTX on {name}: {e}"));
        let stream = ctx.default_stream();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let (da, db, dx) = (
            ctx.htod_copy(&a).unwrap(),
            ctx.htod_copy(&b).unwrap(),
            ctx.htod_copy(&x).unwrap(),
        );

        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        stream
            .launch(
                &module.kernel(multiply_vectors).unwrap(),
                cfg,
                (&da, &db, &mut out),
            )
            .unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
        assert_eq!(
            out.to_host_vec().unwrap(),
            want,
            "multiply_vectors on {name}"
        );

        // saxpy with the multiply through the foreign function and in Rust: the same bits.
        let mut y1 = ctx.htod_copy(&b).unwrap();
        let mut y2 = ctx.htod_copy(&b).unwrap();
        // SAFETY: one-dimensional launch, x.len() == y.len().
        unsafe {
            stream
                .launch_unchecked(
                    &module.kernel(saxpy_mul_foreign).unwrap(),
                    cfg,
                    (2.5f32, &da, &mut y1),
                )
                .unwrap();
            stream
                .launch_unchecked(
                    &module.kernel(saxpy_mul_inline).unwrap(),
                    cfg,
                    (2.5f32, &da, &mut y2),
                )
                .unwrap();
        }
        let want: Vec<f32> = a.iter().zip(&b).map(|(a, b)| 2.5 * a + b).collect();
        assert_eq!(
            y1.to_host_vec().unwrap(),
            want,
            "saxpy_mul_foreign on {name}"
        );
        assert_eq!(
            y2.to_host_vec().unwrap(),
            want,
            "saxpy_mul_inline on {name}"
        );

        // The polynomial, iterated: foreign (inlined) and Rust agree bit for bit.
        let iters = 17u32;
        let mut p1 = ctx.alloc_zeros::<f32>(n).unwrap();
        let mut p2 = ctx.alloc_zeros::<f32>(n).unwrap();
        // SAFETY: one-dimensional launch, x.len() == out.len().
        unsafe {
            stream
                .launch_unchecked(
                    &module.kernel(poly_foreign).unwrap(),
                    cfg,
                    (&dx, iters, &mut p1),
                )
                .unwrap();
            stream
                .launch_unchecked(
                    &module.kernel(poly_inline).unwrap(),
                    cfg,
                    (&dx, iters, &mut p2),
                )
                .unwrap();
        }
        let want: Vec<f32> = x
            .iter()
            .map(|&v| (0..iters).fold(v, |v, _| horner8_rust(v)))
            .collect();
        assert_eq!(p1.to_host_vec().unwrap(), want, "poly_foreign on {name}");
        assert_eq!(p2.to_host_vec().unwrap(), want, "poly_inline on {name}");

        // A plain C function.
        stream
            .launch(
                &module.kernel(lerp).unwrap(),
                cfg,
                (&da, &db, 0.25f32, &mut out),
            )
            .unwrap();
        let want: Vec<f32> = a
            .iter()
            .zip(&b)
            .map(|(a, b)| 0.25f32.mul_add(b - a, *a))
            .collect();
        assert_eq!(out.to_host_vec().unwrap(), want, "lerp on {name}");

        // A failing status still surfaces after inlining, naming the function and the thread.
        let mut xs: Vec<f32> = x.clone();
        xs[777] = -1.0;
        let dneg = ctx.htod_copy(&xs).unwrap();
        stream
            .launch(
                &module.kernel(sqrt_checked).unwrap(),
                cfg,
                (&dneg, &mut out),
            )
            .unwrap();
        match out.to_host_vec() {
            Err(Error::ForeignCallFailed {
                function,
                status,
                thread,
                ..
            }) => assert_eq!(
                (function.as_str(), status, thread),
                ("checked_sqrt", 33, 777),
                "on {name}"
            ),
            other => panic!("expected ForeignCallFailed on {name}, got {other:?}"),
        }
        let got = out.to_host_vec().unwrap();
        assert_eq!(got[3], x[3].sqrt(), "the other threads' results, on {name}");
    }
}

fn refused(linker: &mut Linker, what: &str) {
    match linker.link() {
        Err(e @ Error::LinkedAtBuildTime { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("cuda/functions.cu")
                    && text.contains("foreign_cuda")
                    && text.contains("remove it from the Linker"),
                "{what}: {text}"
            );
            if let Error::LinkedAtBuildTime { ptx, symbols, .. } = e {
                assert_eq!(ptx, "kernels.ptx", "{what}");
                assert!(
                    symbols.iter().any(|s| s == "mul_f32"),
                    "{what}: {symbols:?}"
                );
            }
        }
        other => panic!("{what}: expected LinkedAtBuildTime, got {other:?}"),
    }
}

#[test]
fn the_linker_refuses_a_source_linked_at_build_time() {
    // On the simulator, and for a GPU architecture without a device (before NVRTC runs).
    let mut sim = Linker::for_simulator();
    sim.add_ptx(PTX, "kernels.ptx")
        .add_cuda_source(FUNCTIONS_CU, "functions.cu");
    refused(&mut sim, "simulator");
    let mut offline = Linker::for_arch("sm_90").unwrap();
    offline
        .add_ptx(PTX, "kernels.ptx")
        .add_cuda_source(FUNCTIONS_CU, "kernels/cuda/functions.cu");
    refused(&mut offline, "sm_90");
    for (name, ctx) in devices() {
        let mut l = Linker::new(&ctx).unwrap();
        l.add_ptx(PTX, "kernels.ptx")
            .add_cuda_source(FUNCTIONS_CU, "functions.cu");
        refused(&mut l, &name);
    }
}

#[test]
fn the_linker_refuses_another_definition_of_a_function_linked_at_build_time() {
    // A different source defining `mul_f32` (as PTX): refused by its symbols.
    let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\
        .visible .func (.param .b32 r) mul_f32(.param .b64 p, .param .b32 a, .param .b32 b)\n{\n\tret;\n}\n";
    let mut sim = Linker::for_simulator();
    sim.add_ptx(PTX, "kernels.ptx").add_ptx(ptx, "other.ptx");
    match sim.link() {
        Err(Error::LinkedAtBuildTime {
            input,
            symbols,
            source_file,
            ..
        }) => {
            assert_eq!(input, "other.ptx");
            assert_eq!(symbols, ["mul_f32"]);
            assert_eq!(source_file, "cuda/functions.cu");
        }
        other => panic!("expected LinkedAtBuildTime, got {other:?}"),
    }
}

#[test]
fn the_same_kernels_still_link_at_run_time_without_lto() {
    // The run-time-link PTX carries no build-time record: the Linker takes functions.cu.
    let mut sim = Linker::for_simulator();
    sim.add_ptx(PTX_RUNTIME_LINK, "kernels_runtime_link.ptx")
        .add_cuda_source(FUNCTIONS_CU, "functions.cu");
    sim.link().unwrap();
    // Without it, the run-time-link PTX cannot load: the calls are unresolved.
    let mut missing = Linker::for_simulator();
    missing.add_ptx(PTX_RUNTIME_LINK, "kernels_runtime_link.ptx");
    assert!(
        matches!(missing.link(), Err(Error::UndefinedSymbol { .. })),
        "the run-time-link PTX needs functions.cu"
    );
}
