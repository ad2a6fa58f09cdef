//! Finding the nightly toolchain, its LLVM tools, and the CUDA compiler tools.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The nightly toolchain and the LLVM tools of its `llvm-tools` component.
#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    pub name: String,
    pub sysroot: PathBuf,
    pub llvm_link: PathBuf,
    pub llvm_ar: PathBuf,
    pub llvm_nm: PathBuf,
    pub llvm_dis: PathBuf,
    pub opt: PathBuf,
    pub llc: PathBuf,
}

impl Toolchain {
    /// Locates toolchain `name` and checks its `rust-src` and `llvm-tools` components.
    pub(crate) fn locate(name: &str) -> Result<Self, Error> {
        let out = Command::new("rustup")
            .args(["run", name, "rustc", "-vV"])
            .env_remove("RUSTC")
            .env_remove("RUSTUP_TOOLCHAIN")
            .output()
            .map_err(Error::RustupMissing)?;
        if !out.status.success() {
            return Err(Error::NightlyMissing {
                toolchain: name.to_string(),
                detail: first_paragraph(&String::from_utf8_lossy(&out.stderr)),
            });
        }
        let vv = String::from_utf8_lossy(&out.stdout);
        let version = vv.lines().next().unwrap_or_default().trim().to_string();
        if !is_nightly(&vv) {
            return Err(Error::NotNightly {
                toolchain: name.to_string(),
                version,
            });
        }
        let host = vv
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .unwrap_or("x86_64-unknown-linux-gnu")
            .trim()
            .to_string();
        let out = Command::new("rustup")
            .args(["run", name, "rustc", "--print", "sysroot"])
            .env_remove("RUSTC")
            .env_remove("RUSTUP_TOOLCHAIN")
            .output()
            .map_err(Error::RustupMissing)?;
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());

        let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
        if !core_src.is_file() {
            return Err(Error::ComponentMissing {
                component: "rust-src",
                toolchain: name.into(),
                expected: core_src,
            });
        }
        let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        let tool = |t: &str| bin.join(format!("{t}{}", std::env::consts::EXE_SUFFIX));
        let llvm_link = tool("llvm-link");
        for t in ["llvm-link", "llvm-ar", "llvm-nm", "llvm-dis", "opt", "llc"] {
            if !tool(t).is_file() {
                return Err(Error::ComponentMissing {
                    component: "llvm-tools-preview",
                    toolchain: name.into(),
                    expected: tool(t),
                });
            }
        }
        Ok(Toolchain {
            name: name.to_string(),
            llvm_ar: tool("llvm-ar"),
            llvm_nm: tool("llvm-nm"),
            llvm_dis: tool("llvm-dis"),
            opt: tool("opt"),
            llc: tool("llc"),
            llvm_link,
            sysroot,
        })
    }
}

/// The CUDA version whose compiler tools `cargo xtask doctor` installs and gpukernel is tested
/// with.
pub const CUDA_TOOLS_VERSION: &str = "13.0";

/// Where `cargo xtask doctor` installs the CUDA compiler wheels for every project of this
/// user: `$XDG_CACHE_HOME/gpukernel/cuda-13.0`, else `~/.cache/gpukernel/cuda-13.0`. The tools
/// themselves are in its `nvidia/cu13` folder (see [`user_tools_dir`]).
pub fn user_tools_install_dir() -> Option<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|c| {
            c.join("gpukernel")
                .join(format!("cuda-{CUDA_TOOLS_VERSION}"))
        })
}

/// The per-user tool root, `<user_tools_install_dir>/nvidia/cu13` (with `bin/ptxas`,
/// `lib/libnvrtc.so.13`, `include/`), whether or not it exists yet.
pub fn user_tools_dir() -> Option<PathBuf> {
    user_tools_install_dir().map(|d| d.join("nvidia").join("cu13"))
}

/// Every directory that may hold the CUDA compiler tools, in search order:
/// `GPUKERNEL_CUDA_TOOLS`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`, `.cuda-tools/nvidia/cu13`
/// in the calling workspace (a gpukernel checkout's own folder, if it has one), then the
/// per-user folder [`user_tools_dir`] that `cargo xtask doctor` fills.
pub fn cuda_tools_search_path() -> Vec<PathBuf> {
    ["GPUKERNEL_CUDA_TOOLS", "CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| {
            std::env::var_os(v)
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .chain(std::iter::once(PathBuf::from("/usr/local/cuda")))
        .chain(workspace_tools_dir())
        .chain(user_tools_dir())
        .collect()
}

/// The directory holding the CUDA compiler tools (`bin/ptxas`, `bin/nvcc`, `lib/libnvrtc.so*`,
/// `include/`): the first of [`cuda_tools_search_path`] that has `bin/` or `include/`.
pub fn cuda_tools_dir() -> Option<PathBuf> {
    cuda_tools_search_path()
        .into_iter()
        .find(|d| d.join("bin").is_dir() || d.join("include").is_dir())
}

/// `<workspace>/.cuda-tools/nvidia/cu13`, the workspace being the nearest ancestor of the
/// calling build script's manifest dir (or of this crate's) that has a `.cuda-tools` folder.
fn workspace_tools_dir() -> Option<PathBuf> {
    let starts = [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    starts.into_iter().flatten().find_map(|s| {
        s.ancestors()
            .map(|a| a.join(".cuda-tools/nvidia/cu13"))
            .find(|d| d.is_dir())
    })
}

/// Finds a CUDA tool (`ptxas`, `nvcc`, `fatbinary`, `nvlink`, `cuobjdump`) in the first
/// directory of [`cuda_tools_search_path`] that has it.
pub fn find_cuda_tool(name: &str) -> Option<PathBuf> {
    let exe = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    cuda_tools_search_path()
        .into_iter()
        .map(|d| d.join("bin").join(&exe))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// Whether `rustc -vV` output is a nightly's (or a local dev build's): their `release:` line
/// ends in `-nightly` or `-dev`; stable and beta toolchains reject `-Z` flags.
fn is_nightly(rustc_vv: &str) -> bool {
    rustc_vv
        .lines()
        .find_map(|l| l.strip_prefix("release: "))
        .is_some_and(|r| r.trim().ends_with("-nightly") || r.trim().ends_with("-dev"))
}

/// The part of a tool's message before any backtrace.
fn first_paragraph(s: &str) -> String {
    s.split("Stack backtrace")
        .next()
        .unwrap_or(s)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nightly_is_told_from_stable_and_beta() {
        let vv = |release: &str| {
            format!("rustc x\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: {release}\n")
        };
        assert!(is_nightly(&vv("1.97.0-nightly")));
        assert!(is_nightly(&vv("1.97.0-dev")));
        assert!(!is_nightly(&vv("1.95.0")));
        assert!(!is_nightly(&vv("1.96.0-beta.3")));
        assert!(!is_nightly("garbage"));
    }

    #[test]
    fn the_user_tool_folder_is_under_the_cache_home() {
        let d = user_tools_dir().expect("HOME is set in tests");
        assert!(
            d.ends_with(format!("gpukernel/cuda-{CUDA_TOOLS_VERSION}/nvidia/cu13")),
            "{}",
            d.display()
        );
        assert_eq!(cuda_tools_search_path().last(), Some(&d));
    }
}
