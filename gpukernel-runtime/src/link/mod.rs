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
//! * Both logs of the linker are always captured ([`LinkedImage::info_log`], and every error).
//!   Undefined and duplicate symbols, and inputs without code for the target, become their
//!   own errors naming the symbol or input.
//! * Linked cubins are cached on disk ([`CachePolicy`]), keyed by every input's kind, name
//!   and bytes, the options, the architecture, and the versions of the driver, NVRTC,
//!   nvJitLink and this crate.
//! * On the simulator, inputs are checked and nothing is compiled: the foreign code runs as
//!   the host-compiled `.cu` linked into the program.
//!
//! Known limits: symbols inside fatbins, objects and archives are not readable before the
//! link, so duplicates there are found by the linker itself: cuLink reports them, but
//! nvJitLink 13.0 only prints `Multiple definition` to stderr and links anyway (duplicates
//! among `.cu`, `.ptx` and `.cubin` inputs are caught before any linker runs). Objects and
//! archives are checked for shape, not architecture (cuLink's info log is checked after).
//!
//! The cache lives in `GPUKERNEL_CACHE_DIR`, else `$XDG_CACHE_HOME/gpukernel`, else
//! `~/.cache/gpukernel`.
//!
//! NVRTC and nvJitLink are loaded at run time from `GPUKERNEL_CUDA_TOOLS`, `CUDA_HOME`,
//! `CUDA_PATH`, `/usr/local/cuda` or the workspace's `.cuda-tools/nvidia/cu13` (what
//! `cargo xtask doctor` installs), then from the loader's path; `LD_LIBRARY_PATH` need not be
//! set.

mod cache;
pub(crate) mod diagnose;
mod input;
mod nvrtc;
mod sys;
mod tools;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::error::{LinkErrorCode, LinkerKind};
pub use crate::format::InputKind;
pub use cache::CachePolicy;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::format::{self, elf, fatbin, ptx};
use crate::module::Module;
use input::Input;

/// A GPU architecture to compile and link for, e.g. `sm_90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    sm: u32,
    suffix: Option<char>,
}

impl Arch {
    /// The architecture of a device of compute capability `major.minor`.
    pub fn from_compute_capability(major: u32, minor: u32) -> Arch {
        Arch {
            sm: major * 10 + minor,
            suffix: None,
        }
    }

    /// The SM number: 90 for `sm_90`.
    pub fn sm(self) -> u32 {
        self.sm
    }

    /// The compute capability's major number: 9 for `sm_90`.
    pub fn major(self) -> u32 {
        self.sm / 10
    }
}

impl FromStr for Arch {
    type Err = Error;

    /// Parses `sm_90`, `sm_90a`, `compute_90` or `90`.
    fn from_str(s: &str) -> Result<Arch> {
        let invalid = |reason: &str| Error::InvalidLinkOption {
            option: s.to_string(),
            reason: reason.to_string(),
        };
        let body = s.trim();
        let body = body
            .strip_prefix("sm_")
            .or_else(|| body.strip_prefix("compute_"))
            .unwrap_or(body);
        let (digits, suffix) = match body.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
            Some((i, c)) if i + c.len_utf8() == body.len() && matches!(c, 'a' | 'f') => {
                (&body[..i], Some(c))
            }
            Some(_) => {
                return Err(invalid(
                    "expected an architecture such as `sm_90` or `sm_90a`",
                ));
            }
            None => (body, None),
        };
        let sm: u32 = digits
            .parse()
            .map_err(|_| invalid("expected an architecture such as `sm_90` or `sm_90a`"))?;
        if !(50..=199).contains(&sm) {
            return Err(invalid("the SM number must be between 50 and 199"));
        }
        Ok(Arch { sm, suffix })
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)?;
        if let Some(c) = self.suffix {
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// What a link is for.
#[derive(Debug, Clone)]
enum Target {
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
    },
    Data {
        kind: InputKind,
        bytes: Arc<[u8]>,
        name: String,
        kernels: Option<Vec<String>>,
    },
}

/// Links CUDA C++ sources, PTX, cubins, fatbins, objects, archives and LTO-IR into one cubin.
///
/// The `add_*` methods only record inputs; [`link`](Linker::link) reads, checks, compiles
/// and links them, and reports the first problem with the file or symbol at fault.
#[derive(Debug, Clone)]
pub struct Linker {
    target: Target,
    pending: Vec<Pending>,
    nvrtc_options: Vec<String>,
    include_dirs: Vec<PathBuf>,
    headers: Vec<(String, String)>,
    cache: CachePolicy,
    lto: bool,
}

impl Linker {
    fn with_target(target: Target) -> Linker {
        Linker {
            target,
            pending: Vec::new(),
            nvrtc_options: Vec::new(),
            include_dirs: Vec::new(),
            headers: Vec::new(),
            cache: CachePolicy::Default,
            lto: false,
        }
    }

    /// A linker for a context: for a CUDA device it compiles for the device's architecture
    /// and links with the driver (`cuLink*`; nvJitLink when LTO-IR is involved); for the
    /// simulator see [`Linker::for_simulator`].
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
    pub fn for_arch(arch: &str) -> Result<Linker> {
        Ok(Linker::with_target(Target::Offline(arch.parse()?)))
    }

    /// A linker for the simulator: [`link`](Linker::link) checks the inputs (files exist,
    /// kinds and shapes are right) and compiles nothing; the foreign code the simulator runs
    /// is the host-compiled `.cu` linked into the program.
    pub fn for_simulator() -> Linker {
        Linker::with_target(Target::Simulator { ctx: None })
    }

    /// The architecture linked for (`None` on the simulator).
    pub fn arch(&self) -> Option<Arch> {
        match &self.target {
            Target::Offline(arch) | Target::Cuda { arch, .. } => Some(*arch),
            Target::Simulator { .. } => None,
        }
    }

    /// Adds a file; its kind comes from the extension (`.cu`, `.ptx`, `.cubin`, `.fatbin`,
    /// `.o`, `.a`, `.ltoir`).
    pub fn add_file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.pending.push(Pending::File {
            path: path.as_ref().to_path_buf(),
            kind: None,
        });
        self
    }

    /// Adds a file of the given kind, whatever its extension.
    pub fn add_file_as(&mut self, path: impl AsRef<Path>, kind: InputKind) -> &mut Self {
        self.pending.push(Pending::File {
            path: path.as_ref().to_path_buf(),
            kind: Some(kind),
        });
        self
    }

    /// Adds an input from memory. `name` appears in logs and errors (for a `.cu` source, NVRTC
    /// reports its errors as `name(line): error ...`).
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
        });
        self
    }

    /// Adds PTX text, e.g. the Rust kernels' PTX (`kernels_crate::PTX`).
    pub fn add_ptx(&mut self, ptx: &str, name: impl Into<String>) -> &mut Self {
        self.add_data(InputKind::Ptx, ptx.as_bytes(), name)
    }

    /// Adds only the named kernels of a PTX module (e.g. a kernels crate's `PTX`, which has
    /// every kernel of the crate): the other kernels, and the declarations of foreign
    /// functions only they call, are left out, so the link needs only the foreign code these
    /// kernels use. A name that is not an entry of the PTX is an error at
    /// [`link`](Linker::link).
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
        });
        self
    }

    /// Adds CUDA C++ source text, compiled by NVRTC at link time.
    pub fn add_cuda_source(&mut self, source: &str, name: impl Into<String>) -> &mut Self {
        self.add_data(InputKind::Cuda, source.as_bytes(), name)
    }

    /// Adds one NVRTC option (e.g. `-DN=4`, `--use_fast_math`), passed after the linker's own.
    pub fn nvrtc_option(&mut self, option: impl Into<String>) -> &mut Self {
        self.nvrtc_options.push(option.into());
        self
    }

    /// Adds NVRTC options.
    pub fn nvrtc_options<I, S>(&mut self, options: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nvrtc_options
            .extend(options.into_iter().map(Into::into));
        self
    }

    /// Adds an include directory for `.cu` sources (searched after the source's own folder,
    /// before the CUDA include dir).
    pub fn include_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Provides a header to every `.cu` input from memory: `#include "name"` finds `text`
    /// (before any include directory). Lets a program embed its CUDA sources and headers
    /// (`include_str!`) instead of shipping files.
    pub fn header(&mut self, name: impl Into<String>, text: impl Into<String>) -> &mut Self {
        self.headers.push((name.into(), text.into()));
        self
    }

    /// Link-time optimisation: `.cu` sources are compiled to LTO-IR (`-dlto`) and the link goes
    /// through nvJitLink with `-lto`, so that CUDA C++ callees can be inlined into CUDA C++
    /// callers. (Rust PTX takes part as PTX; Rust↔C inlining is the build-time LLVM path.)
    pub fn lto(&mut self, enabled: bool) -> &mut Self {
        self.lto = enabled;
        self
    }

    /// Sets the cache policy (default: [`CachePolicy::Default`]).
    pub fn cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.cache = policy;
        self
    }

    /// Reads, checks, compiles and links every input.
    pub fn link(&self) -> Result<LinkedImage> {
        let start = Instant::now();
        if self.pending.is_empty() {
            return Err(Error::EmptyLink);
        }
        let inputs = self.read_inputs()?;
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
                // What cuLink would refuse must not pass here either.
                check_simulator_symbols(&inputs, &self.headers)?;
                // The simulator's module is the set of kernels the PTX inputs declare.
                let mut image = Vec::new();
                for input in inputs.iter().filter(|i| i.kind == InputKind::Ptx) {
                    image.extend_from_slice(&input.bytes);
                    image.push(b'\n');
                }
                return Ok(LinkedImage {
                    cubin: Vec::new(),
                    simulator_image: image,
                    arch: None,
                    linker: None,
                    info_log: String::new(),
                    compile_logs: Vec::new(),
                    cache: CacheStatus::Disabled,
                    timings: LinkTimings {
                        total: start.elapsed(),
                        ..LinkTimings::default()
                    },
                    inputs: infos,
                });
            }
            Target::Offline(arch) | Target::Cuda { arch, .. } => *arch,
        };
        let uses_ltoir = self.lto || inputs.iter().any(|i| i.kind == InputKind::LtoIr);
        let linker = match &self.target {
            Target::Cuda { .. } if !uses_ltoir => LinkerKind::CuLink,
            _ => LinkerKind::NvJitLink,
        };
        for input in &inputs {
            check_arch(input, arch)?;
        }

        // The cache.
        let cache_start = Instant::now();
        let cache_dir = self.cache.dir();
        let mut cache_status = CacheStatus::Disabled;
        let mut key = None;
        if let Some(dir) = &cache_dir {
            let k = self.cache_key(&inputs, arch, linker, uses_ltoir)?;
            key = Some(k);
            match cache::load(dir, &k) {
                Ok(entry) => {
                    return Ok(LinkedImage {
                        cubin: entry.cubin,
                        simulator_image: Vec::new(),
                        arch: Some(arch),
                        linker: Some(linker),
                        info_log: entry.info_log,
                        compile_logs: Vec::new(),
                        cache: CacheStatus::Hit {
                            path: cache::entry_path(dir, &k),
                        },
                        timings: LinkTimings {
                            cache_lookup: cache_start.elapsed(),
                            total: start.elapsed(),
                            ..LinkTimings::default()
                        },
                        inputs: infos,
                    });
                }
                Err(cache::Miss::Absent) => cache_status = CacheStatus::Miss { stored: None },
                Err(cache::Miss::Invalid(reason)) => {
                    cache_status = CacheStatus::Rebuilt {
                        reason,
                        stored: None,
                    }
                }
            }
        }
        let cache_lookup = cache_start.elapsed();

        // NVRTC.
        let compile_start = Instant::now();
        let mut compile_logs = Vec::new();
        let mut compiled: Vec<(InputKind, Arc<[u8]>, String)> = Vec::with_capacity(inputs.len());
        for input in &inputs {
            if input.kind != InputKind::Cuda {
                compiled.push((input.kind, input.bytes.clone(), input.name.clone()));
                continue;
            }
            let source = std::str::from_utf8(&input.bytes).unwrap_or_default();
            let options = nvrtc::options(
                input.path.as_deref(),
                arch,
                &self.include_dirs,
                &self.nvrtc_options,
                self.lto,
            );
            let (code, log) =
                nvrtc::compile(source, &input.name, &self.headers, &options, self.lto)?;
            if !log.trim().is_empty() {
                compile_logs.push((input.name.clone(), log));
            }
            let kind = if self.lto {
                InputKind::LtoIr
            } else {
                InputKind::Ptx
            };
            compiled.push((
                kind,
                code.into(),
                format!("{}.{}", input.name, kind.extension()),
            ));
        }
        let compile = compile_start.elapsed();
        check_duplicates(&compiled, &inputs)?;

        // The link.
        let link_start = Instant::now();
        let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
        let (cubin, info_log) = self.raw_link(linker, arch, uses_ltoir, &compiled, &names)?;
        let link = link_start.elapsed();

        if let (Some(dir), Some(k)) = (&cache_dir, key) {
            let entry = cache::Entry {
                cubin: cubin.clone(),
                info_log: info_log.clone(),
            };
            let stored = Some(cache::store(dir, &k, &entry).map_err(|e| e.to_string()));
            match &mut cache_status {
                CacheStatus::Miss { stored: s } | CacheStatus::Rebuilt { stored: s, .. } => {
                    *s = stored
                }
                _ => {}
            }
        }
        Ok(LinkedImage {
            cubin,
            simulator_image: Vec::new(),
            arch: Some(arch),
            linker: Some(linker),
            info_log,
            compile_logs,
            cache: cache_status,
            timings: LinkTimings {
                cache_lookup,
                compile,
                link,
                total: start.elapsed(),
            },
            inputs: infos,
        })
    }

    /// Links, then loads the image as a module of the linker's context (on the simulator:
    /// a module of the kernels the PTX inputs declare).
    pub fn link_and_load(&self) -> Result<Module> {
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
        let image = self.link()?;
        if image.is_simulator() {
            let names = ptx::entries(&String::from_utf8_lossy(image.module_image()));
            return Ok(Module::from_kernel_names(ctx.inner.clone(), names));
        }
        ctx.load_module(image.cubin())
    }

    /// Hands the compiled inputs to the chosen linker.
    fn raw_link(
        &self,
        linker: LinkerKind,
        arch: Arch,
        lto: bool,
        compiled: &[(InputKind, Arc<[u8]>, String)],
        names: &[String],
    ) -> Result<(Vec<u8>, String)> {
        // Text goes to the linkers NUL-terminated, as their C APIs expect.
        let owned: Vec<Vec<u8>> = compiled
            .iter()
            .map(|(kind, bytes, _)| {
                let mut b = bytes.to_vec();
                if *kind == InputKind::Ptx && b.last() != Some(&0) {
                    b.push(0);
                }
                b
            })
            .collect();
        let raw: Vec<sys::RawInput<'_>> = compiled
            .iter()
            .zip(&owned)
            .map(|((kind, _, name), bytes)| sys::RawInput {
                kind: *kind,
                bytes,
                name,
            })
            .collect();
        let out = match (&self.target, linker) {
            (Target::Cuda { ctx, .. }, LinkerKind::CuLink) => {
                ctx.bind_to_thread()?;
                // SAFETY: the context was made current on this thread just above.
                unsafe { sys::culink_link(&raw)? }
            }
            _ => {
                let mut options = vec![format!("-arch={arch}")];
                if lto {
                    options.push("-lto".into());
                }
                sys::nvjitlink_link(&options, &raw)?
            }
        };
        interpret(linker, arch, out, compiled, names)
    }

    /// Reads and checks the inputs, dropping repeats (the same file, or the same bytes of the
    /// same kind): linking one input twice would define its symbols twice.
    fn read_inputs(&self) -> Result<Vec<Input>> {
        let mut inputs: Vec<Input> = Vec::with_capacity(self.pending.len());
        for pending in &self.pending {
            let input = match pending {
                Pending::File { path, kind } => input::read_file(path, *kind)?,
                Pending::Data {
                    kind,
                    bytes,
                    name,
                    kernels,
                } => {
                    let mut input = Input {
                        kind: *kind,
                        name: name.clone(),
                        path: None,
                        bytes: bytes.clone(),
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

    fn cache_key(
        &self,
        inputs: &[Input],
        arch: Arch,
        linker: LinkerKind,
        uses_ltoir: bool,
    ) -> Result<cache::Key> {
        let mut key = cache::CacheKey::new();
        key.field("arch", arch.to_string().as_bytes());
        key.field("linker", linker.to_string().as_bytes());
        key.field("lto", &[u8::from(self.lto), u8::from(uses_ltoir)]);
        match (&self.target, linker) {
            (Target::Cuda { ctx, .. }, LinkerKind::CuLink) => {
                ctx.bind_to_thread()?;
                // SAFETY: a context exists, so the driver is loaded and initialised.
                let version = unsafe { sys::driver_version()? };
                key.field("driver", &version.to_le_bytes());
            }
            _ => {
                let (major, minor) = sys::nvjitlink_version()?;
                key.field("nvjitlink", format!("{major}.{minor}").as_bytes());
            }
        }
        if inputs.iter().any(|i| i.kind == InputKind::Cuda) {
            let (major, minor) = sys::nvrtc_version()?;
            key.field("nvrtc", format!("{major}.{minor}").as_bytes());
            for option in &self.nvrtc_options {
                key.field("nvrtc-option", option.as_bytes());
            }
            for dir in &self.include_dirs {
                key.field("include-dir", dir.to_string_lossy().as_bytes());
            }
            for (name, text) in &self.headers {
                key.field("header-name", name.as_bytes());
                key.field("header-text", text.as_bytes());
            }
            if let Some(dir) = tools::cuda_include_dir() {
                key.field("cuda-include-dir", dir.to_string_lossy().as_bytes());
            }
        }
        for input in inputs {
            key.field("kind", input.kind.extension().as_bytes());
            key.field("name", input.name.as_bytes());
            key.field("bytes", &input.bytes);
            if input.kind == InputKind::Cuda {
                let source = String::from_utf8_lossy(&input.bytes);
                for (path, bytes) in
                    nvrtc::local_headers(input.path.as_deref(), &source, &self.include_dirs)
                {
                    key.field("header", path.to_string_lossy().as_bytes());
                    key.field("header-bytes", &bytes);
                }
            }
        }
        Ok(key.finish())
    }
}

/// Rejects a cubin or fatbin without code for `arch` before the linker sees it: a cubin of
/// another architecture family, a fatbin with neither a compatible image nor PTX old enough to
/// be compiled for `arch` (the driver's linker only notes that in its info log and goes on).
fn check_arch(input: &Input, arch: Arch) -> Result<()> {
    if input.kind == InputKind::Fatbin {
        let entries = fatbin::Fatbin::read(&input.bytes)
            .map(|f| f.entries())
            .unwrap_or_default();
        let usable = entries.iter().any(|e| {
            if e.ptx {
                e.sm <= arch.sm()
            } else {
                e.sm / 10 == arch.major() && e.sm <= arch.sm()
            }
        });
        if !entries.is_empty() && !usable {
            let contents: Vec<String> = entries
                .iter()
                .map(|e| {
                    if e.ptx {
                        format!("compute_{} PTX", e.sm)
                    } else {
                        format!("sm_{} image", e.sm)
                    }
                })
                .collect();
            return Err(Error::WrongArchitecture {
                input: input.name.clone(),
                arch: arch.to_string(),
                info_log: format!("the fatbin holds: {}", contents.join(", ")),
            });
        }
        return Ok(());
    }
    if input.kind != InputKind::Cubin {
        return Ok(());
    }
    if let Some(sm) = elf::cubin_arch(&input.bytes)
        && (sm / 10 != arch.major() || sm > arch.sm())
    {
        return Err(Error::WrongArchitecture {
            input: input.name.clone(),
            arch: arch.to_string(),
            info_log: format!("the cubin was built for sm_{sm}"),
        });
    }
    Ok(())
}

/// Finds a symbol defined by two inputs, where both inputs' symbols are readable (PTX, and so
/// compiled `.cu`, and cubins). nvJitLink 13.0 only prints `Multiple definition` to stderr
/// and links anyway, so this is checked before linking, for every backend alike.
fn check_duplicates(compiled: &[(InputKind, Arc<[u8]>, String)], inputs: &[Input]) -> Result<()> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (index, (kind, bytes, _)) in compiled.iter().enumerate() {
        let Some(symbols) = format::defined_symbols(*kind, bytes) else {
            continue;
        };
        for symbol in symbols {
            if let Some(&first) = seen.get(&symbol) {
                let names = [inputs[first].name.clone(), inputs[index].name.clone()];
                return Err(Error::DuplicateSymbol {
                    error_log: format!(
                        "`{symbol}` is defined in {} and again in {} (found before linking)",
                        names[0], names[1]
                    ),
                    symbol,
                    defined_in: names.to_vec(),
                    info_log: String::new(),
                });
            }
            seen.insert(symbol, index);
        }
    }
    Ok(())
}

/// Turns a raw link's outcome into the cubin or the most specific error.
fn interpret(
    linker: LinkerKind,
    arch: Arch,
    out: sys::RawLinkOutput,
    compiled: &[(InputKind, Arc<[u8]>, String)],
    names: &[String],
) -> Result<(Vec<u8>, String)> {
    let sys::RawLinkOutput {
        result,
        error_log,
        info_log,
        failed_input,
    } = out;
    let both = format!("{error_log}\n{info_log}");
    match result {
        Ok(cubin) => {
            if let Some(input) = diagnose::no_code_for_arch(&info_log, &arch.to_string()) {
                return Err(Error::WrongArchitecture {
                    input,
                    arch: arch.to_string(),
                    info_log,
                });
            }
            Ok((cubin, info_log))
        }
        Err((call, code)) => {
            if let Some(symbol) = diagnose::undefined_symbol(&both) {
                return Err(Error::UndefinedSymbol {
                    symbol,
                    inputs: names.to_vec(),
                    error_log,
                    info_log,
                });
            }
            if let Some(symbol) = diagnose::duplicate_symbol(&both) {
                return Err(Error::DuplicateSymbol {
                    symbol,
                    defined_in: Vec::new(),
                    error_log,
                    info_log,
                });
            }
            let arch_name = arch.to_string();
            let failed_name = failed_input
                .and_then(|i| compiled.get(i))
                .map(|(_, _, n)| n.clone());
            if let Some(input) = diagnose::no_code_for_arch(&both, &arch_name) {
                return Err(Error::WrongArchitecture {
                    input,
                    arch: arch_name,
                    info_log: both,
                });
            }
            if let LinkErrorCode::NvJitLink { code: 13, .. } = code {
                // NVJITLINK_ERROR_ARCH_MISMATCH
                return Err(Error::WrongArchitecture {
                    input: failed_name.unwrap_or_else(|| "an input".into()),
                    arch: arch_name,
                    info_log: both,
                });
            }
            let error_log = match failed_name {
                Some(name) => format!("(while adding {name})\n{error_log}"),
                None => error_log,
            };
            Err(Error::LinkFailed {
                linker,
                call,
                code,
                error_log,
                info_log,
            })
        }
    }
}

/// One input of a link, as reported by [`LinkedImage::inputs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInput {
    /// The path as given, or the name given with the data.
    pub name: String,
    /// Its kind.
    pub kind: InputKind,
    /// The canonical path, for file inputs.
    pub path: Option<PathBuf>,
}

/// How the cache took part in a link.
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
}

/// Time spent in each phase of a link.
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
#[derive(Debug, Clone)]
pub struct LinkedImage {
    cubin: Vec<u8>,
    simulator_image: Vec<u8>,
    arch: Option<Arch>,
    linker: Option<LinkerKind>,
    info_log: String,
    compile_logs: Vec<(String, String)>,
    cache: CacheStatus,
    timings: LinkTimings,
    inputs: Vec<LinkInput>,
}

impl LinkedImage {
    /// The linked cubin (empty for a simulator link).
    pub fn cubin(&self) -> &[u8] {
        &self.cubin
    }

    /// The image to hand to [`Context::load_module`]: the cubin, or on the simulator the PTX
    /// inputs (whose kernel names make the simulator's module).
    pub fn module_image(&self) -> &[u8] {
        if self.is_simulator() {
            &self.simulator_image
        } else {
            &self.cubin
        }
    }

    /// The linked cubin, by value.
    pub fn into_cubin(self) -> Vec<u8> {
        self.cubin
    }

    /// Whether this image is for the simulator (no device code).
    pub fn is_simulator(&self) -> bool {
        self.arch.is_none()
    }

    /// The architecture it was linked for (`None` on the simulator).
    pub fn arch(&self) -> Option<Arch> {
        self.arch
    }

    /// The linker that produced it (`None` on the simulator).
    pub fn linker(&self) -> Option<LinkerKind> {
        self.linker
    }

    /// The linker's info log (for a cache hit: the log of the link that made the entry).
    pub fn info_log(&self) -> &str {
        &self.info_log
    }

    /// NVRTC's logs (warnings) per `.cu` source, where non-empty.
    pub fn compile_logs(&self) -> &[(String, String)] {
        &self.compile_logs
    }

    /// Whether the image came from the on-disk cache.
    pub fn from_cache(&self) -> bool {
        matches!(self.cache, CacheStatus::Hit { .. })
    }

    /// How the cache took part.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.cache
    }

    /// Time spent per phase.
    pub fn timings(&self) -> LinkTimings {
        self.timings
    }

    /// The inputs linked (repeats removed), in order.
    pub fn inputs(&self) -> &[LinkInput] {
        &self.inputs
    }

    /// The kernel entry points of the cubin (from its ELF symbol table).
    pub fn entry_points(&self) -> Result<Vec<String>> {
        Ok(self
            .symbols()?
            .into_iter()
            .filter(|(_, entry)| *entry)
            .map(|(n, _)| n)
            .collect())
    }

    /// Every function defined in the cubin (kernels and device functions).
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

/// What [`compile_cuda`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CudaOutput {
    /// PTX text (`-rdc=true`), linkable by cuLink or nvJitLink.
    Ptx,
    /// LTO-IR (`-rdc=true -dlto`), linkable by nvJitLink only ([`InputKind::LtoIr`]).
    LtoIr,
}

/// Compiles one CUDA C++ source with NVRTC for `arch`, as the linker does for `.cu` inputs
/// (`-rdc=true`, the CUDA include dir, then `options`), e.g. to save PTX or LTO-IR for later
/// links. `name` is the file name NVRTC's log uses; `headers` are `(name, text)` pairs that
/// `#include "name"` finds. Errors: [`Error::NvrtcCompile`] with the log and the options.
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
    let options = nvrtc::options(dir, arch, &[], options, ltoir);
    Ok(nvrtc::compile(source, name, headers, &options, ltoir)?.0)
}

/// Versions and locations of the compiler libraries the linker uses, for diagnostics
/// (`cargo xtask doctor`, bug reports).
pub fn toolchain_report() -> String {
    let mut out = String::new();
    match (sys::nvrtc_version(), sys::nvrtc_path()) {
        (Ok((major, minor)), Ok(path)) => {
            out += &format!("NVRTC {major}.{minor} ({})\n", path.display())
        }
        (Err(e), _) | (_, Err(e)) => out += &format!("NVRTC: {e}\n"),
    }
    match (sys::nvjitlink_version(), sys::nvjitlink_path()) {
        (Ok((major, minor)), Ok(path)) => {
            out += &format!("nvJitLink {major}.{minor} ({})\n", path.display())
        }
        (Err(e), _) | (_, Err(e)) => out += &format!("nvJitLink: {e}\n"),
    }
    match tools::cuda_include_dir() {
        Some(dir) => out += &format!("CUDA include dir: {}\n", dir.display()),
        None => out += "CUDA include dir: not found\n",
    }
    out
}

/// On the simulator nothing is linked (foreign code is compiled into the host binary), but a
/// foreign function the selected kernels call and no input defines would fail on a GPU, so it
/// fails here too, as [`Error::UndefinedSymbol`]. Conservative: a symbol counts as defined if
/// a PTX or cubin input defines it, or if its name followed by `(` appears in a CUDA source or
/// an in-memory header; inputs whose symbols cannot be read here (fatbins, objects, archives,
/// LTO-IR, or a source with a quoted `#include`) turn the check off rather than guess.
fn check_simulator_symbols(inputs: &[Input], headers: &[(String, String)]) -> Result<()> {
    let mut needed: Vec<String> = Vec::new();
    let mut defined: Vec<String> = Vec::new();
    let mut sources: Vec<&str> = headers.iter().map(|(_, text)| text.as_str()).collect();
    for input in inputs {
        match input.kind {
            InputKind::Ptx | InputKind::Cubin => {
                if input.kind == InputKind::Ptx {
                    let text = std::str::from_utf8(&input.bytes).unwrap_or("");
                    needed.extend(ptx::extern_functions(text));
                }
                match format::defined_symbols(input.kind, &input.bytes) {
                    Some(names) => defined.extend(names),
                    None => return Ok(()),
                }
            }
            InputKind::Cuda => {
                let text = std::str::from_utf8(&input.bytes).unwrap_or("");
                if text
                    .lines()
                    .any(|l| l.trim_start().starts_with("#include \""))
                {
                    return Ok(());
                }
                sources.push(text);
            }
            _ => return Ok(()),
        }
    }
    let mentioned = |name: &str| {
        sources.iter().any(|text| {
            text.match_indices(name).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + name.len()..].trim_start();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(')
            })
        })
    };
    let missing = needed.iter().find(|name| {
        !ptx::is_system_call(name) && !defined.iter().any(|d| d == *name) && !mentioned(name)
    });
    match missing {
        None => Ok(()),
        Some(symbol) => Err(Error::UndefinedSymbol {
            symbol: symbol.clone(),
            inputs: inputs.iter().map(|i| i.name.clone()).collect(),
            error_log: format!(
                "simulator: no input defines the foreign function `{symbol}` that the kernels call \
                 (a GPU link would fail with \"Unresolved extern function '{symbol}'\")"
            ),
            info_log: String::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing() {
        assert_eq!("sm_90".parse::<Arch>().unwrap().to_string(), "sm_90");
        assert_eq!("sm_90a".parse::<Arch>().unwrap().to_string(), "sm_90a");
        assert_eq!("compute_80".parse::<Arch>().unwrap().sm(), 80);
        assert_eq!("75".parse::<Arch>().unwrap().major(), 7);
        assert!("sm_9x".parse::<Arch>().is_err());
        assert!("gpu".parse::<Arch>().is_err());
        assert!("sm_5".parse::<Arch>().is_err());
        assert_eq!(Arch::from_compute_capability(9, 0).to_string(), "sm_90");
    }

    #[test]
    fn empty_link_is_an_error() {
        assert!(matches!(
            Linker::for_simulator().link(),
            Err(Error::EmptyLink)
        ));
    }
}
