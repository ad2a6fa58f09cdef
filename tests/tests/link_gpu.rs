//! The run-time linker on a GPU: the driver's linker (cuLink) with every input kind, the
//! kernels launched and checked against the host, every error case through cuLink, and the
//! cache's cold and warm link times.
//!
//! Compiled as ignored unless the `gpu` feature is on (`cargo test -p gpukernel-tests
//! --features gpu --test link_gpu`); with it, each test fails when there is no GPU.

mod link_support;

use std::time::Instant;

use ffi_examples_kernels::ffi::{
    Float2, add_one_cubin, add_through_pointer, affine_fatbin, divide_checked, dot_with,
    multiply_vectors, square_archive, sub_one_object, sum_rows, swap_and_scale,
};
use gpukernel_runtime::link::{CachePolicy, InputKind, Linker, LinkerKind};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use link_support::{PTX, artifacts, err, ok, source, temp_dir};

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

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..n).map(|i| (i % 1000) as f32 * 0.25 - 100.0).collect();
    let b = (0..n).map(|i| (i % 13) as f32 - 6.5).collect();
    (a, b)
}

#[track_caller]
fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}[{i}] = {g}, expected {w}"
        );
    }
}

/// Runs every kernel of the module that `functions.cu` serves and checks it.
fn check_functions_kernels(ctx: &Context, module: &Module) {
    let n = 10_000;
    let (a, b) = inputs(n);
    let stream = ctx.default_stream();
    let cfg = ok(LaunchConfig::for_elements(n));
    let (da, db) = (ok(ctx.htod_copy(&a)), ok(ctx.htod_copy(&b)));

    let mut out = ok(ctx.alloc_zeros::<f32>(n));
    ok(stream.launch(
        &ok(module.kernel(multiply_vectors)),
        cfg,
        (&da, &db, &mut out),
    ));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_close("multiply_vectors", &ok(out.to_host_vec()), &want, 0.0);

    let (rows, width) = (n / 10, 10usize);
    let mut sums = ok(ctx.alloc_zeros::<f32>(rows));
    ok(stream.launch(
        &ok(module.kernel(sum_rows)),
        ok(LaunchConfig::for_elements(rows)),
        (&da, width as u32, &mut sums),
    ));
    let want: Vec<f32> = a.chunks(width).map(|r| r.iter().sum()).collect();
    assert_close("sum_rows", &ok(sums.to_host_vec()), &want, 1e-5);

    let pairs: Vec<Float2> = a.iter().zip(&b).map(|(&x, &y)| Float2 { x, y }).collect();
    let dp = ok(ctx.htod_copy(&pairs));
    let w = Float2 { x: 0.5, y: -2.0 };
    ok(stream.launch(&ok(module.kernel(dot_with)), cfg, (&dp, w, &mut out)));
    let want: Vec<f32> = pairs.iter().map(|p| p.x * w.x + p.y * w.y).collect();
    assert_close("dot_with", &ok(out.to_host_vec()), &want, 1e-6);

    let mut swapped = ok(ctx.alloc_zeros::<Float2>(n));
    ok(stream.launch(
        &ok(module.kernel(swap_and_scale)),
        cfg,
        (&dp, 3.0f32, &mut swapped),
    ));
    let got = ok(swapped.to_host_vec());
    for (i, (g, p)) in got.iter().zip(&pairs).enumerate() {
        assert_eq!(
            *g,
            Float2 {
                x: p.y * 3.0,
                y: p.x * 3.0
            },
            "swap_and_scale[{i}]"
        );
    }

    ok(stream.launch(
        &ok(module.kernel(add_through_pointer)),
        cfg,
        (&da, 1.5f32, &mut out),
    ));
    let want: Vec<f32> = a.iter().map(|x| x + 1.5).collect();
    assert_close("add_through_pointer", &ok(out.to_host_vec()), &want, 0.0);

    ok(stream.launch(
        &ok(module.kernel(divide_checked)),
        cfg,
        (&da, &db, &mut out),
    ));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
    assert_close("divide_checked", &ok(out.to_host_vec()), &want, 1e-6);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn culink_links_every_input_kind_and_the_kernels_run() {
    let ctx = gpu();
    let arts = artifacts();
    // The Rust PTX as a `.ptx` file, so the path-based kind detection is exercised too.
    let ptx_path = temp_dir("gpu-ptx").join("kernels.ptx");
    std::fs::write(&ptx_path, PTX).unwrap();
    let started = Instant::now();
    let mut all = linker(&ctx);
    all.add_file(&ptx_path).add_file(source("functions.cu"));
    // SAFETY: built from cuda/*_lib.cu, whose definitions match src/ffi.rs's declarations.
    unsafe {
        all.add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    let image = ok(all.link());
    println!(
        "cuLink, every kind: {:?} ({:?})\ninfo log:\n{}",
        started.elapsed(),
        image.timings(),
        image.info_log()
    );
    assert_eq!(image.linker(), Some(LinkerKind::CuLink));
    let module = ok(ctx.load_module(image.cubin()));
    check_functions_kernels(&ctx, &module);

    let n = 4096;
    let (a, _) = inputs(n);
    let stream = ctx.default_stream();
    let cfg = ok(LaunchConfig::for_elements(n));
    let da = ok(ctx.htod_copy(&a));
    let mut out = ok(ctx.alloc_zeros::<f32>(n));
    ok(stream.launch(&ok(module.kernel(add_one_cubin)), cfg, (&da, &mut out)));
    assert_close(
        "add_one_cubin (cubin)",
        &ok(out.to_host_vec()),
        &a.iter().map(|x| x + 1.0).collect::<Vec<_>>(),
        0.0,
    );
    ok(stream.launch(
        &ok(module.kernel(affine_fatbin)),
        cfg,
        (&da, 2.0f32, 0.5f32, &mut out),
    ));
    assert_close(
        "affine_fatbin (fatbin)",
        &ok(out.to_host_vec()),
        &a.iter().map(|x| x * 2.0 + 0.5).collect::<Vec<_>>(),
        1e-6,
    );
    ok(stream.launch(&ok(module.kernel(square_archive)), cfg, (&da, &mut out)));
    assert_close(
        "square_archive (.a)",
        &ok(out.to_host_vec()),
        &a.iter().map(|x| x * x).collect::<Vec<_>>(),
        0.0,
    );
    ok(stream.launch(&ok(module.kernel(sub_one_object)), cfg, (&da, &mut out)));
    assert_close(
        "sub_one_object (.o)",
        &ok(out.to_host_vec()),
        &a.iter().map(|x| x - 1.0).collect::<Vec<_>>(),
        0.0,
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn ltoir_links_through_nvjitlink_for_the_device() {
    let ctx = gpu();
    let mut l = linker(&ctx);
    l.lto(true)
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[
                "multiply_vectors",
                "sum_rows",
                "divide_checked",
                "dot_with",
                "swap_and_scale",
                "add_through_pointer",
            ],
        )
        .add_file(source("functions.cu"));
    let image = ok(l.link());
    assert_eq!(image.linker(), Some(LinkerKind::NvJitLink));
    check_functions_kernels(&ctx, &ok(ctx.load_module(image.cubin())));
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_failing_foreign_call_is_reported() {
    let ctx = gpu();
    let module = ok(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["divide_checked"])
        .add_file(source("functions.cu"))
        .link_and_load());
    let n = 256;
    let a = vec![1.0f32; n];
    let mut b = vec![2.0f32; n];
    b[100] = 0.0; // checked_div returns status 22 for this thread
    let (da, db, mut out) = (
        ok(ctx.htod_copy(&a)),
        ok(ctx.htod_copy(&b)),
        ok(ctx.alloc_zeros::<f32>(n)),
    );
    let stream = ctx.default_stream();
    ok(stream.launch(
        &ok(module.kernel(divide_checked)),
        ok(LaunchConfig::for_elements(n)),
        (&da, &db, &mut out),
    ));
    let e = err(stream.synchronize());
    let Error::ForeignCallFailed {
        function,
        status,
        thread,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (function.as_str(), *status, *thread),
        ("checked_div", 22, 100)
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn errors_through_culink() {
    let ctx = gpu();
    let arts = artifacts();
    // Undefined symbol, read from cuLink's error log.
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"])
        .add_file(source("functions.cu"))
        .link());
    assert!(
        matches!(&e, Error::UndefinedSymbol { symbol, .. } if symbol == "cubin_add_one"),
        "{e}"
    );
    println!("undefined symbol through cuLink:\n{e}");
    // Duplicate definitions inside precompiled code (not readable before the link): an
    // archive whose member the kernel pulls in, then an object defining the same
    // `object_sub_one`.
    let mut dup = linker(&ctx);
    dup.add_ptx_kernels(PTX, "kernels.ptx", &["sub_one_object"]);
    // SAFETY: both define `object_sub_one` as src/ffi.rs declares it.
    unsafe {
        dup.add_file_unchecked(&arts.object_archive)
            .add_file_unchecked(&arts.object);
    }
    let e = err(dup.link());
    println!("duplicate through cuLink:\n{e}");
    assert!(
        matches!(&e, Error::DuplicateSymbol { symbol, defined_in, .. }
            if symbol == "object_sub_one" && defined_in.len() == 2),
        "{e}"
    );
    // Duplicates found before the link.
    let copy = link_support::SOURCES[1]
        .1
        .replace("// ret = a * b", "// a copy");
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_cuda_source(&copy, "copy.cu")
        .include_dir(link_support::cuda_dir())
        .link());
    assert!(matches!(e, Error::DuplicateSymbol { .. }), "{e}");
    // Wrong architecture.
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["affine_fatbin"])
        .add_file(&arts.wrong_arch_fatbin)
        .link());
    assert!(
        matches!(&e, Error::WrongArchitecture { arch, .. } if arch == "sm_90"),
        "{e}"
    );
    // Syntax error, missing file, unsupported extension, mismatch, empty list.
    let e = err(linker(&ctx)
        .add_file(source("errors/syntax_error.cu"))
        .link());
    assert!(
        matches!(&e, Error::NvrtcCompile { log, .. } if log.contains("syntax_error.cu(6)")),
        "{e}"
    );
    assert!(matches!(
        err(linker(&ctx).add_file("/no/such.cu").link()),
        Error::LinkInputRead { .. }
    ));
    assert!(matches!(
        err(linker(&ctx).add_file("x.cpp").link()),
        Error::UnsupportedLinkInput { .. }
    ));
    let e = err(linker(&ctx)
        .add_data(InputKind::Library, b"!<arch>\nbroken".to_vec(), "bad.a")
        .link());
    assert!(matches!(e, Error::LinkInputMismatch { .. }), "{e}");
    assert!(matches!(err(linker(&ctx).link()), Error::EmptyLink));
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn cache_cold_vs_warm_link_times() {
    let ctx = gpu();
    let dir = temp_dir("gpu-cache");
    let link = || {
        let mut l = ok(Linker::new(&ctx));
        l.cache(CachePolicy::Dir(dir.clone()))
            .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
            .add_file(source("functions.cu"));
        let started = Instant::now();
        let image = ok(l.link());
        (image, started.elapsed())
    };
    let (cold, cold_time) = link();
    let (warm, warm_time) = link();
    assert!(
        !cold.from_cache() && warm.from_cache(),
        "{:?} / {:?}",
        cold.cache_status(),
        warm.cache_status()
    );
    assert_eq!(cold.cubin(), warm.cubin());
    println!(
        "link multiply_vectors + functions.cu on {}: cold {cold_time:?} (NVRTC {:?}, cuLink {:?}), warm (cache) {warm_time:?}",
        ctx.device(),
        cold.timings().compile,
        cold.timings().link
    );
    let module = ok(ctx.load_module(warm.cubin()));
    let n = 1000;
    let (a, b) = inputs(n);
    let (da, db, mut out) = (
        ok(ctx.htod_copy(&a)),
        ok(ctx.htod_copy(&b)),
        ok(ctx.alloc_zeros::<f32>(n)),
    );
    ok(ctx.default_stream().launch(
        &ok(module.kernel(multiply_vectors)),
        ok(LaunchConfig::for_elements(n)),
        (&da, &db, &mut out),
    ));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_close(
        "multiply_vectors from the cache",
        &ok(out.to_host_vec()),
        &want,
        0.0,
    );
}

/// Declarations checked against definitions through cuLink: a wrong `.cu` definition is a
/// mismatch naming both sides, a cubin needs the unchecked call, and acknowledged it runs.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn foreign_declarations_are_checked_through_culink() {
    let ctx = gpu();
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_cuda_source(
            "extern \"C\" __device__ int mul_f32_f32(double* r, double a, double b) { *r = a * b; return 0; }",
            "bad.cu",
        )
        .link());
    println!("mismatch through cuLink:\n{e}");
    assert!(
        matches!(&e, Error::ForeignSignatureMismatch(m)
            if m.symbol == "mul_f32_f32" && m.defined_at == "bad.cu:1"),
        "{e}"
    );
    let arts = artifacts();
    let e = err(linker(&ctx)
        .add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"])
        .add_file(&arts.cubin)
        .link());
    assert!(
        matches!(&e, Error::UncheckedForeignDefinitions { .. }),
        "{e}"
    );
    let mut checked = linker(&ctx);
    checked.add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"]);
    // SAFETY: built from cuda/cubin_lib.cu, whose definition matches src/ffi.rs.
    unsafe { checked.add_file_unchecked(&arts.cubin) };
    let module = ok(checked.link_and_load());
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let dx = ok(ctx.htod_copy(&x));
    let mut out = ok(ctx.alloc_zeros::<f32>(x.len()));
    ok(ctx.default_stream().launch(
        &ok(module.kernel(add_one_cubin)),
        ok(LaunchConfig::for_elements(x.len())),
        (&dx, &mut out),
    ));
    let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    assert_close("add_one_cubin", &ok(out.to_host_vec()), &want, 0.0);
}

/// A capability the tools do not know, injected on the sm_90 GPU: 9.1 links for sm_90 and
/// runs; 13.0 through nvJitLink (LTO) is `UnsupportedArchitecture`, not NVRTC's raw message.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn injected_unsupported_capabilities_fall_back_or_are_named() {
    let ctx = gpu();
    let mut l = linker(&ctx);
    l.assume_compute_capability(9, 1)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"));
    let image = ok(l.link());
    assert_eq!(image.arch().map(|a| a.sm()), Some(90));
    let module = ok(ctx.load_module(image.module_image()));
    let (a, b) = inputs(1000);
    let (da, db) = (ok(ctx.htod_copy(&a)), ok(ctx.htod_copy(&b)));
    let mut out = ok(ctx.alloc_zeros::<f32>(a.len()));
    ok(ctx.default_stream().launch(
        &ok(module.kernel(multiply_vectors)),
        ok(LaunchConfig::for_elements(a.len())),
        (&da, &db, &mut out),
    ));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_close(
        "multiply_vectors for 9.1",
        &ok(out.to_host_vec()),
        &want,
        0.0,
    );

    let mut l = linker(&ctx);
    l.assume_compute_capability(13, 0)
        .lto(true)
        .add_file(source("functions.cu"));
    let e = err(l.link());
    println!("unsupported architecture:\n{e}");
    assert!(
        matches!(&e, Error::UnsupportedArchitecture { device, .. } if device == "sm_130"),
        "{e}"
    );
}

/// A kernel with many live values, so that its register count exceeds a low limit.
const REGISTER_HUNGRY: &str = r#"
extern "C" __global__ void register_hungry(const float* in, float* out, int n) {
    float acc[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = in[(threadIdx.x + j) % n];
    for (int i = 0; i < n; ++i) {
        #pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * in[i] + acc[(j + 7) % 48];
    }
    float s = 0.0f;
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j] * (j + 1);
    out[threadIdx.x] = s;
}
"#;

/// `max_registers` takes effect through cuLink and through nvJitLink (LTO): the kernel's
/// `CU_FUNC_ATTRIBUTE_NUM_REGS` is at most the limit, and above it without one.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn max_registers_takes_effect() {
    let ctx = gpu();
    let registers = |max: Option<u32>, lto: bool| {
        let mut linker = linker(&ctx);
        linker
            .lto(lto)
            .add_cuda_source(REGISTER_HUNGRY, "register_hungry.cu");
        if let Some(max) = max {
            linker.max_registers(max);
        }
        let module = ok(linker.link_and_load());
        ok(module.function("register_hungry")).num_registers()
    };
    for lto in [false, true] {
        let free = registers(None, lto);
        let limited = registers(Some(32), lto);
        println!("register_hungry (lto {lto}): {free} registers, {limited} with max_registers(32)");
        assert!(
            free > 32,
            "the test kernel needs more than 32 registers: {free}"
        );
        assert!(limited <= 32, "max_registers(32) gave {limited}");
    }
}

const WARM_GPU_DIR: &str = "GPUKERNEL_LINK_GPU_WARM_DIR";
const WARM_GPU_SOURCE: &str = "GPUKERNEL_LINK_GPU_WARM_SOURCE";

/// A warm cache hit through cuLink in a fresh process: it loads neither NVRTC nor nvJitLink,
/// and prints the time `link()` took (process start and context creation excluded).
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn warm_hit_in_a_fresh_process() {
    let ctx = gpu();
    let dir = temp_dir("gpu-warm").join("cache");
    let warm_linker = |dir: &std::path::Path, src: &std::path::Path| {
        let mut linker = ok(Linker::new(&ctx));
        linker
            .cache(CachePolicy::Dir(dir.to_path_buf()))
            .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
            .add_file(src);
        linker
    };
    let cold = ok(warm_linker(&dir, &source("functions.cu")).link());
    assert!(!cold.from_cache());
    for _ in 0..3 {
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "warm_hit_gpu_child", "--ignored", "--nocapture"])
            .env(WARM_GPU_DIR, &dir)
            .env(WARM_GPU_SOURCE, source("functions.cu"))
            .output()
            .expect("start a child test process");
        let out = String::from_utf8_lossy(&child.stdout);
        assert!(
            child.status.success(),
            "child failed:\n{out}\n{}",
            String::from_utf8_lossy(&child.stderr)
        );
        for line in out.lines().filter(|l| l.starts_with("warm hit")) {
            println!("{line}");
        }
    }
}

/// Run by [`warm_hit_in_a_fresh_process`] in a child process.
#[test]
#[ignore = "a helper run in a child process by warm_hit_in_a_fresh_process"]
fn warm_hit_gpu_child() {
    let dir = std::env::var_os(WARM_GPU_DIR).expect("run by warm_hit_in_a_fresh_process");
    let src = std::env::var_os(WARM_GPU_SOURCE).expect("run by warm_hit_in_a_fresh_process");
    let ctx = gpu();
    let mut linker = ok(Linker::new(&ctx));
    linker
        .cache(CachePolicy::Dir(dir.into()))
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(src);
    let start = Instant::now();
    let image = ok(linker.link());
    let elapsed = start.elapsed();
    assert!(image.from_cache(), "{:?}", image.cache_status());
    let loaded = gpukernel_runtime::link::loaded_tools();
    assert!(!loaded.nvrtc && !loaded.nvjitlink, "{loaded:?}");
    println!(
        "warm hit in a fresh process (cuLink, sm of the device): link() {:.3} ms",
        elapsed.as_secs_f64() * 1e3
    );
}
