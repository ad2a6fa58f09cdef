//! Finding the CUDA compiler libraries (NVRTC, nvJitLink) and headers without a CUDA install
//! on the library path.
//!
//! Search order for a "tool root" (a directory with `bin/ lib/ include/`, as a CUDA toolkit or
//! the PyPI wheels' `nvidia/cu13` folder):
//! 1. `GPUKERNEL_CUDA_TOOLS`,
//! 2. `CUDA_HOME`, then `CUDA_PATH`,
//! 3. `/usr/local/cuda`,
//! 4. `<workspace>/.cuda-tools/nvidia/cu13` (a gpukernel checkout's own folder, if it has one),
//! 5. `$XDG_CACHE_HOME/gpukernel/cuda-13.0/nvidia/cu13`, else
//!    `~/.cache/gpukernel/cuda-13.0/nvidia/cu13`: the per-user folder that `cargo xtask doctor`
//!    fills, found from any project.
//!
//! A library is then looked for in each root's `lib64/`, `lib/` and
//! `targets/x86_64-linux/lib/` by full path, and last by its bare name (the dynamic loader's
//! own search: `LD_LIBRARY_PATH`, the ld.so cache).

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::link::sys;

/// What to tell a user whose CUDA compiler libraries are missing.
pub(crate) const DOCTOR_HINT: &str = "run `cargo xtask doctor` to install the CUDA compiler \
     wheels, or set GPUKERNEL_CUDA_TOOLS (or CUDA_HOME) to a directory with lib/ and include/";

/// The candidate tool roots, in search order, that exist on this machine.
pub(crate) fn tool_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["GPUKERNEL_CUDA_TOOLS", "CUDA_HOME", "CUDA_PATH"] {
        if let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            roots.push(PathBuf::from(value));
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    // The workspace's own tool folder: `<workspace>/gpukernel-runtime/../.cuda-tools/...`.
    roots.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(".cuda-tools")
            .join("nvidia")
            .join("cu13"),
    );
    roots.extend(user_tools_dir());
    let mut seen = Vec::new();
    roots.retain(|root| {
        let keep = root.is_dir() && !seen.contains(root);
        if keep {
            seen.push(root.clone());
        }
        keep
    });
    roots
}

/// The per-user tool root that `cargo xtask doctor` fills (nvptx-builder's `user_tools_dir`).
pub(crate) fn user_tools_dir() -> Option<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|c| c.join("gpukernel/cuda-13.0/nvidia/cu13"))
}

/// The library directories of every tool root, in search order.
pub(crate) fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in tool_roots() {
        for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
            let dir = root.join(sub);
            if dir.is_dir() {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// The CUDA include directory (the first root whose `include/` has `cuda_runtime.h` or
/// `cuda.h`), passed to NVRTC so that `#include <cuda_fp16.h>` and friends resolve.
pub(crate) fn cuda_include_dir() -> Option<PathBuf> {
    tool_roots()
        .into_iter()
        .map(|root| root.join("include"))
        .find(|inc| inc.join("cuda_runtime.h").is_file() || inc.join("cuda.h").is_file())
}

/// A shared library found on disk, or only by its bare name.
#[derive(Debug, Clone)]
pub(crate) struct FoundLibrary {
    /// The full path, or the bare file name when only the loader's own search can find it.
    pub(crate) path: PathBuf,
    /// Every path tried before, for the error message if loading fails.
    pub(crate) searched: Vec<PathBuf>,
}

/// Looks for the first of `names` (e.g. `libnvrtc.so.13`, `libnvrtc.so`) in the library
/// directories, then falls back to the bare name.
pub(crate) fn find_library(names: &[&str]) -> FoundLibrary {
    let mut searched = Vec::new();
    for dir in library_dirs() {
        for name in names {
            let path = dir.join(name);
            if path.is_file() {
                return FoundLibrary { path, searched };
            }
            searched.push(path);
        }
    }
    FoundLibrary {
        path: PathBuf::from(names[0]),
        searched,
    }
}

/// Loads a shared library found by [`find_library`], trying every bare name last.
pub(crate) fn load_library(names: &[&str]) -> Result<(libloading::Library, PathBuf), Error> {
    let found = find_library(names);
    let mut searched = found.searched.clone();
    let mut last_error = String::new();
    let mut candidates = vec![found.path.clone()];
    candidates.extend(names.iter().map(PathBuf::from).filter(|p| *p != found.path));
    for candidate in candidates {
        // SAFETY: loading a CUDA library runs its initialisers, which have no preconditions;
        // the libraries named here are NVIDIA's own (libnvrtc, libnvJitLink).
        match unsafe { libloading::Library::new(&candidate) } {
            Ok(lib) => return Ok((lib, candidate)),
            Err(e) => {
                last_error = e.to_string();
                searched.push(candidate);
            }
        }
    }
    Err(Error::LibraryNotFound {
        library: names[0].to_string(),
        searched,
        reason: last_error,
        hint: DOCTOR_HINT,
    })
}
/// Versions and locations of the compiler libraries the linker uses, for diagnostics
/// (`cargo xtask doctor`, bug reports).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// // e.g. "NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13)\nnvJitLink 13.0 (...)"
/// eprintln!("{}", gpukernel_runtime::link::toolchain_report());
/// # Ok(()) }
/// ```
pub fn toolchain_report() -> String {
    let mut out = String::new();
    match (sys::nvrtc_version(), sys::nvrtc_path()) {
        (Ok((major, minor)), Ok(path)) => {
            out += &format!("NVRTC {major}.{minor} ({})\n", path.display())
        }
        (Err(e), _) | (_, Err(e)) => out += &format!("NVRTC: {e}\n"),
    }
    match (sys::nvjitlink_version(), sys::nvjitlink_path()) {
        (Ok((major, minor)), Ok(path)) => {
            out += &format!("nvJitLink {major}.{minor} ({})\n", path.display())
        }
        (Err(e), _) | (_, Err(e)) => out += &format!("nvJitLink: {e}\n"),
    }
    match cuda_include_dir() {
        Some(dir) => out += &format!("CUDA include dir: {}\n", dir.display()),
        None => out += "CUDA include dir: not found\n",
    }
    out
}
