//! The [`Linker`] builder: what a link is for, its inputs and options. [`Linker::link`] runs
//! the stages (`stages.rs`; `simulator.rs` on the simulator).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::format::{InputKind, ptx};
use crate::link::arch::Portability;
use crate::link::input::{self, Input};
use crate::link::stages::{self, CacheLookup};
use crate::link::{
    Arch, CachePolicy, CacheStatus, LinkInput, LinkOptions, LinkTimings, LinkedImage, foreign,
    prelinked, simulator, toolinfo,
};
use crate::module::Module;

/// What a link is for.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// No device: nvJitLink for this architecture.
    Offline(Arch),
    /// A CUDA context: cuLink (nvJitLink for LTO-IR), for the device's architecture.
    Cuda { ctx: Context, arch: Arch },
    /// The simulator: inputs are checked, nothing is compiled.
    Simulator { ctx: Option<Context> },
}

/// An input as added, read and checked at [`Linker::link`].
#[derive(Debug, Clone)]
enum Pending {
    File {
        path: PathBuf,
        kind: Option<InputKind>,
        unchecked: bool,
    },
    Data {
        kind: InputKind,
        bytes: Arc<[u8]>,
        name: String,
        kernels: Option<Vec<String>>,
        unchecked: bool,
        /// Relocatable machine code of the same kernels (`add_ptx_with_sass`).
        machine: Option<Arc<[u8]>>,
    },
}

/// The inputs of a link, read and checked ([`Linker::checked_inputs`]).
pub(super) struct Checked {
    pub(super) inputs: Vec<Input>,
    prelinked: Vec<prelinked::Prelinked>,
    used: Vec<foreign::UsedDecl>,
}

/// Links CUDA C++ sources, PTX, cubins, fatbins, objects, archives and LTO-IR into one cubin.
///
/// The `add_*` methods only record inputs; [`link`](Linker::link) reads, checks, compiles
/// and links them, and reports the first problem with the file or symbol at fault.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// // The Rust kernels' PTX plus CUDA C++ they call, linked for the context's device.
/// let module = Linker::new(&ctx)?
///     .add_ptx(&kernels_ptx(), "kernels.ptx")
///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
///     .link_and_load()?;
/// let saxpy = module.kernel(saxpy)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Linker {
    pub(super) target: Target,
    pending: Vec<Pending>,
    pub(super) nvrtc_options: Vec<String>,
    /// Raw nvJitLink options (`linker_option`), passed after the linker's own.
    pub(super) raw_linker_options: Vec<String>,
    pub(super) include_dirs: Vec<PathBuf>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) cache: CachePolicy,
    pub(super) lto: bool,
    pub(super) options: LinkOptions,
    /// Whether `link_and_load` may load one self-contained PTX as a whole program (`whole.rs`).
    pub(super) whole_program: bool,
    hooks: Hooks,
}

/// Setup and teardown hooks, by the index of the input they belong to (`None`: added before
/// any input).
#[derive(Clone, Default)]
struct Hooks(Vec<(Option<usize>, Hook)>);

#[derive(Clone)]
enum Hook {
    Setup(crate::module_hooks::SetupHook),
    Teardown(crate::module_hooks::TeardownHook),
}

impl Hook {
    fn kind(&self) -> &'static str {
        match self {
            Hook::Setup(_) => "setup",
            Hook::Teardown(_) => "teardown",
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(i, h)| (i, h.kind())))
            .finish()
    }
}

impl Pending {
    /// The input's name, as [`LinkInput::name`](super::LinkInput) reports it.
    fn name(&self) -> String {
        match self {
            Pending::File { path, .. } => path.display().to_string(),
            Pending::Data { name, .. } => name.clone(),
        }
    }
}

impl Linker {
    fn with_target(target: Target) -> Linker {
        Linker {
            target,
            pending: Vec::new(),
            nvrtc_options: Vec::new(),
            raw_linker_options: Vec::new(),
            include_dirs: Vec::new(),
            headers: Vec::new(),
            cache: CachePolicy::Default,
            lto: false,
            options: LinkOptions::default(),
            whole_program: true,
            hooks: Hooks::default(),
        }
    }

    /// A linker for a context: for a CUDA device it compiles for the device's architecture
    /// and links with the driver (`cuLink*`; nvJitLink when LTO-IR is involved); for the
    /// simulator see [`Linker::for_simulator`].
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let ctx = Context::default_context()?; // a GPU, or the simulator
    /// let module = Linker::new(&ctx)?.add_ptx(&kernels_ptx(), "kernels.ptx").link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn new(ctx: &Context) -> Result<Linker> {
        if ctx.is_simulator() {
            return Ok(Linker::with_target(Target::Simulator {
                ctx: Some(ctx.clone()),
            }));
        }
        let (major, minor) = ctx.compute_capability()?;
        let arch = Arch::from_compute_capability(major, minor);
        Ok(Linker::with_target(Target::Cuda {
            ctx: ctx.clone(),
            arch,
        }))
    }

    /// A linker that needs no device: it compiles and links for `arch` (e.g. `"sm_90"`)
    /// with NVRTC and nvJitLink. The cubin can be loaded later on a device of that
    /// architecture.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // No GPU needed: NVRTC and nvJitLink compile and link for sm_90.
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .link()?;
    /// let cubin: &[u8] = image.cubin(); // e.g. saved as kernels.sm_90.cubin, loaded on an H100
    /// assert!(Linker::for_arch("sm90").is_err()); // names the accepted spelling
    /// # Ok(()) }
    /// ```
    pub fn for_arch(arch: &str) -> Result<Linker> {
        Ok(Linker::with_target(Target::Offline(arch.parse()?)))
    }

    /// A linker for the simulator: [`link`](Linker::link) checks the inputs (files exist,
    /// kinds and shapes are right) and compiles nothing; the foreign code the simulator runs
    /// is the host-compiled `.cu` linked into the program.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // Checks the inputs as a real link would, compiles nothing.
    /// let image = Linker::for_simulator().add_ptx(&kernels_ptx(), "kernels.ptx").link()?;
    /// assert!(image.is_simulator() && image.cubin().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn for_simulator() -> Linker {
        Linker::with_target(Target::Simulator { ctx: None })
    }

    /// The architecture linked for (`None` on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// assert_eq!(Linker::for_arch("sm_90")?.arch().map(|a| a.sm()), Some(90));
    /// assert_eq!(Linker::for_simulator().arch(), None);
    /// # Ok(()) }
    /// ```
    pub fn arch(&self) -> Option<Arch> {
        match &self.target {
            Target::Offline(arch) | Target::Cuda { arch, .. } => Some(*arch),
            Target::Simulator { .. } => None,
        }
    }

    /// Adds a file; its kind comes from the extension (`.cu`, `.ptx`, `.cubin`, `.fatbin`,
    /// `.o`, `.a`, `.ltoir`). A relative path is resolved against the current directory when
    /// the link runs (the error says so); to embed a `.cu` at compile time, relative to the
    /// crate, use [`add_cuda`](Linker::add_cuda) with [`include_cuda!`](crate::include_cuda).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let (_dir, cu) = doc_file("functions.cu", FUNCTIONS_CU);
    /// // `cu` is e.g. "kernels/cuda/functions.cu", relative to the current directory.
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_file(&cu)
    ///     .link_and_load()?;
    /// let e = Linker::new(&ctx)?.add_file("missing.cu").link().unwrap_err();
    /// assert!(e.to_string().contains("missing.cu")); // names the path and the directory
    /// # Ok(()) }
    /// ```
    pub fn add_file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.pending.push(Pending::File {
            path: path.as_ref().to_path_buf(),
            kind: None,
            unchecked: false,
        });
        self
    }

    /// Adds a file as [`add_file`](Linker::add_file) does, acknowledging that the foreign
    /// functions it defines are not checked against their `declare_device!` declarations.
    ///
    /// Needed for a cubin, fatbin, object (`.o`), archive (`.a`) or LTO-IR input that may
    /// define a function the selected kernels declare: those formats keep no C types, so the
    /// linker cannot compare the definition with the declaration, and without this call such
    /// a link fails with [`Error::UncheckedForeignDefinitions`]. `.cu` and PTX inputs are
    /// checked either way.
    ///
    /// # Safety
    /// Every foreign function the input defines and a selected kernel declares must have the
    /// declared signature (argument count, argument types and return type, and the ABI:
    /// Numba's `int f(T* ret, ...)` or, for `extern "C" fn`, the plain C one). A mismatch
    /// makes the kernels pass arguments in the wrong registers and write the return slot with
    /// the wrong size: undefined behaviour on the device.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // A prebuilt library (`nvcc -lib -rdc=true`) that defines functions the kernels declare.
    /// let mut linker = Linker::new(&ctx)?;
    /// linker.add_ptx(&kernels_ptx(), "kernels.ptx");
    /// // SAFETY: libfunctions.a defines each declared function with its declared C signature.
    /// unsafe { linker.add_file_unchecked("libfunctions.a") };
    /// let module = linker.link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn add_file_unchecked(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.pending.push(Pending::File {
            path: path.as_ref().to_path_buf(),
            kind: None,
            unchecked: true,
        });
        self
    }

    /// Adds an input from memory as [`add_data`](Linker::add_data) does, acknowledging that
    /// the foreign functions it defines are not checked (see
    /// [`add_file_unchecked`](Linker::add_file_unchecked)).
    ///
    /// # Safety
    /// As for [`add_file_unchecked`](Linker::add_file_unchecked).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let fatbin: Vec<u8> = std::fs::read("functions.fatbin").expect("nvcc -fatbin output");
    /// let mut linker = Linker::new(&ctx)?;
    /// linker.add_ptx(&kernels_ptx(), "kernels.ptx");
    /// // SAFETY: the fatbin defines each declared function with its declared C signature.
    /// unsafe { linker.add_data_unchecked(InputKind::Fatbin, fatbin, "functions.fatbin") };
    /// let module = linker.link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn add_data_unchecked(
        &mut self,
        kind: InputKind,
        bytes: impl Into<Vec<u8>>,
        name: impl Into<String>,
    ) -> &mut Self {
        let bytes: Vec<u8> = bytes.into();
        self.pending.push(Pending::Data {
            kind,
            bytes: bytes.into(),
            name: name.into(),
            kernels: None,
            unchecked: true,
            machine: None,
        });
        self
    }

    /// Adds a file of the given kind, whatever its extension.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let (_dir, ptx) = doc_file("kernels.txt", &kernels_ptx());
    /// // A PTX file without the .ptx extension.
    /// let module = Linker::new(&ctx)?.add_file_as(&ptx, InputKind::Ptx).link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn add_file_as(&mut self, path: impl AsRef<Path>, kind: InputKind) -> &mut Self {
        self.pending.push(Pending::File {
            path: path.as_ref().to_path_buf(),
            kind: Some(kind),
            unchecked: false,
        });
        self
    }

    /// Adds an input from memory. `name` appears in logs and errors (for a `.cu` source, NVRTC
    /// reports its errors as `name(line): error ...`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let module = Linker::new(&ctx)?
    ///     .add_data(InputKind::Ptx, kernels_ptx(), "kernels.ptx")
    ///     .add_data(InputKind::Cuda, FUNCTIONS_CU, "functions.cu") // errors name it `functions.cu`
    ///     .link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn add_data(
        &mut self,
        kind: InputKind,
        bytes: impl Into<Vec<u8>>,
        name: impl Into<String>,
    ) -> &mut Self {
        let bytes: Vec<u8> = bytes.into();
        self.pending.push(Pending::Data {
            kind,
            bytes: bytes.into(),
            name: name.into(),
            kernels: None,
            unchecked: false,
            machine: None,
        });
        self
    }

    /// Adds PTX text, e.g. the Rust kernels' PTX (`kernels_crate::PTX`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // In an application: `const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));`
    /// let module = Linker::new(&ctx)?.add_ptx(&kernels_ptx(), "kernels.ptx").link_and_load()?;
    /// assert_eq!(module.kernel_names(), ["iota", "saxpy", "scale"]);
    /// # Ok(()) }
    /// ```
    pub fn add_ptx(&mut self, ptx: &str, name: impl Into<String>) -> &mut Self {
        self.add_data(InputKind::Ptx, ptx.as_bytes(), name)
    }

    /// Adds a kernels crate's PTX together with its relocatable machine code (`RELOCATABLE`,
    /// the `<name>.rdc.fatbin` nvptx-builder writes: `ptxas -c` objects of every kernel for
    /// each SASS architecture). Where the link is compiled for an architecture the machine
    /// code holds, without link-time optimisation and with the default code generation
    /// options, the machine code is linked and the PTX is not JIT-compiled (with foreign
    /// cubins, fatbins or archives holding SASS for that architecture, nothing is compiled:
    /// [`LoadPath::LinkedMachineCode`](crate::link::LoadPath::LinkedMachineCode)); otherwise the
    /// PTX is linked as by [`add_ptx`](Self::add_ptx), and
    /// [`load_path`](Self::load_path) says why. Every check of the PTX (foreign declarations,
    /// definitions) is made either way.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::{LoadPath, Linker};
    /// // In an application: `kernels::PTX` and `kernels::RELOCATABLE`.
    /// let (ptx, relocatable) = (kernels_ptx(), Vec::<u8>::new());
    /// let mut linker = Linker::for_arch("sm_90")?;
    /// linker.add_ptx_with_sass(&ptx, &relocatable, "kernels.ptx");
    /// // No machine code in `relocatable`: the PTX is linked, and the path says why.
    /// assert!(matches!(linker.load_path()?, LoadPath::Linked { reason } if reason.contains("kernels.ptx")));
    /// # Ok(()) }
    /// ```
    pub fn add_ptx_with_sass(
        &mut self,
        ptx: &str,
        relocatable: &[u8],
        name: impl Into<String>,
    ) -> &mut Self {
        self.pending.push(Pending::Data {
            kind: InputKind::Ptx,
            bytes: ptx.as_bytes().into(),
            name: name.into(),
            kernels: None,
            unchecked: false,
            machine: Some(relocatable.into()),
        });
        self
    }

    /// Adds only the named kernels of a PTX module (e.g. a kernels crate's `PTX`, which has
    /// every kernel of the crate): the other kernels, and the declarations of foreign
    /// functions only they call, are left out, so the link needs only the foreign code these
    /// kernels use. A name that is not an entry of the PTX is an error at
    /// [`link`](Linker::link).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // Only `saxpy` (and the foreign code it calls) is linked.
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx_kernels(&kernels_ptx(), "kernels.ptx", &["saxpy"])
    ///     .link_and_load()?;
    /// assert_eq!(module.kernel_names(), ["saxpy"]);
    /// # Ok(()) }
    /// ```
    pub fn add_ptx_kernels(
        &mut self,
        ptx: &str,
        name: impl Into<String>,
        kernels: &[&str],
    ) -> &mut Self {
        self.pending.push(Pending::Data {
            kind: InputKind::Ptx,
            bytes: ptx.as_bytes().into(),
            name: name.into(),
            kernels: Some(kernels.iter().map(|k| k.to_string()).collect()),
            unchecked: false,
            machine: None,
        });
        self
    }

    /// Adds a CUDA C++ source embedded with [`include_cuda!`](crate::include_cuda), compiled by
    /// NVRTC at link time. Works from any directory: the text is in the program. The source's
    /// own `#include "..."`s are found among the [`header`](Linker::header)s, then in its folder
    /// on the build machine while that exists.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{include_cuda, link::Linker};
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     // embedded at compile time, found relative to this crate: works from any directory
    ///     .add_cuda(include_cuda!("../ffi-examples/kernels/cuda/functions.cu"))
    ///     .link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn add_cuda(&mut self, source: super::CudaSource) -> &mut Self {
        if let Some(dir) = source.build_dir()
            && !self.include_dirs.contains(&dir)
        {
            self.include_dirs.push(dir);
        }
        self.add_cuda_source(source.text, source.name)
    }

    /// Adds CUDA C++ source text, compiled by NVRTC at link time.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// const SRC: &str = r#"extern "C" __device__ float twice(float x) { return 2.0f * x; }"#;
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(SRC, "twice.cu")
    ///     .link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn add_cuda_source(&mut self, source: &str, name: impl Into<String>) -> &mut Self {
        self.add_data(InputKind::Cuda, source.as_bytes(), name)
    }

    /// Adds one NVRTC option (e.g. `-DN=4`, `--use_fast_math`), passed after the linker's own.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_cuda_source("extern \"C\" __device__ float k() { return K; }", "k.cu")
    ///     .nvrtc_option("-DK=4.0f")
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn nvrtc_option(&mut self, option: impl Into<String>) -> &mut Self {
        self.nvrtc_options.push(option.into());
        self
    }

    /// Adds NVRTC options.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .nvrtc_options(["--use_fast_math", "-DNDEBUG"])
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn nvrtc_options<I, S>(&mut self, options: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nvrtc_options
            .extend(options.into_iter().map(Into::into));
        self
    }

    /// Adds one option for the device linker as nvJitLink spells it (e.g. `-ftz=true`,
    /// `-Xptxas=-warn-spills`, `-split-compile=0`), passed after the linker's own options:
    /// for what the named options ([`max_registers`](Self::max_registers) and its
    /// neighbours) do not cover.
    ///
    /// A link with raw options always goes through nvJitLink, on a CUDA context too (there it
    /// links for the device's architecture, as an LTO link does): the driver's linker takes
    /// typed option values, not strings, so only nvJitLink can check and honour them. An
    /// option nvJitLink does not know fails the link with
    /// [`Error::InvalidLinkOption`](crate::Error::InvalidLinkOption) naming it and quoting
    /// nvJitLink's log; `-arch` and `-lto` are refused there too (the linker sets them from
    /// [`for_arch`](Self::for_arch) / the context and from [`lto`](Self::lto)). The options
    /// are part of the cache key and reported by
    /// [`LinkedImage::linker_options`](super::LinkedImage::linker_options).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .linker_option("-Xptxas=-warn-spills")
    ///     .link()?;
    /// assert!(image.linker_options().iter().any(|o| o == "-Xptxas=-warn-spills"));
    /// # Ok(()) }
    /// ```
    pub fn linker_option(&mut self, option: impl Into<String>) -> &mut Self {
        self.raw_linker_options.push(option.into());
        self
    }

    /// Adds several raw device-linker options, as [`linker_option`](Self::linker_option)
    /// does for one.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .linker_options(["-ftz=true", "-prec-div=false"])
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn linker_options<I, S>(&mut self, options: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.raw_linker_options
            .extend(options.into_iter().map(Into::into));
        self
    }

    /// Adds an include directory for `.cu` sources (searched after the source's own folder,
    /// before the CUDA include dir).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let (dir, _) = doc_file("scale.h", "#define SCALE 2.0f\n");
    /// // `dir` holds scale.h, e.g. "kernels/cuda/include".
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_cuda_source("#include \"scale.h\"\nextern \"C\" __device__ float s(float x) { return SCALE * x; }", "s.cu")
    ///     .include_dir(dir.path())
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn include_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Provides a header to every `.cu` input from memory: `#include "name"` finds `text`
    /// (before any include directory). Lets a program embed its CUDA sources and headers
    /// (`include_str!`) instead of shipping files.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // e.g. `.header("scale.h", include_str!("cuda/scale.h"))`: nothing to ship beside the binary
    /// let image = Linker::for_arch("sm_90")?
    ///     .header("scale.h", "#define SCALE 2.0f\n")
    ///     .add_cuda_source("#include \"scale.h\"\nextern \"C\" __device__ float s(float x) { return SCALE * x; }", "s.cu")
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn header(&mut self, name: impl Into<String>, text: impl Into<String>) -> &mut Self {
        self.headers.push((name.into(), text.into()));
        self
    }

    /// Link-time optimisation: `.cu` sources are compiled to LTO-IR (`-dlto`) and the link goes
    /// through nvJitLink with `-lto`, so that CUDA C++ callees can be inlined into CUDA C++
    /// callers. (Rust PTX takes part as PTX; Rust↔C inlining is the build-time LLVM path.)
    ///
    /// LTO works on LTO-IR only: the other inputs (PTX, cubins, fatbins, objects and archives
    /// without LTO-IR) link as code beside the optimised part. A link with no LTO-IR at all
    /// (no `.cu`, no `.ltoir`, nothing built with `nvcc -dlto`) has nothing to optimise and is
    /// an ordinary link (cuLink on a context); [`LinkedImage::linker_options`](super::LinkedImage::linker_options)
    /// shows `-lto` only when LTO took place. LTO-IR inputs, and fatbins, objects and
    /// archives that carry LTO-IR, are linked with `-lto` whether or not this is set.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // CUDA C++ callees inlined into CUDA C++ callers at link time (through nvJitLink).
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .lto(true)
    ///     .link_and_load()?;
    /// # Ok(()) }
    /// ```
    pub fn lto(&mut self, enabled: bool) -> &mut Self {
        self.lto = enabled;
        self
    }

    /// Limits the registers each thread of the linked code may use (16 to 255): NVRTC's
    /// `--maxrregcount` for `.cu` inputs, and the linker's (`CU_JIT_MAX_REGISTERS`, nvJitLink's
    /// `-maxrregcount`) for the final code. Code that needs more spills to local memory.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .max_registers(32) // more threads resident per SM, at the cost of spills
    ///     .link()?;
    /// assert_eq!(image.options().max_registers, Some(32));
    /// # Ok(()) }
    /// ```
    pub fn max_registers(&mut self, registers: u32) -> &mut Self {
        self.options.max_registers = Some(registers);
        self
    }

    /// The optimisation level of the final code generation, 0 to 3
    /// (`CU_JIT_OPTIMIZATION_LEVEL`, nvJitLink's `-O<n>`; the linkers' default is 3).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .optimization_level(0) // fast to build, slow to run
    ///     .link()?;
    /// assert_eq!(image.options().optimization_level, Some(0));
    /// # Ok(()) }
    /// ```
    pub fn optimization_level(&mut self, level: u32) -> &mut Self {
        self.options.optimization_level = Some(level);
        self
    }

    /// Line information in the code, for profilers and `compute-sanitizer` (NVRTC's
    /// `-lineinfo`, `CU_JIT_GENERATE_LINE_INFO`, nvJitLink's `-lineinfo`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // For Nsight Compute's source view and compute-sanitizer's line numbers.
    /// let image = Linker::for_arch("sm_90")?.add_ptx(&kernels_ptx(), "kernels.ptx").line_info(true).link()?;
    /// assert!(image.options().line_info);
    /// # Ok(()) }
    /// ```
    pub fn line_info(&mut self, enabled: bool) -> &mut Self {
        self.options.line_info = enabled;
        self
    }

    /// Device debug information, for `cuda-gdb` (NVRTC's `-G`, `CU_JIT_GENERATE_DEBUG_INFO`,
    /// nvJitLink's `-g`). The code is then unoptimised.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // For cuda-gdb: device debug information, no optimisation.
    /// let image = Linker::for_arch("sm_90")?.add_ptx(&kernels_ptx(), "kernels.ptx").debug(true).link()?;
    /// assert!(image.options().debug);
    /// # Ok(()) }
    /// ```
    pub fn debug(&mut self, enabled: bool) -> &mut Self {
        self.options.debug = enabled;
        self
    }

    /// Sets the cache policy (default: [`CachePolicy::Default`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .cache(CachePolicy::Disabled) // always compile and link
    ///     .link()?;
    /// assert_eq!(*image.cache_status(), CacheStatus::Disabled);
    /// # Ok(()) }
    /// ```
    pub fn cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.cache = policy;
        self
    }

    /// Reads, checks, compiles and links every input.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let image = Linker::for_arch("sm_90")?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .link()?;
    /// println!("{} bytes in {:?}", image.cubin().len(), image.timings().total);
    /// // Later, on an sm_90 device: `ctx.load_module(image.cubin())?`.
    /// # Ok(()) }
    /// ```
    pub fn link(&self) -> Result<LinkedImage> {
        let _range = crate::profile::nvtx_range!("Linker::link");
        let start = Instant::now();
        let Checked {
            inputs,
            prelinked,
            used,
        } = self.checked_inputs()?;
        let infos: Vec<LinkInput> = inputs
            .iter()
            .map(|i| LinkInput {
                name: i.name.clone(),
                kind: i.kind,
                path: i.path.clone(),
            })
            .collect();
        let arch = match &self.target {
            Target::Simulator { .. } => {
                foreign::check_unchecked_inputs(&inputs, &used)?;
                prelinked::check_inputs(&inputs, &prelinked)?;
                // The `.cu` definitions are checked as on a GPU (NVRTC compiles the checks).
                let user: Vec<String> = self
                    .options
                    .nvrtc()
                    .into_iter()
                    .chain(self.nvrtc_options.iter().cloned())
                    .collect();
                foreign::check_sources_on_simulator(&inputs, &used, &self.headers, |input| {
                    let arch = Arch::from_compute_capability(9, 0);
                    crate::link::nvrtc::options(
                        input.path.as_deref(),
                        arch,
                        &self.include_dirs,
                        &user,
                        false,
                    )
                })?;
                return simulator::link(&inputs, &self.headers, &used, infos, start);
            }
            Target::Offline(arch) | Target::Cuda { arch, .. } => *arch,
        };
        let arch = self.target_arch(arch, &inputs)?;
        let plan = self.plan(arch, &inputs)?;
        // After the architecture checks: an input without code for the target is the first
        // thing to fix, whether or not it was acknowledged as unchecked.
        foreign::check_unchecked_inputs(&inputs, &used)?;
        let cache = match self.look_up_cache(&plan, &inputs, &used)? {
            CacheLookup::Hit {
                entry,
                path,
                elapsed,
            } => {
                return Ok(LinkedImage {
                    cubin: entry.cubin,
                    simulator_image: Vec::new(),
                    arch: Some(arch),
                    linker: Some(plan.linker),
                    info_log: entry.info_log,
                    compile_logs: Vec::new(),
                    cache: CacheStatus::Hit { path },
                    timings: LinkTimings {
                        cache_lookup: elapsed,
                        total: start.elapsed(),
                        ..LinkTimings::default()
                    },
                    inputs: infos,
                    options: self.options,
                    linker_options: self.linker_flags(&plan),
                    compiled: Vec::new(),
                });
            }
            CacheLookup::Miss(slot) => slot,
        };
        let compiled = self.compile(arch, &inputs, &used)?;
        prelinked::check_units(&compiled.units, &inputs, &prelinked)?;
        stages::check_duplicates(&compiled.units, &inputs)?;
        let linked = self.link_units(&plan, &compiled.units, &inputs, &used)?;
        let timings = LinkTimings {
            cache_lookup: cache.elapsed,
            compile: compiled.elapsed,
            link: linked.elapsed,
            total: start.elapsed(),
        };
        let cache = cache.store(&linked);
        Ok(LinkedImage {
            cubin: linked.cubin,
            simulator_image: Vec::new(),
            arch: Some(arch),
            linker: Some(plan.linker),
            info_log: linked.info_log,
            compile_logs: compiled.logs,
            cache,
            timings,
            inputs: infos,
            options: self.options,
            linker_options: self.linker_flags(&plan),
            compiled: compiled.outputs,
        })
    }

    /// How many inputs were added.
    pub(super) fn input_count(&self) -> usize {
        self.pending.len()
    }

    /// Reads the inputs and makes the checks every link makes before choosing how to link:
    /// options, inputs' shapes and kernel selections, sources already linked at build time,
    /// PTX definitions against the foreign declarations.
    pub(super) fn checked_inputs(&self) -> Result<Checked> {
        if self.pending.is_empty() {
            return Err(Error::EmptyLink);
        }
        self.options.check()?;
        self.check_raw_linker_options()?;
        let inputs = self.read_inputs()?;
        // Sources a Rust PTX already holds (build-time LTO) are refused, on every backend.
        let prelinked = prelinked::records(&inputs);
        prelinked::check_sources(&inputs, &prelinked)?;
        let used = foreign::used_declarations(&inputs);
        foreign::check_declared_symbols_are_foreign(&used)?;
        for input in inputs.iter().filter(|i| i.kind == InputKind::Ptx) {
            foreign::check_ptx_definitions(
                &String::from_utf8_lossy(&input.bytes),
                &input.name,
                &used,
            )?;
        }
        Ok(Checked {
            inputs,
            prelinked,
            used,
        })
    }

    /// Runs `f` once each time [`link_and_load`](Self::link_and_load) loads a module holding
    /// the input added last (Numba's `setup` on linkable code), with the module, before it is
    /// returned: e.g. to initialize a `__device__` global of that input with
    /// [`Module::write_global`]. An error fails the load as [`Error::ModuleHook`] naming the
    /// input, and the teardowns of the inputs whose setup ran run as the module drops.
    /// Setups run in input order (the hooks of one input in the order added).
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// use gpukernel_runtime::link::Linker;
    /// let module = Linker::new(&ctx)?
    ///     .add_cuda_source("__device__ float scale = 1.0f;", "scale.cu")
    ///     .setup(|m| m.write_global("scale", &2.5f32))
    ///     .link_and_load()?;
    /// assert_eq!(module.read_global::<f32>("scale")?, 2.5);
    /// # Ok(()) }
    /// ```
    /// Hooks run only through `link_and_load` ([`link`](Self::link) loads nothing).
    pub fn setup(
        &mut self,
        f: impl Fn(&Module) -> Result<()> + Send + Sync + 'static,
    ) -> &mut Self {
        let input = self.pending.len().checked_sub(1);
        self.hooks.0.push((input, Hook::Setup(Arc::new(f))));
        self
    }

    /// Runs `f` once when a module that [`link_and_load`](Self::link_and_load) loaded with
    /// the input added last is unloaded (Numba's `teardown`): after the module's work, before
    /// the unload, with a view of the module that cannot keep it loaded. A drop cannot return
    /// its error: it is recorded in the context ([`Context::take_teardown_failures`](crate::Context::take_teardown_failures)),
    /// and so is a panic of `f` (caught) or a teardown that could not run because the
    /// context faulted (the module then stays loaded). Teardowns run in reverse input order.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, _) = doc_setup();
    /// use gpukernel_runtime::link::Linker;
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .teardown(|view| {
    ///         assert!(view.kernel_names().iter().any(|k| k == "saxpy"));
    ///         view.read_global::<u32>("counter").map(drop) // no globals on the simulator
    ///     })
    ///     .link_and_load()?;
    /// drop(module);
    /// let failed = ctx.take_teardown_failures();
    /// assert_eq!(failed[0].input, "kernels.ptx");
    /// # Ok(()) }
    /// ```
    pub fn teardown(
        &mut self,
        f: impl Fn(&crate::ModuleView<'_>) -> Result<()> + Send + Sync + 'static,
    ) -> &mut Self {
        let input = self.pending.len().checked_sub(1);
        self.hooks.0.push((input, Hook::Teardown(Arc::new(f))));
        self
    }

    /// Links, then loads the image as a module of the linker's context (on the simulator:
    /// a module of the kernels the PTX inputs declare), and runs the inputs' setup hooks.
    /// One self-contained PTX input is not linked: the driver JIT-compiles it as a whole
    /// program at load, with the link's options ([`load_path`](Self::load_path),
    /// [`whole_program`](Self::whole_program)).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let module = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .add_cuda_source(FUNCTIONS_CU, "functions.cu")
    ///     .link_and_load()?;
    /// let iota = module.kernel(iota)?;
    /// # Ok(()) }
    /// ```
    pub fn link_and_load(&self) -> Result<Module> {
        let _range = crate::profile::nvtx_range!("Linker::link_and_load");
        let module = self.link_and_load_only()?;
        if self.hooks.0.is_empty() {
            return Ok(module);
        }
        let mut hooks = Vec::with_capacity(self.hooks.0.len());
        for (i, hook) in &self.hooks.0 {
            let Some(i) = *i else {
                return Err(Error::ModuleHook {
                    hook: hook.kind(),
                    input: "(none)".to_owned(),
                    message: "added before any input: call it after the `add_*` of the input \
                              it belongs to"
                        .to_owned(),
                    source: None,
                });
            };
            hooks.push((i, hook));
        }
        // Input order; the hooks of one input keep the order they were added in.
        hooks.sort_by_key(|&(i, _)| i);
        let hooks = hooks
            .into_iter()
            .map(|(i, hook)| {
                let name = self.pending[i].name();
                match hook {
                    Hook::Setup(f) => (name, Some(f.clone()), None),
                    Hook::Teardown(f) => (name, None, Some(f.clone())),
                }
            })
            .collect();
        crate::module_hooks::run_setups(&module, hooks)?;
        Ok(module)
    }

    fn link_and_load_only(&self) -> Result<Module> {
        let ctx = match &self.target {
            Target::Cuda { ctx, .. } | Target::Simulator { ctx: Some(ctx) } => ctx,
            Target::Offline(_) | Target::Simulator { ctx: None } => {
                return Err(Error::Unsupported {
                    operation: "Linker::link_and_load",
                    backend: "linker without a context",
                    hint: Some(
                        "create the linker with `Linker::new(&ctx)`, or load `link()`'s cubin with `Context::load_module`",
                    ),
                });
            }
        };
        // One self-contained PTX: JIT-compiled whole by the driver, not as relocatable code.
        if let Some(module) = self.load_whole_program(ctx)? {
            return Ok(module);
        }
        let image = self.link()?;
        if image.is_simulator() {
            return Module::from_simulator_image(ctx.inner.clone(), image.module_image());
        }
        ctx.load_module(image.cubin())
    }

    /// Compiles as if the device had compute capability `major.minor` (the context's device
    /// still runs the result): to see how a link behaves for another GPU, e.g. one whose
    /// architecture the installed NVRTC and nvJitLink do not know. No effect on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // On an sm_90 machine, check that the code would also link for sm_80.
    /// let image = Linker::new(&ctx)?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .assume_compute_capability(8, 0)
    ///     .link()?;
    /// # Ok(()) }
    /// ```
    pub fn assume_compute_capability(&mut self, major: u32, minor: u32) -> &mut Self {
        let assumed = Arch::from_compute_capability(major, minor);
        match &mut self.target {
            Target::Offline(arch) | Target::Cuda { arch, .. } => *arch = assumed,
            Target::Simulator { .. } => {}
        }
        self
    }

    /// The architecture to compile for on a device of architecture `device`: `device` when
    /// NVRTC supports it, else the highest supported one whose code the device runs (any
    /// older one through cuLink, which JIT-compiles PTX for the device; the same major one
    /// through nvJitLink, whose output is a cubin), else [`Error::UnsupportedArchitecture`].
    pub(super) fn target_arch(&self, device: Arch, inputs: &[Input]) -> Result<Arch> {
        let has_cuda = inputs.iter().any(|i| i.kind == InputKind::Cuda);
        let uses_nvjitlink = !matches!(self.target, Target::Cuda { .. })
            || self.uses_ltoir(inputs)
            || !self.raw_linker_options.is_empty();
        if !has_cuda && !uses_nvjitlink {
            return Ok(device);
        }
        // Kept in the cache directory per NVRTC build: a cache hit need not load NVRTC.
        let supported = match toolinfo::nvrtc(self.cache.dir().as_deref()) {
            Ok(info) => info.archs,
            // Without NVRTC and without sources, nvJitLink itself judges the architecture.
            Err(_) if !has_cuda => return Ok(device),
            Err(e) => return Err(e),
        };
        // An architecture-specific target has no stand-in: the tools have it, or it fails.
        device.check_specific(&supported)?;
        let how = if uses_nvjitlink {
            Portability::Cubin
        } else {
            Portability::PtxJit
        };
        device
            .compatible_target(&supported, how)
            .ok_or_else(|| Error::UnsupportedArchitecture {
                device: device.to_string(),
                supported: supported.iter().map(|sm| format!("sm_{sm}")).collect(),
            })
    }

    /// Reads and checks the inputs, dropping repeats (the same file, or the same bytes of the
    /// same kind): linking one input twice would define its symbols twice.
    fn read_inputs(&self) -> Result<Vec<Input>> {
        let mut inputs: Vec<Input> = Vec::with_capacity(self.pending.len());
        for pending in &self.pending {
            let input = match pending {
                Pending::File {
                    path,
                    kind,
                    unchecked,
                } => {
                    let mut input = input::read_file(path, *kind)?;
                    input.unchecked = *unchecked;
                    input
                }
                Pending::Data {
                    kind,
                    bytes,
                    name,
                    kernels,
                    unchecked,
                    machine,
                } => {
                    let mut input = Input {
                        kind: *kind,
                        name: name.clone(),
                        path: None,
                        bytes: bytes.clone(),
                        unchecked: *unchecked,
                        machine: machine.clone(),
                    };
                    input::check_shape(&input)?;
                    if let Some(kernels) = kernels {
                        let text = String::from_utf8_lossy(&input.bytes);
                        let module = ptx::Ptx::parse(&text);
                        let keep: Vec<&str> = kernels.iter().map(String::as_str).collect();
                        let selected = module.select_entries(&keep).map_err(|missing| {
                            Error::KernelNotFound {
                                name: missing.join(", "),
                                available: module.entries(),
                            }
                        })?;
                        input.bytes = selected.into_bytes().into();
                    }
                    input
                }
            };
            let repeat = inputs.iter().any(|seen| {
                (seen.path.is_some() && seen.path == input.path)
                    || (seen.kind == input.kind && seen.bytes == input.bytes)
            });
            if !repeat {
                inputs.push(input);
            }
        }
        Ok(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_link_is_an_error() {
        assert!(matches!(
            Linker::for_simulator().link(),
            Err(Error::EmptyLink)
        ));
    }
}
