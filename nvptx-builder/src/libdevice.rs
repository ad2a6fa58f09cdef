//! libdevice: NVIDIA's math library (`__nv_expf`, `__nv_sin`, …) as LLVM bitcode, the code
//! behind CUDA C's math functions. A device build whose pruned Rust module calls one of its
//! functions (gpukernel-device's `math` does) links it in (the bitcode clang makes of
//! `foreign_cuda` sources carries its own, internal copies); internalize and globaldce then keep only the functions called, and `opt -O3` inlines
//! them.
//!
//! libdevice's own multiplies and adds are not contracted into `fma` (NVVM may do so under
//! `--fmad=true`): tried, and `powf` then lost accuracy on an H100 (6.7 ulp at (-π/2, -103),
//! above CUDA's bound of 4), while Black-Scholes got no faster.
//! Its `__nvvm_reflect` queries are answered by the NVPTX back end's reflect pass (flush to
//! zero off, as NVRTC's default `--ftz=false`; the architecture from `-mcpu`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::device::run_tool;
use crate::{Error, tools};

/// Where libdevice is inside a CUDA tool root (a toolkit, or the `nvidia-nvvm` wheel's
/// `nvidia/cu13`).
pub const LIBDEVICE_PATH: &str = "nvvm/libdevice/libdevice.10.bc";

/// The prefix of libdevice's function names.
const PREFIX: &str = "__nv_";

/// libdevice's bitcode in the first directory of [`crate::cuda_tools_search_path`] that
/// has it.
pub fn find_libdevice() -> Option<PathBuf> {
    libdevice_in(&tools::cuda_tools_search_path())
}

fn libdevice_in(dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .map(|d| d.join(LIBDEVICE_PATH))
        .find(|p| p.is_file())
}

/// Links libdevice into `module` (bitcode, rewritten in place) when `module` calls one of
/// its functions, then internalizes everything but `exported` and drops what is not called,
/// as the build does for the Rust bitcode. Does nothing when no `__nv_*` function is called.
pub(crate) fn link_if_called(
    toolchain: &tools::Toolchain,
    module: &Path,
    exported: &[String],
) -> Result<(), Error> {
    let nm = run_tool(
        &toolchain.llvm_nm,
        &[
            "--undefined-only".into(),
            "--format=just-symbols".into(),
            module.as_os_str().to_owned(),
        ],
    )?;
    let called = libdevice_calls(&nm);
    if called.is_empty() {
        return Ok(());
    }
    let searched = tools::cuda_tools_search_path();
    let Some(libdevice) = libdevice_in(&searched) else {
        return Err(Error::LibdeviceMissing {
            functions: called,
            searched: searched.iter().map(|d| d.join(LIBDEVICE_PATH)).collect(),
        });
    };
    let linked = module.with_extension("libdevice.bc");
    let args: Vec<OsString> = vec![
        module.as_os_str().to_owned(),
        libdevice.into_os_string(),
        "-o".into(),
        linked.clone().into_os_string(),
    ];
    run_tool(&toolchain.llvm_link, &args)?;
    run_tool(
        &toolchain.opt,
        &[
            "-passes=internalize,globaldce".into(),
            format!("--internalize-public-api-list={}", exported.join(",")).into(),
            linked.into_os_string(),
            "-o".into(),
            module.as_os_str().to_owned(),
        ],
    )?;
    Ok(())
}

/// The libdevice functions among `llvm-nm --undefined-only --format=just-symbols` lines.
fn libdevice_calls(nm: &str) -> Vec<String> {
    let mut called: Vec<String> = nm
        .lines()
        .map(str::trim)
        .filter(|s| s.starts_with(PREFIX))
        .map(String::from)
        .collect();
    called.sort();
    called.dedup();
    called
}

/// The message of [`Error::LibdeviceMissing`].
pub(crate) fn missing_message(functions: &[String], searched: &[PathBuf]) -> String {
    let shown: Vec<&str> = functions.iter().take(4).map(String::as_str).collect();
    let more = if functions.len() > shown.len() {
        format!(" and {} more", functions.len() - shown.len())
    } else {
        String::new()
    };
    let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
    let pip_target = tools::user_tools_install_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "~/.cache/gpukernel/cuda-13.0".into());
    format!(
        "the kernels call CUDA's math library (`{}`{more}, from gpukernel_device::math), but its bitcode \
         libdevice.10.bc was not found; looked for {}.\n\
         hint: run `cargo xtask doctor` in the gpukernel checkout, or `python3 -m pip install --no-deps --target {pip_target} \
         'nvidia-nvvm=={}.*'`, or set GPUKERNEL_CUDA_TOOLS to a CUDA toolkit (the folder holding {LIBDEVICE_PATH})",
        shown.join("`, `"),
        searched.join(", "),
        tools::CUDA_TOOLS_VERSION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_libdevice_names_count() {
        let nm = "__nv_expf\n  __nv_sinf\n__gpukernel_ffi_error\nmul_f32_f32\n__nv_expf\n";
        assert_eq!(libdevice_calls(nm), vec!["__nv_expf", "__nv_sinf"]);
        assert!(libdevice_calls("vprintf\n").is_empty());
    }

    #[test]
    fn the_first_tool_root_with_libdevice_wins() {
        let base = std::env::temp_dir().join(format!("gpukernel-libdevice-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        std::fs::create_dir_all(b.join("nvvm/libdevice")).unwrap();
        std::fs::write(b.join(LIBDEVICE_PATH), b"BC\xC0\xDE").unwrap();
        assert_eq!(
            libdevice_in(&[a.clone(), b.clone()]),
            Some(b.join(LIBDEVICE_PATH))
        );
        assert_eq!(libdevice_in(&[a]), None);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_missing_libdevice_names_the_functions_and_the_install_command() {
        let e = Error::LibdeviceMissing {
            functions: [
                "__nv_expf",
                "__nv_logf",
                "__nv_sinf",
                "__nv_cosf",
                "__nv_tanf",
            ]
            .map(String::from)
            .to_vec(),
            searched: vec![PathBuf::from("/opt/cuda").join(LIBDEVICE_PATH)],
        }
        .to_string();
        assert!(e.contains("`__nv_expf`") && e.contains("and 1 more"), "{e}");
        assert!(
            e.contains("/opt/cuda/nvvm/libdevice/libdevice.10.bc"),
            "{e}"
        );
        assert!(
            e.contains("cargo xtask doctor") && e.contains("nvidia-nvvm==13.0.*"),
            "{e}"
        );
    }
}
