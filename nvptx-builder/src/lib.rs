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
//! // Machine code (SASS) for sm_80 and sm_90 plus the PTX: `ctx.load_module(FATBIN)` compiles
//! // nothing on those GPUs (see `sass` and `Builder::sass_archs`).
//! #[cfg(not(target_arch = "nvptx64"))]
//! pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));
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
//! that `core` is built once), `GPUKERNEL_CUDA_TOOLS` (where `bin/ptxas` and `bin/fatbinary`
//! are, for validation and the embedded SASS), `GPUKERNEL_SASS_ARCHS` (the architectures whose
//! SASS `<name>.fatbin` embeds, comma-separated, or `none`).

#![warn(missing_docs)]

mod device;
mod diagnostics;
mod directives;
mod error;
pub mod foreign;
pub mod host_cc;
mod host_symbols;
pub mod kernel_names;
mod launch_bounds;
pub mod libdevice;
pub mod lto;
mod preprocessed;
pub mod sass;
pub mod shared_rewrite;
mod tools;

use std::path::{Path, PathBuf};

pub use device::validate_ptx;
use error::io_err;
pub use error::{Error, MissingDefinition};
pub use host_symbols::HOST_SYMBOL_PREFIX;
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
    /// `<name>.fatbin`: SASS for each architecture of [`Builder::sass_archs`] and the PTX
    /// (see [`sass`]); the PTX itself when embedding is off or the CUDA tools are missing
    /// (`sass` is then `None`). Include it in the kernels crate and load it with
    /// `ctx.load_module`:
    /// ```ignore
    /// #[cfg(not(target_arch = "nvptx64"))]
    /// pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));
    /// ```
    pub fatbin: PathBuf,
    /// What the fatbin holds, when SASS was embedded.
    pub sass: Option<sass::Embedded>,
    /// `<name>.rdc.fatbin`: relocatable machine code (`ptxas -c`) of every kernel, those that
    /// call foreign functions included, for each architecture of [`Builder::sass_archs`]; the
    /// PTX itself when the CUDA tools are missing or no SASS is embedded. Give it to the
    /// run-time Linker beside the PTX, which then links machine code instead of JIT-compiling
    /// the PTX where it can (`Linker::add_ptx_with_sass`):
    /// ```ignore
    /// #[cfg(not(target_arch = "nvptx64"))]
    /// pub const RELOCATABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.rdc.fatbin"));
    /// ```
    pub relocatable: PathBuf,
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
    include_dirs: Vec<PathBuf>,
    sass_archs: Option<Vec<String>>,
    embed_sass: bool,
    launch_bounds: Vec<launch_bounds::LaunchBounds>,
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
            include_dirs: Vec::new(),
            sass_archs: None,
            embed_sass: true,
            launch_bounds: Vec::new(),
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

    /// The architectures whose machine code (SASS) `<name>.fatbin` embeds beside the PTX, so
    /// that loading the kernels on such a GPU JIT-compiles nothing (a newer GPU JIT-compiles
    /// the PTX). Default: `GPUKERNEL_SASS_ARCHS` (comma-separated; `none` embeds none), else
    /// the build architecture plus `sm_80` below it ([`sass::default_sass_archs`]: `sm_80,sm_90`
    /// for the default `sm_90`).
    ///
    /// Naming architectures makes `ptxas` and `fatbinary` required ([`Error::SassToolMissing`]);
    /// by default, without them, `<name>.fatbin` holds the PTX and a cargo warning says so.
    /// A kernel that calls a foreign function left for the run-time `Linker` has no SASS (it
    /// needs that link first): see [`sass`].
    ///
    /// ```no_run
    /// // build.rs of a kernels crate: SASS for the A100, H100 and B200
    /// nvptx_builder::Builder::from_build_script()
    ///     .sass_archs(["sm_80", "sm_90", "sm_100"])
    ///     .build_or_exit();
    /// ```
    pub fn sass_archs<I, S>(mut self, archs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sass_archs = Some(archs.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to embed SASS at all (default `true`); with `false`, `<name>.fatbin` holds the
    /// PTX alone, JIT-compiled by the driver at load.
    pub fn embed_sass(mut self, yes: bool) -> Self {
        self.embed_sass = yes;
        self
    }

    /// The SASS architectures and whether they were named (by the builder or the environment),
    /// which makes the CUDA tools required.
    pub(crate) fn resolve_sass_archs(
        &self,
        build_arch: &str,
    ) -> Result<(Vec<String>, bool), Error> {
        if !self.embed_sass {
            return Ok((Vec::new(), false));
        }
        let (archs, named) = match (&self.sass_archs, std::env::var("GPUKERNEL_SASS_ARCHS")) {
            (Some(a), _) => (a.clone(), true),
            (None, Ok(v)) if v.trim() == "none" => (Vec::new(), true),
            (None, Ok(v)) if !v.trim().is_empty() => (
                v.split(',')
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect(),
                true,
            ),
            _ => (sass::default_sass_archs(build_arch), false),
        };
        sass::check_sass_archs(build_arch, &archs)?;
        Ok((archs, named))
    }

    /// Launch bounds for the kernel `kernel`, as CUDA C's `__launch_bounds__(max_threads,
    /// min_blocks)`: the PTX directives `.maxntid max_threads, 1, 1` and `.minnctapersm
    /// min_blocks` in its entry. ptxas then caps its registers at what `min_blocks` blocks of
    /// `max_threads` threads leave each thread (168 for 384 threads and 1 block), which
    /// `setmaxnreg` needs to take effect, and a launch with more threads per block fails. The
    /// build fails naming the kernel when the PTX has no entry of that name, or when
    /// `max_threads` is not 1 to 1024 or `min_blocks` not 1 to 32 (ptxas refuses 0 and
    /// ignores larger values).
    ///
    /// ```no_run
    /// // build.rs of a kernels crate: three warpgroups, one block per multiprocessor
    /// nvptx_builder::Builder::from_build_script()
    ///     .arch("sm_90a")
    ///     .launch_bounds("gemm_bf16_tma", 384, 1)
    ///     .build_or_exit();
    /// ```
    pub fn launch_bounds(
        mut self,
        kernel: impl Into<String>,
        max_threads: u32,
        min_blocks: u32,
    ) -> Self {
        self.launch_bounds.push(launch_bounds::LaunchBounds {
            kernel: kernel.into(),
            max_threads,
            min_blocks,
        });
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

    /// An include directory (relative to the kernels crate, or absolute) for the foreign
    /// sources, searched by both of their compiles: clang's for the GPU
    /// ([`foreign_cuda`](Builder::foreign_cuda)) and the host compiler's for the simulator
    /// ([`foreign_sources`](Builder::foreign_sources) and `foreign_cuda`), so that a
    /// header-only library resolves as `#include <Lib/x.h>`. Its headers are the library's:
    /// the simulator's check for inline PTX reads only the user's own files (a library's host
    /// code may use host assembly). The run-time `Linker` has its own `include_dir`.
    ///
    /// ```no_run
    /// // build.rs of a kernels crate
    /// nvptx_builder::Builder::from_build_script()
    ///     .include_dir("third_party/rng/include")
    ///     .foreign_cuda(["cuda/random.cu"])
    ///     .build_or_exit();
    /// ```
    pub fn include_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// The include directories, resolved against the kernels crate.
    fn resolved_include_dirs(&self) -> Vec<PathBuf> {
        self.include_dirs
            .iter()
            .map(|d| self.manifest_dir.join(d))
            .collect()
    }

    /// The host compile of `sources` with this build's include directories, knowing which of
    /// them clang compiles for the GPU.
    fn host_cc(&self) -> host_cc::HostCc {
        let lto: Vec<PathBuf> = self
            .foreign_cuda
            .iter()
            .map(|s| self.manifest_dir.join(s))
            .collect();
        self.resolved_include_dirs().into_iter().fold(
            host_cc::HostCc::new(cc::Build::new(), &self.out_dir)
                .cargo_metadata(self.emit_cargo_directives)
                .build_time_lto(&lto),
            host_cc::HostCc::include_dir,
        )
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
        let (result, lines) = directives::capture(|| self.build_all());
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

    /// What [`build_or_exit`](Builder::build_or_exit) runs, returning the error instead of
    /// exiting: the build-time LTO sources' device compile (clang's errors first), the host
    /// syntax check of every foreign source, the device build, their host compile, and the
    /// check that the host library defines every foreign function the kernels crate declares
    /// ([`Error::ForeignDefinitionMissing`]; without foreign sources, every declaration of the
    /// crate is missing: nothing else may define it on the host).
    ///
    /// ```no_run
    /// let out = nvptx_builder::Builder::new("kernels", "target/out")
    ///     .package_name("kernels")
    ///     .foreign_sources(&["cuda/functions.cu"])
    ///     .build_all()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// println!("{}", out.ptx.display());
    /// ```
    pub fn build_all(&self) -> Result<PtxOutput, Error> {
        let arch = self.resolve_arch()?;
        let cuda = self.compile_cuda(base_arch(&arch))?;
        // One list drives both builds: a `foreign_cuda` source is compiled for the host too.
        let mut named: Vec<&PathBuf> = Vec::new();
        let mut sources: Vec<PathBuf> = Vec::new();
        for s in self.foreign_sources.iter().chain(&self.foreign_cuda) {
            let p = self.manifest_dir.join(s);
            if !sources.contains(&p) {
                sources.push(p);
                named.push(s);
            }
        }
        if sources.is_empty() {
            let out = self.build_device(&arch, cuda)?;
            // Nothing is compiled for the host, so nothing defines what this crate declares:
            // the simulator's link would otherwise bind the name to whatever the host process
            // has (libc's `getpid`, `__libc_free`, ...), and safe kernel code would call it.
            let missing = host_symbols::missing_definitions(&self.declared_here(&out), &[], &[]);
            if !missing.is_empty() {
                return Err(Error::ForeignDefinitionMissing {
                    missing,
                    sources: Vec::new(),
                });
            }
            return Ok(out);
        }
        let host = self.host_cc();
        host.check_all(&sources)?;
        let out = self.build_device(&arch, cuda)?;
        // Named after the package: two kernels crates in one program link two libraries.
        let package = self.package_name.as_deref().unwrap_or(&self.output_name);
        // Each definition is checked against the declaration the PTX records for it.
        let lib = host
            .declarations(&out.foreign)
            .compile(&sources, &format!("{}_foreign", package.replace('-', "_")))?;
        // Every function this crate declares is defined there, else the host link would fail.
        if let Some(defined) = host_symbols::defined_in_archive(&lib)? {
            let declared = self.declared_here(&out);
            let missing = host_symbols::missing_definitions(&declared, &defined, &sources);
            if !missing.is_empty() {
                return Err(Error::ForeignDefinitionMissing {
                    missing,
                    sources: named.into_iter().cloned().collect(),
                });
            }
        }
        Ok(out)
    }

    /// The declarations of this kernels crate itself (a dependency's foreign sources are
    /// compiled by its own build script).
    fn declared_here<'a>(&self, out: &'a PtxOutput) -> Vec<&'a foreign::ForeignDeclaration> {
        out.foreign
            .iter()
            .filter(|d| host_symbols::declared_in(&self.manifest_dir, &d.declared_at))
            .collect()
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
        let clang = lto::Clang::locate(&dir)?.include_dirs(self.resolved_include_dirs());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{default_target_dir, split_make_deps};

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
