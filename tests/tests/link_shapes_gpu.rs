//! Link shapes on a GPU: `lto(true)` without LTO-IR (an ordinary cuLink link), LTO-IR mixed
//! with every other kind (nvJitLink, LTO among the LTO-IR), a fatbin built with `-dlto`, raw
//! linker options on a context, a duplicate across kinds through a context's linker, and a
//! cached link whose header (found through an NVRTC `-I` option) was edited: each module's
//! kernels launched and their results checked.
//!
//! Compiled as ignored unless the `gpu` feature is on (`cargo test -p gpukernel-tests
//! --features gpu --test link_shapes_gpu`); with it, each test fails when there is no GPU.

mod link_support;

use ffi_examples_kernels::ffi::{
    add_one_cubin, affine_fatbin, multiply_vectors, square_archive, sub_one_object,
};
use gpukernel_runtime::link::{
    CachePolicy, CudaOutput, InputKind, Linker, LinkerKind, compile_cuda,
};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use link_support::{PTX, artifacts, err, ok, run_nvcc, source, temp_dir};

/// CUDA device 0's context; fails (never skips) without a GPU.
fn gpu() -> Context {
    let device = match Device::get(0) {
        Ok(d) => d,
        Err(e) => panic!("this test needs a CUDA GPU (feature `gpu` is on): {e}"),
    };
    ok(device.primary_context())
}

fn linker(ctx: &Context) -> Linker {
    let mut linker = ok(Linker::new(ctx));
    linker.cache(CachePolicy::Disabled);
    linker
}

const KERNELS: [&str; 5] = [
    "multiply_vectors",
    "add_one_cubin",
    "affine_fatbin",
    "square_archive",
    "sub_one_object",
];

/// Runs the kernels that call into `functions.cu` (multiply) and the four precompiled kinds,
/// checking each against the host.
fn check_kernels(ctx: &Context, module: &Module, which: &[&str]) {
    let n = 4096;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25 - 100.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.5).collect();
    let stream = ctx.default_stream();
    let cfg = ok(LaunchConfig::for_elements(n));
    let (da, db) = (ok(ctx.htod_copy(&a)), ok(ctx.htod_copy(&b)));
    let mut out = ok(ctx.alloc_zeros::<f32>(n));
    let check = |what: &str, got: Vec<f32>, want: &dyn Fn(usize) -> f32| {
        for (i, g) in got.iter().enumerate() {
            let w = want(i);
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{what}[{i}] = {g}, expected {w}"
            );
        }
    };
    for &k in which {
        match k {
            "multiply_vectors" => {
                ok(stream.launch(
                    &ok(module.kernel(multiply_vectors)),
                    cfg,
                    (&da, &db, &mut out),
                ));
                check(k, ok(out.to_host_vec()), &|i| a[i] * b[i]);
            }
            "add_one_cubin" => {
                ok(stream.launch(&ok(module.kernel(add_one_cubin)), cfg, (&da, &mut out)));
                check(k, ok(out.to_host_vec()), &|i| a[i] + 1.0);
            }
            "affine_fatbin" => {
                ok(stream.launch(
                    &ok(module.kernel(affine_fatbin)),
                    cfg,
                    (&da, 2.0f32, 0.5f32, &mut out),
                ));
                check(k, ok(out.to_host_vec()), &|i| a[i] * 2.0 + 0.5);
            }
            "square_archive" => {
                ok(stream.launch(&ok(module.kernel(square_archive)), cfg, (&da, &mut out)));
                check(k, ok(out.to_host_vec()), &|i| a[i] * a[i]);
            }
            "sub_one_object" => {
                ok(stream.launch(&ok(module.kernel(sub_one_object)), cfg, (&da, &mut out)));
                check(k, ok(out.to_host_vec()), &|i| a[i] - 1.0);
            }
            other => panic!("no check for {other}"),
        }
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn lto_without_ltoir_links_through_culink_and_runs() {
    let ctx = gpu();
    let arts = artifacts();
    let mut l = linker(&ctx);
    l.lto(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &KERNELS[1..]);
    // SAFETY: built from cuda/*_lib.cu, whose definitions match src/ffi.rs.
    unsafe {
        l.add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    let image = ok(l.link());
    assert_eq!(
        image.linker(),
        Some(LinkerKind::CuLink),
        "{:?}",
        image.linker_options()
    );
    check_kernels(&ctx, &ok(ctx.load_module(image.cubin())), &KERNELS[1..]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn ltoir_mixed_with_every_kind_links_and_runs() {
    let ctx = gpu();
    let arts = artifacts();
    let (major, minor) = ok(ctx.compute_capability());
    let ltoir = ok(compile_cuda(
        link_support::SOURCES[1].1,
        "functions.cu",
        &[("gpukernel_abi.h".into(), link_support::SOURCES[0].1.into())],
        gpukernel_runtime::link::Arch::from_compute_capability(major, minor),
        &[],
        CudaOutput::LtoIr,
    ));
    for lto in [true, false] {
        let mut l = linker(&ctx);
        l.lto(lto).add_ptx_kernels(PTX, "kernels.ptx", &KERNELS);
        // SAFETY: compiled from functions.cu and cuda/*_lib.cu, whose definitions match
        // src/ffi.rs.
        unsafe {
            l.add_data_unchecked(InputKind::LtoIr, ltoir.clone(), "functions.ltoir")
                .add_file_unchecked(&arts.cubin)
                .add_file_unchecked(&arts.fatbin)
                .add_file_unchecked(&arts.archive)
                .add_file_unchecked(&arts.object);
        }
        let image = ok(l.link());
        assert_eq!(image.linker(), Some(LinkerKind::NvJitLink));
        assert!(image.linker_options().iter().any(|o| o == "-lto"));
        check_kernels(&ctx, &ok(ctx.load_module(image.cubin())), &KERNELS);
    }
    // The same with the `.cu` compiled to LTO-IR by the linker.
    let mut l = linker(&ctx);
    l.lto(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &KERNELS)
        .add_file(source("functions.cu"));
    // SAFETY: as above.
    unsafe {
        l.add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    check_kernels(&ctx, &ok(l.link_and_load()), &KERNELS);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn dlto_fatbin_links_with_lto_and_runs() {
    let ctx = gpu();
    let (major, minor) = ok(ctx.compute_capability());
    let cuda = link_support::cuda_dir();
    let out = temp_dir("gpu-dlto").join("dlto.fatbin");
    let arch = format!("-arch=sm_{major}{minor}");
    run_nvcc(
        cuda,
        &[
            "-fatbin",
            "-rdc=true",
            "-dlto",
            &arch,
            cuda.join("fatbin_lib.cu").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let mut l = linker(&ctx);
    l.add_ptx_kernels(PTX, "kernels.ptx", &["affine_fatbin"]);
    // SAFETY: built from fatbin_lib.cu, whose definition matches src/ffi.rs.
    unsafe { l.add_file_unchecked(&out) };
    let image = ok(l.link());
    assert!(image.linker_options().iter().any(|o| o == "-lto"));
    check_kernels(
        &ctx,
        &ok(ctx.load_module(image.cubin())),
        &["affine_fatbin"],
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn raw_options_and_duplicates_through_a_context() {
    let ctx = gpu();
    let arts = artifacts();
    let mut l = linker(&ctx);
    l.add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .linker_option("-Xptxas=-warn-spills");
    let image = ok(l.link());
    assert_eq!(image.linker(), Some(LinkerKind::NvJitLink));
    assert!(
        image
            .linker_options()
            .iter()
            .any(|o| o == "-Xptxas=-warn-spills")
    );
    check_kernels(
        &ctx,
        &ok(ctx.load_module(image.cubin())),
        &["multiply_vectors"],
    );
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .linker_option("-no-such-option")
        .link());
    assert!(
        matches!(&e, Error::InvalidLinkOption { option, .. } if option == "-no-such-option"),
        "{e}"
    );
    // The object defines `object_sub_one`; so does this source: refused before cuLink.
    let mut l = linker(&ctx);
    l.add_cuda_source(
        "#include \"gpukernel_abi.h\"\n\
         extern \"C\" __device__ int object_sub_one(float* r, float x) { *r = x; return 0; }",
        "again.cu",
    )
    .include_dir(link_support::cuda_dir());
    // SAFETY: no kernel of this link declares the function; nothing is launched.
    unsafe { l.add_file_unchecked(&arts.object) };
    let e = err(l.link());
    assert!(
        matches!(&e, Error::DuplicateSymbol { symbol, .. } if symbol == "object_sub_one"),
        "{e}"
    );
}

/// Issue: a header found through an NVRTC `-I` option was edited and the stale cubin ran
/// (2.0 instead of 101).
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn an_edited_header_found_through_an_include_option_is_recompiled() {
    let ctx = gpu();
    let root = temp_dir("gpu-cache-key");
    let (cache, include) = (root.join("cache"), root.join("include"));
    std::fs::create_dir_all(&include).unwrap();
    let source = "#include \"value.h\"\n\
                  extern \"C\" __global__ void value_of(float* out) { *out = VALUE; }\n";
    let run = |value: f32| -> f32 {
        std::fs::write(
            include.join("value.h"),
            format!("#define VALUE {value:.1}f\n"),
        )
        .unwrap();
        let mut l = ok(Linker::new(&ctx));
        l.cache(CachePolicy::Dir(cache.clone()))
            .add_cuda_source(source, "value.cu")
            .nvrtc_option(format!("-I{}", include.display()));
        let module = ok(l.link_and_load());
        let f = ok(module.function("value_of"));
        let out = ok(ctx.alloc_zeros::<f32>(1));
        let mut ptr = out.as_raw();
        let mut params = [(&raw mut ptr).cast()];
        let stream = ctx.default_stream();
        // SAFETY: `value_of(float*)` takes one pointer; `out` outlives the synchronized launch.
        unsafe { ok(stream.launch_untyped(&f, LaunchConfig::new(1, 1), &mut params)) };
        ok(stream.synchronize());
        ok(out.to_host_vec())[0]
    };
    assert_eq!(run(2.0), 2.0);
    assert_eq!(
        run(101.0),
        101.0,
        "the edited header must be compiled, not the cached cubin"
    );
}
