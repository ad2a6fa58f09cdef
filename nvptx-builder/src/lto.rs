//! Build-time LTO of foreign CUDA C ([`crate::Builder::foreign_cuda`]): each `.cu` is compiled
//! by clang to LLVM bitcode for nvptx64 and linked with the kernels' bitcode before `opt -O3`
//! and `llc`, so that the foreign calls inline like Rust ones.
//!
//! ```text
//! clang-19 -x cuda --cuda-device-only --cuda-gpu-arch=sm_XX --cuda-path=<CUDA tools>
//!     -Wno-unknown-cuda-version --no-cuda-version-check -idirafter <stubs> -O3
//!     -Xclang -disable-llvm-passes -emit-llvm -c f.cu
//! opt nvvm-reflect,O3 f.bc (reflect: __CUDA_PREC_SQRT=1, __CUDA_ARCH=900)
//! llvm-link <kernels IR> f.bc … | opt internalize,globaldce,nvvm-reflect,O3 | llc
//! ```
//!
//! What works, and its limits (clang 19 with CUDA 13.0's headers, checked on the CUDA wheels):
//! * clang 19 knows CUDA up to 12.5: it warns that 13.0 is newer (`-Wno-unknown-cuda-version`
//!   silences that) and otherwise uses the headers as they are, libdevice included (`expf`,
//!   `sinf` … resolve inside the bitcode). Two headers its CUDA wrapper includes are gone from
//!   CUDA 13 (`texture_fetch_functions.h`) or come from a library we do not install
//!   (`curand_mtgp32_kernel.h`): empty stand-ins are searched *after* every other include
//!   directory (`-idirafter`), so a toolkit that has them wins. Textures are therefore not
//!   available to foreign code compiled this way; run-time linking (NVRTC) has them.
//! * clang compiles CUDA C as nvcc does in what matters for speed: `-ffp-contract=fast` (fused
//!   multiply-adds, like `--fmad=true`), no flush-to-zero, IEEE division and square root. The
//!   square root needs care: `sqrtf` is libdevice's `__nv_sqrtf`, which asks
//!   `__nvvm_reflect("__CUDA_PREC_SQRT")`, and clang 19's own pipeline answers 0
//!   (`sqrt.approx.f32`; clang 19 has no `-fcuda-prec-sqrt`). So clang only emits the IR
//!   (`-Xclang -disable-llvm-passes`), the builder optimizes each source alone as clang would
//!   have, and its reflect pass answers 1, as nvcc's default `-prec-sqrt=true` does; the same
//!   answer holds for libdevice functions the Rust kernels call.
//! * Structs passed or returned by value lower differently in rustc (an array of registers) and
//!   clang (a `byval` pointer): such a function cannot be linked at build time. The LLVM
//!   signatures of every declared function are compared, so this is a build error
//!   ([`Error::ForeignSignatureMismatch`]), never a miscompiled call. Pass a pointer, or link
//!   that source at run time.
//! * clang's CUDA mode accepts an `extern "C"` redeclaration with other parameter types, so a
//!   C prototype compiled with the source would not catch a mismatch, and LLVM types cannot
//!   show signedness or what a pointer points to (a `uint32_t*` return slot for a declared
//!   `-> u64` is a `ptr` like any other). Two checks run: first the C-level one, compiled by
//!   the same clang after the source (`CudaBitcode::check_definitions`, the text the run-time
//!   Linker and the host compile use: [`crate::foreign::CHECK_HEADER`]), which compares what
//!   each type is; then the functions' LLVM types (exact, and what the call needs).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::foreign::ForeignDeclaration;
use crate::{Error, directives, io_err};

/// The prefix of the record globals: one per source linked at build time.
pub const LTO_RECORD_PREFIX: &str = "__gpukernel_lto_";

/// The clang major version the LTO step is tested with.
pub const CLANG_VERSION: u32 = 19;

/// The command that installs clang, for messages.
const INSTALL_CLANG: &str =
    "`cargo xtask doctor` in the gpukernel checkout (it runs `apt-get install clang-19`)";

/// Headers clang 19's CUDA wrapper includes that CUDA 13 no longer has (or that belong to a
/// library gpukernel does not install); empty stand-ins, searched last.
const STUB_HEADERS: [&str; 2] = ["texture_fetch_functions.h", "curand_mtgp32_kernel.h"];

/// The clang to compile foreign CUDA C with: `GPUKERNEL_CLANG`, else `clang-19` on `PATH`.
pub fn find_clang() -> Result<PathBuf, Error> {
    find_clang_named(
        std::env::var_os("GPUKERNEL_CLANG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
    )
}

/// [`find_clang`] with the value of `GPUKERNEL_CLANG` given.
fn find_clang_named(named: Option<PathBuf>) -> Result<PathBuf, Error> {
    let candidate = named
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("clang-{CLANG_VERSION}")));
    match Command::new(&candidate).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(candidate),
        other => Err(Error::ClangMissing {
            clang: candidate,
            from_env: named.is_some(),
            detail: match other {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                Err(e) => e.to_string(),
            },
            install: INSTALL_CLANG,
        }),
    }
}

/// The CUDA tool root whose headers clang compiles with: the first of
/// [`crate::cuda_tools_search_path`] with `include/cuda.h` and `include/cuda_runtime.h`.
pub fn cuda_headers_root() -> Result<PathBuf, Error> {
    let searched = crate::cuda_tools_search_path();
    searched
        .iter()
        .find(|d| d.join("include/cuda.h").is_file() && d.join("include/cuda_runtime.h").is_file())
        .cloned()
        .ok_or(Error::CudaHeadersMissing { searched })
}

/// One foreign source compiled for build-time LTO.
#[derive(Debug, Clone)]
pub(crate) struct CudaBitcode {
    /// The source as the build script named it (relative to the kernels crate, or absolute).
    pub(crate) named: PathBuf,
    /// The source's path.
    pub(crate) path: PathBuf,
    /// The bitcode clang wrote.
    pub(crate) bitcode: PathBuf,
    /// FNV-1a of the source's bytes, for the run-time Linker to recognise it.
    pub(crate) hash: u64,
    /// The clang and architecture it was compiled with, for the declarations' check
    /// ([`CudaBitcode::check_definitions`]); `None` in unit tests of the IR checks.
    pub(crate) checker: Option<(Clang, String)>,
}

impl CudaBitcode {
    /// Checks the source's definitions against the kernels' declarations at the C level, as
    /// the run-time Linker and the host compile do ([`crate::foreign::check_definitions`]): a
    /// file that includes the source and then the checks, compiled by the same clang with
    /// `-fsyntax-only`. Catches what the LLVM types cannot show (signedness; the pointee of a
    /// pointer, such as a `uint32_t*` return slot for a declared `-> u64`).
    ///
    /// `ir` is the source's bitcode as text: a declared function it defines where the check
    /// could not see it (inside a namespace, beside C++ overloads of its name) is refused
    /// ([`crate::foreign::unseen_definition`]), as the run-time Linker refuses it; its LLVM type
    /// alone would not show signedness or pointees.
    pub(crate) fn check_definitions(
        &self,
        declarations: &[ForeignDeclaration],
        ir: &str,
    ) -> Result<(), Error> {
        let Some((clang, arch)) = &self.checker else {
            return Ok(());
        };
        let wrapper = self.bitcode.with_extension("check.cu");
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let outcome = crate::foreign::check_definitions(&self.path, declarations, |text| {
            std::fs::write(&wrapper, text).map_err(io_err(&wrapper))?;
            let output = Command::new(&clang.clang)
                .args(clang.base_args(arch))
                // Every undeclared symbol in one pass (each is left out of the next one).
                .args(["-fsyntax-only", "-ferror-limit=0"])
                .arg(&wrapper)
                .current_dir(dir)
                .output()
                .map_err(io_err(&clang.clang))?;
            if output.status.success() {
                return Ok(None);
            }
            let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&output.stdout));
            Ok(Some(log))
        })?;
        if let Some(log) = outcome.log {
            // The source compiled on its own, so this is about the checks' text: say so.
            return Err(Error::ForeignDeviceCompileFailed {
                source_file: self.path.clone(),
                compiler: clang.clang.clone(),
                command: None,
                log: format!(
                    "{log}\nnote: the source compiled alone; this error comes from the declarations' check compiled \
                     after it (gpukernel_ffi_check.h)"
                ),
            });
        }
        let defined: Vec<String> = functions_in_ir(ir)
            .into_iter()
            .filter(|(_, defined, _)| *defined)
            .map(|(name, _, _)| name)
            .collect();
        crate::foreign::unseen_definition(&self.path, declarations, &outcome.unchecked, |s| {
            defined.iter().any(|d| d == s)
        })
    }
}

/// clang for the foreign sources of one build.
#[derive(Debug, Clone)]
pub(crate) struct Clang {
    clang: PathBuf,
    cuda: PathBuf,
    stubs: PathBuf,
    include_dirs: Vec<PathBuf>,
}

impl Clang {
    /// Finds clang and the CUDA headers, and writes the stand-in headers into `work`.
    pub(crate) fn locate(work: &Path) -> Result<Clang, Error> {
        let clang = find_clang()?;
        let cuda = cuda_headers_root()?;
        let stubs = work.join("clang-stubs");
        std::fs::create_dir_all(&stubs).map_err(io_err(&stubs))?;
        for name in STUB_HEADERS {
            let p = stubs.join(name);
            if !p.is_file() {
                std::fs::write(
                    &p,
                    "// Empty: gpukernel's stand-in for a header clang's CUDA wrapper includes.\n",
                )
                .map_err(io_err(&p))?;
            }
        }
        Ok(Clang {
            clang,
            cuda,
            stubs,
            include_dirs: Vec::new(),
        })
    }

    /// Include directories (`-I`, searched before the CUDA headers; [`crate::Builder::include_dir`]).
    pub(crate) fn include_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.include_dirs = dirs;
        self
    }

    /// The arguments common to every compile for `arch`.
    fn base_args(&self, arch: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "-x",
            "cuda",
            "--cuda-device-only",
            "-Wno-unknown-cuda-version",
            "--no-cuda-version-check",
            "-fno-color-diagnostics",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        args.push(format!("--cuda-gpu-arch={arch}").into());
        let mut path = OsString::from("--cuda-path=");
        path.push(&self.cuda);
        args.push(path);
        for dir in &self.include_dirs {
            args.push("-I".into());
            args.push(dir.clone().into_os_string());
        }
        args.push("-idirafter".into());
        args.push(self.stubs.clone().into_os_string());
        args
    }

    /// Compiles `named` (resolved against `manifest_dir`) to bitcode in `dir`; clang's log is
    /// the error, first and alone. Emits `rerun-if-changed` for the source and the local
    /// headers it includes.
    pub(crate) fn compile(
        &self,
        manifest_dir: &Path,
        named: &Path,
        arch: &str,
        dir: &Path,
        emit_directives: bool,
    ) -> Result<CudaBitcode, Error> {
        let path = manifest_dir.join(named);
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source: std::io::Error::new(
                source.kind(),
                format!(
                    "foreign CUDA source for build-time LTO not found or unreadable ({source}; `foreign_cuda` paths are \
                     relative to the kernels crate's directory, {})",
                    manifest_dir.display()
                ),
            ),
        })?;
        let hash = fnv1a(&bytes);
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "source".into());
        let bitcode = dir.join(format!("{stem}-{hash:016x}.bc"));
        let deps = bitcode.with_extension("d");
        let mut cmd = Command::new(&self.clang);
        cmd.args(self.base_args(arch))
            // clang's own passes would answer libdevice's `__nvvm_reflect` queries with its
            // defaults (`__CUDA_PREC_SQRT` = 0: `sqrtf` became `sqrt.approx.f32`); skipped, the
            // builder's `opt -O3` answers them as nvcc does (`device::reflect_args`).
            .args(["-O3", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c"])
            .arg(&path)
            .arg("-o")
            .arg(&bitcode)
            .arg("-MMD")
            .arg("-MF")
            .arg(&deps)
            .current_dir(manifest_dir);
        let shown = format!(
            "{} {}",
            self.clang.display(),
            cmd.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let output = cmd.output().map_err(io_err(&self.clang))?;
        if !output.status.success() {
            let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&output.stdout));
            return Err(Error::ForeignDeviceCompileFailed {
                source_file: path,
                compiler: self.clang.clone(),
                command: directives::verbose().then_some(shown),
                log,
            });
        }
        if emit_directives {
            directives::emit(format!("cargo:rerun-if-changed={}", path.display()));
            if let Ok(text) = std::fs::read_to_string(&deps) {
                let joined = text.replace("\\\n", " ");
                if let Some((_, list)) = joined.split_once(": ") {
                    for dep in crate::device::split_make_deps(list) {
                        let p = manifest_dir.join(dep.trim());
                        if p != path && p.is_file() && !p.starts_with(&self.cuda) {
                            directives::emit(format!("cargo:rerun-if-changed={}", p.display()));
                        }
                    }
                }
            }
        }
        Ok(CudaBitcode {
            named: named.to_path_buf(),
            path,
            bitcode,
            hash,
            checker: Some((self.clone(), arch.to_owned())),
        })
    }
}

/// The LLVM function type of each function the IR text declares or defines with external
/// linkage (`define internal`, `private`, `linkonce*`, `weak*` and `available_externally` ones
/// are skipped), as `(name, defined, signature)`.
pub(crate) fn functions_in_ir(ir: &str) -> Vec<(String, bool, Signature)> {
    let mut out = Vec::new();
    for line in ir.lines() {
        let (defined, rest) = if let Some(r) = line.strip_prefix("define ") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("declare ") {
            (false, r)
        } else {
            continue;
        };
        let padded = format!(" {rest}");
        if [
            " internal ",
            " private ",
            " linkonce",
            " weak",
            " available_externally ",
        ]
        .iter()
        .any(|k| padded.split(" @").next().unwrap_or("").contains(k))
        {
            continue;
        }
        let Some(at) = find_name_start(rest) else {
            continue;
        };
        let head = &rest[..at];
        let Some((name, params)) = split_name_params(&rest[at + 1..]) else {
            continue;
        };
        if name.starts_with("llvm.") {
            continue;
        }
        out.push((
            name,
            defined,
            Signature {
                ret: last_type(head.trim_end()),
                params: split_top_level(params)
                    .iter()
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| param_type(p))
                    .collect(),
            },
        ));
    }
    out
}

/// A function's LLVM type, as far as a call depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The return type.
    pub(crate) ret: String,
    /// Each parameter's type; `ptr byval` for an aggregate passed through a byval pointer.
    pub(crate) params: Vec<String>,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.ret, self.params.join(", "))
    }
}

/// Where the `@name(` of a `define`/`declare` line begins (the `@`).
fn find_name_start(rest: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            '@' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// `name(params) rest` (the name possibly quoted) → the name and the text inside the
/// parentheses.
fn split_name_params(s: &str) -> Option<(String, &str)> {
    let (name, after) = if let Some(q) = s.strip_prefix('"') {
        let end = q.find('"')?;
        (q[..end].to_owned(), &q[end + 1..])
    } else {
        let end = s.find('(')?;
        (s[..end].to_owned(), &s[end..])
    };
    let after = after.strip_prefix('(')?;
    let mut depth = 1i32;
    for (i, c) in after.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some((name, &after[..i]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits on commas outside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The type at the start of a parameter (`[2 x i32] %0`, `ptr noundef byval(%T) align 4 %1`).
fn param_type(p: &str) -> String {
    let p = p.trim();
    let ty = first_type(p);
    if p.contains("byval(") {
        format!("{ty} byval")
    } else {
        ty
    }
}

/// The first type of `s`: a bracketed aggregate or the first word.
fn first_type(s: &str) -> String {
    let open = s.chars().next();
    let close = match open {
        Some('[') => ']',
        Some('{') => '}',
        Some('<') => '>',
        _ => return s.split_whitespace().next().unwrap_or("").to_owned(),
    };
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        if Some(c) == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return s[..=i].to_owned();
            }
        }
    }
    s.to_owned()
}

/// The last type of `s` (the return type before the function's name).
fn last_type(s: &str) -> String {
    let close = s.chars().next_back();
    let open = match close {
        Some(']') => '[',
        Some('}') => '{',
        Some('>') => '<',
        _ => return s.split_whitespace().next_back().unwrap_or("").to_owned(),
    };
    let mut depth = 0i32;
    for (i, c) in s.char_indices().rev() {
        if Some(c) == close {
            depth += 1;
        } else if c == open {
            depth -= 1;
            if depth == 0 {
                return s[i..].to_owned();
            }
        }
    }
    s.to_owned()
}

/// Checks that every function the kernels' IR declares and a foreign source defines has the
/// same LLVM type in both (else the linked call would be undefined behaviour, not a compile
/// error); returns, per source, the external functions it defines.
pub(crate) fn check_signatures(
    kernels_ir: &str,
    sources: &[(CudaBitcode, String)],
    declarations: &[ForeignDeclaration],
) -> Result<Vec<Vec<String>>, Error> {
    let wanted: Vec<(String, Signature)> = functions_in_ir(kernels_ir)
        .into_iter()
        .filter(|(_, defined, _)| !defined)
        .map(|(n, _, s)| (n, s))
        .collect();
    let mut defined_per_source = Vec::new();
    for (source, ir) in sources {
        let mut defined = Vec::new();
        for (name, is_def, sig) in functions_in_ir(ir) {
            if !is_def {
                continue;
            }
            let earlier = sources
                .iter()
                .zip(&defined_per_source)
                .find(|(_, defs): &(_, &Vec<String>)| defs.contains(&name));
            if let Some(((first, _), _)) = earlier {
                return Err(Error::ForeignDuplicateDefinition {
                    symbol: name,
                    sources: [first.path.clone(), source.path.clone()],
                });
            }
            if let Some((_, want)) = wanted.iter().find(|(n, _)| *n == name)
                && *want != sig
            {
                return Err(mismatch(&name, want, &sig, source, declarations));
            }
            defined.push(name);
        }
        defined_per_source.push(defined);
    }
    Ok(defined_per_source)
}

fn mismatch(
    name: &str,
    want: &Signature,
    found: &Signature,
    source: &CudaBitcode,
    declarations: &[ForeignDeclaration],
) -> Error {
    let decl = declarations.iter().find(|d| d.symbol == name);
    let line = std::fs::read_to_string(&source.path)
        .ok()
        .and_then(|text| definition_line(&text, name));
    let defined_at = match line {
        Some(l) => format!("{}:{l}", source.path.display()),
        None => source.path.display().to_string(),
    };
    let byval = found.params.iter().any(|p| p.ends_with("byval"))
        || want
            .params
            .iter()
            .any(|p| p.starts_with('[') || p.starts_with('{'));
    let mut detail = format!(
        "LLVM types differ: the kernels call `{want}`, clang defines `{found}` (build-time LTO links the two directly)"
    );
    if byval {
        detail.push_str(
            "\nnote: a struct passed or returned by value lowers differently in rustc (registers) and clang (a byval \
             pointer) on nvptx64, so such a function cannot be linked at build time: pass a pointer, or link its source \
             at run time (`foreign_sources` for the simulator, the run-time Linker for the GPU)",
        );
    }
    Error::ForeignSignatureMismatch {
        symbol: name.to_owned(),
        declared_at: decl
            .map(|d| d.declared_at.clone())
            .unwrap_or_else(|| "(a Rust declaration)".into()),
        expected: decl
            .map(ForeignDeclaration::c_declaration)
            .unwrap_or_else(|| format!("{name}: {want}")),
        defined_at,
        detail,
    }
}

/// The first line of `text` (1-based) where `name(` starts something that is followed by a
/// `{` before the next `;`: the definition, roughly (for messages only).
pub(crate) fn definition_line(text: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    while let Some(found) = text[offset..].find(name) {
        let at = offset + found;
        offset = at + name.len();
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..at].contains("//") {
            continue;
        }
        let after = &text[at + name.len()..];
        if !after.trim_start().starts_with('(') {
            continue;
        }
        let brace = after.find('{');
        let semi = after.find(';');
        if matches!((brace, semi), (Some(b), Some(s)) if b < s)
            || (brace.is_some() && semi.is_none())
        {
            return Some(text[..at].matches('\n').count() + 1);
        }
    }
    None
}

/// The LLVM IR of the record globals (one per source): `gpukernel-lto-v1`, `source=`, `hash=`
/// (FNV-1a of the source's bytes, hex) and one `defines=` per external function. The run-time
/// Linker reads them from the PTX to recognise a source added again.
pub(crate) fn record_globals(
    sources: &[CudaBitcode],
    defined: &[Vec<String>],
) -> Vec<(String, String)> {
    sources
        .iter()
        .zip(defined)
        .map(|(s, defs)| {
            let mut text = format!(
                "gpukernel-lto-v1\nsource={}\nhash={:016x}\n",
                s.named.display(),
                s.hash
            );
            for d in defs {
                text.push_str(&format!("defines={d}\n"));
            }
            let name = format!("{LTO_RECORD_PREFIX}{:016x}", fnv1a(text.as_bytes()));
            let escaped: String = text
                .bytes()
                .map(|b| {
                    if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
                        (b as char).to_string()
                    } else {
                        format!("\\{b:02X}")
                    }
                })
                .collect();
            let global = format!(
                "@{name} = constant [{} x i8] c\"{escaped}\", align 1\n",
                text.len()
            );
            (name, global)
        })
        .collect()
}

/// FNV-1a, 64 bits.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUST_IR: &str = "declare noundef i32 @mul_f32_f32(ptr noundef, float noundef, float noundef) unnamed_addr #0\n\
declare noundef i32 @dot2(ptr noundef, [2 x i32], [2 x i32]) unnamed_addr #0\n\
define ptx_kernel void @k(ptr %0) unnamed_addr #1 {\n\
declare float @llvm.fma.f32(float, float, float)\n";

    const CLANG_IR: &str = "define dso_local noundef i32 @mul_f32_f32(ptr noundef writeonly captures(none) %0, float noundef %1, float noundef %2) local_unnamed_addr #0 {\n\
define dso_local range(i32 0, 2) i32 @sum_reduce(ptr noundef writeonly captures(none) %0, ptr noundef readonly captures(none) %1, i32 noundef %2) local_unnamed_addr #1 {\n\
define dso_local noundef i32 @dot2(ptr noundef writeonly captures(none) %0, ptr noundef readonly byval(%struct.Float2) align 4 captures(none) %1, ptr noundef readonly byval(%struct.Float2) align 4 captures(none) %2) local_unnamed_addr #2 {\n\
define linkonce_odr float @_Z2sqf(float %0) {\n\
define internal float @helper(float %0) {\n\
define dso_local { float, float } @pair(float %0) {\n";

    #[test]
    fn signatures_are_read_from_ir() {
        let f = functions_in_ir(CLANG_IR);
        let names: Vec<&str> = f.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["mul_f32_f32", "sum_reduce", "dot2", "pair"]);
        assert_eq!(f[0].2.to_string(), "i32 (ptr, float, float)");
        assert_eq!(f[1].2.ret, "i32");
        assert_eq!(f[2].2.to_string(), "i32 (ptr, ptr byval, ptr byval)");
        assert_eq!(f[3].2.ret, "{ float, float }");
        let r = functions_in_ir(RUST_IR);
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(r[1].2.to_string(), "i32 (ptr, [2 x i32], [2 x i32])");
        assert!(r[2].1, "the kernel is a definition");
    }

    #[test]
    fn a_struct_by_value_is_refused_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("nvptx-lto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cu = dir.join("f.cu");
        std::fs::write(
            &cu,
            "// dot2(\nextern \"C\" __device__ int dot2(float* r, Float2 a, Float2 b);\n\nextern \"C\" __device__ int dot2(float* r, Float2 a, Float2 b) {\n  return 0;\n}\n",
        )
        .unwrap();
        let src = CudaBitcode {
            named: "f.cu".into(),
            path: cu,
            bitcode: dir.join("f.bc"),
            hash: 1,
            checker: None,
        };
        let decl = ForeignDeclaration::parse(
            "gpukernel-foreign-v1\nsymbol=dot2\nabi=numba\nat=src/ffi.rs:9\nret=float\narg=struct Float2\narg=struct Float2\n",
        )
        .unwrap();
        let e = check_signatures(RUST_IR, &[(src.clone(), CLANG_IR.into())], &[decl])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`dot2`") && e.contains("src/ffi.rs:9"), "{e}");
        assert!(e.contains("f.cu:4"), "the definition's line: {e}");
        assert!(
            e.contains("i32 (ptr, [2 x i32], [2 x i32])") && e.contains("byval"),
            "{e}"
        );
        // Without dot2 the same sources pass, and what each defines is returned.
        let ok_ir = CLANG_IR.replace("@dot2", "@dot3");
        let defined = check_signatures(RUST_IR, &[(src, ok_ir)], &[]).unwrap();
        assert_eq!(defined, [["mul_f32_f32", "sum_reduce", "dot3", "pair"]]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_sources_defining_one_function_are_refused() {
        let src = |name: &str| CudaBitcode {
            named: name.into(),
            path: format!("/k/{name}").into(),
            bitcode: "/o/x.bc".into(),
            hash: 3,
            checker: None,
        };
        let ir = CLANG_IR.replace("@dot2", "@dot3");
        let e = check_signatures(
            RUST_IR,
            &[(src("a.cu"), ir.clone()), (src("b.cu"), ir)],
            &[],
        );
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("`mul_f32_f32`") && e.contains("/k/a.cu") && e.contains("/k/b.cu"),
            "{e}"
        );
    }

    #[test]
    fn a_scalar_mismatch_is_refused() {
        let clang = "define dso_local noundef i32 @mul_f32_f32(ptr %0, double %1, float %2) {\n";
        let src = CudaBitcode {
            named: "g.cu".into(),
            path: "/nonexistent/g.cu".into(),
            bitcode: "/nonexistent/g.bc".into(),
            hash: 2,
            checker: None,
        };
        let e = check_signatures(RUST_IR, &[(src, clang.into())], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("i32 (ptr, double, float)"), "{e}");
        assert!(!e.contains("byval"), "{e}");
    }

    #[test]
    fn records_are_ir_byte_strings() {
        let src = CudaBitcode {
            named: "cuda/f \"x\".cu".into(),
            path: "/k/cuda/f.cu".into(),
            bitcode: "/o/f.bc".into(),
            hash: 0xab,
            checker: None,
        };
        let r = record_globals(&[src], &[vec!["mul_f32_f32".into()]]);
        let (name, global) = &r[0];
        assert!(name.starts_with(LTO_RECORD_PREFIX), "{name}");
        assert!(global.contains("c\"gpukernel-lto-v1\\0Asource=cuda/f \\22x\\22.cu\\0Ahash=00000000000000ab\\0Adefines=mul_f32_f32\\0A\""), "{global}");
        let len: usize = "gpukernel-lto-v1\nsource=cuda/f \"x\".cu\nhash=00000000000000ab\ndefines=mul_f32_f32\n".len();
        assert!(global.contains(&format!("[{len} x i8]")), "{global}");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nvptx-lto-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_clang_names_the_command_that_installs_it() {
        let e = find_clang_named(Some("/nonexistent/clang-19".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/clang-19")
                && e.contains("GPUKERNEL_CLANG")
                && e.contains("cargo xtask doctor")
                && e.contains("apt-get install clang-19"),
            "{e}"
        );
    }

    /// Needs clang-19 and the CUDA headers (`cargo xtask doctor` installs both).
    #[test]
    fn clang_errors_come_first_with_the_source_line() {
        let dir = scratch("bad");
        std::fs::write(
            dir.join("bad.cu"),
            "extern \"C\" __device__ int f(float* r, float x) {\n    *r = x +;\n    return 0;\n}\n",
        )
        .unwrap();
        let clang = Clang::locate(&dir.join("work")).unwrap_or_else(|e| panic!("{e}"));
        let e = clang
            .compile(&dir, Path::new("bad.cu"), "sm_90", &dir.join("work"), false)
            .unwrap_err();
        assert!(matches!(e, Error::ForeignDeviceCompileFailed { .. }), "{e}");
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("{}:2:", dir.join("bad.cu").display()))
                && first.contains("error:"),
            "clang's error is the first line: {text}"
        );
        assert!(text.contains("does not compile for the GPU"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Needs clang-19 and the CUDA headers (`cargo xtask doctor`).
    #[test]
    fn include_dirs_resolve_library_headers_and_errors_come_before_their_warnings() {
        let dir = scratch("include");
        let inc = dir.join("third_party/include/Noisy");
        std::fs::create_dir_all(&inc).unwrap();
        let mut header = String::from("#pragma once\n");
        for i in 0..40 {
            header.push_str(&format!(
                "__device__ inline int noisy{i}(int a) {{ a == {i}; return a; }}\n"
            ));
        }
        std::fs::write(inc.join("noisy.h"), header).unwrap();
        let good = "#include <Noisy/noisy.h>\nextern \"C\" __device__ int f(int* r, int x) { *r = noisy3(x); return 0; }\n";
        std::fs::write(dir.join("good.cu"), good).unwrap();
        std::fs::write(
            dir.join("bad.cu"),
            good.replace("noisy3(x);", "noisy3(x) +;"),
        )
        .unwrap();
        let work = dir.join("work");
        let plain = Clang::locate(&work).unwrap_or_else(|e| panic!("{e}"));
        let e = plain
            .compile(&dir, Path::new("good.cu"), "sm_90", &work, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'Noisy/noisy.h' file not found"), "{e}");
        let clang = plain.include_dirs(vec![dir.join("third_party/include")]);
        clang
            .compile(&dir, Path::new("good.cu"), "sm_90", &work, false)
            .unwrap_or_else(|e| panic!("{e}"));
        let e = clang
            .compile(&dir, Path::new("bad.cu"), "sm_90", &work, false)
            .unwrap_err();
        let Error::ForeignDeviceCompileFailed { log, .. } = &e else {
            panic!("{e}")
        };
        assert!(log.matches("warning:").count() >= 40, "{log}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{}:2:", dir.join("bad.cu").display()))
                && text.lines().next().unwrap_or_default().contains("error:"),
            "clang's error is the first line: {text}"
        );
        assert!(
            !text.contains("noisy1")
                && text.contains("note: 40 warnings not shown (in ")
                && text.contains("noisy.h"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Needs clang-19, the CUDA headers and the nightly's llvm-tools (`cargo xtask doctor`).
    #[test]
    fn real_clang_output_is_checked_against_the_kernels_declarations() {
        let dir = scratch("real");
        std::fs::write(
            dir.join("f.cu"),
            "#include <cuda_fp16.h>\nstruct Float2 { float x; float y; };\n\
             extern \"C\" __device__ int mul_f32_f32(float* r, float a, float b) { *r = a * b; return 0; }\n\
             extern \"C\" __device__ int dot2(float* r, Float2 a, Float2 b) { *r = a.x * b.x + a.y * b.y; return 0; }\n\
             extern \"C\" __device__ int e(float* r, float x) { *r = expf(x) + __half2float(__float2half(x)); return 0; }\n",
        )
        .unwrap();
        let clang = Clang::locate(&dir.join("work")).unwrap_or_else(|e| panic!("{e}"));
        let bc = clang
            .compile(&dir, Path::new("f.cu"), "sm_90", &dir.join("work"), false)
            .unwrap_or_else(|e| panic!("{e}"));
        let nightly = std::env::var("GPUKERNEL_NIGHTLY").unwrap_or_else(|_| "nightly".into());
        let tc = crate::tools::Toolchain::locate(&nightly).unwrap_or_else(|e| panic!("{e}"));
        let ir = crate::device::run_tool(
            &tc.llvm_dis,
            &[bc.bitcode.clone().into_os_string(), "-o".into(), "-".into()],
        )
        .unwrap();
        // `mul_f32_f32` matches; `expf` came from libdevice, inside the bitcode.
        let defined = check_signatures(
            RUST_IR.lines().next().unwrap(),
            &[(bc.clone(), ir.clone())],
            &[],
        )
        .unwrap();
        assert_eq!(defined, [["mul_f32_f32", "dot2", "e"]]);
        assert!(
            !ir.contains("declare float @expf"),
            "expf resolved in the bitcode"
        );
        // `dot2` with structs by value: refused, naming the definition's line.
        let e = check_signatures(RUST_IR, &[(bc, ir)], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`dot2`") && e.contains("f.cu:4") && e.contains("byval"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn clang_checks_the_definitions_at_the_c_level() {
        // Issue 28 C6: a declared `-> u64` whose definition writes a `uint32_t*` has the same
        // LLVM type (`ptr`); the C-level check compiled after the source by the same clang
        // refuses it, naming the return slot and the definition's line. Integer spellings that
        // fit (`std::int32_t`, `long`, `unsigned`) pass, with and without `<cstdint>`.
        let dir = scratch("c_check");
        let decl = |symbol: &str, abi: &str, line: u32, ret: &str, args: &[&str]| {
            let mut record = format!(
                "gpukernel-foreign-v1\nsymbol={symbol}\nabi={abi}\nat=src/ffi.rs:{line}\nret={ret}\n"
            );
            for a in args {
                record.push_str(&format!("arg={a}\n"));
            }
            ForeignDeclaration::parse(&record).unwrap()
        };
        let decls = [
            decl(
                "wide",
                "numba",
                7,
                "unsigned long long",
                &["int", "long long"],
            ),
            decl("cplain", "c", 8, "unsigned int", &["const float*", "bool"]),
        ];
        let clang = Clang::locate(&dir.join("work")).unwrap_or_else(|e| panic!("{e}"));
        let nightly = std::env::var("GPUKERNEL_NIGHTLY").unwrap_or_else(|_| "nightly".into());
        let tc = crate::tools::Toolchain::locate(&nightly).unwrap_or_else(|e| panic!("{e}"));
        let check_with = |decls: &[ForeignDeclaration], name: &str, text: &str| {
            std::fs::write(dir.join(name), text).unwrap();
            let bc = clang
                .compile(&dir, Path::new(name), "sm_90", &dir.join("work"), false)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let ir = crate::device::run_tool(
                &tc.llvm_dis,
                &[bc.bitcode.clone().into_os_string(), "-o".into(), "-".into()],
            )
            .unwrap();
            bc.check_definitions(decls, &ir)
        };
        let check = |name: &str, text: &str| check_with(&decls, name, text);
        check(
            "fits.cu",
            "#include <cstdint>\n\
             extern \"C\" __device__ int wide(std::uint64_t* r, std::int32_t a, long b) { *r = a + b; return 0; }\n\
             extern \"C\" __device__ unsigned cplain(float* p, bool f) { return f ? (unsigned)*p : 0u; }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        check(
            "builtin.cu",
            "extern \"C\" __device__ int wide(unsigned long long* r, int a, long long b) { *r = a + b; return 0; }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let e = check(
            "slot.cu",
            "#include <cstdint>\n// 4 bytes written into an 8-byte slot\n\
             extern \"C\" __device__ int wide(uint32_t* r, int a, long long b) { *r = a + b; return 0; }\n",
        )
        .unwrap_err();
        let Error::ForeignSignatureMismatch {
            symbol,
            declared_at,
            defined_at,
            detail,
            ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(
            (symbol.as_str(), declared_at.as_str()),
            ("wide", "src/ffi.rs:7")
        );
        assert!(defined_at.ends_with("slot.cu:3"), "{e}");
        assert!(
            detail.contains("the return slot, must be 'unsigned long long*'"),
            "{e}"
        );
        let e = check(
            "sign.cu",
            "extern \"C\" __device__ int cplain(const float* p, bool f) { return 0; }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`cplain`") && e.contains("must return 'unsigned int'"),
            "{e}"
        );
        // Definitions the check cannot see at global scope: inside a namespace, or an
        // `extern "C"` function beside C++ overloads of its name. Their LLVM types fit (`int`
        // for `unsigned`), so only the C-level refusal stops them, as in the run-time Linker.
        let wrong = "extern \"C\" __device__ int cplain(const float* p, bool f) { return 0; }";
        for (name, text) in [
            ("namespaced.cu", format!("namespace lib {{ {wrong} }}\n")),
            (
                "overloaded.cu",
                format!("{wrong}\n__device__ int cplain(int x) {{ return x; }}\n"),
            ),
        ] {
            let e = check(name, &text).unwrap_err();
            let Error::ForeignSignatureMismatch {
                symbol,
                defined_at,
                detail,
                ..
            } = &e
            else {
                panic!("{name}: {e}")
            };
            assert_eq!(symbol, "cplain", "{name}: {e}");
            assert!(defined_at.ends_with(&format!("{name}:1")), "{name}: {e}");
            assert!(
                detail.contains("not visible at global scope")
                    && detail.contains("define it at global scope as one `extern \"C\"` function"),
                "{name}: {e}"
            );
        }
        // A struct by value with its recorded layout (`#[derive(DeviceCopy)] struct P { x: f32,
        // y: f32 }`): the C struct's fields must sit where Rust's do, by name.
        let mut byval = decl("byval", "c", 9, "float", &["struct P"]);
        byval.structs = ForeignDeclaration::parse(
            "gpukernel-foreign-v1\nsymbol=s\nabi=c\nat=a.rs:1\nret=void\n\
             struct=P:8:4\nfield=P:x:0:4:3\nfield=P:y:4:4:3\n",
        )
        .unwrap()
        .structs;
        let def = "extern \"C\" __device__ float byval(P p) { return p.x - p.y; }\n";
        check_with(
            std::slice::from_ref(&byval),
            "layout_fits.cu",
            &format!("struct P {{ float x; float y; }};\n{def}"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let e = check_with(
            std::slice::from_ref(&byval),
            "layout_swapped.cu",
            &format!("struct P {{ float y; float x; }};\n{def}"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`byval`") && e.contains("its field 'x' must be at offset 0"),
            "{e}"
        );
        // A source that only calls the function (another source defines it) passes.
        check(
            "caller.cu",
            "extern \"C\" __device__ unsigned cplain(const float* p, bool f);\n\
             namespace lib { __device__ unsigned twice(const float* p) { return 2u * cplain(p, true); } }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        check(
            "unrelated.cu",
            "namespace lib { __device__ int helper(int x) { return x; } }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn definition_lines_skip_prototypes_and_comments_without_bodies() {
        let text = "int f(int);\n// f(\nint f(int x)\n{\n  return x;\n}\n";
        assert_eq!(definition_line(text, "f"), Some(3));
        assert_eq!(definition_line("int g(int);\n", "g"), None);
    }
}
