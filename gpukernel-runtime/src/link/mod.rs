//! The run-time linker: CUDA C++ sources, PTX, cubins, fatbins, objects, static libraries and
//! LTO-IR, linked with the Rust kernels' PTX into one cubin.
//!
//! ```no_run
//! use gpukernel_runtime::link::Linker;
//! # const PTX: &str = "";
//! # fn main() -> gpukernel_runtime::Result<()> {
//! let image = Linker::for_arch("sm_90")?      // offline, through nvJitLink: no GPU needed
//!     .add_ptx(PTX, "kernels.ptx")               // the Rust kernels
//!     .add_file("kernels/cuda/functions.cu")     // compiled by NVRTC with -rdc=true
//!     .link()?;
//! println!("{} bytes, kernels {:?}", image.cubin().len(), image.entry_points()?);
//! # Ok(())
//! # }
//! ```
//!
//! * Inputs are added by path (the kind comes from the extension, as Numba does: `.cu`,
//!   `.ptx`, `.cubin`, `.fatbin`, `.o`, `.a`, `.ltoir`) or from memory with an explicit
//!   [`InputKind`]. Before any compiler or driver sees an input, its bytes are checked against
//!   its kind (ELF, fatbin and archive magics and sizes; PTX is text with `.version`), and the
//!   same file or the same bytes added twice are linked once.
//! * `.cu` sources are compiled by NVRTC with `-rdc=true`, `--gpu-architecture` of the
//!   target, the source's folder, the user's include dirs and the CUDA include dir (found
//!   automatically), then the user's options.
//! * A linker for a CUDA context ([`Linker::new`]) links with the driver (`cuLink*`); an
//!   offline linker ([`Linker::for_arch`]) and any link with LTO-IR use nvJitLink.
//! * Foreign functions the selected kernels declare with `declare_device!` are checked
//!   against their definitions: `.cu` sources are compiled with a C-level check after them
//!   that compares what each parameter's type is (signedness, width, float, pointee), not its
//!   spelling (a conflicting definition is [`Error::ForeignSignatureMismatch`](crate::Error),
//!   naming the Rust declaration's file:line, the definition's and the parameter), PTX
//!   definitions' parameter lists are compared with the declarations'. On the simulator too:
//!   its link compiles each `.cu` input with NVRTC for the check (nothing else is compiled). Cubins, fatbins, objects, archives and LTO-IR
//!   keep no C types: one that may define a declared function must be added with
//!   [`Linker::add_file_unchecked`] / [`Linker::add_data_unchecked`] (`unsafe`), else the
//!   link fails with `Error::UncheckedForeignDefinitions`.
//! * [`Linker::link_and_load`] of one self-contained PTX (no `.extern` function or variable
//!   but the JIT's system calls, nothing else to link: a kernels crate whose foreign code was
//!   linked at build time) links nothing: the driver JIT-compiles the PTX as a whole program
//!   at load (`cuModuleLoadDataEx` with the link's options), as `ctx.load_module(PTX)` does,
//!   instead of as relocatable code for cuLink ([`Linker::load_path`] says which;
//!   [`Linker::whole_program`] turns it off). Its machine code is cached by the driver's JIT
//!   cache (`CUDA_CACHE_PATH`, `CUDA_CACHE_DISABLE`), which already holds cuLink's PTX
//!   compilations; the linker's cache holds linked cubins only. A failed load falls back to
//!   the link, whose error is reported.
//! * Both logs of the linker are always captured ([`LinkedImage::info_log`], and every error).
//!   Undefined and duplicate symbols, and inputs without code for the target, become their
//!   own errors naming the symbol or input.
//! * Code generation options ([`Linker::max_registers`], [`Linker::optimization_level`],
//!   [`Linker::line_info`], [`Linker::debug`]) reach NVRTC and the linker; the image reports
//!   them ([`LinkedImage::options`], [`LinkedImage::linker_options`]) and what each `.cu`
//!   became ([`LinkedImage::compiled`]).
//! * Linked cubins are cached on disk ([`CachePolicy`]), keyed by every input's kind, name
//!   and bytes, the headers they may include (found in the source's folder, the include
//!   dirs and NVRTC's `-I` options, transitively), every NVRTC and linker option (raw ones
//!   too), the architecture, and the versions of the driver, NVRTC, nvJitLink (and their
//!   library files) and this crate. A cache folder that cannot be written (a file, read-only)
//!   costs the store, never the link ([`CacheStatus::Miss`] says why). A hit loads
//!   neither compiler library ([`loaded_tools`]). `GPUKERNEL_CACHE_MAX` (e.g. `512M`) bounds
//!   the cache's size, least recently used entries first.
//! * On the simulator, inputs are checked and nothing is compiled: the foreign code runs as
//!   the host-compiled `.cu` linked into the program.
//!
//! * Symbols are read before any linker sees the inputs: PTX, cubins, and the PTX and ELF
//!   entries of fatbins (inflated: LZ4 or zstd), also inside objects' device-code sections and
//!   archives' members. A symbol defined by two inputs is [`Error::DuplicateSymbol`](crate::Error)
//!   whatever their kinds (nvJitLink 13.0 links such duplicates, printing `Multiple
//!   definition` to standard error only, and after an LTO link in the same process it crashes
//!   on them). LTO-IR keeps its symbols in NVVM bitcode: duplicates there are nvJitLink's to
//!   find, which its log reports (and what it writes to standard error while it links is
//!   captured into the error log).
//! * LTO happens where LTO-IR takes part: `.cu` inputs under [`Linker::lto`], `.ltoir` inputs,
//!   and fatbins, objects and archives built with `nvcc -dlto` (found by their entries). The
//!   link then goes through nvJitLink with `-lto`, and the other inputs link as code beside
//!   it; without LTO-IR there is nothing for LTO to optimise and the link is an ordinary one,
//!   whatever `lto` says ([`LinkedImage::linker_options`] shows `-lto` or not).
//! * Raw options for nvJitLink ([`Linker::linker_option`]) make a link go through nvJitLink
//!   (on a context too); nvJitLink judges them ([`Error::InvalidLinkOption`](crate::Error)).
//! * An architecture-specific target (`sm_90a`) is compiled for exactly that architecture, or
//!   refused when the tools lack it (never replaced by the portable one).
//!
//! Known limits: objects and archives are checked for shape, not architecture (cuLink's info
//! log is checked after). NVRTC reports no list of the files it read, so the cache key holds
//! every file an `#include` line may name, in every folder searched; a `.cu` that includes a
//! header through a macro is not cached ([`CacheStatus::Uncacheable`]).
//!
//! The cache lives in `GPUKERNEL_CACHE_DIR`, else `$XDG_CACHE_HOME/gpukernel`, else
//! `~/.cache/gpukernel`.
//!
//! NVRTC and nvJitLink are loaded at run time from `GPUKERNEL_CUDA_TOOLS`, `CUDA_HOME`,
//! `CUDA_PATH`, `/usr/local/cuda`, a gpukernel checkout's `.cuda-tools/nvidia/cu13`, or the
//! per-user `~/.cache/gpukernel/cuda-13.0/nvidia/cu13` (what `cargo xtask doctor` installs),
//! then from the loader's path; `LD_LIBRARY_PATH` need not be set.

mod arch;
mod cache;
mod devices;
mod embedded;
mod foreign;
mod image;
mod input;
mod linker;
mod machine;
mod nvrtc;
mod options;
mod prelinked;
mod simulator;
mod stages;
mod sys;
mod toolinfo;
mod tools;
mod whole;

pub use crate::error::{LinkErrorCode, LinkerKind, demangle};
pub use crate::format::InputKind;
pub use arch::Arch;
pub use cache::CachePolicy;
pub use embedded::CudaSource;
pub use foreign::{FieldLayout, ForeignAbi, ForeignDecl, StructLayout};
pub use image::{CacheStatus, CompiledInput, LinkInput, LinkTimings, LinkedImage};
pub use linker::Linker;
pub use nvrtc::{CudaOutput, compile_cuda};
pub use options::LinkOptions;
pub use tools::toolchain_report;
pub use whole::LoadPath;

/// Which of the CUDA compiler libraries this process has loaded, as reported by
/// [`loaded_tools`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::{LoadedTools, loaded_tools};
/// let LoadedTools { nvrtc, nvjitlink, .. } = loaded_tools();
/// println!("NVRTC loaded: {nvrtc}, nvJitLink loaded: {nvjitlink}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadedTools {
    /// NVRTC (loaded to compile `.cu` inputs, or once per library build to learn its version).
    pub nvrtc: bool,
    /// nvJitLink (loaded to link offline or LTO-IR, or once per library build for its version).
    pub nvjitlink: bool,
}

/// Which compiler libraries this process has loaded so far (or tried to). A cache hit loads
/// neither once their versions are on record in the cache directory.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::{Linker, loaded_tools};
/// let module = Linker::new(&ctx)?.add_ptx(&kernels_ptx(), "kernels.ptx").link_and_load()?;
/// // Did that link compile anything? (A cache hit on a GPU, or the simulator, loads neither.)
/// let tools = loaded_tools();
/// println!("NVRTC loaded: {}, nvJitLink loaded: {}", tools.nvrtc, tools.nvjitlink);
/// # Ok(()) }
/// ```
pub fn loaded_tools() -> LoadedTools {
    let (nvrtc, nvjitlink) = sys::loaded();
    LoadedTools { nvrtc, nvjitlink }
}
