//! Compiling CUDA C++ sources (`.cu` inputs) with NVRTC.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::link::{Arch, sys, tools};

/// What [`compile_cuda`] produces.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let ltoir = compile_cuda(FUNCTIONS_CU, "functions.cu", &[], "sm_90".parse()?, &[], CudaOutput::LtoIr)?;
/// // SAFETY-free: LTO-IR is checked like any input; link it later with nvJitLink.
/// let image = Linker::for_arch("sm_90")?.add_data(InputKind::LtoIr, ltoir, "functions.ltoir").link()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CudaOutput {
    /// PTX text (`-rdc=true`), linkable by cuLink or nvJitLink.
    Ptx,
    /// LTO-IR (`-rdc=true -dlto`), linkable by nvJitLink only ([`InputKind::LtoIr`](crate::link::InputKind::LtoIr)).
    LtoIr,
}

/// Compiles one CUDA C++ source with NVRTC for `arch`, as the linker does for `.cu` inputs
/// (`-rdc=true`, the CUDA include dir, then `options`), e.g. to save PTX or LTO-IR for later
/// links. `name` is the file name NVRTC's log uses; `headers` are `(name, text)` pairs that
/// `#include "name"` finds. Errors: [`Error::NvrtcCompile`] with the log and the options.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let ptx = compile_cuda(FUNCTIONS_CU, "functions.cu", &[], "sm_90".parse()?, &["--use_fast_math".into()], CudaOutput::Ptx)?;
/// assert!(String::from_utf8_lossy(&ptx).contains(".visible .func"));
/// let e = compile_cuda("int x = ;", "bad.cu", &[], "sm_90".parse()?, &[], CudaOutput::Ptx).unwrap_err();
/// assert!(e.to_string().contains("bad.cu(1)")); // NVRTC's log, naming the file and line
/// # Ok(()) }
/// ```
pub fn compile_cuda(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    arch: Arch,
    options: &[String],
    output: CudaOutput,
) -> Result<Vec<u8>> {
    let ltoir = output == CudaOutput::LtoIr;
    let path = Path::new(name);
    let dir = path.is_file().then_some(path);
    let options = self::options(dir, arch, &[], options, ltoir);
    Ok(compile(source, name, headers, &options, ltoir)?.0)
}

/// The NVRTC options for one source: `-rdc=true`, the architecture, the include directories
/// (the source's own folder, the user's, then the CUDA include dir), then the user's options.
pub(crate) fn options(
    source_path: Option<&Path>,
    arch: Arch,
    include_dirs: &[PathBuf],
    user_options: &[String],
    ltoir: bool,
) -> Vec<String> {
    let mut options = vec![
        "-rdc=true".to_string(),
        format!("--gpu-architecture={arch}"),
    ];
    if ltoir {
        options.push("-dlto".into());
    }
    if let Some(dir) = source_path
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
    {
        options.push(format!("--include-path={}", dir.display()));
    }
    for dir in include_dirs {
        options.push(format!("--include-path={}", dir.display()));
    }
    if let Some(cuda) = tools::cuda_include_dir() {
        options.push(format!("--include-path={}", cuda.display()));
        // CUDA 13 keeps CCCL (`<cuda/std/...>`, CUB, Thrust) in `include/cccl`.
        let cccl = cuda.join("cccl");
        if cccl.is_dir() {
            options.push(format!("--include-path={}", cccl.display()));
        }
    }
    options.extend(user_options.iter().cloned());
    options
}

/// Compiles `source` (named `name` in the log, normally its path) to PTX, or LTO-IR with
/// `ltoir`. A compilation error becomes [`Error::NvrtcCompile`] with the log and options.
pub(crate) fn compile(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    ltoir: bool,
) -> Result<(Vec<u8>, String), Error> {
    match sys::nvrtc_compile(source, name, headers, options, ltoir)? {
        sys::NvrtcOutput::Compiled { code, log } => Ok((code, log)),
        sys::NvrtcOutput::Failed { log } => match missing_header(&log) {
            Some(header) => Err(Error::NvrtcMissingHeader {
                file: PathBuf::from(name),
                header,
                options: options.to_vec(),
                log,
            }),
            None => Err(Error::NvrtcCompile {
                file: PathBuf::from(name),
                options: options.to_vec(),
                log,
            }),
        },
    }
}

/// The header NVRTC's log says it cannot find (`cannot open source file "x.h"`).
fn missing_header(log: &str) -> Option<String> {
    let at = log.find("cannot open source file")?;
    let rest = &log[at..];
    let start = rest.find('"')? + 1;
    let end = rest[start..].find('"')?;
    Some(rest[start..start + end].to_owned())
}

/// The local headers a source includes (`#include "x"` or `<x>` found in its folder or the
/// user's include directories), transitively, also those the in-memory `headers` include:
/// their bytes go into the cache key, so that editing a header invalidates the cached link.
/// Headers of the CUDA toolkit are covered by [`toolkit_identity`] instead (thousands of
/// files, which a cache hit cannot afford to read).
pub(crate) fn local_headers(
    source_path: Option<&Path>,
    source: &str,
    include_dirs: &[PathBuf],
    headers: &[(String, String)],
) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut stack: Vec<(Option<PathBuf>, String)> = vec![(
        source_path.and_then(Path::parent).map(Path::to_path_buf),
        source.to_string(),
    )];
    stack.extend(headers.iter().map(|(_, text)| (None, text.clone())));
    while let Some((dir, text)) = stack.pop() {
        for line in text.lines() {
            let Some(name) = include_target(line) else {
                continue;
            };
            let candidates = dir.iter().chain(include_dirs.iter()).map(|d| d.join(name));
            for candidate in candidates {
                let Ok(canonical) = std::fs::canonicalize(&candidate) else {
                    continue;
                };
                if found.iter().any(|(p, _)| *p == canonical) {
                    break;
                }
                if let Ok(bytes) = std::fs::read(&canonical) {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    stack.push((canonical.parent().map(Path::to_path_buf), text));
                    found.push((canonical, bytes));
                }
                break;
            }
        }
    }
    found.sort();
    found
}

/// The identity of the CUDA toolkit's headers in `include_dir`, for the cache key: the path,
/// size and modification time of the folder, its `cccl` folder, the main headers and the
/// toolkit's `version.json`. A reinstalled or upgraded toolkit changes them.
pub(crate) fn toolkit_identity(include_dir: &Path) -> String {
    let root = include_dir.parent().unwrap_or(include_dir);
    let mut out = String::new();
    for path in [
        include_dir.to_path_buf(),
        include_dir.join("cccl"),
        include_dir.join("cuda.h"),
        include_dir.join("cuda_runtime.h"),
        include_dir.join("cuda_runtime_api.h"),
        root.join("version.json"),
    ] {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        out += &format!("{} {} {modified}\n", path.display(), meta.len());
    }
    out
}

/// The file named by an `#include` line, if the line is one.
fn include_target(line: &str) -> Option<&str> {
    let rest = line
        .trim_start()
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include")?
        .trim_start();
    let (open, close) = match rest.chars().next()? {
        '"' => ('"', '"'),
        '<' => ('<', '>'),
        _ => return None,
    };
    let inner = rest.strip_prefix(open)?;
    inner.find(close).map(|end| &inner[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_headers_are_named() {
        let log = "k.cu(1): catastrophic error: cannot open source file \"my_lib.h\"\n  #include \"my_lib.h\"\n";
        assert_eq!(missing_header(log).as_deref(), Some("my_lib.h"));
        assert_eq!(missing_header("k.cu(3): error: x"), None);
    }

    #[test]
    fn include_lines() {
        assert_eq!(include_target("#include \"a.h\""), Some("a.h"));
        assert_eq!(
            include_target("  #  include <cuda_fp16.h> // x"),
            Some("cuda_fp16.h")
        );
        assert_eq!(include_target("int x; // #include \"no.h\""), None);
    }

    #[test]
    fn headers_are_followed_transitively() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(dir.path().join("a.h"), "#include \"b.h\"\n").unwrap();
        std::fs::write(inc.join("b.h"), "#include <c.h>\n").unwrap();
        std::fs::write(inc.join("c.h"), "int c;\n").unwrap();
        std::fs::write(inc.join("d.h"), "int d;\n").unwrap();
        let source = dir.path().join("k.cu");
        let memory = [("m.h".to_string(), "#include \"d.h\"\n".to_string())];
        let found = local_headers(
            Some(&source),
            "#include \"a.h\"\n#include \"m.h\"\n",
            std::slice::from_ref(&inc),
            &memory,
        );
        let names: Vec<String> = found
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        for n in ["a.h", "b.h", "c.h", "d.h"] {
            assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
        }
    }
}
