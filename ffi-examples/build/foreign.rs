//! Builds the examples' precompiled foreign code with nvcc: a cubin, a fatbin, a static
//! library and an object (and a fatbin for the wrong architecture, for the error tests), from
//! the sources in `ffi-examples/kernels/cuda/`.
//!
//! The build script calls [`build_foreign`], which writes them into `OUT_DIR` and tells the
//! examples where they are through `cargo:rustc-env` variables (see [`ENV_VARS`]). When nvcc
//! is missing the build still succeeds: each variable then holds [`MISSING_PREFIX`] and the
//! reason, and the examples stop with an error saying to run `cargo xtask doctor`.
//!
//! The integration tests include this file too (`#[path]`) and call [`build_all`] at test
//! time.
#![allow(dead_code)] // Each includer uses a different part.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Prefix of a variable's value when the artifact could not be built.
pub const MISSING_PREFIX: &str = "missing: ";

/// The variables set for the examples, the artifact each names, and the constant of the
/// generated `foreign_artifacts.rs` that embeds it.
pub const ENV_VARS: [(&str, &str, &str); 5] = [
    ("GPUKERNEL_FFI_CUBIN", "cubin_lib.cubin", "CUBIN"),
    ("GPUKERNEL_FFI_FATBIN", "fatbin_lib.fatbin", "FATBIN"),
    ("GPUKERNEL_FFI_ARCHIVE", "libforeign.a", "ARCHIVE"),
    ("GPUKERNEL_FFI_OBJECT", "object_lib.o", "OBJECT"),
    (
        "GPUKERNEL_FFI_WRONG_ARCH_FATBIN",
        "wrong_arch.fatbin",
        "WRONG_ARCH_FATBIN",
    ),
];

/// The file, in `OUT_DIR`, that embeds the artifacts for the examples
/// (`include!(concat!(env!("OUT_DIR"), "/foreign_artifacts.rs"))`): one constant per artifact,
/// `Result<&'static [u8], &'static str>`, `Err` holding why it was not built.
pub const GENERATED: &str = "foreign_artifacts.rs";

/// Paths of the built artifacts.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// `nvcc -cubin -rdc=true` of `cubin_lib.cu`.
    pub cubin: PathBuf,
    /// `nvcc -fatbin -rdc=true` of `fatbin_lib.cu`: an sm_XX image and compute_XX PTX.
    pub fatbin: PathBuf,
    /// `nvcc -lib -rdc=true` of `archive_lib.cu`.
    pub archive: PathBuf,
    /// `nvcc -c -rdc=true` of `object_lib.cu` (a host object embedding device code).
    pub object: PathBuf,
    /// `fatbin_lib.cu` as a fatbin with an sm_80 image only (no PTX): no code for sm_90.
    pub wrong_arch_fatbin: PathBuf,
    /// `object_lib.cu` as a static library: defines what `object` defines (for the
    /// duplicate-definition tests).
    pub object_archive: PathBuf,
}

/// The folder of the foreign CUDA sources.
pub fn cuda_dir(workspace: &Path) -> PathBuf {
    workspace.join("ffi-examples").join("kernels").join("cuda")
}

/// Finds nvcc: `GPUKERNEL_CUDA_TOOLS`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`, then the
/// workspace's `.cuda-tools/nvidia/cu13` (what `cargo xtask doctor` installs), then `PATH`.
pub fn find_nvcc(workspace: &Path) -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = ["GPUKERNEL_CUDA_TOOLS", "CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| {
            std::env::var_os(v)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    roots.push(workspace.join(".cuda-tools").join("nvidia").join("cu13"));
    for root in roots {
        let nvcc = root.join("bin").join("nvcc");
        if nvcc.is_file() {
            return Some(nvcc);
        }
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
    })
}

/// The SM number to build for: `GPUKERNEL_ARCH` (`sm_90`, `90`), default 90.
pub fn arch_number() -> u32 {
    std::env::var("GPUKERNEL_ARCH")
        .ok()
        .and_then(|a| {
            a.trim()
                .trim_start_matches("sm_")
                .trim_start_matches("compute_")
                .parse()
                .ok()
        })
        .unwrap_or(90)
}

fn run_nvcc(nvcc: &Path, args: &[String]) -> Result<(), String> {
    let output = Command::new(nvcc)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{} {}` failed ({}):\n{}{}",
        nvcc.display(),
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Builds every artifact into `out_dir` with `nvcc`, from the sources in `cuda_dir`.
pub fn build_all(
    nvcc: &Path,
    cuda_dir: &Path,
    out_dir: &Path,
    sm: u32,
) -> Result<Artifacts, String> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let src = |name: &str| cuda_dir.join(name).display().to_string();
    let out = |name: &str| out_dir.join(name);
    let arts = Artifacts {
        cubin: out("cubin_lib.cubin"),
        fatbin: out("fatbin_lib.fatbin"),
        archive: out("libforeign.a"),
        object: out("object_lib.o"),
        wrong_arch_fatbin: out("wrong_arch.fatbin"),
        object_archive: out("libobject.a"),
    };
    let s = |p: &Path| p.display().to_string();
    let arch = format!("-arch=sm_{sm}");
    run_nvcc(
        nvcc,
        &[
            "-cubin".into(),
            "-rdc=true".into(),
            arch.clone(),
            src("cubin_lib.cu"),
            "-o".into(),
            s(&arts.cubin),
        ],
    )?;
    run_nvcc(
        nvcc,
        &[
            "-fatbin".into(),
            "-rdc=true".into(),
            "-gencode".into(),
            format!("arch=compute_{sm},code=[sm_{sm},compute_{sm}]"),
            src("fatbin_lib.cu"),
            "-o".into(),
            s(&arts.fatbin),
        ],
    )?;
    run_nvcc(
        nvcc,
        &[
            "-lib".into(),
            "-rdc=true".into(),
            arch.clone(),
            src("archive_lib.cu"),
            "-o".into(),
            s(&arts.archive),
        ],
    )?;
    run_nvcc(
        nvcc,
        &[
            "-c".into(),
            "-rdc=true".into(),
            arch.clone(),
            src("object_lib.cu"),
            "-o".into(),
            s(&arts.object),
        ],
    )?;
    run_nvcc(
        nvcc,
        &[
            "-lib".into(),
            "-rdc=true".into(),
            arch,
            src("object_lib.cu"),
            "-o".into(),
            s(&arts.object_archive),
        ],
    )?;
    run_nvcc(
        nvcc,
        &[
            "-fatbin".into(),
            "-rdc=true".into(),
            "-gencode".into(),
            "arch=compute_80,code=sm_80".into(),
            src("fatbin_lib.cu"),
            "-o".into(),
            s(&arts.wrong_arch_fatbin),
        ],
    )?;
    Ok(arts)
}

/// The build script's entry: builds the artifacts into `OUT_DIR` and sets the variables; on
/// failure sets them to a `missing: ...` marker and warns, never failing the build.
pub fn build_foreign() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("foreign");
    let cuda = cuda_dir(&workspace);
    println!("cargo:rerun-if-changed={}", cuda.display());
    for name in [
        "gpukernel_abi.h",
        "cubin_lib.cu",
        "fatbin_lib.cu",
        "archive_lib.cu",
        "object_lib.cu",
    ] {
        println!("cargo:rerun-if-changed={}", cuda.join(name).display());
    }
    for var in [
        "GPUKERNEL_CUDA_TOOLS",
        "CUDA_HOME",
        "CUDA_PATH",
        "GPUKERNEL_ARCH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rustc-env=GPUKERNEL_FFI_CUDA_DIR={}", cuda.display());
    let result = match find_nvcc(&workspace) {
        Some(nvcc) => build_all(&nvcc, &cuda, &out_dir, arch_number()),
        None => Err(
            "nvcc not found (GPUKERNEL_CUDA_TOOLS, CUDA_HOME, CUDA_PATH, \
                     /usr/local/cuda, .cuda-tools, PATH)"
                .to_string(),
        ),
    };
    let mut generated = String::from(
        "// Generated by ffi-examples/build/foreign.rs: the precompiled foreign code.\n",
    );
    match result {
        Ok(_) => {
            for (var, file, constant) in ENV_VARS {
                let path = out_dir.join(file);
                println!("cargo:rustc-env={var}={}", path.display());
                generated += &format!(
                    "/// `{file}`, built by nvcc.\n#[allow(dead_code)]\npub const {constant}: \
                     Result<&[u8], &str> = Ok(include_bytes!({:?}));\n",
                    path.display().to_string()
                );
            }
        }
        Err(reason) => {
            let first_line = reason.lines().next().unwrap_or_default().to_string();
            println!(
                "cargo:warning=the precompiled foreign code (cubin, fatbin, .a) was not built: \
                 {first_line}; the link_cubin/link_fatbin/link_archive examples will fail until \
                 `cargo xtask doctor` has installed the CUDA compiler wheels"
            );
            let marker = format!("{MISSING_PREFIX}{}", first_line.replace('\n', " "));
            for (var, file, constant) in ENV_VARS {
                println!("cargo:rustc-env={var}={marker}");
                generated += &format!(
                    "/// `{file}`: not built.\n#[allow(dead_code)]\npub const {constant}: \
                     Result<&[u8], &str> = Err({marker:?});\n"
                );
            }
        }
    }
    let target = out_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join(GENERATED);
    if let Err(e) = std::fs::write(&target, generated) {
        println!("cargo:warning=cannot write {}: {e}", target.display());
    }
}
