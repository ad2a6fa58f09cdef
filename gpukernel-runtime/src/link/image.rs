//! What a link produces: the image, and how it was made.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, LinkerKind, Result};
use crate::format::{InputKind, elf};
use crate::link::{Arch, LinkOptions};

/// One input of a link, as reported by [`LinkedImage::inputs`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let image = doc_image()?;
/// for input in image.inputs() {
///     println!("{} ({:?})", input.name, input.kind);
/// }
/// assert_eq!(image.inputs()[1].kind, InputKind::Cuda);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInput {
    /// The path as given, or the name given with the data.
    pub name: String,
    /// Its kind.
    pub kind: InputKind,
    /// The canonical path, for file inputs.
    pub path: Option<PathBuf>,
}

/// What NVRTC produced from one `.cu` input, as reported by [`LinkedImage::compiled`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let image = Linker::for_arch("sm_90")?
///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
///     .cache(CachePolicy::Disabled)
///     .link()?;
/// let c: &CompiledInput = &image.compiled()[0];
/// assert_eq!((c.input.as_str(), c.kind), ("functions.cu", InputKind::Ptx));
/// assert!(String::from_utf8_lossy(&c.code).contains("twice"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompiledInput {
    /// The input's name (as in [`LinkInput::name`]).
    pub input: String,
    /// [`InputKind::Ptx`], or [`InputKind::LtoIr`] with [`Linker::lto`](crate::link::Linker::lto).
    pub kind: InputKind,
    /// The PTX text or LTO-IR, as handed to the linker.
    pub code: Vec<u8>,
    /// Every option NVRTC was given.
    pub nvrtc_options: Vec<String>,
}

/// How the cache took part in a link.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let image = doc_image()?;
/// match image.cache_status() {
///     CacheStatus::Hit { path } => println!("loaded from {}", path.display()),
///     CacheStatus::Miss { .. } | CacheStatus::Rebuilt { .. } => println!("linked and stored"),
///     _ => println!("no cache"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheStatus {
    /// No cache (disabled, or no cache directory could be determined).
    Disabled,
    /// The image was loaded from this cache file; nothing was compiled or linked.
    Hit {
        /// The cache entry.
        path: PathBuf,
    },
    /// No entry existed; the image was linked and stored.
    Miss {
        /// Where it was stored, or why storing failed (a failed store never fails a link).
        stored: Option<Result<PathBuf, String>>,
    },
    /// An entry existed but was corrupt or truncated; it was ignored and rebuilt.
    Rebuilt {
        /// What was wrong with it.
        reason: String,
        /// Where the new entry was stored, or why storing failed.
        stored: Option<Result<PathBuf, String>>,
    },
    /// The link's result depends on files that cannot be known before compiling (a `.cu`
    /// that `#include`s a header through a macro, a precompiled header read from a file), so
    /// no key can cover it: it was compiled and linked, and not cached.
    Uncacheable {
        /// Why, naming the file and line (or the option).
        reason: String,
    },
}

/// Time spent in each phase of a link.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let image = doc_image()?;
/// let t: LinkTimings = image.timings();
/// println!("compile {:?}, link {:?}, total {:?}", t.compile, t.link, t.total);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkTimings {
    /// Reading the cache (and computing its key).
    pub cache_lookup: Duration,
    /// NVRTC compilation of `.cu` inputs.
    pub compile: Duration,
    /// The linker itself.
    pub link: Duration,
    /// The whole `link()` call.
    pub total: Duration,
}

/// The result of a link: a cubin for the target architecture (empty on the simulator).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let image = doc_image()?;
/// println!("{} bytes for {:?} by {:?}", image.cubin().len(), image.arch(), image.linker());
/// assert!(image.entry_points()?.contains(&"saxpy".to_owned()));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LinkedImage {
    pub(super) cubin: Vec<u8>,
    pub(super) simulator_image: Vec<u8>,
    pub(super) arch: Option<Arch>,
    pub(super) linker: Option<LinkerKind>,
    pub(super) info_log: String,
    pub(super) compile_logs: Vec<(String, String)>,
    pub(super) cache: CacheStatus,
    pub(super) timings: LinkTimings,
    pub(super) inputs: Vec<LinkInput>,
    pub(super) options: LinkOptions,
    pub(super) linker_options: Vec<String>,
    pub(super) compiled: Vec<CompiledInput>,
}

impl LinkedImage {
    /// The linked cubin (empty for a simulator link).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// assert_eq!(&image.cubin()[..4], b"\x7fELF"); // a CUDA ELF image
    /// # Ok(()) }
    /// ```
    pub fn cubin(&self) -> &[u8] {
        &self.cubin
    }

    /// The image to hand to [`Context::load_module`](crate::Context::load_module): the cubin, or on the simulator the PTX
    /// inputs (whose kernel names make the simulator's module).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::Linker;
    /// let image = Linker::new(&ctx)?.add_ptx(&kernels_ptx(), "kernels.ptx").link()?;
    /// let module = ctx.load_module(image.module_image())?; // on either backend
    /// # Ok(()) }
    /// ```
    pub fn module_image(&self) -> &[u8] {
        if self.is_simulator() {
            &self.simulator_image
        } else {
            &self.cubin
        }
    }

    /// The linked cubin, by value.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let bytes: Vec<u8> = image.into_cubin(); // e.g. to store it
    /// assert!(!bytes.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn into_cubin(self) -> Vec<u8> {
        self.cubin
    }

    /// Whether this image is for the simulator (no device code).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::Linker;
    /// assert!(Linker::for_simulator().add_ptx(&kernels_ptx(), "k.ptx").link()?.is_simulator());
    /// # Ok(()) }
    /// ```
    pub fn is_simulator(&self) -> bool {
        self.arch.is_none()
    }

    /// The architecture it was linked for (`None` on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// assert_eq!(image.arch().map(|a| a.to_string()).as_deref(), Some("sm_90"));
    /// # Ok(()) }
    /// ```
    pub fn arch(&self) -> Option<Arch> {
        self.arch
    }

    /// The linker that produced it (`None` on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// assert_eq!(image.linker(), Some(LinkerKind::NvJitLink)); // offline links use nvJitLink
    /// # Ok(()) }
    /// ```
    pub fn linker(&self) -> Option<LinkerKind> {
        self.linker
    }

    /// The linker's info log (for a cache hit: the log of the link that made the entry).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// if !image.info_log().is_empty() {
    ///     eprintln!("linker said:\n{}", image.info_log()); // e.g. register and spill counts
    /// }
    /// # Ok(()) }
    /// ```
    pub fn info_log(&self) -> &str {
        &self.info_log
    }

    /// NVRTC's logs (warnings) per `.cu` source, where non-empty.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// for (source, log) in image.compile_logs() {
    ///     eprintln!("{source}: {log}"); // NVRTC warnings
    /// }
    /// # Ok(()) }
    /// ```
    pub fn compile_logs(&self) -> &[(String, String)] {
        &self.compile_logs
    }

    /// Whether the image came from the on-disk cache.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let again = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .link()?;
    /// assert!(again.from_cache()); // same inputs, options and tools: nothing compiled
    /// # Ok(()) }
    /// ```
    pub fn from_cache(&self) -> bool {
        matches!(self.cache, CacheStatus::Hit { .. })
    }

    /// How the cache took part.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// if let CacheStatus::Hit { path } = image.cache_status() {
    ///     println!("cache entry {}", path.display());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn cache_status(&self) -> &CacheStatus {
        &self.cache
    }

    /// Time spent per phase.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let t = image.timings();
    /// assert!(t.total >= t.link);
    /// # Ok(()) }
    /// ```
    pub fn timings(&self) -> LinkTimings {
        self.timings
    }

    /// The inputs linked (repeats removed), in order.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let names: Vec<&str> = image.inputs().iter().map(|i| i.name.as_str()).collect();
    /// assert_eq!(names, ["kernels.ptx", "functions.cu"]);
    /// # Ok(()) }
    /// ```
    pub fn inputs(&self) -> &[LinkInput] {
        &self.inputs
    }

    /// The code generation options of the link (register limit, optimisation level, line
    /// and debug information).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "k.ptx")
    ///     .max_registers(64)
    ///     .link()?;
    /// assert_eq!(image.options().max_registers, Some(64));
    /// # Ok(()) }
    /// ```
    pub fn options(&self) -> LinkOptions {
        self.options
    }

    /// The options handed to the linker, as it spells them (nvJitLink's `-arch=sm_90
    /// -maxrregcount=32`, or the driver's `CU_JIT_MAX_REGISTERS=32`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "k.ptx")
    ///     .max_registers(64)
    ///     .link()?;
    /// println!("{:?}", image.linker_options()); // e.g. ["-arch=sm_90", "-maxrregcount=64"]
    /// # Ok(()) }
    /// ```
    pub fn linker_options(&self) -> &[String] {
        &self.linker_options
    }

    /// What was produced from each `.cu` input (PTX or LTO-IR), in input order. Empty for a
    /// cache hit (nothing was compiled: link with [`CachePolicy::Disabled`](crate::link::CachePolicy)
    /// to inspect it) and on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .cache(CachePolicy::Disabled) // a cache hit compiles nothing
    ///     .link()?;
    /// let ptx = String::from_utf8_lossy(&image.compiled()[0].code);
    /// assert!(ptx.contains(".func") && ptx.contains("twice"));
    /// # Ok(()) }
    /// ```
    pub fn compiled(&self) -> &[CompiledInput] {
        &self.compiled
    }

    /// The kernel entry points of the cubin (from its ELF symbol table).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let mut kernels = image.entry_points()?;
    /// kernels.sort();
    /// assert_eq!(kernels, ["iota", "saxpy", "scale"]);
    /// # Ok(()) }
    /// ```
    pub fn entry_points(&self) -> Result<Vec<String>> {
        Ok(self
            .symbols()?
            .into_iter()
            .filter(|(_, entry)| *entry)
            .map(|(n, _)| n)
            .collect())
    }

    /// Every function defined in the cubin (kernels and device functions).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let image = doc_image()?;
    /// let functions = image.functions()?; // kernels and the device functions they call
    /// assert!(functions.iter().any(|f| f == "saxpy"));
    /// # Ok(()) }
    /// ```
    pub fn functions(&self) -> Result<Vec<String>> {
        Ok(self.symbols()?.into_iter().map(|(n, _)| n).collect())
    }

    fn symbols(&self) -> Result<Vec<(String, bool)>> {
        if self.cubin.is_empty() {
            return Ok(Vec::new());
        }
        elf::cubin_functions(&self.cubin).map_err(|reason| Error::InvalidModuleImage {
            reason: format!("the linked cubin cannot be read: {reason}"),
            origin: None,
        })
    }
}
