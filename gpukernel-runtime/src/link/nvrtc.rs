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

/// What the cache key needs of the files compiling a source may read.
#[derive(Debug, Default)]
pub(crate) struct HeaderScan {
    /// Every local file an `#include` (or a `--pre-include` option) of the source, of the
    /// files it reaches or of the in-memory headers may name: for each name, the file of that
    /// name in every folder searched (the includer's, the `include_dir`s, the `-I` /
    /// `--include-path` options), not only the one NVRTC picks, transitively. Sorted.
    pub(crate) files: Vec<(PathBuf, Vec<u8>)>,
    /// Why the files read cannot be known without compiling, if so (a `#include` that names
    /// its file through a macro, a precompiled header read from a file): such a link is not
    /// cached.
    pub(crate) unknowable: Option<String>,
}

/// Scans a source for the local headers it may read: their bytes go into the cache key, so
/// that editing a header invalidates the cached link. NVRTC cannot report the files it read
/// (13.0 has no dependency output), so the scan over-approximates: every `#include` line,
/// whatever the conditionals around it, every folder. Headers of the CUDA toolkit are covered
/// by [`toolkit_identity`] instead (thousands of files, which a cache hit cannot afford to
/// read).
pub(crate) fn scan_headers(
    source_path: Option<&Path>,
    source_name: &str,
    source: &str,
    include_dirs: &[PathBuf],
    user_options: &[String],
    headers: &[(String, String)],
) -> HeaderScan {
    let (option_dirs, pre_includes, unknowable) = option_files(user_options);
    let mut scan = HeaderScan {
        unknowable,
        ..HeaderScan::default()
    };
    let dirs: Vec<PathBuf> = include_dirs.iter().chain(&option_dirs).cloned().collect();
    let source_dir = source_path.and_then(Path::parent).map(Path::to_path_buf);
    // (the includer's folder, its name for messages, its text)
    let mut stack: Vec<(Option<PathBuf>, String, String)> = vec![(
        source_dir.clone(),
        source_name.to_owned(),
        source.to_owned(),
    )];
    stack.extend(
        headers
            .iter()
            .map(|(name, text)| (None, name.clone(), text.clone())),
    );
    let mut names: Vec<(Option<PathBuf>, String)> = pre_includes
        .into_iter()
        .map(|name| (source_dir.clone(), name))
        .collect();
    // A source in memory has no folder: NVRTC resolves its quoted includes from the current
    // directory.
    let current = PathBuf::new();
    // The names `__has_include` tests for.
    let mut probes: Vec<String> = Vec::new();
    loop {
        for (dir, name) in names.drain(..) {
            let folders = dir.iter().chain(&dirs).chain(std::iter::once(&current));
            let probe = probes.contains(&name);
            let mut found = false;
            for candidate in folders.map(|d| d.join(&name)) {
                let Ok(canonical) = std::fs::canonicalize(&candidate) else {
                    continue;
                };
                found = true;
                if scan.files.iter().any(|(p, _)| *p == canonical) {
                    continue;
                }
                if let Ok(bytes) = std::fs::read(&canonical) {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let parent = canonical.parent().map(Path::to_path_buf);
                    stack.push((parent, canonical.display().to_string(), text));
                    scan.files.push((canonical, bytes));
                }
            }
            // A file whose absence the source tests: creating it later changes the
            // compile, and an absence is not in the key.
            if probe && !found && scan.unknowable.is_none() {
                scan.unknowable = Some(format!(
                    "`__has_include` tests for \"{name}\", which is not there: the compile \
                     depends on a file that may appear later"
                ));
            }
        }
        let Some((dir, file, text)) = stack.pop() else {
            break;
        };
        let text = preprocessed_lines(&text);
        for (number, line) in text.lines().enumerate() {
            match include_target(line) {
                Some(Include::File(name)) => names.push((dir.clone(), name.to_owned())),
                Some(Include::Computed(spelled)) if scan.unknowable.is_none() => {
                    scan.unknowable = Some(format!(
                        "{file}:{}: `#include {spelled}` names its header through a macro, so the \
                         files the compiler reads are not known before it runs",
                        number + 1
                    ));
                }
                _ => {}
            }
            for probe in has_include_targets(line) {
                match probe {
                    Include::File(name) => {
                        probes.push(name.to_owned());
                        names.push((dir.clone(), name.to_owned()));
                    }
                    Include::Computed(spelled) if scan.unknowable.is_none() => {
                        scan.unknowable = Some(format!(
                            "{file}:{}: `__has_include({spelled})` names its header through a \
                             macro, so the files the compiler looks for are not known before it \
                             runs",
                            number + 1
                        ));
                    }
                    Include::Computed(_) => {}
                }
            }
        }
    }
    scan.files.sort();
    scan
}

/// The include folders (`-I`, `--include-path`) and pre-included files (`-include`,
/// `--pre-include`) that NVRTC options name, and why an option makes the files read
/// unknowable (`--use-pch`), if one does.
fn option_files(options: &[String]) -> (Vec<PathBuf>, Vec<String>, Option<String>) {
    let (mut dirs, mut files, mut unknowable) = (Vec::new(), Vec::new(), None);
    let mut options = options.iter().map(String::as_str);
    while let Some(option) = options.next() {
        let value = |prefixes: &[&str], options: &mut dyn Iterator<Item = &str>| {
            for prefix in prefixes {
                if option == *prefix {
                    return options.next().map(str::to_owned);
                }
                if let Some(rest) = option.strip_prefix(prefix) {
                    let rest = rest.strip_prefix('=').unwrap_or(rest);
                    if prefix.starts_with("--") && !option[prefix.len()..].starts_with('=') {
                        continue;
                    }
                    return Some(rest.to_owned());
                }
            }
            None
        };
        if let Some(dir) = value(&["--include-path", "-I"], &mut options) {
            dirs.push(PathBuf::from(dir));
        } else if let Some(file) = value(&["--pre-include", "-include"], &mut options) {
            files.push(file);
        } else if (option.starts_with("--use-pch") || option.starts_with("-use-pch"))
            && unknowable.is_none()
        {
            unknowable = Some(format!(
                "the NVRTC option `{option}` reads a precompiled header, whose sources are not \
                 known"
            ));
        }
    }
    (dirs, files, unknowable)
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

/// What an `#include` line names.
#[derive(Debug, PartialEq, Eq)]
enum Include<'a> {
    /// A file, `"x.h"` or `<x.h>`.
    File(&'a str),
    /// Anything else (a macro): what follows `#include`.
    Computed(&'a str),
}

/// `text` as the preprocessor reads its directives: backslash-newline splices joined (the
/// lines they join become one) and comments replaced by a space (a block comment's newlines
/// kept), string and character literals left as they are.
fn preprocessed_lines(text: &str) -> String {
    let text = text.replace("\\\r\n", "").replace("\\\n", "");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '"' | '\'' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == c || d == '\n' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// What the `__has_include(...)` / `__has_include_next(...)` of a line name: a file, or
/// what a macro spells.
fn has_include_targets(line: &str) -> Vec<Include<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    while let Some(found) = line[offset..].find("__has_include") {
        let at = offset + found;
        offset = at + "__has_include".len();
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &line[offset..];
        let rest = rest.strip_prefix("_next").unwrap_or(rest);
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(inner) = rest.trim_start().strip_prefix('(') else {
            // `#ifdef __has_include`, `defined(__has_include)`: no file.
            continue;
        };
        let inner = inner.trim_start();
        let (open, close) = match inner.chars().next() {
            Some('"') => ('"', '"'),
            Some('<') => ('<', '>'),
            _ => {
                let end = inner.find(')').unwrap_or(inner.len());
                out.push(Include::Computed(inner[..end].trim()));
                continue;
            }
        };
        let name = &inner[open.len_utf8()..];
        out.push(match name.find(close) {
            Some(end) => Include::File(&name[..end]),
            None => Include::Computed(inner.trim()),
        });
    }
    out
}

/// What an `#include` (or `#include_next`) line names, if the line is one (`#` or its
/// digraph `%:`; comments and splices already removed, [`preprocessed_lines`]).
fn include_target(line: &str) -> Option<Include<'_>> {
    let line = line.trim_start();
    let rest = line
        .strip_prefix('#')
        .or_else(|| line.strip_prefix("%:"))?
        .trim_start();
    let rest = rest
        .strip_prefix("include")
        .or_else(|| rest.strip_prefix("import"))?;
    let rest = rest.strip_prefix("_next").unwrap_or(rest);
    // `#includes`, `#include_foo`: not an include directive.
    if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let rest = rest.trim();
    let (open, close) = match rest.chars().next() {
        Some('"') => ('"', '"'),
        Some('<') => ('<', '>'),
        _ => return Some(Include::Computed(rest)),
    };
    let inner = rest.strip_prefix(open)?;
    Some(match inner.find(close) {
        Some(end) => Include::File(&inner[..end]),
        None => Include::Computed(rest),
    })
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
        assert_eq!(
            include_target("#include \"a.h\""),
            Some(Include::File("a.h"))
        );
        assert_eq!(
            include_target("  #  include <cuda_fp16.h> // x"),
            Some(Include::File("cuda_fp16.h"))
        );
        assert_eq!(include_target("int x; // #include \"no.h\""), None);
        assert_eq!(
            include_target("#include_next <b.h>"),
            Some(Include::File("b.h"))
        );
        assert_eq!(
            include_target("#include HEADER"),
            Some(Include::Computed("HEADER"))
        );
        assert_eq!(include_target("#includes"), None);
        assert_eq!(
            include_target("%:include \"d.h\""),
            Some(Include::File("d.h"))
        );
        let text = preprocessed_lines(
            "#/**/include \"c.h\"\n#inc\\\nlude \"s.h\"\n/* a\nb */ x // \"y\"\n",
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(include_target(lines[0]), Some(Include::File("c.h")));
        assert_eq!(include_target(lines[1]), Some(Include::File("s.h")));
        assert_eq!(lines[3].trim(), "x");
        assert_eq!(
            has_include_targets("#if __has_include(<a.h>) && __has_include_next( \"b.h\")"),
            [Include::File("a.h"), Include::File("b.h")]
        );
        assert_eq!(
            has_include_targets("#if defined(__has_include) && __has_include(H)"),
            [Include::Computed("H")]
        );
    }

    #[test]
    fn option_folders_and_files() {
        let options: Vec<String> = ["-Ia", "-I", "b", "--include-path=c", "-include", "p.h"]
            .map(String::from)
            .into();
        let (dirs, files, unknowable) = option_files(&options);
        assert_eq!(dirs, ["a", "b", "c"].map(PathBuf::from));
        assert_eq!(files, ["p.h"]);
        assert!(unknowable.is_none());
        let (.., unknowable) = option_files(&["--use-pch=x.pch".to_string()]);
        assert!(unknowable.unwrap().contains("--use-pch=x.pch"));
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
        let found = scan_headers(
            Some(&source),
            "k.cu",
            "#include \"a.h\"\n#include \"m.h\"\n",
            std::slice::from_ref(&inc),
            &[],
            &memory,
        );
        assert!(found.unknowable.is_none());
        let names: Vec<String> = found
            .files
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        for n in ["a.h", "b.h", "c.h", "d.h"] {
            assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
        }
    }
}
