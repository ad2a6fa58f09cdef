//! Linking the Rust kernels' relocatable machine code (`ffi_examples_kernels::RELOCATABLE`,
//! `Linker::add_ptx_with_sass`) with foreign machine code instead of JIT-compiling their PTX:
//! which path a link takes and why (offline, nvJitLink: needs nvcc and nvJitLink like
//! `link_offline`), and on a GPU (feature `gpu`) that such a link reports the machine-code path
//! and its kernels give the right results.

mod link_support;

use std::path::PathBuf;

use ffi_examples_kernels::RELOCATABLE;
use ffi_examples_kernels::ffi::{add_one_cubin, multiply_vectors, square_archive};
use gpukernel_runtime::link::{Arch, CachePolicy, Linker, LoadPath};
use link_support::{PTX, artifacts, cuda_dir, ok, run_nvcc, source, temp_dir};

/// `functions.cu` compiled by nvcc to a relocatable sm_90 cubin (machine code, nothing left to
/// compile at link time), once per process.
fn functions_cubin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = temp_dir("machine-code");
            let out = dir.join("functions.cubin");
            let src = source("functions.cu");
            let include = format!("-I{}", cuda_dir().display());
            run_nvcc(
                &dir,
                &[
                    "-cubin",
                    "-rdc=true",
                    "-arch=sm_90",
                    &include,
                    &src.display().to_string(),
                    "-o",
                    &out.display().to_string(),
                ],
            );
            out
        })
        .clone()
}

/// Our kernels with their machine code, and every foreign function they call as sm_90 machine
/// code: a cubin of `functions.cu` and the precompiled cubin, fatbin, archive and object.
fn all_machine_code(linker: &mut Linker) {
    let arts = artifacts();
    linker.add_ptx_with_sass(PTX, RELOCATABLE, "kernels.ptx");
    // SAFETY: built from cuda/*.cu, whose definitions have the signatures src/ffi.rs declares.
    unsafe {
        linker
            .add_file_unchecked(functions_cubin())
            .add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
}

fn offline(arch: &str) -> Linker {
    let mut linker = ok(Linker::for_arch(arch));
    linker.cache(CachePolicy::Disabled);
    linker
}

#[test]
fn the_kernels_machine_code_links_with_foreign_machine_code() {
    let mut linker = offline("sm_90");
    all_machine_code(&mut linker);
    assert_eq!(
        ok(linker.load_path()),
        LoadPath::LinkedMachineCode {
            arch: Arch::from_compute_capability(9, 0)
        }
    );
    let image = ok(linker.link());
    let entries = ok(image.entry_points());
    for k in [
        "multiply_vectors",
        "add_one_cubin",
        "square_archive",
        "sub_one_object",
    ] {
        assert!(
            entries.iter().any(|e| e == k),
            "{k} missing from {entries:?}"
        );
    }
}

#[test]
fn with_a_source_to_compile_the_kernels_stay_machine_code_and_the_reason_says_so() {
    let arts = artifacts();
    let mut linker = offline("sm_90");
    linker
        .add_ptx_with_sass(PTX, RELOCATABLE, "kernels.ptx")
        .add_file(source("functions.cu"));
    // SAFETY: as in `all_machine_code`.
    unsafe {
        linker
            .add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    let LoadPath::Linked { reason } = ok(linker.load_path()) else {
        panic!("expected a link that compiles functions.cu");
    };
    assert!(
        reason.contains("`kernels.ptx` is linked as machine code")
            && reason.contains("functions.cu` (cu) holds no machine code for sm_90"),
        "{reason}"
    );
    ok(linker.link());
}

#[test]
fn code_generation_options_and_other_architectures_fall_back_to_the_ptx() {
    let mut linker = offline("sm_90");
    all_machine_code(&mut linker);
    linker.line_info(true);
    let LoadPath::Linked { reason } = ok(linker.load_path()) else {
        panic!("expected the PTX to be linked");
    };
    assert!(
        reason.contains("`kernels.ptx` is linked as PTX")
            && reason.contains("code generation options"),
        "{reason}"
    );
    // The PTX path links too (its own code generation).
    ok(linker.link());
    // sm_86: the kernels crate embeds sm_80 and sm_90 objects only.
    let mut linker = offline("sm_86");
    linker
        .add_ptx_with_sass(PTX, RELOCATABLE, "kernels.ptx")
        .add_file(source("functions.cu"));
    let LoadPath::Linked { reason } = ok(linker.load_path()) else {
        panic!("expected the PTX to be linked");
    };
    assert!(
        reason.contains("its machine code is for sm_80, sm_90, not for the link's sm_86"),
        "{reason}"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_machine_code_link_runs_on_the_gpu() {
    let ctx = ok(ok(gpukernel_runtime::Device::get(0)).primary_context());
    let (major, minor) = ok(ctx.device().compute_capability());
    assert_eq!(
        (major, minor),
        (9, 0),
        "the foreign machine code is built for sm_90"
    );
    let mut linker = ok(Linker::new(&ctx));
    linker.cache(CachePolicy::Disabled);
    all_machine_code(&mut linker);
    assert_eq!(
        ok(linker.load_path()),
        LoadPath::LinkedMachineCode {
            arch: Arch::from_compute_capability(9, 0)
        }
    );
    let started = std::time::Instant::now();
    let module = ok(linker.link_and_load());
    println!(
        "machine-code link and load: {:?} (nothing JIT-compiled)",
        started.elapsed()
    );
    let n = 4096;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 100.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let stream = ctx.default_stream();
    let cfg = ok(gpukernel_runtime::LaunchConfig::for_elements(n));
    let (da, db) = (ok(ctx.htod_copy(&a)), ok(ctx.htod_copy(&b)));
    let mut out = ok(ctx.alloc_zeros::<f32>(n));
    ok(stream.launch(
        &ok(module.kernel(multiply_vectors)),
        cfg,
        (&da, &db, &mut out),
    ));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_eq!(ok(out.to_host_vec()), want, "multiply_vectors");
    ok(stream.launch(&ok(module.kernel(add_one_cubin)), cfg, (&da, &mut out)));
    let want: Vec<f32> = a.iter().map(|x| x + 1.0).collect();
    assert_eq!(ok(out.to_host_vec()), want, "add_one_cubin");
    ok(stream.launch(&ok(module.kernel(square_archive)), cfg, (&da, &mut out)));
    let want: Vec<f32> = a.iter().map(|x| x * x).collect();
    assert_eq!(ok(out.to_host_vec()), want, "square_archive");
}
