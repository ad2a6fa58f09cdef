//! The builder's error type: every failure names what to do about it, and `Debug` prints the
//! message as `Display` does (a build script's `.unwrap()` shows the compiler's log as is).

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, with what to do about it.
///
/// `Debug` prints the same text as `Display`, so that `.unwrap()` in a build script shows the
/// message and the compiler's log as they are, not as an escaped struct.
#[non_exhaustive]
pub enum Error {
    /// The nightly toolchain is not installed.
    NightlyMissing {
        /// The toolchain name that was asked for.
        toolchain: String,
        /// What rustup said.
        detail: String,
    },
    /// The toolchain exists but is not a nightly (kernels need `-Zbuild-std` and the
    /// `gpu-kernel` ABI, both nightly-only).
    NotNightly {
        /// The toolchain name that was asked for.
        toolchain: String,
        /// Its `rustc -V` line.
        version: String,
    },
    /// `rustup` itself is not on `PATH`.
    RustupMissing(std::io::Error),
    /// A component of the nightly toolchain is missing.
    ComponentMissing {
        /// The rustup component's name (`rust-src`, `llvm-tools-preview`).
        component: &'static str,
        /// The toolchain name.
        toolchain: String,
        /// The path that was expected to exist.
        expected: PathBuf,
    },
    /// The architecture is not of the form `sm_XX` with XX ≥ 70.
    BadArch {
        /// The value given.
        arch: String,
        /// Where it came from (`GPUKERNEL_ARCH` or the builder).
        source: &'static str,
    },
    /// The kernels crate failed to compile for nvptx64; `diagnostics` are rustc's, with
    /// file:line.
    CompileFailed {
        /// The kernels crate's manifest.
        manifest: PathBuf,
        /// The command that ran.
        command: String,
        /// rustc's and cargo's diagnostics.
        diagnostics: String,
    },
    /// An LLVM tool or ptxas failed.
    ToolFailed {
        /// The tool.
        tool: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its output.
        output: String,
    },
    /// ptxas rejected the PTX we produced.
    PtxasRejected {
        /// The PTX file.
        ptx: PathBuf,
        /// The architecture it was checked for.
        arch: String,
        /// ptxas's log.
        log: String,
    },
    /// The kernels crate's package name is unknown: `CARGO_PKG_NAME` is unset (the builder
    /// runs outside a build script) and [`Builder::package_name`](crate::Builder::package_name) was not called.
    PackageNameUnknown {
        /// The kernels crate's manifest.
        manifest: PathBuf,
    },
    /// The device build produced no bitcode for the kernels crate.
    NoBitcode {
        /// The kernels crate's manifest.
        manifest: PathBuf,
    },
    /// The shared-memory pass could not rewrite the linked IR.
    SharedRewrite(String),
    /// A foreign CUDA C source does not compile for the host (the simulator's copy).
    ForeignCompileFailed {
        /// The source.
        source_file: PathBuf,
        /// The host C++ compiler.
        compiler: PathBuf,
        /// Its full command line, shown with `GPUKERNEL_BUILD_VERBOSE=1`.
        command: Option<String>,
        /// The compiler's whole log (file:line, caret). The message shows its errors first
        /// and counts the warnings, unless `GPUKERNEL_BUILD_VERBOSE=1` asked for everything.
        log: String,
        /// Whether clang also compiles the source for the GPU (`Builder::foreign_cuda`); else
        /// the GPU gets it through the run-time Linker.
        build_time_lto: bool,
    },
    /// A foreign `.cu` source defines a function differently from its `declare_device!`
    /// declaration (found by the checks compiled after the source: `foreign::CHECK_HEADER`,
    /// by clang for `foreign_cuda` and by the host compiler; or by the LLVM types of LTO).
    ForeignSignatureMismatch {
        /// The foreign symbol.
        symbol: String,
        /// The Rust declaration, `file:line`.
        declared_at: String,
        /// The C declaration the Rust one stands for.
        expected: String,
        /// The definition, `file:line`.
        defined_at: String,
        /// The compiler's message.
        detail: String,
    },
    /// The kernels call libdevice functions (`__nv_expf`, …: gpukernel-device's `math`) and
    /// libdevice's bitcode was not found.
    LibdeviceMissing {
        /// The libdevice functions the device code calls.
        functions: Vec<String>,
        /// The paths looked at.
        searched: Vec<PathBuf>,
    },
    /// clang, which compiles the sources of [`Builder::foreign_cuda`](crate::Builder::foreign_cuda), is not installed.
    ClangMissing {
        /// The program looked for.
        clang: PathBuf,
        /// Whether `GPUKERNEL_CLANG` named it.
        from_env: bool,
        /// What running it said.
        detail: String,
        /// The command that installs it.
        install: &'static str,
    },
    /// No CUDA headers (`include/cuda.h`, `include/cuda_runtime.h`) for clang to compile the
    /// sources of [`Builder::foreign_cuda`](crate::Builder::foreign_cuda) with.
    CudaHeadersMissing {
        /// The folders searched, in order.
        searched: Vec<PathBuf>,
    },
    /// A source of [`Builder::foreign_cuda`](crate::Builder::foreign_cuda) does not compile for the GPU (clang, build-time
    /// LTO).
    ForeignDeviceCompileFailed {
        /// The source.
        source_file: PathBuf,
        /// clang.
        compiler: PathBuf,
        /// Its full command line, shown with `GPUKERNEL_BUILD_VERBOSE=1`.
        command: Option<String>,
        /// clang's whole log (file:line, caret). The message shows its errors first and
        /// counts the warnings, unless `GPUKERNEL_BUILD_VERBOSE=1` asked for everything.
        log: String,
    },
    /// Two sources of [`Builder::foreign_cuda`](crate::Builder::foreign_cuda) define the same function.
    ForeignDuplicateDefinition {
        /// The function.
        symbol: String,
        /// The sources that define it.
        sources: [PathBuf; 2],
    },
    /// A kernel has the name of a foreign function that `declare_device!` declares: the
    /// kernel's entry would take the place of the function, and its callers would be deleted.
    KernelNamedLikeForeign {
        /// The kernel (and the foreign symbol).
        kernel: String,
        /// Where the foreign function is declared, `file:line`.
        declared_at: String,
    },
    /// A file could not be read or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A `declare_device!` symbol is not the user's foreign code: a name the CUDA driver,
    /// libdevice, the C library or the compiler's builtins define, or a function the kernels'
    /// own code (Rust, libdevice) defines, which the declaration would bind instead.
    ForeignSymbolNotForeign {
        /// The declared symbol.
        symbol: String,
        /// The Rust declaration, `file:line`.
        declared_at: String,
        /// What defines it instead.
        defined_by: String,
    },
    /// Foreign functions the kernels crate declares that no source of its host library
    /// defines (a `.cu` missing from build.rs, or a misspelt symbol): found before the host
    /// link, which would fail with `undefined symbol`. A crate that names no foreign source
    /// defines none: its declarations are all missing (on the simulator they would otherwise
    /// bind to whatever the host process defines under that name, libc's included).
    ForeignDefinitionMissing {
        /// The declarations without a definition.
        missing: Vec<MissingDefinition>,
        /// The sources compiled for the host, as the build script named them.
        sources: Vec<PathBuf>,
    },
    /// The pass that keeps the kernel-name record only in entries that can fail a foreign
    /// call could not resolve the optimized IR (see `kernel_names`).
    KernelNames(String),
    /// An architecture of [`Builder::sass_archs`](crate::Builder::sass_archs) cannot get SASS.
    BadSassArch {
        /// The architecture named.
        arch: String,
        /// Why.
        reason: String,
    },
    /// ptxas could not compile the kernels' PTX to SASS for one of the embedded architectures
    /// (typically inline assembly of a newer architecture).
    SassFailed {
        /// The architecture.
        arch: String,
        /// The PTX compiled.
        ptx: PathBuf,
        /// ptxas's log.
        log: String,
    },
    /// SASS was asked for ([`Builder::sass_archs`](crate::Builder::sass_archs)) but a CUDA tool
    /// that makes it is missing.
    SassToolMissing {
        /// `ptxas` or `fatbinary`.
        tool: &'static str,
        /// The directories searched.
        searched: Vec<PathBuf>,
    },
    /// [`Builder::launch_bounds`](crate::Builder::launch_bounds) names no kernel of the PTX,
    /// or one twice.
    LaunchBounds(String),
}

/// A declared foreign function without a definition on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MissingDefinition {
    /// The foreign symbol.
    pub symbol: String,
    /// Its Rust declaration, `file:line`.
    pub declared_at: String,
    /// Defined names close to it, `name (file:line)`.
    pub similar: Vec<String>,
    /// The same name defined as a C++ function (mangled, `extern "C"` missing), `name
    /// (file:line)`.
    pub cxx: Option<String>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NightlyMissing { toolchain, detail } => write!(
                f,
                "the Rust toolchain `{toolchain}` (needed to compile kernels for nvptx64; {TOOLCHAIN_ORIGIN}) is not installed.\n\
                 hint: run `rustup toolchain install {toolchain} --profile minimal --component rust-src,llvm-tools-preview` \
                 (or `cargo xtask doctor` in the gpukernel checkout), or name an installed nightly in GPUKERNEL_NIGHTLY or the kernels crate's `[package.metadata.gpukernel] nightly`.\n\
                 rustup said: {detail}"
            ),
            Error::NotNightly { toolchain, version } => write!(
                f,
                "the Rust toolchain `{toolchain}` ({TOOLCHAIN_ORIGIN}) is not a nightly: it is `{version}`, and kernels \
                 are compiled with nightly-only features (`-Zbuild-std=core`, the `gpu-kernel` ABI).\n\
                 hint: name a nightly toolchain there (GPUKERNEL_NIGHTLY overrides the crate's pin; the default is `nightly`), e.g. `nightly` \
                 or a dated `nightly-YYYY-MM-DD`; your host code stays on stable"
            ),
            Error::RustupMissing(e) => write!(
                f,
                "`rustup` was not found on PATH ({e}); kernels are compiled with a rustup-managed nightly toolchain.\n\
                 hint: install rustup from https://rustup.rs, then run `cargo xtask doctor`"
            ),
            Error::ComponentMissing {
                component,
                toolchain,
                expected,
            } => write!(
                f,
                "the `{component}` component of the `{toolchain}` toolchain is missing (looked for {}).\n\
                 hint: run `rustup component add {component} --toolchain {toolchain}` (or `cargo xtask doctor`)",
                expected.display()
            ),
            Error::BadArch { arch, source } => write!(
                f,
                "invalid GPU architecture `{arch}` (from {source}): expected `sm_XX` with XX >= 70, e.g. `sm_90` for an H100 or `sm_80` for an A100"
            ),
            Error::CompileFailed {
                manifest,
                command,
                diagnostics,
            } => {
                write!(
                    f,
                    "the kernels crate {} failed to compile for nvptx64 (file paths below are relative to its package or workspace root).\ncommand: {command}\n{diagnostics}",
                    manifest.display()
                )?;
                for hint in compile_failure_hints(diagnostics) {
                    write!(f, "\nhint: {hint}")?;
                }
                Ok(())
            }
            Error::ToolFailed { tool, args, output } => {
                write!(
                    f,
                    "`{} {}` failed:\n{output}",
                    tool.display(),
                    args.join(" ")
                )
            }
            Error::PtxasRejected { ptx, arch, log } => write!(
                f,
                "ptxas rejected {} for {arch} (this is a bug in gpukernel or the nightly's nvptx backend; please report it):\n{log}",
                ptx.display()
            ),
            Error::PackageNameUnknown { manifest } => write!(
                f,
                "the package name of the kernels crate {} is unknown: CARGO_PKG_NAME is not set \
                 (the builder runs outside a build script); set it with `Builder::package_name`",
                manifest.display()
            ),
            Error::NoBitcode { manifest } => write!(
                f,
                "the device build of {} produced no LLVM bitcode (is it a library crate with `crate-type = [\"rlib\"]`?)",
                manifest.display()
            ),
            Error::SharedRewrite(e) => write!(
                f,
                "moving `shared_array!` storage to shared memory failed (a bug in gpukernel; please report it): {e}"
            ),
            Error::ForeignCompileFailed {
                source_file,
                compiler,
                command,
                log,
                build_time_lto,
            } => {
                write!(
                    f,
                    "{}\nthe foreign CUDA source {} does not compile for the simulator (with the host's {}; {})",
                    shown_log(log, command),
                    source_file.display(),
                    compiler.display(),
                    if *build_time_lto {
                        "for the GPU, clang compiles the same file at build time (`foreign_cuda`)"
                    } else {
                        "the GPU gets it through the run-time Linker, which compiles a `.cu` with NVRTC"
                    }
                )?;
                verbose_note(f, command)
            }
            Error::ForeignSignatureMismatch {
                symbol,
                declared_at,
                expected,
                defined_at,
                detail,
            } => write!(
                f,
                "the definition of foreign function `{symbol}` at {defined_at} does not match its Rust declaration at \
                 {declared_at}, which expects `{expected}`\nhint: change the `declare_device!` entry or the definition \
                 so that both have the same argument count, argument types and return type\ncompiler: {detail}"
            ),
            Error::LibdeviceMissing {
                functions,
                searched,
            } => f.write_str(&crate::libdevice::missing_message(functions, searched)),
            Error::ClangMissing {
                clang,
                from_env,
                detail,
                install,
            } => write!(
                f,
                "`{}`{} was not found or does not run ({detail}); it compiles the `foreign_cuda` sources for build-time LTO.\n\
                 hint: install it with {install}, or name another clang (19 or newer) in GPUKERNEL_CLANG",
                clang.display(),
                if *from_env {
                    " (from GPUKERNEL_CLANG)"
                } else {
                    ""
                }
            ),
            Error::CudaHeadersMissing { searched } => write!(
                f,
                "no CUDA headers (include/cuda.h, include/cuda_runtime.h) for clang to compile the `foreign_cuda` sources with; searched: {}\n\
                 hint: run `cargo xtask doctor` in the gpukernel checkout (it installs the CUDA 13.0 headers with the compiler tools), \
                 or point GPUKERNEL_CUDA_TOOLS at a CUDA toolkit",
                searched
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Error::ForeignDeviceCompileFailed {
                source_file,
                compiler,
                command,
                log,
            } => {
                write!(
                    f,
                    "{}\nthe foreign CUDA source {} does not compile for the GPU (with {}, for build-time LTO)",
                    shown_log(log, command),
                    source_file.display(),
                    compiler.display()
                )?;
                verbose_note(f, command)
            }
            Error::ForeignDuplicateDefinition { symbol, sources } => write!(
                f,
                "`{symbol}` is defined by two `foreign_cuda` sources, {} and {}: they are linked into one PTX, so keep one \
                 definition (a shared helper goes in a header, `static` or `inline`)",
                sources[0].display(),
                sources[1].display()
            ),
            Error::KernelNamedLikeForeign {
                kernel,
                declared_at,
            } => write!(
                f,
                "kernel `{kernel}` has the name of the foreign function `{kernel}` declared at {declared_at}: a kernel's \
                 name is its entry's symbol, which would take the place of the function, and the calls to it would be \
                 deleted.\nhint: rename the kernel"
            ),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::ForeignSymbolNotForeign {
                symbol,
                declared_at,
                defined_by,
            } => write!(
                f,
                "the foreign function `{symbol}` declared at {declared_at} is not defined by your foreign code: it is {defined_by}\n\
                 hint: declare only functions that your own `.cu` sources (or the objects, archives and PTX you link) define; \
                 give yours another name"
            ),
            Error::ForeignDefinitionMissing { missing, sources } => {
                let names: Vec<String> =
                    missing.iter().map(|m| format!("`{}`", m.symbol)).collect();
                write!(
                    f,
                    "no foreign source compiled for the host defines {}: the kernels that call {} could not be \
                     linked for the simulator (`undefined symbol` at the host link)",
                    names.join(", "),
                    if missing.len() == 1 { "it" } else { "them" }
                )?;
                for m in missing {
                    write!(
                        f,
                        "\n  `{}`, declared by `declare_device!` at {}",
                        m.symbol, m.declared_at
                    )?;
                    if let Some(cxx) = &m.cxx {
                        write!(
                            f,
                            "\n    hint: it is defined as a C++ function, {cxx}: write `extern \"C\"` before its definition"
                        )?;
                    } else if !m.similar.is_empty() {
                        write!(
                            f,
                            "\n    hint: check the spelling; defined: {}",
                            m.similar.join(", ")
                        )?;
                    }
                }
                write!(
                    f,
                    "\nthe sources compiled for the host: {}\nhint: add the `.cu` that defines each function to \
                     `foreign_sources` (or `foreign_cuda`, for build-time LTO) in build.rs",
                    if sources.is_empty() {
                        "none".to_owned()
                    } else {
                        sources
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )
            }
            Error::KernelNames(e) => write!(
                f,
                "resolving the kernel-name record of the optimized kernels failed (a bug in gpukernel; please report it): {e}"
            ),
            Error::BadSassArch { arch, reason } => write!(
                f,
                "cannot embed SASS for `{arch}`: {reason}\n\
                 hint: fix the list given to `Builder::sass_archs` in build.rs (or GPUKERNEL_SASS_ARCHS)"
            ),
            Error::SassFailed { arch, ptx, log } => write!(
                f,
                "ptxas could not compile {} to SASS for {arch}:\n{log}\n\
                 hint: leave {arch} out of `Builder::sass_archs` in build.rs (or GPUKERNEL_SASS_ARCHS): \
                 the kernels use instructions it lacks",
                ptx.display()
            ),
            Error::SassToolMissing { tool, searched } => write!(
                f,
                "`{tool}` was not found, and build.rs asks for embedded SASS (`Builder::sass_archs`)\n\
                 searched: {}\n\
                 hint: run `cargo xtask doctor` in the gpukernel checkout (it installs the CUDA compiler tools), \
                 set GPUKERNEL_CUDA_TOOLS to a CUDA toolkit, or call `Builder::embed_sass(false)`",
                searched
                    .iter()
                    .map(|p| p.join("bin").display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Error::LaunchBounds(problem) => write!(
                f,
                "{problem}\n\
                 hint: name each kernel once, by its function name, in build.rs's `Builder::launch_bounds`"
            ),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A compiler's log as the message shows it: its errors first and the warnings counted, or
/// all of it when `GPUKERNEL_BUILD_VERBOSE=1` asked for the command (`command` is set).
fn shown_log(log: &str, command: &Option<String>) -> String {
    match command {
        Some(_) => log.trim_end().to_owned(),
        None => crate::diagnostics::errors_first(
            log,
            "GPUKERNEL_BUILD_VERBOSE=1 prints the compiler's whole log",
        ),
    }
}

/// The command line (verbose), or how to see it.
fn verbose_note(f: &mut fmt::Formatter<'_>, command: &Option<String>) -> fmt::Result {
    match command {
        Some(c) => write!(f, "\ncommand: {c}"),
        None => write!(
            f,
            "\nnote: GPUKERNEL_BUILD_VERBOSE=1 shows the command and the build's cargo directives"
        ),
    }
}

/// Where the nightly's name comes from, for messages.
const TOOLCHAIN_ORIGIN: &str = "from `Builder::toolchain`, GPUKERNEL_NIGHTLY or the kernels crate's \
     `[package.metadata.gpukernel] nightly`, default `nightly`";

/// What to do about the kernels-crate mistakes whose rustc diagnostics alone mislead (rustc
/// suggests `#![feature(..)]` unconditionally, which breaks the stable host build, and
/// `-Zbuild-std` for a missing `#![no_std]`).
pub(crate) fn compile_failure_hints(diagnostics: &str) -> Vec<&'static str> {
    let mut hints = Vec::new();
    if diagnostics.contains("extern \"gpu-kernel\" ABI is experimental") {
        hints.push(
            "put `#![cfg_attr(target_arch = \"nvptx64\", feature(abi_gpu_kernel))]` at the top of the kernels \
             crate's src/lib.rs (conditional: the host build of the same crate is on stable)",
        );
    }
    if diagnostics.contains("because it does not declare `#![no_std]`") {
        hints.push(
            "a kernels crate is `#![no_std]`: put `#![no_std]` at the top of its src/lib.rs (there is no `std` \
             on nvptx64; `core` and gpukernel-device are what kernels use)",
        );
    }
    if diagnostics.contains("can't find crate for `alloc`") {
        hints.push(
            "there is no allocator on the GPU: kernels take `&[T]` and `DisjointSlice<T>` instead of `Vec<T>`",
        );
    }
    hints
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::RustupMissing(e) => Some(e),
            _ => None,
        }
    }
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_failures_get_hints_for_common_mistakes() {
        let no_feature = "error[E0658]: the extern \"gpu-kernel\" ABI is experimental and subject to change\n --> src/lib.rs:9:1";
        let no_std = "error[E0463]: can't find crate for `std`\n  = note: `std` is required by `k` because it does not declare `#![no_std]`";
        let e = Error::CompileFailed {
            manifest: "/k/Cargo.toml".into(),
            command: "cargo build".into(),
            diagnostics: format!("{no_feature}\n{no_std}"),
        };
        let text = format!("{e:?}");
        assert!(
            text.contains(no_feature),
            "the diagnostics are kept: {text}"
        );
        assert!(
            text.contains(
                "hint: put `#![cfg_attr(target_arch = \"nvptx64\", feature(abi_gpu_kernel))]`"
            ),
            "{text}"
        );
        assert!(
            text.contains("hint: a kernels crate is `#![no_std]`"),
            "{text}"
        );
        assert!(compile_failure_hints("error[E0308]: mismatched types").is_empty());
    }

    #[test]
    fn debug_is_the_readable_message() {
        let e = Error::NotNightly {
            toolchain: "stable".into(),
            version: "rustc 1.95.0".into(),
        };
        assert_eq!(format!("{e:?}"), e.to_string());
        assert!(e.to_string().contains("GPUKERNEL_NIGHTLY"), "{e}");
    }
}
