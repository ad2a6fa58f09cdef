//! Link shapes beyond the ordinary, without a GPU: link-time optimisation asked for with and
//! without LTO-IR among the inputs, LTO-IR inside fatbins, objects and archives, one symbol
//! defined by every pair of input kinds, architecture-specific targets, raw linker options,
//! and undefined symbols named with their Rust declaration.
//!
//! Needs NVRTC, nvJitLink and nvcc (the CUDA compiler wheels that `cargo xtask doctor`
//! installs); without them these tests fail, saying so.

mod link_support;

use std::path::{Path, PathBuf};

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{
    CachePolicy, CacheStatus, CudaOutput, InputKind, Linker, compile_cuda,
};
use link_support::{PTX, artifacts, err, ok, run_nvcc, source, temp_dir};

fn offline() -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker
}

fn has_lto(linker: &Linker) -> bool {
    let image = ok(linker.link());
    image.linker_options().iter().any(|o| o == "-lto")
}

/// `lto(true)` with inputs none of which carries LTO-IR: nothing to optimise at the NVVM
/// level, so the link is an ordinary one (it failed with nvJitLink's opaque
/// `NVVM_ERROR_NO_MODULE_IN_PROGRAM`).
#[test]
fn lto_without_ltoir_links_plainly() {
    let arts = artifacts();
    let cases: [(&str, Option<&Path>); 5] = [
        ("saxpy", None),
        ("add_one_cubin", Some(&arts.cubin)),
        ("affine_fatbin", Some(&arts.fatbin)),
        ("square_archive", Some(&arts.archive)),
        ("sub_one_object", Some(&arts.object)),
    ];
    for (kernel, file) in cases {
        let mut linker = offline();
        linker
            .lto(true)
            .add_ptx_kernels(PTX, "kernels.ptx", &[kernel]);
        if let Some(file) = file {
            // SAFETY: built from cuda/*_lib.cu, whose definitions match src/ffi.rs.
            unsafe { linker.add_file_unchecked(file) };
        }
        let image = ok(linker.link());
        assert_eq!(ok(image.entry_points()), [kernel], "{file:?}");
        assert!(
            !image.linker_options().iter().any(|o| o == "-lto"),
            "{kernel}: {:?}",
            image.linker_options()
        );
    }
}

/// LTO-IR made ahead of time, with every kind that carries none, under `lto(true)`: LTO
/// among the LTO-IR, the rest linked as code.
#[test]
fn ltoir_file_links_beside_every_other_kind() {
    let arts = artifacts();
    let ltoir = ok(compile_cuda(
        link_support::SOURCES[1].1,
        "functions.cu",
        &[("gpukernel_abi.h".into(), link_support::SOURCES[0].1.into())],
        "sm_90".parse().unwrap(),
        &[],
        CudaOutput::LtoIr,
    ));
    let kernels = [
        "multiply_vectors",
        "add_one_cubin",
        "affine_fatbin",
        "square_archive",
        "sub_one_object",
    ];
    for lto in [true, false] {
        let mut linker = offline();
        linker
            .lto(lto)
            .add_ptx_kernels(PTX, "kernels.ptx", &kernels);
        // SAFETY: compiled from functions.cu and cuda/*_lib.cu, whose definitions match
        // src/ffi.rs.
        unsafe {
            linker
                .add_data_unchecked(InputKind::LtoIr, ltoir.clone(), "functions.ltoir")
                .add_file_unchecked(&arts.cubin)
                .add_file_unchecked(&arts.fatbin)
                .add_file_unchecked(&arts.archive)
                .add_file_unchecked(&arts.object);
        }
        let image = ok(linker.link());
        let mut entries = ok(image.entry_points());
        entries.sort();
        let mut want = kernels.map(String::from).to_vec();
        want.sort();
        assert_eq!(entries, want);
        assert!(
            image.linker_options().iter().any(|o| o == "-lto"),
            "lto({lto})"
        );
    }
}

/// Fatbins, objects and archives built with `nvcc -dlto` carry LTO-IR: the link takes `-lto`
/// for them, asked or not (without it nvJitLink refuses LTO-IR).
#[test]
fn ltoir_inside_fatbins_objects_and_archives_is_found() {
    let dir = temp_dir("dlto");
    let cuda = link_support::cuda_dir();
    let build = |kind: &str, src: &str, out: &str| {
        let out = dir.join(out);
        let src = cuda.join(src);
        run_nvcc(
            cuda,
            &[
                kind,
                "-rdc=true",
                "-dlto",
                "-arch=sm_90",
                src.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
        );
        out
    };
    let cases = [
        (
            "affine_fatbin",
            build("-fatbin", "fatbin_lib.cu", "dlto.fatbin"),
        ),
        ("sub_one_object", build("-c", "object_lib.cu", "dlto.o")),
        (
            "square_archive",
            build("-lib", "archive_lib.cu", "libdlto.a"),
        ),
    ];
    for (kernel, file) in &cases {
        for lto in [false, true] {
            let mut linker = offline();
            linker
                .lto(lto)
                .add_ptx_kernels(PTX, "kernels.ptx", &[kernel]);
            // SAFETY: built from cuda/*_lib.cu, whose definitions match src/ffi.rs.
            unsafe { linker.add_file_unchecked(file) };
            assert!(has_lto(&linker), "{} with lto({lto})", file.display());
        }
    }
}

/// One symbol, two definitions that differ (so that neither input is dropped as a repeat),
/// each in every kind of input.
struct Definitions {
    dir: PathBuf,
}

impl Definitions {
    fn source(variant: u32) -> String {
        format!(
            "extern \"C\" __device__ int dup_fn(int* r, int a) {{ *r = a + {variant}; return 0; }}\n"
        )
    }

    fn build() -> Definitions {
        let dir = temp_dir("duplicates");
        for variant in [1, 2] {
            let cu = format!("dup{variant}.cu");
            std::fs::write(dir.join(&cu), Definitions::source(variant)).unwrap();
            for (flag, out) in [
                ("-ptx", "ptx"),
                ("-cubin", "cubin"),
                ("-fatbin", "fatbin"),
                ("-c", "o"),
                ("-lib", "a"),
            ] {
                let out = if out == "a" {
                    format!("libdup{variant}.a")
                } else {
                    format!("dup{variant}.{out}")
                };
                run_nvcc(&dir, &[flag, "-rdc=true", "-arch=sm_90", &cu, "-o", &out]);
            }
            let ltoir = ok(compile_cuda(
                &Definitions::source(variant),
                &cu,
                &[],
                "sm_90".parse().unwrap(),
                &[],
                CudaOutput::LtoIr,
            ));
            std::fs::write(dir.join(format!("dup{variant}.ltoir")), ltoir).unwrap();
        }
        Definitions { dir }
    }

    fn path(&self, kind: InputKind, variant: u32) -> PathBuf {
        self.dir.join(match kind {
            InputKind::Library => format!("libdup{variant}.a"),
            kind => format!("dup{variant}.{}", kind.extension()),
        })
    }
}

/// Every pair of input kinds defining the same symbol is refused as `DuplicateSymbol`,
/// naming the symbol and both inputs (nvJitLink 13.0 links a PTX and an object defining one
/// symbol, printing `Multiple definition` to standard error only).
#[test]
fn every_pair_of_kinds_defining_one_symbol_is_refused() {
    let defs = Definitions::build();
    let kinds = InputKind::ALL;
    let mut failures = Vec::new();
    for (i, &a) in kinds.iter().enumerate() {
        for &b in &kinds[i..] {
            let (first, second) = (defs.path(a, 1), defs.path(b, 2));
            let mut linker = offline();
            // SAFETY: no kernel of this link declares `dup_fn`; nothing is run.
            unsafe {
                linker
                    .add_file_unchecked(&first)
                    .add_file_unchecked(&second)
            };
            let name = |p: &Path| p.display().to_string();
            match linker.link() {
                Err(Error::DuplicateSymbol {
                    symbol, defined_in, ..
                }) if symbol == "dup_fn"
                    && defined_in.contains(&name(&first))
                    && defined_in.contains(&name(&second)) => {}
                other => failures.push(format!("{a:?} + {b:?}: {other:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// nvJitLink 13.0 crashes the process on a duplicate in a link without LTO once it has made
/// an LTO link: the duplicate is refused before it sees the inputs.
#[test]
fn a_duplicate_after_an_lto_link_is_refused_not_a_crash() {
    let arts = artifacts();
    let mut lto = offline();
    lto.lto(true)
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"));
    assert!(has_lto(&lto));
    for file in [&arts.object, &arts.fatbin, &arts.archive] {
        let mut linker = offline();
        linker.add_cuda_source(
            "#include \"gpukernel_abi.h\"\n\
             extern \"C\" __device__ int object_sub_one(float* r, float x) { *r = x; return 0; }\n\
             extern \"C\" __device__ int fatbin_affine(float* r, float x, float a, float b) { *r = x; return 0; }\n\
             extern \"C\" __device__ int archive_square(float* r, float x) { *r = x; return 0; }\n",
            "again.cu",
        );
        linker.include_dir(link_support::cuda_dir());
        // SAFETY: no kernel of this link declares these functions; nothing is run.
        unsafe { linker.add_file_unchecked(file) };
        let e = err(linker.link());
        assert!(
            matches!(&e, Error::DuplicateSymbol { defined_in, .. } if defined_in.len() == 2),
            "{}: {e}",
            file.display()
        );
    }
}

/// An architecture-specific target the tools do not have is an error naming it and what
/// exists (it compiled as plain sm_90 without a word).
#[test]
fn architecture_specific_targets_are_honoured_or_refused() {
    for arch in ["sm_91a", "sm_99a"] {
        let mut linker = ok(Linker::for_arch(arch));
        linker
            .cache(CachePolicy::Disabled)
            .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"]);
        let e = err(linker.link());
        let Error::ArchitectureSpecificUnavailable {
            arch: named,
            available,
            ..
        } = &e
        else {
            panic!("{arch}: {e:?}")
        };
        assert_eq!(named, arch);
        assert!(available.iter().any(|a| a == "sm_90a"), "{available:?}");
        let shown = e.to_string();
        let portable = arch.trim_end_matches('a');
        assert!(
            shown.contains(arch) && shown.contains("sm_90a") && shown.contains(portable),
            "{shown}"
        );
    }
    // One the tools have links for exactly that target.
    let mut linker = ok(Linker::for_arch("sm_90a"));
    linker
        .cache(CachePolicy::Disabled)
        .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
        .add_file(source("functions.cu"));
    let image = ok(linker.link());
    assert_eq!(
        image.arch().map(|a| a.to_string()).as_deref(),
        Some("sm_90a")
    );
    assert!(
        image.linker_options().iter().any(|o| o == "-arch=sm_90a"),
        "{:?}",
        image.linker_options()
    );
}

/// Raw options reach nvJitLink, which judges them; the ones the linker owns are refused;
/// they are part of the cache key.
#[test]
fn raw_linker_options_are_passed_checked_and_keyed() {
    let image = ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
        .linker_option("-Xptxas=-warn-spills")
        .linker_options(["-ftz=true"])
        .link());
    let options = image.linker_options();
    assert!(
        options.ends_with(&["-Xptxas=-warn-spills".into(), "-ftz=true".into()]),
        "{options:?}"
    );

    // nvJitLink's own verdict on an option it does not know, naming it.
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
        .linker_option("-no-such-option")
        .link());
    let Error::InvalidLinkOption { option, reason } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(option, "-no-such-option");
    assert!(reason.contains("nvJitLink"), "{reason}");

    for (option, says) in [
        ("-arch=sm_80", "for_arch"),
        ("-lto", "lto(true)"),
        ("ftz", "start with `-`"),
        ("", "empty"),
    ] {
        let e = err(offline()
            .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
            .linker_option(option)
            .link());
        assert!(
            matches!(&e, Error::InvalidLinkOption { option: o, reason } if o == option && reason.contains(says)),
            "{option:?}: {e}"
        );
    }

    // The cache: the same inputs with other raw options are another entry.
    let dir = temp_dir("raw-options-cache");
    let link = |raw: &[&str]| {
        let mut linker = ok(Linker::for_arch("sm_90"));
        linker
            .cache(CachePolicy::Dir(dir.clone()))
            .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
            .linker_options(raw.iter().copied());
        ok(linker.link())
    };
    assert!(matches!(link(&[]).cache_status(), CacheStatus::Miss { .. }));
    assert!(matches!(
        link(&["-ftz=true"]).cache_status(),
        CacheStatus::Miss { .. }
    ));
    assert!(matches!(
        link(&["-ftz=true"]).cache_status(),
        CacheStatus::Hit { .. }
    ));
    assert!(matches!(link(&[]).cache_status(), CacheStatus::Hit { .. }));
}

/// An undefined foreign function is named with its `declare_device!` declaration's
/// file:line (from the record in the kernels' PTX), through the linker and on the simulator.
#[test]
fn undefined_symbol_names_the_rust_declaration() {
    let ffi = include_str!("../../ffi-examples/kernels/src/ffi.rs");
    let line = ffi
        .lines()
        .position(|l| l.contains("\"cubin_add_one\", safe fn("))
        .expect("the declaration of cubin_add_one")
        + 1;
    let at = format!("ffi.rs:{line}");
    // Through nvJitLink, with a source that does not define it; on the simulator, whose
    // check reads only PTX, cubins and sources without includes, with the PTX alone.
    let mut through_linker = offline();
    through_linker.add_file(source("functions.cu"));
    for mut linker in [through_linker, Linker::for_simulator()] {
        linker.add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"]);
        let e = err(linker.link());
        let Error::UndefinedSymbol {
            symbol,
            declared_at,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(symbol, "cubin_add_one");
        assert!(
            declared_at.len() == 1 && declared_at[0].ends_with(&at),
            "{declared_at:?}, expected {at}"
        );
        assert!(e.to_string().contains(&at), "{e}");
    }
}
