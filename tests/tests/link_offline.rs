//! The run-time linker without a GPU: NVRTC compiles, nvJitLink links the Rust kernels' PTX
//! with foreign code for sm_90, every error case, and the on-disk cache.
//!
//! Needs NVRTC, nvJitLink and nvcc (the CUDA compiler wheels that `cargo xtask doctor`
//! installs, found through GPUKERNEL_CUDA_TOOLS, CUDA_HOME, /usr/local/cuda or the workspace's
//! `.cuda-tools`); without them these tests fail, saying so.

mod link_support;

use std::path::Path;
use std::time::Instant;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{
    Arch, CachePolicy, CacheStatus, CudaOutput, InputKind, LinkedImage, Linker, compile_cuda,
};
use link_support::{PTX, artifacts, err, ok, source, temp_dir};

/// The kernels whose foreign code is `functions.cu`.
const FUNCTIONS_KERNELS: [&str; 6] = [
    "multiply_vectors",
    "sum_rows",
    "divide_checked",
    "dot_with",
    "swap_and_scale",
    "add_through_pointer",
];

fn offline() -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn nvrtc_compiles_functions_cu() {
    let ptx = ok(compile_cuda(
        link_support::SOURCES[1].1,
        "functions.cu",
        &[("gpukernel_abi.h".into(), link_support::SOURCES[0].1.into())],
        Arch::from_compute_capability(9, 0),
        &[],
        CudaOutput::Ptx,
    ));
    let ptx = String::from_utf8(ptx).unwrap();
    assert!(ptx.contains(".target sm_90"), "{ptx}");
    for f in [
        "mul_f32_f32",
        "sum_reduce",
        "checked_div",
        "dot2",
        "swap_scale",
        "add_in_place",
    ] {
        assert!(
            ptx.lines()
                .any(|l| l.starts_with(".visible .func") && l.contains(f)),
            "{f} is not an exported function of the PTX:\n{ptx}"
        );
    }
    // Through the linker, from the file: the kernels' callees are in the cubin.
    let image = ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &FUNCTIONS_KERNELS)
        .add_file(source("functions.cu"))
        .link());
    let functions = ok(image.functions());
    for f in [
        "mul_f32_f32",
        "sum_reduce",
        "checked_div",
        "dot2",
        "swap_scale",
        "add_in_place",
    ] {
        assert!(
            functions.iter().any(|g| g == f),
            "{f} missing from {functions:?}"
        );
    }
    assert!(image.timings().compile > std::time::Duration::ZERO);
}

#[test]
fn rust_ptx_and_functions_cu_link_for_sm_90() {
    let started = Instant::now();
    let image = ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &FUNCTIONS_KERNELS)
        .add_file(source("functions.cu"))
        .link());
    println!(
        "offline link (NVRTC + nvJitLink), cold: {:?} ({:?})",
        started.elapsed(),
        image.timings()
    );
    assert_eq!(
        image.arch().map(|a| a.to_string()).as_deref(),
        Some("sm_90")
    );
    let mut want: Vec<String> = FUNCTIONS_KERNELS.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(sorted(ok(image.entry_points())), want);
    assert!(image.cubin().starts_with(b"\x7fELF"));
    check_with_readelf(&image, &FUNCTIONS_KERNELS);
}

/// Cross-checks the entry points with binutils' `readelf`, an independent ELF reader, when it
/// is installed.
fn check_with_readelf(image: &LinkedImage, kernels: &[&str]) {
    let dir = temp_dir("readelf");
    let path = dir.join("linked.cubin");
    std::fs::write(&path, image.cubin()).unwrap();
    let Ok(out) = std::process::Command::new("readelf")
        .arg("-sW")
        .arg(&path)
        .output()
    else {
        println!("readelf not installed: entry points checked by the linker's ELF reader only");
        return;
    };
    let table = String::from_utf8_lossy(&out.stdout);
    for k in kernels {
        assert!(
            table.lines().any(|l| l.contains(" FUNC ")
                && l.contains(" GLOBAL ")
                && l.trim_end().ends_with(k)),
            "readelf does not list kernel {k}:\n{table}"
        );
    }
}

#[test]
fn every_precompiled_kind_links_offline() {
    let arts = artifacts();
    let mut linker = offline();
    linker
        .add_ptx(PTX, "kernels.ptx")
        .add_file(source("functions.cu"));
    // SAFETY: the cubin, fatbin, archive and object are built from cuda/*_lib.cu, whose
    // definitions have the signatures that src/ffi.rs declares.
    unsafe {
        linker
            .add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    let image = ok(linker.link());
    let entries = ok(image.entry_points());
    for k in [
        "multiply_vectors",
        "add_one_cubin",
        "affine_fatbin",
        "square_archive",
        "sub_one_object",
    ] {
        assert!(
            entries.iter().any(|e| e == k),
            "{k} missing from {entries:?}"
        );
    }
    let functions = ok(image.functions());
    for f in [
        "cubin_add_one",
        "fatbin_affine",
        "archive_square",
        "object_sub_one",
    ] {
        assert!(
            functions.iter().any(|g| g == f),
            "{f} missing from {functions:?}"
        );
    }
    let kinds: Vec<InputKind> = image.inputs().iter().map(|i| i.kind).collect();
    assert_eq!(
        kinds,
        [
            InputKind::Ptx,
            InputKind::Cuda,
            InputKind::Cubin,
            InputKind::Fatbin,
            InputKind::Library,
            InputKind::Object
        ]
    );
}

#[test]
fn ltoir_links_through_nvjitlink() {
    // `.cu` to LTO-IR by the linker itself...
    let image = ok(offline()
        .lto(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .link());
    assert_eq!(ok(image.entry_points()), ["multiply_vectors"]);
    // ...and an `.ltoir` file made ahead of time.
    let ltoir = ok(compile_cuda(
        link_support::SOURCES[1].1,
        "functions.cu",
        &[("gpukernel_abi.h".into(), link_support::SOURCES[0].1.into())],
        Arch::from_compute_capability(9, 0),
        &[],
        CudaOutput::LtoIr,
    ));
    let path = temp_dir("ltoir").join("functions.ltoir");
    std::fs::write(&path, &ltoir).unwrap();
    let mut linker = offline();
    linker.add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"]);
    // LTO-IR keeps no parameter lists: the link says it is unchecked.
    // SAFETY: compiled from functions.cu, whose `mul_f32_f32` matches src/ffi.rs.
    unsafe { linker.add_file_unchecked(&path) };
    let image = ok(linker.link());
    assert_eq!(ok(image.entry_points()), ["multiply_vectors"]);
}

#[test]
fn syntax_error_reports_nvrtc_log_with_file_and_line() {
    let path = source("errors/syntax_error.cu");
    let e = err(offline().add_file(&path).link());
    let Error::NvrtcCompile { file, options, log } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(file, &path);
    let at = format!("{}(6): error", path.display());
    assert!(log.contains(&at), "log lacks `{at}`:\n{log}");
    assert!(options.iter().any(|o| o == "-rdc=true"), "{options:?}");
    assert!(
        options.iter().any(|o| o == "--gpu-architecture=sm_90"),
        "{options:?}"
    );
    let shown = e.to_string();
    assert!(
        shown.contains(&at) && shown.contains("-rdc=true"),
        "{shown}"
    );
}

#[test]
fn nvrtc_options_and_in_memory_sources() {
    // A user option reaches NVRTC: the source only compiles with -DSCALE.
    let src = "extern \"C\" __device__ int scaled(float* r, float x) { *r = x * SCALE; return 0; }\n\
               extern \"C\" __global__ void use_scaled(float* p) { scaled(p, *p); }";
    let e = err(offline().add_cuda_source(src, "scaled.cu").link());
    assert!(
        matches!(&e, Error::NvrtcCompile { log, .. } if log.contains("scaled.cu(1)")),
        "{e}"
    );
    let image = ok(offline()
        .add_cuda_source(src, "scaled.cu")
        .nvrtc_option("-DSCALE=2.0f")
        .link());
    assert_eq!(ok(image.entry_points()), ["use_scaled"]);
    // An invalid option is reported with the options used.
    let e = err(offline()
        .add_cuda_source(src, "scaled.cu")
        .nvrtc_option("--no-such-option")
        .link());
    assert!(
        matches!(&e, Error::NvrtcCompile { options, .. } if options.iter().any(|o| o == "--no-such-option")),
        "{e}"
    );
}

#[test]
fn missing_file_is_named() {
    let e = err(offline()
        .add_ptx(PTX, "kernels.ptx")
        .add_file("/no/such/dir/functions.cu")
        .link());
    let Error::LinkInputRead { path, source } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(path, Path::new("/no/such/dir/functions.cu"));
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(e.to_string().contains("/no/such/dir/functions.cu"));
}

#[test]
fn unsupported_extension_is_named() {
    let e = err(offline().add_file("kernels/helper.cpp").link());
    let Error::UnsupportedLinkInput {
        path,
        extension,
        supported,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(path, Path::new("kernels/helper.cpp"));
    assert_eq!(extension, ".cpp");
    assert!(
        supported.contains(".cu") && supported.contains(".ltoir"),
        "{supported}"
    );
    let e = err(offline().add_file("no_extension").link());
    assert!(
        matches!(e, Error::UnsupportedLinkInput { ref extension, .. } if extension == "(none)"),
        "{e}"
    );
}

#[test]
fn kind_and_shape_mismatches_are_caught_before_the_linker() {
    let arts = artifacts();
    let fatbin = std::fs::read(&arts.fatbin).unwrap();
    let archive = std::fs::read(&arts.archive).unwrap();
    let dir = temp_dir("mismatch");

    // A fatbin handed over as a cubin.
    let e = err(offline()
        .add_data(InputKind::Cubin, fatbin.clone(), "lib.cubin")
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { kind: InputKind::Cubin, found, .. } if found.contains("fatbin")),
        "{e}"
    );
    // PTX text in a file named .cubin.
    let path = dir.join("text.cubin");
    std::fs::write(&path, PTX).unwrap();
    let e = err(offline().add_file(&path).link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { name, .. } if name.contains("text.cubin")),
        "{e}"
    );
    // A truncated archive (the driver has aborted the process on such input).
    let e = err(offline()
        .add_data(
            InputKind::Library,
            archive[..archive.len() - 100].to_vec(),
            "cut.a",
        )
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { found, .. } if found.contains("truncated")),
        "{e}"
    );
    // A truncated fatbin.
    let e = err(offline()
        .add_data(
            InputKind::Fatbin,
            fatbin[..fatbin.len() / 2].to_vec(),
            "cut.fatbin",
        )
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { found, .. } if found.contains("truncated")),
        "{e}"
    );
    // Text that is not PTX, an empty input, binary bytes given as CUDA source.
    let e = err(offline()
        .add_data(InputKind::Ptx, b"int main() {}".to_vec(), "x.ptx")
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { found, .. } if found.contains(".version")),
        "{e}"
    );
    let e = err(offline()
        .add_data(InputKind::Object, Vec::new(), "empty.o")
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { found, .. } if found.contains("empty")),
        "{e}"
    );
    let e = err(offline()
        .add_data(InputKind::Cuda, archive, "lib.cu")
        .link());
    assert!(
        matches!(&e, Error::LinkInputMismatch { found, .. } if found.contains("archive")),
        "{e}"
    );
    let e = err(offline()
        .add_data(InputKind::LtoIr, PTX.as_bytes().to_vec(), "k.ltoir")
        .link());
    assert!(
        matches!(
            &e,
            Error::LinkInputMismatch {
                kind: InputKind::LtoIr,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn empty_input_list_is_an_error() {
    let e = err(offline().link());
    assert!(matches!(e, Error::EmptyLink), "{e}");
    assert!(matches!(
        Linker::for_simulator().link(),
        Err(Error::EmptyLink)
    ));
}

#[test]
fn undefined_foreign_symbol_is_named() {
    // The kernel calls `cubin_add_one`, but only functions.cu is linked.
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"])
        .add_file(source("functions.cu"))
        .link());
    let Error::UndefinedSymbol {
        symbol,
        inputs,
        error_log,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(symbol, "cubin_add_one");
    assert!(error_log.contains("cubin_add_one"), "{error_log}");
    assert_eq!(inputs.len(), 2);
    let shown = e.to_string();
    assert!(
        shown.contains("declare_device!") && shown.contains("add the .cu"),
        "{shown}"
    );
    // Every kernel of the crate with functions.cu only: the first missing one is named.
    let e = err(offline()
        .add_ptx(PTX, "kernels.ptx")
        .add_file(source("functions.cu"))
        .link());
    assert!(
        matches!(&e, Error::UndefinedSymbol { symbol, .. }
        if ["cubin_add_one", "fatbin_affine", "archive_square", "object_sub_one"].contains(&symbol.as_str())),
        "{e}"
    );
}

#[test]
fn unknown_kernel_selection_is_named() {
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vector"])
        .link());
    let Error::KernelNotFound { name, available } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(name, "multiply_vector");
    assert!(
        available.iter().any(|k| k == "multiply_vectors"),
        "{available:?}"
    );
}

#[test]
fn duplicate_definitions_are_named_and_repeats_are_linked_once() {
    // The same file twice, and the same bytes twice: linked once, no error.
    let image = ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_file(source("functions.cu"))
        .add_file(link_support::cuda_dir().join(".").join("functions.cu"))
        .link());
    assert_eq!(image.inputs().len(), 2);

    // Two different inputs defining the same symbols.
    let copy = link_support::SOURCES[1]
        .1
        .replace("// ret = a * b", "// a copy");
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_cuda_source(&copy, "copy_of_functions.cu")
        .include_dir(link_support::cuda_dir())
        .link());
    let Error::DuplicateSymbol {
        symbol, defined_in, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert!(
        [
            "mul_f32_f32",
            "add_in_place",
            "checked_div",
            "dot2",
            "sum_reduce",
            "swap_scale"
        ]
        .contains(&symbol.as_str()),
        "{symbol}"
    );
    assert_eq!(defined_in.len(), 2, "{defined_in:?}");
    assert!(defined_in[1] == "copy_of_functions.cu", "{defined_in:?}");

    // A cubin defining what a source defines.
    let e = err(offline()
        .add_cuda_source("#include \"gpukernel_abi.h\"\nextern \"C\" __device__ int cubin_add_one(float* r, float x) { *r = x; return 0; }", "again.cu")
        .include_dir(link_support::cuda_dir())
        .add_file(&artifacts().cubin)
        .link());
    assert!(
        matches!(&e, Error::DuplicateSymbol { symbol, .. } if symbol == "cubin_add_one"),
        "{e}"
    );
}

#[test]
fn wrong_architecture_is_named() {
    let arts = artifacts();
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["affine_fatbin"])
        .add_file(&arts.wrong_arch_fatbin)
        .link());
    let Error::WrongArchitecture {
        input,
        arch,
        info_log,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert!(input.ends_with("wrong_arch.fatbin"), "{input}");
    assert_eq!(arch, "sm_90");
    assert!(info_log.contains("sm_80"), "{info_log}");
    // A cubin built for sm_90 is refused when linking for sm_80.
    let mut linker = ok(Linker::for_arch("sm_80"));
    linker.cache(CachePolicy::Disabled);
    let e = err(linker.add_file(&arts.cubin).link());
    assert!(
        matches!(&e, Error::WrongArchitecture { arch, .. } if arch == "sm_80"),
        "{e}"
    );
    // Invalid architecture names.
    assert!(matches!(
        Linker::for_arch("sm_9x"),
        Err(Error::InvalidLinkOption { .. })
    ));
}

#[test]
fn simulator_checks_inputs_and_compiles_nothing() {
    let image = ok(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .link());
    assert!(image.is_simulator() && image.cubin().is_empty());
    // Nothing is linked, but `.cu` inputs are compiled (NVRTC) to check the definitions of
    // the declarations the kernels use, as on a GPU: a source that does not compile is
    // refused there too.
    let e = err(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_file(source("errors/syntax_error.cu"))
        .link());
    assert!(
        matches!(&e, Error::NvrtcCompile { file, .. } if file.ends_with("syntax_error.cu")),
        "{e}"
    );
    assert!(String::from_utf8_lossy(image.module_image()).contains(".entry multiply_vectors"));
    let e = err(Linker::for_simulator()
        .add_file("/no/such/file.cubin")
        .link());
    assert!(matches!(e, Error::LinkInputRead { .. }), "{e}");
}

#[test]
fn simulator_refuses_what_a_gpu_link_would_refuse() {
    // multiply_vectors calls mul_f32_f32: without functions.cu a GPU link fails, and so does
    // the simulator's, naming the symbol.
    let e = err(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .link());
    match &e {
        Error::UndefinedSymbol { symbol, .. } => assert_eq!(symbol, "mul_f32_f32", "{e}"),
        other => panic!("expected UndefinedSymbol, got {other}"),
    }
    assert!(e.to_string().contains("mul_f32_f32"), "{e}");
    // With the source that defines it, the simulator link succeeds.
    ok(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .link());
}

fn cached(dir: &Path) -> Linker {
    cached_with(dir, &source("functions.cu"))
}

fn cached_with(dir: &Path, functions_cu: &Path) -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker
        .cache(CachePolicy::Dir(dir.to_path_buf()))
        .add_ptx_kernels(PTX, "kernels.ptx", &FUNCTIONS_KERNELS)
        .add_file(functions_cu);
    linker
}

fn entry_file(image: &LinkedImage) -> std::path::PathBuf {
    match image.cache_status() {
        CacheStatus::Hit { path } => path.clone(),
        CacheStatus::Miss {
            stored: Some(Ok(path)),
        }
        | CacheStatus::Rebuilt {
            stored: Some(Ok(path)),
            ..
        } => path.clone(),
        other => panic!("no cache entry: {other:?}"),
    }
}

#[test]
fn cache_hit_after_cold_link() {
    let dir = temp_dir("cache-hit");
    let cold = ok(cached(&dir).link());
    assert!(
        matches!(
            cold.cache_status(),
            CacheStatus::Miss {
                stored: Some(Ok(_))
            }
        ),
        "{:?}",
        cold.cache_status()
    );
    let warm = ok(cached(&dir).link());
    assert!(warm.from_cache(), "{:?}", warm.cache_status());
    assert_eq!(warm.cubin(), cold.cubin());
    assert_eq!(
        sorted(ok(warm.entry_points())),
        sorted(ok(cold.entry_points()))
    );
    println!(
        "offline link sm_90 (6 kernels + functions.cu): cold {:?} (NVRTC {:?}, nvJitLink {:?}), warm {:?}",
        cold.timings().total,
        cold.timings().compile,
        cold.timings().link,
        warm.timings().total
    );
    // Any change of input, option or architecture misses.
    let mut other = cached(&dir);
    other.nvrtc_option("-DUNUSED=1");
    assert!(!ok(other.link()).from_cache());
    let mut other = cached(&dir);
    other.add_file(&artifacts().cubin);
    assert!(!ok(other.link()).from_cache());
    let mut sm80 = ok(Linker::for_arch("sm_80"));
    sm80.cache(CachePolicy::Dir(dir.clone()))
        .add_file(source("functions.cu"));
    assert!(!ok(sm80.link()).from_cache());
}

#[test]
fn corrupt_and_truncated_cache_entries_are_rebuilt() {
    let dir = temp_dir("cache-corrupt");
    let cold = ok(cached(&dir).link());
    let path = entry_file(&cold);
    let good = std::fs::read(&path).unwrap();

    let mut corrupt = good.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x5a;
    std::fs::write(&path, &corrupt).unwrap();
    let rebuilt = ok(cached(&dir).link());
    assert!(
        matches!(rebuilt.cache_status(), CacheStatus::Rebuilt { reason, .. } if reason.contains("checksum")),
        "{:?}",
        rebuilt.cache_status()
    );
    assert_eq!(rebuilt.cubin(), cold.cubin());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        good,
        "the entry was rewritten"
    );

    std::fs::write(&path, &good[..good.len() - 7]).unwrap();
    let rebuilt = ok(cached(&dir).link());
    assert!(
        matches!(rebuilt.cache_status(), CacheStatus::Rebuilt { reason, .. } if reason.contains("length")),
        "{:?}",
        rebuilt.cache_status()
    );
    std::fs::write(&path, &good[..20]).unwrap();
    let rebuilt = ok(cached(&dir).link());
    assert!(
        matches!(rebuilt.cache_status(), CacheStatus::Rebuilt { .. }),
        "{:?}",
        rebuilt.cache_status()
    );
    assert!(ok(cached(&dir).link()).from_cache());
}

#[test]
fn concurrent_links_share_one_cache() {
    let dir = temp_dir("cache-threads");
    let images: Vec<LinkedImage> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ok(cached(&dir).link())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for image in &images[1..] {
        assert_eq!(image.cubin(), images[0].cubin());
    }
    assert!(ok(cached(&dir).link()).from_cache());
    // The tools' version records (`*-info`) aside.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| !n.to_string_lossy().ends_with("-info"))
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "one entry, no temporary files: {leftovers:?}"
    );
}

/// Environment variables naming the cache folder and the source of [`concurrent_process_child`].
const CHILD_DIR: &str = "GPUKERNEL_LINK_TEST_CHILD_DIR";
const CHILD_SOURCE: &str = "GPUKERNEL_LINK_TEST_CHILD_SOURCE";

#[test]
fn concurrent_processes_share_one_cache() {
    let dir = temp_dir("cache-processes");
    let exe = std::env::current_exe().unwrap();
    // Started together, waited for together: the three link and write the entry at once.
    let children: Vec<_> = (0..3)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "concurrent_process_child",
                    "--ignored",
                    "--nocapture",
                ])
                .env(CHILD_DIR, &dir)
                .env(CHILD_SOURCE, source("functions.cu"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start a child test process")
        })
        .collect();
    for child in children {
        let child = child
            .wait_with_output()
            .expect("wait for a child test process");
        let out = String::from_utf8_lossy(&child.stdout);
        assert!(
            child.status.success(),
            "child failed:\n{out}\n{}",
            String::from_utf8_lossy(&child.stderr)
        );
        assert!(out.contains("child linked"), "{out}");
    }
    let image = ok(cached(&dir).link());
    assert!(image.from_cache(), "{:?}", image.cache_status());
}

/// Run by [`concurrent_processes_share_one_cache`] in child processes.
#[test]
#[ignore = "a helper run in child processes by concurrent_processes_share_one_cache"]
fn concurrent_process_child() {
    let dir = std::env::var_os(CHILD_DIR).expect("run by concurrent_processes_share_one_cache");
    let src = std::env::var_os(CHILD_SOURCE).expect("run by concurrent_processes_share_one_cache");
    let image = ok(cached_with(Path::new(&dir), Path::new(&src)).link());
    assert!(!image.cubin().is_empty());
    println!("child linked ({:?})", image.cache_status());
}

const WARM_CHILD_DIR: &str = "GPUKERNEL_LINK_TEST_WARM_DIR";

/// A warm hit in a fresh process loads neither NVRTC nor nvJitLink: their versions (and
/// NVRTC's architectures) are on record in the cache directory, keyed by the library files.
#[test]
fn warm_hit_in_a_fresh_process_loads_no_compiler() {
    // A folder the link creates (`temp_dir` makes its own).
    let dir = temp_dir("cache-warm-process").join("cache");
    let cold = ok(cached(&dir).link());
    assert!(!cold.from_cache());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the cache directory is private");
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "warm_hit_child", "--ignored", "--nocapture"])
        .env(WARM_CHILD_DIR, &dir)
        .env(CHILD_SOURCE, source("functions.cu"))
        .output()
        .expect("start a child test process");
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "child failed:\n{out}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    assert!(out.contains("warm hit without NVRTC or nvJitLink"), "{out}");
}

/// Run by [`warm_hit_in_a_fresh_process_loads_no_compiler`] in a child process.
#[test]
#[ignore = "a helper run in a child process by warm_hit_in_a_fresh_process_loads_no_compiler"]
fn warm_hit_child() {
    let dir = std::env::var_os(WARM_CHILD_DIR)
        .expect("run by warm_hit_in_a_fresh_process_loads_no_compiler");
    let src = std::env::var_os(CHILD_SOURCE)
        .expect("run by warm_hit_in_a_fresh_process_loads_no_compiler");
    let image = ok(cached_with(Path::new(&dir), Path::new(&src)).link());
    assert!(image.from_cache(), "{:?}", image.cache_status());
    let loaded = gpukernel_runtime::link::loaded_tools();
    assert!(!loaded.nvrtc, "NVRTC was loaded for a cache hit");
    assert!(!loaded.nvjitlink, "nvJitLink was loaded for a cache hit");
    println!(
        "warm hit without NVRTC or nvJitLink: link() {:?}",
        image.timings().total
    );
}

/// A bad `GPUKERNEL_CACHE_MAX` is an error that names the variable and its value (a child
/// process: the variable would reach every test of this one).
#[test]
fn bad_cache_max_is_named() {
    let dir = temp_dir("cache-max-bad");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "cache_max_child", "--ignored", "--nocapture"])
        .env(WARM_CHILD_DIR, &dir)
        .env("GPUKERNEL_CACHE_MAX", "12 parsecs")
        .output()
        .expect("start a child test process");
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "{out}");
    assert!(
        out.contains("InvalidCacheMax: invalid GPUKERNEL_CACHE_MAX \"12 parsecs\""),
        "{out}"
    );
}

/// Run by [`bad_cache_max_is_named`] in a child process.
#[test]
#[ignore = "a helper run in a child process by bad_cache_max_is_named"]
fn cache_max_child() {
    let dir = std::env::var_os(WARM_CHILD_DIR).expect("run by bad_cache_max_is_named");
    match cached(Path::new(&dir)).link() {
        Err(e @ Error::InvalidCacheMax { .. }) => println!("InvalidCacheMax: {e}"),
        other => panic!("expected InvalidCacheMax, got {other:?}"),
    }
}

/// `.cu` inputs compiled with the link's options, each one's output and the linker's options
/// reported; the options are part of the cache key.
#[test]
fn link_options_are_passed_and_reported() {
    let mut linker = offline();
    linker
        .max_registers(32)
        .optimization_level(2)
        .line_info(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"));
    let image = ok(linker.link());
    let options = image.options();
    assert_eq!(options.max_registers, Some(32));
    assert_eq!(options.optimization_level, Some(2));
    assert!(options.line_info && !options.debug);
    assert_eq!(
        image.linker_options(),
        [
            "-arch=sm_90",
            "-maxrregcount=32",
            "-Xptxas=-O2",
            "-lineinfo"
        ]
    );
    let [compiled] = image.compiled() else {
        panic!("{:?}", image.compiled())
    };
    assert!(
        compiled.input.ends_with("functions.cu"),
        "{}",
        compiled.input
    );
    assert_eq!(compiled.kind, InputKind::Ptx);
    assert!(String::from_utf8_lossy(&compiled.code).contains("mul_f32_f32"));
    for option in ["--maxrregcount=32", "-lineinfo", "-rdc=true"] {
        assert!(
            compiled.nvrtc_options.iter().any(|o| o == option),
            "{option} in {:?}",
            compiled.nvrtc_options
        );
    }
    // Debug information, and LTO: the `.cu` input becomes LTO-IR.
    let mut linker = offline();
    linker
        .debug(true)
        .lto(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"));
    let image = ok(linker.link());
    assert_eq!(image.linker_options(), ["-arch=sm_90", "-lto", "-g"]);
    assert_eq!(image.compiled()[0].kind, InputKind::LtoIr);
    assert!(image.compiled()[0].nvrtc_options.iter().any(|o| o == "-G"));
    // Each option is in the cache key.
    let dir = temp_dir("cache-options");
    ok(cached(&dir).link());
    assert!(ok(cached(&dir).link()).from_cache());
    let sets: [fn(&mut Linker); 4] = [
        |l: &mut Linker| {
            l.max_registers(64);
        },
        |l: &mut Linker| {
            l.optimization_level(0);
        },
        |l: &mut Linker| {
            l.line_info(true);
        },
        |l: &mut Linker| {
            l.debug(true);
        },
    ];
    for set in sets {
        let mut linker = cached(&dir);
        set(&mut linker);
        let image = ok(linker.link());
        assert!(!image.from_cache(), "{:?}", image.options());
        assert!(
            image.compiled().len() == 1,
            "a miss reports what it compiled"
        );
    }
}

/// Sets one option of a linker.
type SetOption = fn(&mut Linker);

#[test]
fn invalid_link_options_are_named() {
    let cases: [(SetOption, &str); 3] = [
        (
            |l: &mut Linker| {
                l.max_registers(8);
            },
            "max_registers(8)",
        ),
        (
            |l: &mut Linker| {
                l.max_registers(256);
            },
            "max_registers(256)",
        ),
        (
            |l: &mut Linker| {
                l.optimization_level(4);
            },
            "optimization_level(4)",
        ),
    ];
    for (set, name) in cases {
        let mut linker = offline();
        set(&mut linker);
        linker.add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"]);
        let e = err(linker.link());
        assert!(
            matches!(&e, Error::InvalidLinkOption { option, .. } if option == name),
            "{e}"
        );
    }
}

/// With `lto(true)`, inputs that are not LTO-IR (Rust PTX, cubin, fatbin, object, archive)
/// link as they are beside the LTO part.
#[test]
fn lto_links_other_inputs_beside_the_lto_part() {
    let arts = artifacts();
    let mut linker = offline();
    linker
        .lto(true)
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[
                "multiply_vectors",
                "add_one_cubin",
                "affine_fatbin",
                "square_archive",
                "sub_one_object",
            ],
        )
        .add_file(source("functions.cu"));
    // SAFETY: built from cuda/*_lib.cu, whose definitions have the signatures that src/ffi.rs
    // declares.
    unsafe {
        linker
            .add_file_unchecked(&arts.cubin)
            .add_file_unchecked(&arts.fatbin)
            .add_file_unchecked(&arts.archive)
            .add_file_unchecked(&arts.object);
    }
    let image = ok(linker.link());
    assert!(image.linker_options().iter().any(|o| o == "-lto"));
    assert_eq!(sorted(ok(image.entry_points())).len(), 5);
    assert_eq!(image.compiled()[0].kind, InputKind::LtoIr);
}
