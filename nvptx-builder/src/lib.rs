//! Compile a gpukernel kernels crate to PTX from a build script.
//!
//! The kernels crate is a `no_std` library whose `#[kernel]` functions become PTX entries. This
//! crate runs, from the kernels crate's own `build.rs`, the pipeline that turns it into one
//! self-contained PTX file:
//!
//! ```text
//! rustup run nightly cargo build --release --target nvptx64-nvidia-cuda -Zbuild-std=core
//!     (RUSTFLAGS: -Clinker-plugin-lto -Ctarget-cpu=sm_XX, so every rlib holds LLVM bitcode)
//! llvm-link <bitcode of every rlib: the kernels crate, its dependencies, core>
//! opt -passes=internalize,globaldce,default<O3>   (keeps the kernels and #[no_mangle] items)
//! llc -mcpu=sm_XX                                  → $OUT_DIR/<crate>.ptx
//! ```
//!
//! Whole-program linking at the LLVM level is what makes calls into `gpukernel-device` and
//! `core` resolve: PTX emitted per crate would leave them as unresolved `.extern .func`s.
//!
//! ```no_run
//! // build.rs of a kernels crate: `fn main() {` … `}` around this line
//! nvptx_builder::Builder::from_build_script().build_or_exit();
//! ```
//! and in the kernels crate, for the host:
//! ```ignore
//! #[cfg(not(target_arch = "nvptx64"))]
//! pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
//! ```
//!
//! The nightly that compiles the kernels: [`Builder::toolchain`], else `GPUKERNEL_NIGHTLY`, else
//! the kernels crate's own pin in its `Cargo.toml` (so that every checkout of a project builds
//! with the same nightly; the host code stays on stable):
//! ```toml
//! [package.metadata.gpukernel]
//! nightly = "nightly-2026-05-20"
//! ```
//! else `nightly`. gpukernel is tested with the nightly named in [`TESTED_NIGHTLY`].
//!
//! Environment variables: `GPUKERNEL_ARCH` (default `sm_90`), `GPUKERNEL_NIGHTLY` (the
//! toolchain name, see above), `GPUKERNEL_NVPTX_TARGET_DIR` (where the device build
//! goes; default `<target dir>/nvptx-kernels`, shared by every kernels crate of a workspace so
//! that `core` is built once), `GPUKERNEL_CUDA_TOOLS` (where `bin/ptxas` is, for validation).

#![warn(missing_docs)]

mod directives;
pub mod foreign;
pub mod host_cc;
pub mod libdevice;
pub mod lto;
pub mod shared_rewrite;
mod tools;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use tools::{
    CUDA_TOOLS_VERSION, cuda_tools_dir, cuda_tools_search_path, find_cuda_tool, user_tools_dir,
    user_tools_install_dir,
};

/// The default GPU architecture: the H100's.
pub const DEFAULT_ARCH: &str = "sm_90";

/// The nightly gpukernel's kernels are tested with (`rustc -V`): pin a dated nightly of the same
/// day or later in `[package.metadata.gpukernel] nightly = "..."`.
pub const TESTED_NIGHTLY: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";

/// The target triple of device builds.
pub const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";

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
    /// runs outside a build script) and [`Builder::package_name`] was not called.
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
        /// The compiler's log (file:line, caret).
        log: String,
    },
    /// A foreign `.cu` source defines a function differently from its `declare_device!`
    /// declaration (found by the host compile, which compiles the declarations' C prototypes
    /// with the source).
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
    /// clang, which compiles the sources of [`Builder::foreign_cuda`], is not installed.
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
    /// sources of [`Builder::foreign_cuda`] with.
    CudaHeadersMissing {
        /// The folders searched, in order.
        searched: Vec<PathBuf>,
    },
    /// A source of [`Builder::foreign_cuda`] does not compile for the GPU (clang, build-time
    /// LTO).
    ForeignDeviceCompileFailed {
        /// The source.
        source_file: PathBuf,
        /// clang.
        compiler: PathBuf,
        /// Its full command line, shown with `GPUKERNEL_BUILD_VERBOSE=1`.
        command: Option<String>,
        /// clang's log (file:line, caret).
        log: String,
    },
    /// Two sources of [`Builder::foreign_cuda`] define the same function.
    ForeignDuplicateDefinition {
        /// The function.
        symbol: String,
        /// The sources that define it.
        sources: [PathBuf; 2],
    },
    /// A file could not be read or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
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
            } => {
                write!(
                    f,
                    "{}\nthe foreign CUDA source {} does not compile for the simulator (with the host's {}; \
                     the same file goes to NVRTC for the GPU)",
                    log.trim_end(),
                    source_file.display(),
                    compiler.display()
                )?;
                match command {
                    Some(c) => write!(f, "\ncommand: {c}"),
                    None => write!(
                        f,
                        "\nnote: GPUKERNEL_BUILD_VERBOSE=1 shows the command and the build's cargo directives"
                    ),
                }
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
            } => f.write_str(&libdevice::missing_message(functions, searched)),
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
                    log.trim_end(),
                    source_file.display(),
                    compiler.display()
                )?;
                match command {
                    Some(c) => write!(f, "\ncommand: {c}"),
                    None => write!(
                        f,
                        "\nnote: GPUKERNEL_BUILD_VERBOSE=1 shows the command and the build's cargo directives"
                    ),
                }
            }
            Error::ForeignDuplicateDefinition { symbol, sources } => write!(
                f,
                "`{symbol}` is defined by two `foreign_cuda` sources, {} and {}: they are linked into one PTX, so keep one \
                 definition (a shared helper goes in a header, `static` or `inline`)",
                sources[0].display(),
                sources[1].display()
            ),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Where the nightly's name comes from, for messages.
const TOOLCHAIN_ORIGIN: &str = "from `Builder::toolchain`, GPUKERNEL_NIGHTLY or the kernels crate's \
     `[package.metadata.gpukernel] nightly`, default `nightly`";

/// What to do about the kernels-crate mistakes whose rustc diagnostics alone mislead (rustc
/// suggests `#![feature(..)]` unconditionally, which breaks the stable host build, and
/// `-Zbuild-std` for a missing `#![no_std]`).
fn compile_failure_hints(diagnostics: &str) -> Vec<&'static str> {
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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a device build produced.
#[derive(Debug, Clone)]
pub struct PtxOutput {
    /// The PTX file.
    pub ptx: PathBuf,
    /// The linked, optimised LLVM bitcode the PTX was made from (input for build-time LTO).
    pub bitcode: PathBuf,
    /// The symbols kept visible: kernel entries and other `#[no_mangle]` items.
    pub exported: Vec<String>,
    /// The architecture (`sm_XX`).
    pub arch: String,
    /// The `declare_device!` declarations of the kernels crate and its dependencies, as
    /// recorded in the PTX: give them to [`host_cc::HostCc::declarations`] so that the host
    /// compile of the foreign sources checks the definitions against them.
    pub foreign: Vec<foreign::ForeignDeclaration>,
    /// The sources of [`Builder::foreign_cuda`] linked into the PTX (build-time LTO).
    pub linked_cuda: Vec<LinkedCuda>,
}

/// A foreign CUDA C source linked into the PTX at build time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedCuda {
    /// The source, as the build script named it.
    pub source: PathBuf,
    /// The functions with external linkage it defines (internal to the PTX once linked:
    /// inlined where called, and no longer visible to run-time inputs).
    pub defines: Vec<String>,
}

/// Configures and runs a device build of one kernels crate.
#[derive(Debug, Clone)]
pub struct Builder {
    manifest_dir: PathBuf,
    package_name: Option<String>,
    out_dir: PathBuf,
    arch: Option<String>,
    toolchain: Option<String>,
    target_dir: Option<PathBuf>,
    output_name: String,
    validate: bool,
    emit_cargo_directives: bool,
    foreign_sources: Vec<PathBuf>,
    foreign_cuda: Vec<PathBuf>,
}

impl Builder {
    /// A builder for the crate whose `build.rs` is running (`CARGO_MANIFEST_DIR`, `OUT_DIR`).
    ///
    /// # Panics
    /// If called outside a build script (the two variables are unset): that is a programming
    /// error of the build script, not of its user.
    pub fn from_build_script() -> Self {
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .expect("nvptx_builder::Builder::from_build_script must run inside a build script (CARGO_MANIFEST_DIR unset)");
        let out_dir = std::env::var_os("OUT_DIR")
            .expect("nvptx_builder::Builder::from_build_script must run inside a build script (OUT_DIR unset)");
        let mut b = Builder::new(PathBuf::from(manifest_dir), PathBuf::from(out_dir));
        b.emit_cargo_directives = true;
        b
    }

    /// A builder for the kernels crate at `manifest_dir`, writing into `out_dir`. The crate's
    /// package name is `CARGO_PKG_NAME` (which cargo sets for build scripts) unless
    /// [`Builder::package_name`] says otherwise.
    pub fn new(manifest_dir: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        Builder {
            manifest_dir: manifest_dir.into(),
            package_name: std::env::var("CARGO_PKG_NAME").ok(),
            out_dir: out_dir.into(),
            arch: None,
            toolchain: None,
            target_dir: std::env::var_os("GPUKERNEL_NVPTX_TARGET_DIR").map(PathBuf::from),
            output_name: "kernels".into(),
            validate: true,
            emit_cargo_directives: false,
            foreign_sources: Vec::new(),
            foreign_cuda: Vec::new(),
        }
    }

    /// The kernels crate's package name, as in its `Cargo.toml` (needed when the builder runs
    /// outside the kernels crate's own build script).
    pub fn package_name(mut self, name: impl Into<String>) -> Self {
        self.package_name = Some(name.into());
        self
    }

    /// The GPU architecture, e.g. `"sm_90"`. Default: `GPUKERNEL_ARCH`, else [`DEFAULT_ARCH`].
    ///
    /// An architecture-specific target such as `"sm_90a"` (needed by Hopper's `wgmma`, see
    /// `gpukernel_device::wgmma`) marks the PTX `.target sm_90a`, so ptxas accepts those
    /// instructions and the module loads only on that architecture (compute capability 9.0).
    /// The Rust code itself is compiled for the base architecture (`sm_90`): the suffix adds
    /// instructions that only inline assembly emits, so `core` and the other crates of the
    /// device build are shared with `sm_90` kernels crates.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// The name of the output files (`<name>.ptx`, `<name>.bc`). Default `kernels`.
    pub fn output_name(mut self, name: impl Into<String>) -> Self {
        self.output_name = name.into();
        self
    }

    /// The nightly toolchain to build with. Default: `GPUKERNEL_NIGHTLY`, else the kernels
    /// crate's `[package.metadata.gpukernel] nightly`, else `nightly`.
    pub fn toolchain(mut self, toolchain: impl Into<String>) -> Self {
        self.toolchain = Some(toolchain.into());
        self
    }

    /// The toolchain name to build with (see [`Builder::toolchain`]).
    pub fn resolve_toolchain(&self) -> Result<String, Error> {
        if let Some(t) = &self.toolchain {
            return Ok(t.clone());
        }
        if let Some(t) = std::env::var("GPUKERNEL_NIGHTLY")
            .ok()
            .filter(|t| !t.is_empty())
        {
            return Ok(t);
        }
        let manifest = self.manifest_dir.join("Cargo.toml");
        let text = match std::fs::read_to_string(&manifest) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok("nightly".into()),
            Err(source) => {
                return Err(Error::Io {
                    path: manifest,
                    source,
                });
            }
        };
        Ok(pinned_nightly(&text)
            .map_err(|e| Error::Io {
                path: manifest,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?
            .unwrap_or_else(|| "nightly".into()))
    }

    /// Where the device build's cargo target dir goes.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Whether to check the PTX with `ptxas` when ptxas can be found (default `true`).
    pub fn validate_with_ptxas(mut self, yes: bool) -> Self {
        self.validate = yes;
        self
    }

    /// The foreign CUDA C sources (relative to the kernels crate, or absolute) that
    /// [`build_or_exit`](Builder::build_or_exit) also compiles for the host, into the static
    /// library `<package>_foreign` that the simulator's foreign calls resolve to (see
    /// [`host_cc`]). Their syntax is checked first, before the device build.
    pub fn foreign_sources(mut self, sources: &[impl AsRef<Path>]) -> Self {
        self.foreign_sources
            .extend(sources.iter().map(|s| s.as_ref().to_path_buf()));
        self
    }

    /// Foreign CUDA C sources (relative to the kernels crate, or absolute) linked into the PTX
    /// at build time: each is compiled by clang (19; `GPUKERNEL_CLANG` names another) to LLVM
    /// bitcode for the same architecture and linked with the kernels before `opt -O3`, so
    /// their functions inline where the kernels call them (a foreign call then costs what a
    /// Rust call does). [`build_or_exit`](Builder::build_or_exit) also compiles them for the
    /// host, for the simulator, as [`foreign_sources`](Builder::foreign_sources) does: name a
    /// source once, here. The run-time `Linker` needs them no more (it refuses them as
    /// already linked); inputs that exist only as PTX, cubin, fatbin, archive or LTO-IR keep
    /// the run-time link. See [`lto`] for what clang accepts and the limits (no struct by
    /// value across the boundary, no textures).
    ///
    /// ```no_run
    /// // build.rs of a kernels crate
    /// nvptx_builder::Builder::from_build_script()
    ///     .foreign_cuda(["cuda/functions.cu"])
    ///     .build_or_exit();
    /// ```
    pub fn foreign_cuda<I, P>(mut self, sources: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.foreign_cuda
            .extend(sources.into_iter().map(|s| s.as_ref().to_path_buf()));
        self
    }

    /// Runs the build (the foreign sources' host compile too), or prints the error and exits
    /// the build script with status 1. On failure the error is all the build script prints
    /// (the compiler's log first, with file:line); its `cargo:` directives are held back, and
    /// printed only with `GPUKERNEL_BUILD_VERBOSE=1`. On the device build of the kernels crate
    /// itself (the build script runs again for nvptx64), does nothing.
    pub fn build_or_exit(self) -> Option<PtxOutput> {
        if is_device_build() {
            return None;
        }
        let (result, lines) = directives::capture(|| self.build_with_foreign());
        match result {
            Ok(out) => {
                for line in lines {
                    println!("{line}");
                }
                Some(out)
            }
            Err(e) => {
                if directives::verbose() {
                    for line in lines {
                        println!("{line}");
                    }
                }
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }

    /// The build-time LTO sources' device compile (clang's errors first), the host syntax
    /// check of every foreign source, the device build, then their host compile.
    fn build_with_foreign(&self) -> Result<PtxOutput, Error> {
        let arch = self.resolve_arch()?;
        let cuda = self.compile_cuda(base_arch(&arch))?;
        // One list drives both builds: a `foreign_cuda` source is compiled for the host too.
        let mut sources: Vec<PathBuf> = Vec::new();
        for s in self.foreign_sources.iter().chain(&self.foreign_cuda) {
            let p = self.manifest_dir.join(s);
            if !sources.contains(&p) {
                sources.push(p);
            }
        }
        if sources.is_empty() {
            return self.build_device(&arch, cuda);
        }
        let host = host_cc::HostCc::new(cc::Build::new(), &self.out_dir)
            .cargo_metadata(self.emit_cargo_directives);
        host.check_all(&sources)?;
        let out = self.build_device(&arch, cuda)?;
        // Named after the package: two kernels crates in one program link two libraries.
        let package = self.package_name.as_deref().unwrap_or(&self.output_name);
        // Each definition is checked against the declaration the PTX records for it.
        host.declarations(&out.foreign)
            .compile(&sources, &format!("{}_foreign", package.replace('-', "_")))?;
        Ok(out)
    }

    /// Runs the device build (with the [`foreign_cuda`](Builder::foreign_cuda) sources linked
    /// in) and returns what it wrote.
    pub fn build(&self) -> Result<PtxOutput, Error> {
        let arch = self.resolve_arch()?;
        let cuda = self.compile_cuda(base_arch(&arch))?;
        self.build_device(&arch, cuda)
    }

    /// Compiles the [`foreign_cuda`](Builder::foreign_cuda) sources to bitcode with clang.
    fn compile_cuda(&self, arch: &str) -> Result<Vec<lto::CudaBitcode>, Error> {
        if self.foreign_cuda.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.out_dir.join(format!("{}-cuda", self.output_name));
        let clang = lto::Clang::locate(&dir)?;
        if self.emit_cargo_directives {
            for var in ["GPUKERNEL_CLANG", "GPUKERNEL_CUDA_TOOLS"] {
                directives::emit(format!("cargo:rerun-if-env-changed={var}"));
            }
        }
        self.foreign_cuda
            .iter()
            .map(|s| {
                clang.compile(
                    &self.manifest_dir,
                    s,
                    arch,
                    &dir,
                    self.emit_cargo_directives,
                )
            })
            .collect()
    }

    /// The device build proper, linking the compiled `cuda` sources into the kernels.
    fn build_device(&self, arch: &str, cuda: Vec<lto::CudaBitcode>) -> Result<PtxOutput, Error> {
        let arch = arch.to_owned();
        let toolchain = tools::Toolchain::locate(&self.resolve_toolchain()?)?;
        let manifest = self.manifest_dir.join("Cargo.toml");
        let package = self
            .package_name
            .clone()
            .ok_or_else(|| Error::PackageNameUnknown {
                manifest: manifest.clone(),
            })?;
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| default_target_dir(&self.out_dir));

        if self.emit_cargo_directives {
            for var in [
                "GPUKERNEL_ARCH",
                "GPUKERNEL_NIGHTLY",
                "GPUKERNEL_NVPTX_TARGET_DIR",
            ] {
                directives::emit(format!("cargo:rerun-if-env-changed={var}"));
            }
            directives::emit(format!("cargo:rerun-if-changed={}", manifest.display()));
        }

        let rlibs = self.cargo_build(&toolchain, &manifest, &target_dir, base_arch(&arch))?;
        let lib_name = package.replace('-', "_");
        let (own, deps): (Vec<_>, Vec<_>) = rlibs.into_iter().partition(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&format!("lib{lib_name}-")) || n == format!("lib{lib_name}.rlib")
            })
        });

        let work = self
            .out_dir
            .join(format!("{}-nvptx-work", self.output_name));
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(io_err(&work))?;
        }
        std::fs::create_dir_all(&work).map_err(io_err(&work))?;

        let own_bc = extract_bitcode(&toolchain, &own, &work.join("own"))?;
        if own_bc.is_empty() {
            return Err(Error::NoBitcode { manifest });
        }
        let dep_bc = extract_bitcode(&toolchain, &deps, &work.join("deps"))?;

        let mut exported = exported_symbols(&toolchain, &own_bc)?;
        exported.insert(gpukernel_ffi_symbol().to_string());
        // The declaration records of `declare_device!` entries in dependencies stay too.
        exported.extend(
            exported_symbols(&toolchain, &dep_bc)?
                .into_iter()
                .filter(|s| s.starts_with(foreign::RECORD_PREFIX)),
        );
        let exported: Vec<String> = exported.into_iter().collect();

        let linked = work.join("linked.bc");
        let mut args: Vec<OsString> = own_bc.iter().map(|p| p.clone().into_os_string()).collect();
        args.extend(dep_bc.iter().map(|p| p.clone().into_os_string()));
        args.push("-o".into());
        args.push(linked.clone().into_os_string());
        run_tool(&toolchain.llvm_link, &args)?;

        // Drop everything the kernels do not reach before the textual pass: the module is then
        // small (core's IR alone is tens of megabytes).
        let pruned = work.join("pruned.bc");
        run_tool(
            &toolchain.opt,
            &[
                "-passes=internalize,globaldce".into(),
                format!("--internalize-public-api-list={}", exported.join(",")).into(),
                linked.into_os_string(),
                "-o".into(),
                pruned.clone().into_os_string(),
            ],
        )?;
        // CUDA's math library, when the Rust code calls it (`foreign_cuda` bitcode brings its
        // own libdevice functions from clang, already internal).
        libdevice::link_if_called(&toolchain, &pruned, &exported)?;
        // `shared_array!` statics move to the `.shared` state space (see `shared_rewrite`).
        let ir = run_tool(
            &toolchain.llvm_dis,
            &[pruned.into_os_string(), "-o".into(), "-".into()],
        )?;
        let mut ir = shared_rewrite::rewrite_shared_statics(&ir)
            .map_err(|e| Error::SharedRewrite(e.to_string()))?;

        // Build-time LTO: the foreign sources' functions are checked against the kernels'
        // declarations, recorded for the run-time Linker, and linked in.
        let mut linked_cuda = Vec::new();
        let mut extra_bitcode: Vec<PathBuf> = Vec::new();
        let mut public = exported.clone();
        if !cuda.is_empty() {
            let declarations = foreign::declarations_in_ir(&ir);
            let mut with_ir = Vec::new();
            for source in &cuda {
                let text = run_tool(
                    &toolchain.llvm_dis,
                    &[
                        source.bitcode.clone().into_os_string(),
                        "-o".into(),
                        "-".into(),
                    ],
                )?;
                with_ir.push((source.clone(), text));
            }
            let defined = lto::check_signatures(&ir, &with_ir, &declarations)?;
            for (name, global) in lto::record_globals(&cuda, &defined) {
                ir.push_str(&global);
                public.push(name);
            }
            for (source, defines) in cuda.iter().zip(defined) {
                linked_cuda.push(LinkedCuda {
                    source: source.named.clone(),
                    defines,
                });
                extra_bitcode.push(source.bitcode.clone());
            }
        }
        let shared_ll = work.join("shared.ll");
        std::fs::write(&shared_ll, ir).map_err(io_err(&shared_ll))?;

        let bitcode = self.out_dir.join(format!("{}.bc", self.output_name));
        if extra_bitcode.is_empty() {
            run_tool(
                &toolchain.opt,
                &[
                    "-passes=default<O3>".into(),
                    shared_ll.into_os_string(),
                    "-o".into(),
                    bitcode.clone().into_os_string(),
                ],
            )?;
        } else {
            // The extra modules' functions become internal to the PTX: inlined where called,
            // removed where not.
            let lto_bc = work.join("lto.bc");
            let mut args: Vec<OsString> = vec![shared_ll.into_os_string()];
            args.extend(extra_bitcode.iter().map(|p| p.clone().into_os_string()));
            args.extend(["-o".into(), lto_bc.clone().into_os_string()]);
            run_tool(&toolchain.llvm_link, &args)?;
            run_tool(
                &toolchain.opt,
                &[
                    "-passes=internalize,globaldce,default<O3>".into(),
                    format!("--internalize-public-api-list={}", public.join(",")).into(),
                    lto_bc.into_os_string(),
                    "-o".into(),
                    bitcode.clone().into_os_string(),
                ],
            )?;
        }

        let ptx = self.out_dir.join(format!("{}.ptx", self.output_name));
        run_tool(
            &toolchain.llc,
            &[
                format!("-mcpu={arch}").into(),
                "-O3".into(),
                bitcode.clone().into_os_string(),
                "-o".into(),
                ptx.clone().into_os_string(),
            ],
        )?;

        if self.validate {
            if let Some(ptxas) = find_cuda_tool("ptxas") {
                validate_ptx(&ptxas, &ptx, &arch)?;
            } else if self.emit_cargo_directives {
                directives::emit(format!(
                    "cargo:warning=ptxas not found: {} was not validated (run `cargo xtask doctor` to install the CUDA compiler tools)",
                    ptx.display()
                ));
            }
        }

        let text = std::fs::read_to_string(&ptx).map_err(io_err(&ptx))?;
        let foreign = foreign::declarations_in_ptx(&text);
        Ok(PtxOutput {
            ptx,
            bitcode,
            exported,
            arch,
            foreign,
            linked_cuda,
        })
    }

    fn resolve_arch(&self) -> Result<String, Error> {
        let (arch, source) = match (&self.arch, std::env::var("GPUKERNEL_ARCH")) {
            (Some(a), _) => (a.clone(), "Builder::arch"),
            (None, Ok(a)) => (a, "GPUKERNEL_ARCH"),
            (None, Err(_)) => (DEFAULT_ARCH.to_string(), "the default"),
        };
        parse_arch(&arch)
            .map(|_| arch.clone())
            .ok_or(Error::BadArch { arch, source })
    }

    /// Runs the nightly cargo for nvptx64 and returns the rlibs of every crate it built.
    fn cargo_build(
        &self,
        toolchain: &tools::Toolchain,
        manifest: &Path,
        target_dir: &Path,
        arch: &str,
    ) -> Result<Vec<PathBuf>, Error> {
        let mut cmd = Command::new("rustup");
        cmd.args([
            "run",
            &toolchain.name,
            "cargo",
            "build",
            "--release",
            "--target",
            NVPTX_TARGET,
        ])
        .arg("-Zbuild-std=core")
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .arg("--message-format=json-render-diagnostics");
        scrub_cargo_env(&mut cmd);
        // Every crate of the PTX must share one target-cpu; linker-plugin-lto makes each rlib
        // hold LLVM bitcode instead of per-crate PTX.
        let flags = [
            "-Clinker-plugin-lto",
            &format!("-Ctarget-cpu={arch}"),
            "-Cdebuginfo=0",
        ];
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"));
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let command = format!(
            "CARGO_ENCODED_RUSTFLAGS='{}' rustup run {} cargo build --release --target {NVPTX_TARGET} -Zbuild-std=core --manifest-path {} --target-dir {}",
            flags.join(" "),
            toolchain.name,
            manifest.display(),
            target_dir.display()
        );
        let mut child = cmd.spawn().map_err(Error::RustupMissing)?;
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut rlibs = Vec::new();
        let mut deps_files = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if msg["reason"] != "compiler-artifact" {
                continue;
            }
            for f in msg["filenames"].as_array().into_iter().flatten() {
                if let Some(f) = f.as_str() {
                    let p = PathBuf::from(f);
                    if f.ends_with(".rlib") && f.contains(NVPTX_TARGET) {
                        rlibs.push(p);
                    }
                }
            }
            if let Some(d) = msg["filenames"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|f| f.as_str())
            {
                deps_files.push(PathBuf::from(d));
            }
        }
        let status = child.wait().map_err(Error::RustupMissing)?;
        let stderr = err_thread.join().unwrap_or_default();
        if !status.success() {
            if stderr.contains("is not installed")
                || stderr.contains("toolchain '") && stderr.contains("not installed")
            {
                return Err(Error::NightlyMissing {
                    toolchain: toolchain.name.clone(),
                    detail: stderr,
                });
            }
            return Err(Error::CompileFailed {
                manifest: manifest.to_path_buf(),
                command,
                diagnostics: stderr,
            });
        }
        if self.emit_cargo_directives {
            emit_rerun_if_changed(&rlibs, &toolchain.sysroot);
        }
        Ok(rlibs)
    }
}

/// `[package.metadata.gpukernel] nightly` of a manifest's text, if set.
fn pinned_nightly(manifest: &str) -> Result<Option<String>, String> {
    let table: toml::Table = manifest.parse().map_err(|e| format!("{e}"))?;
    let pin = table
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("gpukernel"))
        .and_then(|g| g.get("nightly"));
    match pin {
        None => Ok(None),
        Some(toml::Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "[package.metadata.gpukernel] nightly must be a toolchain name such as \"nightly-2026-05-20\", not {other}"
        )),
    }
}

/// Whether this build script runs for a device build (the kernels crate compiled for nvptx64
/// by nvptx-builder itself), where it must not start another device build.
pub fn is_device_build() -> bool {
    std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "nvptx64")
        || std::env::var("TARGET").is_ok_and(|t| t.starts_with("nvptx64"))
}

/// `sm_90` → `Some(90)`; anything else (or below 70, the nightly's floor) → `None`.
pub fn parse_arch(arch: &str) -> Option<u32> {
    let n: u32 = arch
        .strip_prefix("sm_")?
        .trim_end_matches('a')
        .parse()
        .ok()?;
    (n >= 70).then_some(n)
}

/// The architecture rustc compiles for: `sm_90a` → `sm_90` (the `a` suffix only admits
/// architecture-specific instructions, which Rust code reaches through inline assembly; llc
/// and ptxas get the full name).
pub fn base_arch(arch: &str) -> &str {
    arch.strip_suffix('a').unwrap_or(arch)
}

/// The name of the global that records failed foreign calls (see gpukernel-device's `ffi`).
fn gpukernel_ffi_symbol() -> &'static str {
    "__gpukernel_ffi_error"
}

/// Removes what cargo sets for build scripts so the child cargo uses the nightly's own rustc
/// and flags.
fn scrub_cargo_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        let drop = (k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_NET_OFFLINE")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || matches!(
                k,
                "CARGO"
                    | "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "OUT_DIR"
                    | "TARGET"
                    | "HOST"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "CARGO_MAKEFLAGS"
                    | "MAKEFLAGS"
                    | "MFLAGS"
            );
        if drop {
            cmd.env_remove(k);
        }
    }
}

/// `<target dir>/nvptx-kernels`, found by walking up from OUT_DIR to the directory cargo
/// marked with `CACHEDIR.TAG`.
fn default_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|a| a.join("CACHEDIR.TAG").exists())
        .map(|t| t.join("nvptx-kernels"))
        .unwrap_or_else(|| out_dir.join("nvptx-kernels"))
}

/// Emits `rerun-if-changed` for every source file of the device build (from cargo's dep-info
/// files next to the rlibs), except the standard library's.
fn emit_rerun_if_changed(rlibs: &[PathBuf], sysroot: &Path) {
    let mut seen = BTreeSet::new();
    for rlib in rlibs {
        let d = rlib.with_extension("d");
        let Ok(text) = std::fs::read_to_string(&d) else {
            continue;
        };
        for line in text.lines() {
            let Some((_, deps)) = line.split_once(": ") else {
                continue;
            };
            for dep in split_make_deps(deps) {
                let p = PathBuf::from(&dep);
                if p.starts_with(sysroot) || !p.is_file() {
                    continue;
                }
                if seen.insert(p.clone()) {
                    directives::emit(format!("cargo:rerun-if-changed={}", p.display()));
                }
            }
        }
    }
}

/// Splits a Makefile dependency list on unescaped spaces.
fn split_make_deps(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Extracts the LLVM bitcode members of each rlib into `dir`.
fn extract_bitcode(
    toolchain: &tools::Toolchain,
    rlibs: &[PathBuf],
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for (i, rlib) in rlibs.iter().enumerate() {
        let sub = dir.join(i.to_string());
        std::fs::create_dir_all(&sub).map_err(io_err(&sub))?;
        let rlib_abs = std::fs::canonicalize(rlib).map_err(io_err(rlib))?;
        let output = Command::new(&toolchain.llvm_ar)
            .arg("x")
            .arg(&rlib_abs)
            .current_dir(&sub)
            .output()
            .map_err(io_err(&toolchain.llvm_ar))?;
        if !output.status.success() {
            return Err(Error::ToolFailed {
                tool: toolchain.llvm_ar.clone(),
                args: vec!["x".into(), rlib_abs.display().to_string()],
                output: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let mut members: Vec<PathBuf> = std::fs::read_dir(&sub)
            .map_err(io_err(&sub))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_bitcode(p))
            .collect();
        members.sort();
        out.extend(members);
    }
    Ok(out)
}

fn is_bitcode(p: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"BC\xC0\xDE"
}

/// The symbols of the kernels crate that stay visible: those rustc did not mangle (kernel
/// entries and `#[no_mangle]` items).
fn exported_symbols(
    toolchain: &tools::Toolchain,
    own: &[PathBuf],
) -> Result<BTreeSet<String>, Error> {
    let mut args: Vec<OsString> = vec![
        "--defined-only".into(),
        "--extern-only".into(),
        "--format=just-symbols".into(),
    ];
    args.extend(own.iter().map(|p| p.clone().into_os_string()));
    let text = run_tool(&toolchain.llvm_nm, &args)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.ends_with(':'))
        .filter(|s| !s.starts_with("_R") && !s.starts_with("_ZN"))
        .map(String::from)
        .collect())
}

fn run_tool(tool: &Path, args: &[OsString]) -> Result<String, Error> {
    let output = Command::new(tool)
        .args(args)
        .output()
        .map_err(io_err(tool))?;
    if !output.status.success() {
        return Err(Error::ToolFailed {
            tool: tool.to_path_buf(),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Checks `ptx` with `ptxas -arch=<arch> -c` (relocatable, so foreign `.extern .func`s may stay
/// unresolved until the runtime links them).
pub fn validate_ptx(ptxas: &Path, ptx: &Path, arch: &str) -> Result<(), Error> {
    let out = std::env::temp_dir().join(format!("gpukernel-ptxas-{}-{arch}.o", std::process::id()));
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-c")
        .arg(ptx)
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(io_err(ptxas))?;
    let _ = std::fs::remove_file(&out);
    if !output.status.success() {
        return Err(Error::PtxasRejected {
            ptx: ptx.to_path_buf(),
            arch: arch.to_string(),
            log: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing() {
        assert_eq!(parse_arch("sm_90"), Some(90));
        assert_eq!(parse_arch("sm_90a"), Some(90));
        assert_eq!(base_arch("sm_90a"), "sm_90");
        assert_eq!(base_arch("sm_90"), "sm_90");
        assert_eq!(parse_arch("sm_80"), Some(80));
        assert_eq!(parse_arch("sm_61"), None);
        assert_eq!(parse_arch("compute_90"), None);
        assert_eq!(parse_arch("90"), None);
    }

    #[test]
    fn bad_arch_error_names_the_source() {
        let b = Builder::new("/nonexistent", "/tmp").arch("sm_x");
        let e = b.resolve_arch().unwrap_err().to_string();
        assert!(e.contains("sm_x") && e.contains("Builder::arch"), "{e}");
    }

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

    #[test]
    fn the_nightly_is_pinned_in_the_kernels_manifest() {
        let m = "[package]\nname = \"k\"\n[package.metadata.gpukernel]\nnightly = \"nightly-2026-05-20\"\n";
        assert_eq!(
            pinned_nightly(m).unwrap().as_deref(),
            Some("nightly-2026-05-20")
        );
        assert_eq!(pinned_nightly("[package]\nname = \"k\"\n").unwrap(), None);
        let e = pinned_nightly("[package.metadata.gpukernel]\nnightly = 7\n").unwrap_err();
        assert!(e.contains("toolchain name"), "{e}");
        assert_eq!(
            Builder::new("/k", "/tmp")
                .toolchain("nightly-x")
                .resolve_toolchain()
                .unwrap(),
            "nightly-x"
        );
    }

    #[test]
    fn make_deps_split_on_unescaped_spaces() {
        assert_eq!(
            split_make_deps("/a/b.rs /c\\ d.rs  /e.rs"),
            vec!["/a/b.rs", "/c d.rs", "/e.rs"]
        );
    }

    #[test]
    fn default_target_dir_uses_cachedir_tag() {
        let base = std::env::temp_dir().join(format!("nvptx-builder-test-{}", std::process::id()));
        let out = base.join("debug/build/x-123/out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            base.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        assert_eq!(default_target_dir(&out), base.join("nvptx-kernels"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn package_name_comes_from_cargo_or_the_builder() {
        let b = Builder::new("/k", "/tmp");
        assert_eq!(
            b.package_name.as_deref(),
            std::env::var("CARGO_PKG_NAME").ok().as_deref()
        );
        let b = b.package_name("my-kernels");
        assert_eq!(b.package_name.as_deref(), Some("my-kernels"));
        let e = Error::PackageNameUnknown {
            manifest: "/k/Cargo.toml".into(),
        }
        .to_string();
        assert!(e.contains("Builder::package_name"), "{e}");
    }
}
