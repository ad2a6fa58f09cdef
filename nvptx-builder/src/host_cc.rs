//! Compiles foreign CUDA C++ device code for the host, so that the simulator can run kernels
//! that call it.
//!
//! Each `.cu` file is compiled as C++17 (`-x c++`) with the compat header
//! `include/gpukernel_sim.h` force-included (`-include`): `__device__` and friends vanish,
//! `threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `__syncthreads`, the warp shuffles and votes
//! call the simulator through `gpukernel_device::host`'s `extern "C"` functions (which never
//! unwind into the foreign code: a fault ends the simulated thread without unwinding its
//! stack), `atomic*` map to GCC atomics, and the CUDA math intrinsics to `<cmath>`. Features the simulator cannot
//! run (`__global__` kernels, `__shared__` memory, inline PTX, textures, surfaces) stop the
//! compile with an error that names the feature at the offending file:line. Inline assembly is
//! looked for in the preprocessed source, in the user's files only: system headers (`<iostream>`,
//! glibc's `wchar.h`, `x86intrin.h`) use `asm` for the host and compile as they are, and so do
//! the headers of [`HostCc::include_dir`] libraries.
//!
//! The objects go into one static library that the kernels crate links on the host; the
//! foreign functions keep their names (`extern "C" __device__ int mul_f32_f32(float*, ...)`
//! becomes the host symbol `mul_f32_f32`), which is what `declare_device!` calls on the host.
//!
//! ```no_run
//! // in `fn main` of a kernels crate's build.rs
//! if !nvptx_builder::is_device_build() {
//!     let ptx = nvptx_builder::Builder::from_build_script().build().unwrap_or_else(|e| panic!("{e}"));
//!     // Each definition is checked against its `declare_device!` declaration.
//!     nvptx_builder::host_cc::compile_foreign_for_host_checked(
//!         &["cuda/mul.cu"],
//!         "foreign_sim",
//!         &ptx.foreign,
//!     )
//!     .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;
use crate::foreign::ForeignDeclaration;
use crate::{directives, preprocessed};

/// The compat header's text.
pub const COMPAT_HEADER: &str = include_str!("../include/gpukernel_sim.h");

/// The compat header's file name.
pub const COMPAT_HEADER_NAME: &str = "gpukernel_sim.h";

/// From a build script: compiles `sources` (paths relative to the package, or absolute) for
/// the host into the static library `lib_name` in `OUT_DIR`, and tells cargo to link it and to
/// rerun when a source changes. Each definition of a declared foreign function is checked
/// against its `declare_device!` declaration: pass [`crate::PtxOutput::foreign`] (see
/// [`HostCc::declarations`]); the simulator's run-time Linker checks `.cu` inputs again.
pub fn compile_foreign_for_host(
    sources: &[impl AsRef<Path>],
    lib_name: &str,
    declarations: &[ForeignDeclaration],
) -> Result<(), Error> {
    compile_for_host(sources, lib_name, declarations)
}

/// The earlier name of [`compile_foreign_for_host`], which now takes the declarations too.
#[doc(hidden)]
#[deprecated(note = "use `compile_foreign_for_host`, which takes the declarations")]
pub fn compile_foreign_for_host_checked(
    sources: &[impl AsRef<Path>],
    lib_name: &str,
    declarations: &[ForeignDeclaration],
) -> Result<(), Error> {
    compile_for_host(sources, lib_name, declarations)
}

fn compile_for_host(
    sources: &[impl AsRef<Path>],
    lib_name: &str,
    declarations: &[ForeignDeclaration],
) -> Result<(), Error> {
    let out_dir = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .ok_or_else(|| Error::Io {
            path: PathBuf::from("$OUT_DIR"),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "OUT_DIR is not set: compile_foreign_for_host runs from a build script",
            ),
        })?;
    HostCc::new(cc::Build::new(), out_dir)
        .declarations(declarations)
        .compile(sources, lib_name)
        .map(|_| ())
}

/// The host compile of foreign `.cu` files, with a caller-configured [`cc::Build`] (for tests
/// or for extra flags and include directories).
#[derive(Debug, Clone)]
pub struct HostCc {
    build: cc::Build,
    out_dir: PathBuf,
    cargo_metadata: bool,
    declarations: Vec<ForeignDeclaration>,
    include_dirs: Vec<PathBuf>,
    build_time_lto: Vec<PathBuf>,
}

impl HostCc {
    /// Compiles with `build` (its flags, include directories, defines and target settings are
    /// kept) into `out_dir`, printing cargo directives.
    pub fn new(build: cc::Build, out_dir: impl Into<PathBuf>) -> Self {
        HostCc {
            build,
            out_dir: out_dir.into(),
            cargo_metadata: true,
            declarations: Vec::new(),
            include_dirs: Vec::new(),
            build_time_lto: Vec::new(),
        }
    }

    /// A library include directory (`-I`): `#include <Lib/x.h>` resolves in it. Its headers
    /// are the library's, written to compile for the host: inline assembly in them is not
    /// refused as PTX (the user's own files are checked; see the module's documentation).
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// The sources that clang also compiles for the GPU (`Builder::foreign_cuda`), so that an
    /// error names the compiler the GPU build of each source really goes through.
    pub fn build_time_lto(mut self, sources: &[impl AsRef<Path>]) -> Self {
        self.build_time_lto
            .extend(sources.iter().map(|s| s.as_ref().to_path_buf()));
        self
    }

    /// The `declare_device!` declarations to check the sources' definitions against
    /// ([`crate::PtxOutput::foreign`]): each source is compiled once more with the checks
    /// after it ([`crate::foreign::CHECK_HEADER`], one `static_assert` per parameter under a
    /// `#line` naming its Rust declaration), which compare what each type is (signedness,
    /// width, float, pointee), whatever its spelling; a definition that differs stops the
    /// build with [`Error::ForeignSignatureMismatch`] naming the declaration, the definition's
    /// line and the parameter.
    pub fn declarations(mut self, declarations: &[ForeignDeclaration]) -> Self {
        self.declarations = declarations.to_vec();
        self
    }

    /// Checks the definitions in `src` against the declarations
    /// ([`crate::foreign::check_definitions`]: a file that includes the source, then the checks,
    /// compiled syntax only).
    fn check_declarations(&self, build: &cc::Build, src: &Path) -> Result<(), Error> {
        let abs = std::env::current_dir()
            .map(|cwd| cwd.join(src))
            .unwrap_or_else(|_| src.to_path_buf());
        let stem = src
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "source".into());
        let wrapper = self.out_dir.join("gpukernel-sim-include").join(format!(
            "check-{stem}-{:016x}.cpp",
            crate::lto::fnv1a(abs.to_string_lossy().as_bytes())
        ));
        let outcome = crate::foreign::check_definitions(&abs, &self.declarations, |text| {
            std::fs::write(&wrapper, text).map_err(|source| Error::Io {
                path: wrapper.clone(),
                source,
            })?;
            self.syntax_log(build, &wrapper)
        });
        match outcome {
            Ok(crate::foreign::CheckOutcome {
                log: None,
                unchecked,
            }) => {
                if unchecked.is_empty() {
                    return Ok(());
                }
                // Symbols the check could not see at global scope: refused where this source
                // defines them (a namespace, C++ overloads), as the run-time Linker does.
                let defined = self.defined_symbols(build, src, &wrapper)?;
                crate::foreign::unseen_definition(src, &self.declarations, &unchecked, |s| {
                    defined.iter().any(|d| d == s)
                })
            }
            // Not about the checks (the source alone compiled): the checked compile's log.
            Ok(crate::foreign::CheckOutcome { log: Some(log), .. }) => {
                Err(Error::ForeignCompileFailed {
                    source_file: src.to_path_buf(),
                    compiler: build
                        .try_get_compiler()
                        .map(|c| c.path().to_path_buf())
                        .unwrap_or_else(|_| PathBuf::from("c++")),
                    command: None,
                    log,
                    build_time_lto: self.build_time_lto.iter().any(|s| s == src),
                })
            }
            Err(Error::ForeignSignatureMismatch {
                symbol,
                declared_at,
                expected,
                detail,
                defined_at,
            }) => Err(Error::ForeignSignatureMismatch {
                symbol,
                declared_at,
                expected,
                // As the build script named the source.
                defined_at: defined_at.replacen(
                    &abs.display().to_string(),
                    &src.display().to_string(),
                    1,
                ),
                detail,
            }),
            Err(e) => Err(e),
        }
    }

    /// Whether to print `cargo:` directives (link the library, rerun on change); on by
    /// default, off for use outside build scripts.
    pub fn cargo_metadata(mut self, yes: bool) -> Self {
        self.cargo_metadata = yes;
        self
    }

    /// Writes the compat header into `out_dir/gpukernel-sim-include/` and returns its path.
    fn write_header(&self) -> Result<PathBuf, Error> {
        let dir = self.out_dir.join("gpukernel-sim-include");
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(COMPAT_HEADER_NAME);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() != Some(COMPAT_HEADER) {
            std::fs::write(&path, COMPAT_HEADER).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        }
        Ok(path)
    }

    /// The caller's build with the compat header and C++17; cc prints nothing (the directives
    /// are ours, so that a build script can hold them back).
    fn configured(&self) -> Result<cc::Build, Error> {
        let header = self.write_header()?;
        let mut build = self.build.clone();
        build
            .cpp(true)
            .std("c++17")
            .flag("-x")
            .flag("c++")
            .flag("-include")
            .flag(header.as_os_str())
            .define("GPUKERNEL_SIM", "1")
            .includes(&self.include_dirs)
            .cargo_metadata(false)
            .cargo_warnings(false);
        Ok(build)
    }

    /// Compiles `sources` into the static library `lib_name` (`lib<lib_name>.a` in the output
    /// directory) and returns its path. A compile error is returned with the compiler's log,
    /// which names the file and line.
    pub fn compile(&self, sources: &[impl AsRef<Path>], lib_name: &str) -> Result<PathBuf, Error> {
        let mut build = self.configured()?;
        build.out_dir(&self.out_dir);
        for src in sources {
            let src = src.as_ref();
            if !src.is_file() {
                return Err(missing_source(src));
            }
            if self.cargo_metadata {
                directives::emit(format!("cargo:rerun-if-changed={}", src.display()));
            }
            self.check_source(&build, src)?;
            build.file(src);
        }
        let compiler = build.get_compiler();
        build.try_compile(lib_name).map_err(|e| Error::ToolFailed {
            tool: compiler.path().to_path_buf(),
            args: vec![format!("(cc crate building lib{lib_name}.a)")],
            output: e.to_string(),
        })?;
        let lib = self.out_dir.join(format!("lib{lib_name}.a"));
        // The simulator's copy lives in a namespace of its own (see `HOST_SYMBOL_PREFIX`).
        crate::host_symbols::privatize(&lib)?;
        if self.cargo_metadata {
            for line in [
                format!("cargo:rustc-link-search=native={}", self.out_dir.display()),
                format!("cargo:rustc-link-lib=static={lib_name}"),
                // The compat header's C++ (as cc links it for C++ builds on Linux).
                "cargo:rustc-link-lib=stdc++".to_string(),
                "cargo:rerun-if-env-changed=CXX".to_string(),
                "cargo:rerun-if-env-changed=CXXFLAGS".to_string(),
            ] {
                directives::emit(line);
            }
        }
        Ok(lib)
    }

    /// Checks the syntax of every source (the fast part of [`compile`](HostCc::compile)), so
    /// that a mistake in a `.cu` is reported before the slower device build.
    pub fn check_all(&self, sources: &[impl AsRef<Path>]) -> Result<(), Error> {
        let build = self.configured()?;
        for src in sources {
            let src = src.as_ref();
            if !src.is_file() {
                return Err(missing_source(src));
            }
            self.check_source(&build, src)?;
        }
        Ok(())
    }

    /// Runs the compiler on `src` with `-fsyntax-only` and returns its log on failure (cc
    /// itself would only print it as cargo warnings); then looks for inline assembly in the
    /// preprocessed text of the user's files ([`Self::scan_preprocessed`]).
    fn check(&self, build: &cc::Build, src: &Path) -> Result<(), Error> {
        let compiler = build.try_get_compiler().map_err(|e| Error::ToolFailed {
            tool: PathBuf::from("c++"),
            args: Vec::new(),
            output: format!(
                "no host C++ compiler found (needed to compile {} for the simulator): {e}",
                src.display()
            ),
        })?;
        let mut cmd: Command = compiler.to_command();
        let mut preprocess = compiler.to_command();
        preprocess.arg("-E").arg(src);
        cmd.arg("-fsyntax-only").arg(src);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let output = cmd.output().map_err(|source| Error::Io {
            path: compiler.path().to_path_buf(),
            source,
        })?;
        let failed = |log: String| Error::ForeignCompileFailed {
            source_file: src.to_path_buf(),
            compiler: compiler.path().to_path_buf(),
            command: directives::verbose()
                .then(|| format!("{} {}", compiler.path().display(), args.join(" "))),
            log,
            build_time_lto: self.build_time_lto.iter().any(|s| s == src),
        };
        if !output.status.success() {
            let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&output.stdout));
            return Err(failed(log));
        }
        self.scan_preprocessed(preprocess, src)
            .map_err(|e| match e {
                Scanned::Io(e) => e,
                Scanned::InlineAsm(log) => failed(log),
            })
    }

    /// Preprocesses `src` (`cmd` is the compiler with `-E`) and refuses inline assembly in
    /// the user's files; emits `rerun-if-changed` for the local headers it includes.
    fn scan_preprocessed(&self, mut cmd: Command, src: &Path) -> Result<(), Scanned> {
        let output = cmd.output().map_err(|source| {
            Scanned::Io(Error::Io {
                path: PathBuf::from(cmd.get_program()),
                source,
            })
        })?;
        if !output.status.success() {
            // The syntax check passed, so this does not happen; if it does, the full compile
            // reports it.
            return Ok(());
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let scan = preprocessed::scan(&text, &self.include_dirs);
        if self.cargo_metadata {
            for file in &scan.local_files {
                let path = Path::new(file);
                if path != src
                    && path.is_file()
                    && path.extension().is_none_or(|e| e != "rs")
                    && !path.starts_with(&self.out_dir)
                {
                    directives::emit(format!("cargo:rerun-if-changed={file}"));
                }
            }
        }
        match scan.inline_asm {
            Some(found) => Err(Scanned::InlineAsm(inline_asm_log(&found))),
            None => Ok(()),
        }
    }
}

/// Why [`HostCc::scan_preprocessed`] refused a source.
enum Scanned {
    Io(Error),
    /// The compiler-style log of the inline assembly found.
    InlineAsm(String),
}

/// A gcc-style error for inline assembly at `found`, with the source line and a caret.
fn inline_asm_log(found: &preprocessed::InlineAsm) -> String {
    let source_line = std::fs::read_to_string(&found.file).ok().and_then(|t| {
        t.lines()
            .nth(found.line.saturating_sub(1))
            .map(str::to_owned)
    });
    let column = source_line
        .as_deref()
        .and_then(|l| l.find(&found.keyword))
        .map_or(1, |c| c + 1);
    let mut log = format!(
        "{}:{}:{column}: error: gpukernel: inline PTX ({}) in foreign code cannot run in the simulator",
        found.file, found.line, found.keyword
    );
    if let Some(l) = source_line {
        log.push_str(&format!(
            "\n{:>5} | {l}\n      | {}^",
            found.line,
            " ".repeat(column - 1)
        ));
    }
    log.push_str(
        "\n  hint: guard it with `#ifdef __CUDA_ARCH__` (defined when NVRTC or clang compile for the GPU) and give \
         the simulator the same computation in portable C++ under `#else`",
    );
    log
}

impl HostCc {
    /// The syntax check of `src`, with the declarations' checks when there are any.
    /// (the source alone first: its own errors, and inline assembly in the user's files).
    fn check_source(&self, build: &cc::Build, src: &Path) -> Result<(), Error> {
        self.check(build, src)?;
        if self
            .declarations
            .iter()
            .any(|d| gpukernel_ffi_check::check::c_check(d).is_some())
        {
            self.check_declarations(build, src)
        } else {
            Ok(())
        }
    }

    /// The global symbols an object compiled from `src` defines (compiled next to `scratch`,
    /// and removed), for the definitions the declarations' check could not see.
    fn defined_symbols(
        &self,
        build: &cc::Build,
        src: &Path,
        scratch: &Path,
    ) -> Result<Vec<String>, Error> {
        use object::{Object, ObjectSymbol};
        let compiler = build.try_get_compiler().map_err(|e| Error::ToolFailed {
            tool: PathBuf::from("c++"),
            args: Vec::new(),
            output: format!(
                "no host C++ compiler found (needed to compile {}): {e}",
                src.display()
            ),
        })?;
        let obj = scratch.with_extension("o");
        let mut cmd: Command = compiler.to_command();
        cmd.arg("-c").arg(src).arg("-o").arg(&obj);
        let output = cmd.output().map_err(|source| Error::Io {
            path: compiler.path().to_path_buf(),
            source,
        })?;
        if !output.status.success() {
            return Err(Error::ForeignCompileFailed {
                source_file: src.to_path_buf(),
                compiler: compiler.path().to_path_buf(),
                command: None,
                log: String::from_utf8_lossy(&output.stderr).into_owned(),
                build_time_lto: self.build_time_lto.iter().any(|s| s == src),
            });
        }
        let bytes = std::fs::read(&obj).map_err(|source| Error::Io {
            path: obj.clone(),
            source,
        })?;
        let _ = std::fs::remove_file(&obj);
        let Ok(file) = object::File::parse(&*bytes) else {
            return Ok(Vec::new());
        };
        Ok(file
            .symbols()
            .filter(|s| s.is_definition() && s.is_global())
            .filter_map(|s| s.name().ok().map(str::to_owned))
            .collect())
    }

    /// Runs the compiler on `file` with `-fsyntax-only`; its log if it failed.
    fn syntax_log(&self, build: &cc::Build, file: &Path) -> Result<Option<String>, Error> {
        let compiler = build.try_get_compiler().map_err(|e| Error::ToolFailed {
            tool: PathBuf::from("c++"),
            args: Vec::new(),
            output: format!(
                "no host C++ compiler found (needed to compile {} for the simulator): {e}",
                file.display()
            ),
        })?;
        let mut cmd: Command = compiler.to_command();
        cmd.arg("-fsyntax-only").arg(file);
        let output = cmd.output().map_err(|source| Error::Io {
            path: compiler.path().to_path_buf(),
            source,
        })?;
        if output.status.success() {
            return Ok(None);
        }
        let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
        log.push_str(&String::from_utf8_lossy(&output.stdout));
        Ok(Some(log))
    }
}

/// The error for a source that is not there: the full path looked at, and the CUDA sources
/// that its directory does hold (the usual mistake is a misspelt name).
fn missing_source(src: &Path) -> Error {
    let path = std::env::current_dir()
        .map(|cwd| cwd.join(src))
        .unwrap_or_else(|_| src.to_path_buf());
    let mut found: Vec<String> = path
        .parent()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cu") || n.ends_with(".cuh") || n.ends_with(".h"))
        .collect();
    found.sort();
    let there = if found.is_empty() {
        String::new()
    } else {
        format!("; that directory has: {}", found.join(", "))
    };
    Error::Io {
        path,
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "foreign CUDA source not found (compiling it for the simulator; a relative path is taken from the \
                 kernels crate's directory, where its build.rs runs){there}"
            ),
        ),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn host_triple() -> String {
        format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
    }

    fn test_build() -> cc::Build {
        let mut b = cc::Build::new();
        let triple = host_triple();
        b.target(&triple)
            .host(&triple)
            .opt_level(1)
            .debug(false)
            .cargo_metadata(false);
        b
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("gpukernel-host-cc-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const GOOD: &str = r#"
extern "C" __device__ int mul_f32_f32(float* ret, float a, float b) {
    *ret = a * b;
    return 0;
}
__device__ __forceinline__ float sq(float x) { return x * x; }
extern "C" __device__ int block_norm(float* ret, const float* v, int n) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += sq(v[i]);
    unsigned count = 0;
    atomicAdd(&count, 1u);
    float f = __fdividef(rsqrtf(4.0f), 1.0f) + fmaf(1.0f, 2.0f, 3.0f) + __expf(0.0f) + min(1, 2);
    s += __shfl_down_sync(0xffffffffu, s, 1) * 0.0f + f * 0.0f;
    __syncthreads();
    *ret = sqrtf(s);
    return 0;
}
"#;

    #[test]
    fn compiles_foreign_sources_into_a_static_library() {
        let dir = scratch("good");
        let src = dir.join("foreign.cu");
        std::fs::write(&src, GOOD).unwrap();
        let lib = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[&src], "foreign_sim")
            .unwrap();
        let bytes = std::fs::read(&lib).unwrap();
        assert!(
            bytes.starts_with(b"!<arch>\n"),
            "{} is an ar archive",
            lib.display()
        );
        let has = |sym: &str| bytes.windows(sym.len()).any(|w| w == sym.as_bytes());
        assert!(
            has("mul_f32_f32") && has("block_norm"),
            "the foreign symbols are defined"
        );
        assert!(
            has("gpukernel_sim_thread_idx"),
            "threadIdx calls the simulator"
        );
        assert!(
            dir.join("gpukernel-sim-include")
                .join(COMPAT_HEADER_NAME)
                .is_file()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn definitions_are_renamed_into_the_host_namespace() {
        // `write` and `getpid` are C library names; `helper` is called from another member.
        let dir = scratch("host-names");
        let (a, b) = (dir.join("a.cu"), dir.join("b.cu"));
        std::fs::write(
            &a,
            "extern \"C\" __device__ int helper(int x) { return x * 2; }\n\
             extern \"C\" __device__ int write(int* ret, int x) { *ret = helper(x); return 0; }\n",
        )
        .unwrap();
        std::fs::write(
            &b,
            "extern \"C\" int helper(int x);\n\
             extern \"C\" __device__ int getpid(int* ret) { *ret = helper(21); return 0; }\n",
        )
        .unwrap();
        let lib = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[&a, &b], "host_names")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut raw = crate::host_symbols::defined_raw(&lib).unwrap().unwrap();
        raw.sort();
        assert_eq!(
            raw,
            [
                "__gpukernel_host_getpid",
                "__gpukernel_host_helper",
                "__gpukernel_host_write"
            ],
            "every definition is renamed, none keeps a host process's name"
        );
        // The reference from the other member follows the rename; the check sees the names
        // the sources spell.
        let data = std::fs::read(&lib).unwrap();
        let archive = object::read::archive::ArchiveFile::parse(&*data).unwrap();
        let mut undefined = Vec::new();
        for member in archive.members() {
            let member = member.unwrap();
            let file = object::File::parse(member.data(&*data).unwrap()).unwrap();
            for sym in object::Object::symbols(&file) {
                if object::ObjectSymbol::is_undefined(&sym) {
                    undefined.push(object::ObjectSymbol::name(&sym).unwrap().to_owned());
                }
            }
        }
        assert!(
            undefined.iter().any(|u| u == "__gpukernel_host_helper")
                && !undefined.iter().any(|u| u == "helper"),
            "{undefined:?}"
        );
        let mut seen = crate::host_symbols::defined_in_archive(&lib)
            .unwrap()
            .unwrap();
        seen.sort();
        assert_eq!(seen, ["getpid", "helper", "write"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn compile_error(name: &str, body: &str) -> String {
        let dir = scratch(name);
        let src = dir.join(format!("{name}.cu"));
        std::fs::write(&src, format!("// line 1\n{body}\n")).unwrap();
        let err = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[&src], name)
            .unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        err.to_string()
    }

    fn declaration(symbol: &str, c_abi: bool, ret: &str, args: &[&str]) -> ForeignDeclaration {
        ForeignDeclaration {
            symbol: symbol.into(),
            abi: if c_abi {
                crate::foreign::ForeignAbi::C
            } else {
                crate::foreign::ForeignAbi::Numba
            },
            declared_at: "src/ffi.rs:12".into(),
            ret: ret.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            structs: Vec::new(),
        }
    }

    fn compile_declared(name: &str, body: &str, decls: &[ForeignDeclaration]) -> Result<(), Error> {
        let dir = scratch(name);
        let src = dir.join(format!("{name}.cu"));
        std::fs::write(&src, format!("// line 1\n{body}\n")).unwrap();
        let result = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .declarations(decls)
            .compile(&[&src], name)
            .map(|_| ());
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    #[test]
    fn definitions_are_checked_against_the_declarations() {
        let mul = declaration("mul_f32_f32", false, "float", &["float", "float"]);
        let axpy = declaration("axpy_c", true, "float", &["float", "float", "float"]);
        // Matching definitions compile.
        compile_declared(
            "decl_ok",
            "extern \"C\" __device__ int mul_f32_f32(float* r, float a, float b) { *r = a * b; return 0; }\n\
             extern \"C\" __device__ float axpy_c(float a, float x, float y) { return a * x + y; }",
            &[mul.clone(), axpy.clone()],
        )
        .unwrap();
        // Wrong types, count, return, ABI: each names both sides.
        for (name, body, symbol) in [
            (
                "decl_types",
                "extern \"C\" __device__ int mul_f32_f32(double* r, double a, double b) { return 0; }",
                "mul_f32_f32",
            ),
            (
                "decl_count",
                "extern \"C\" __device__ int mul_f32_f32(float* r, float a) { return 0; }",
                "mul_f32_f32",
            ),
            (
                "decl_ret",
                "extern \"C\" __device__ double axpy_c(float a, float x, float y) { return a; }",
                "axpy_c",
            ),
            (
                "decl_abi",
                "extern \"C\" __device__ int axpy_c(float* r, float a, float x, float y) { return 0; }",
                "axpy_c",
            ),
        ] {
            let e = compile_declared(name, body, &[mul.clone(), axpy.clone()]).unwrap_err();
            let Error::ForeignSignatureMismatch {
                symbol: s,
                declared_at,
                defined_at,
                ..
            } = &e
            else {
                panic!("{name}: {e}")
            };
            assert_eq!(s, symbol, "{name}: {e}");
            assert_eq!(declared_at, "src/ffi.rs:12");
            assert!(defined_at.ends_with(&format!("{name}.cu:2")), "{name}: {e}");
        }
    }

    #[test]
    fn unsupported_features_are_compile_errors_naming_file_and_line() {
        let cases = [
            (
                "shared",
                "__device__ void f() { __shared__ float tile[32]; tile[0] = 1; }",
                "__shared__ memory",
            ),
            (
                "global",
                "__global__ void k(float* x) { x[0] = 1; }",
                "__global__ kernels",
            ),
            (
                "inline_asm",
                "__device__ int f() { int x; asm(\"mov.u32 %0, 1;\" : \"=r\"(x)); return x; }",
                "inline PTX",
            ),
            (
                "textures",
                "__device__ float f(cudaTextureObject_t t) { return tex1Dfetch<float>(t, 3); }",
                "textures",
            ),
        ];
        for (name, body, feature) in cases {
            let e = compile_error(name, body);
            assert!(
                e.contains(feature),
                "{name}: the error names the feature: {e}"
            );
            assert!(
                e.contains(&format!("{name}.cu:2")),
                "{name}: the error names file:line: {e}"
            );
            let log_at = e.find(&format!("{name}.cu:2"));
            let note_at = e.find("does not compile for the simulator");
            assert!(
                log_at.is_some()
                    && note_at.is_some()
                    && log_at < note_at
                    && !e.contains("-fsyntax-only"),
                "{name}: the compiler's log comes first, no command line: {e}"
            );
        }
    }

    /// A `.cu` as users write it: standard and system headers (which use `asm` for the host)
    /// compile; PTX guarded by `__CUDA_ARCH__` is not there for the host.
    const WITH_SYSTEM_HEADERS: &str = r#"#include <iostream>
#include <stdexcept>
#include <cstdint>
#include <cmath>
#include <pthread.h>
#include <wchar.h>
#if __has_include(<x86intrin.h>)
#include <x86intrin.h>
#endif
extern "C" __device__ int lanes(std::uint32_t* ret, float x) {
#ifdef __CUDA_ARCH__
    asm("mov.u32 %0, %laneid;" : "=r"(*ret));
#else
    *ret = threadIdx.x % 32;
#endif
    if (std::isnan(x)) throw std::runtime_error("nan");
    return 0;
}
"#;

    #[test]
    fn system_headers_compile_and_only_the_users_inline_asm_is_refused() {
        let dir = scratch("system_headers");
        let src = dir.join("headers.cu");
        std::fs::write(&src, WITH_SYSTEM_HEADERS).unwrap();
        let lib = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[&src], "headers")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(lib.is_file());
        // The same file with the user's own PTX, directly, through a macro of the user's, and
        // in a local header: each refused at the user's line.
        let own = WITH_SYSTEM_HEADERS.replace("#ifdef __CUDA_ARCH__", "#if 1");
        std::fs::write(dir.join("ptx.h"), "// local\n#define LANE(r) __asm__ volatile(\"mov.u32 %0, %laneid;\" : \"=r\"(r))\ninline unsigned lane() { unsigned r; asm(\"mov.u32 %0, %laneid;\" : \"=r\"(r)); return r; }\n").unwrap();
        for (name, text, at, keyword) in [
            ("own", own.clone(), "own.cu:12:5", "asm"),
            (
                "macro",
                WITH_SYSTEM_HEADERS
                    .replace("    *ret = threadIdx.x % 32;", "    LANE(*ret);")
                    .replace(
                        "#include <iostream>",
                        "#define LANE(r) __asm__(\"mov.u32 %0, %laneid;\" : \"=r\"(r))",
                    ),
                "macro.cu:14:",
                "__asm__",
            ),
            (
                "header",
                format!("#include \"ptx.h\"\n{WITH_SYSTEM_HEADERS}"),
                "ptx.h:3:",
                "asm",
            ),
        ] {
            let src = dir.join(format!("{name}.cu"));
            std::fs::write(&src, text).unwrap();
            let e = HostCc::new(test_build(), &dir)
                .cargo_metadata(false)
                .compile(&[&src], name)
                .unwrap_err()
                .to_string();
            let first = e.lines().next().unwrap_or_default();
            assert!(
                first.contains(at)
                    && first.contains(&format!("inline PTX ({keyword})"))
                    && e.contains("#ifdef __CUDA_ARCH__"),
                "{name}: {e}"
            );
            assert!(
                !e.contains("/usr/include"),
                "{name}: no system header is blamed: {e}"
            );
            assert_eq!(e.matches("error:").count(), 1, "{name}: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn include_dirs_resolve_library_headers_whose_host_code_may_use_asm() {
        let dir = scratch("include_dir");
        let lib = dir.join("third_party/include/Rng");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(
            lib.join("rng.h"),
            "#pragma once\n#include <cstdint>\n\
             inline std::uint32_t rng_next(std::uint32_t x) {\n\
             #ifndef __CUDA_ARCH__\n    __asm__ __volatile__(\"\" ::: \"memory\");\n#endif\n\
             return x * 1664525u + 1013904223u; }\n",
        )
        .unwrap();
        let src = dir.join("random.cu");
        std::fs::write(
            &src,
            "#include <Rng/rng.h>\nextern \"C\" __device__ int next(unsigned* r, unsigned x) { *r = rng_next(x); return 0; }\n",
        )
        .unwrap();
        let e = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[&src], "no_include")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Rng/rng.h"), "without the directory: {e}");
        let lib = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .include_dir(dir.join("third_party/include"))
            .compile(&[&src], "with_include")
            .unwrap_or_else(|e| panic!("{e}"));
        let defined = crate::host_symbols::defined_in_archive(&lib)
            .unwrap()
            .unwrap();
        assert!(defined.iter().any(|s| s == "next"), "{defined:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_come_before_a_librarys_warnings_and_name_the_gpu_compiler() {
        let dir = scratch("errors_first");
        let inc = dir.join("include/Noisy");
        std::fs::create_dir_all(&inc).unwrap();
        let mut header = String::from("#pragma once\n");
        for i in 0..60 {
            header.push_str(&format!(
                "inline int noisy{i}(int a) {{ int unused{i}; return 0; }}\n"
            ));
        }
        std::fs::write(inc.join("noisy.h"), header).unwrap();
        let src = dir.join("broken.cu");
        std::fs::write(
            &src,
            "#include <Noisy/noisy.h>\nextern \"C\" __device__ int f(float* r, float x) {\n    *r = x +;\n    return 0;\n}\n",
        )
        .unwrap();
        let host = |lto: bool| {
            let h = HostCc::new(test_build(), &dir)
                .cargo_metadata(false)
                .include_dir(dir.join("include"));
            if lto { h.build_time_lto(&[&src]) } else { h }
        };
        let e = host(false).compile(&[&src], "broken").unwrap_err();
        let Error::ForeignCompileFailed { log, .. } = &e else {
            panic!("{e}")
        };
        assert!(
            log.matches("warning:").count() >= 60,
            "the whole log is kept: {log}"
        );
        let text = e.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with("In function 'int f(float*, float)':")
                || lines[0].ends_with("In function \u{2018}int f(float*, float)\u{2019}:")
                || lines[0].contains("error:"),
            "the error's context comes first: {text}"
        );
        assert!(
            lines[..2]
                .iter()
                .any(|l| l.starts_with(&format!("{}:3:", src.display())) && l.contains("error:")),
            "then the error: {text}"
        );
        assert!(!text.contains("unused0"), "{text}");
        assert!(
            text.contains("note: 120 warnings not shown (in ")
                && text.contains("noisy.h")
                && text.contains("GPUKERNEL_BUILD_VERBOSE=1"),
            "{text}"
        );
        assert!(
            text.contains("run-time Linker") && !text.contains("clang"),
            "{text}"
        );
        let text = host(true)
            .compile(&[&src], "broken")
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("clang compiles the same file") && !text.contains("NVRTC"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_sources_are_errors_naming_the_file() {
        let dir = scratch("missing");
        let e = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[dir.join("nope.cu")], "missing")
            .unwrap_err();
        assert!(e.to_string().contains("nope.cu"), "{e}");
        std::fs::write(dir.join("functions.cu"), GOOD).unwrap();
        let e = HostCc::new(test_build(), &dir)
            .cargo_metadata(false)
            .compile(&[dir.join("function.cu")], "missing")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{}", dir.join("function.cu").display()))
                && e.contains("that directory has: functions.cu"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
