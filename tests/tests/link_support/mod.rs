//! Shared by `link_offline.rs` and `link_gpu.rs`: the example foreign sources (embedded, and
//! written to a temporary folder so that tests run from a GPU bundle too), the precompiled
//! artifacts (built with nvcc at test time), and small helpers.
#![allow(dead_code)] // Each test file uses a part.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[path = "../../../ffi-examples/build/foreign.rs"]
mod foreign;

pub use foreign::Artifacts;

/// The Rust kernels' PTX (every kernel of `ffi_examples_kernels`).
pub const PTX: &str = ffi_examples_kernels::PTX;

/// The example CUDA sources, by file name (relative to the folder they are written to).
pub const SOURCES: [(&str, &str); 7] = [
    (
        "gpukernel_abi.h",
        include_str!("../../../ffi-examples/kernels/cuda/gpukernel_abi.h"),
    ),
    (
        "functions.cu",
        include_str!("../../../ffi-examples/kernels/cuda/functions.cu"),
    ),
    (
        "cubin_lib.cu",
        include_str!("../../../ffi-examples/kernels/cuda/cubin_lib.cu"),
    ),
    (
        "fatbin_lib.cu",
        include_str!("../../../ffi-examples/kernels/cuda/fatbin_lib.cu"),
    ),
    (
        "archive_lib.cu",
        include_str!("../../../ffi-examples/kernels/cuda/archive_lib.cu"),
    ),
    (
        "object_lib.cu",
        include_str!("../../../ffi-examples/kernels/cuda/object_lib.cu"),
    ),
    (
        "errors/syntax_error.cu",
        include_str!("../../../ffi-examples/kernels/cuda/errors/syntax_error.cu"),
    ),
];

/// What to do when a CUDA compiler piece is missing.
pub const DOCTOR: &str = "run `cargo xtask doctor` (it installs the CUDA compiler wheels: \
     nvcc, NVRTC, nvJitLink), or set GPUKERNEL_CUDA_TOOLS";

/// A fresh, empty temporary folder for this process.
pub fn temp_dir(name: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("gpukernel-link-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary folder");
    dir
}

/// The folder holding the example sources (written once per process).
pub fn cuda_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("cuda");
        for (name, text) in SOURCES {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    })
}

/// The path of an example source.
pub fn source(name: &str) -> PathBuf {
    cuda_dir().join(name)
}

/// The workspace root (for `.cuda-tools`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The precompiled artifacts for `sm_90`, built with nvcc once per process. Panics, naming
/// what to run, when nvcc is missing or fails.
pub fn artifacts() -> &'static Artifacts {
    static ARTS: OnceLock<Result<Artifacts, String>> = OnceLock::new();
    let built = ARTS.get_or_init(|| {
        let nvcc =
            foreign::find_nvcc(&workspace()).ok_or_else(|| format!("nvcc not found; {DOCTOR}"))?;
        foreign::build_all(&nvcc, cuda_dir(), &temp_dir("artifacts"), 90)
    });
    match built {
        Ok(arts) => arts,
        Err(e) => panic!("cannot build the precompiled foreign code: {e}\n{DOCTOR}"),
    }
}

/// nvcc, found as the precompiled artifacts' build finds it. Panics, naming what to run, when
/// it is missing.
pub fn nvcc() -> PathBuf {
    foreign::find_nvcc(&workspace()).unwrap_or_else(|| panic!("nvcc not found; {DOCTOR}"))
}

/// Runs nvcc with `args` (in `dir`), failing the test with its output when it fails.
pub fn run_nvcc(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new(nvcc())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run nvcc: {e}\n{DOCTOR}"));
    assert!(
        out.status.success(),
        "nvcc {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unwraps a link result, failing the test with the whole error (logs, hints) otherwise.
#[track_caller]
pub fn ok<T>(r: gpukernel_runtime::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => {
            panic!("unexpected error: {e}\n(debug: {e:?})\nif a CUDA library is missing: {DOCTOR}")
        }
    }
}

/// Unwraps an expected error.
#[track_caller]
pub fn err<T: std::fmt::Debug>(r: gpukernel_runtime::Result<T>) -> gpukernel_runtime::Error {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

// --- foreign struct layout records (adv4_ffi_layout, adv6_ffi_layout) ---

/// A PTX declaring `f(struct S)` (Numba's ABI, returning `int`) with `layout`'s record.
pub fn foreign_struct_ptx(size: usize, layout: &str) -> String {
    let record = format!(
        "gpukernel-foreign-v1\nsymbol=take_s\nabi=numba\nat=src/layout.rs:7\nret=int\narg=struct S\n{layout}"
    );
    let bytes: Vec<String> = record.bytes().map(|b| b.to_string()).collect();
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n\
         .extern .func (.param .b32 func_retval0) take_s(\n\t.param .b64 take_s_r,\n\t.param .align 4 .b8 take_s_a[{size}]\n);\n\
         .visible .global .align 1 .b8 __gpukernel_foreign_take_s_1[{}] = {{{}}};\n\
         \n.visible .entry layout_kernel()\n{{\n\tret;\n}}\n",
        bytes.len(),
        bytes.join(", ")
    )
}

pub fn link_foreign_struct(ptx: &str, source: &str) -> Result<(), gpukernel_runtime::Error> {
    let mut linker = ok(gpukernel_runtime::link::Linker::for_arch("sm_90"));
    linker.cache(gpukernel_runtime::link::CachePolicy::Disabled);
    linker.add_ptx(ptx, "kernels.ptx");
    linker.add_cuda_source(source, "defs.cu");
    linker.link().map(|_| ())
}
