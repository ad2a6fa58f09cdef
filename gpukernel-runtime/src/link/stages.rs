//! The stages of a device link, in order: [`Linker::plan`] (which linker, and the inputs'
//! architectures), [`Linker::look_up_cache`], [`Linker::compile`] (NVRTC for `.cu` inputs),
//! [`check_duplicates`], [`Linker::link_units`] (cuLink or nvJitLink, and the reading of its
//! logs), then [`CacheSlot::store`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, LinkErrorCode, LinkerKind, Result};
use crate::format::log as diagnose;
use crate::format::{self, InputKind, elf, fatbin};
use crate::link::input::Input;
use crate::link::linker::Target;
use crate::link::{
    Arch, CacheStatus, CompiledInput, Linker, cache, foreign, nvrtc, sys, toolinfo, tools,
};

/// What a device link does.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) arch: Arch,
    pub(super) linker: LinkerKind,
    /// Whether LTO-IR takes part: an input carries it, or `.cu` inputs are compiled to it
    /// (`lto(true)`). Then nvJitLink links, with `-lto`; else the link is an ordinary one,
    /// whatever `lto` says (LTO works on NVVM IR, before PTX: there is nothing to optimise).
    pub(super) uses_ltoir: bool,
}

/// One input as the linker receives it: `.cu` sources compiled to PTX or LTO-IR, the other
/// inputs as they are.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub(super) kind: InputKind,
    pub(super) bytes: Arc<[u8]>,
    /// The name the linker's logs use.
    pub(super) name: String,
}

/// The units to link, NVRTC's logs, and the time NVRTC took.
#[derive(Debug)]
pub(super) struct Compiled {
    pub(super) units: Vec<Unit>,
    /// What each `.cu` input became, for [`LinkedImage::compiled`](crate::link::LinkedImage::compiled).
    pub(super) outputs: Vec<CompiledInput>,
    pub(super) logs: Vec<(String, String)>,
    pub(super) elapsed: Duration,
}

/// The linker's cubin and info log, and the time it took.
#[derive(Debug)]
pub(super) struct Linked {
    pub(super) cubin: Vec<u8>,
    pub(super) info_log: String,
    pub(super) elapsed: Duration,
}

/// A link's cache key, or why it cannot have one.
enum Keyed {
    Key(cache::Key),
    /// The files the link reads cannot be known before compiling.
    Unknowable(String),
}

/// The outcome of the cache lookup.
#[derive(Debug)]
pub(super) enum CacheLookup {
    /// The image is in the cache.
    Hit {
        entry: cache::Entry,
        path: PathBuf,
        elapsed: Duration,
    },
    /// It is not (or there is no cache): link, then store here.
    Miss(CacheSlot),
}

/// Where a linked image goes in the cache, if anywhere.
#[derive(Debug)]
pub(super) struct CacheSlot {
    place: Option<(PathBuf, cache::Key)>,
    /// `GPUKERNEL_CACHE_MAX`, read at the lookup.
    max: Option<u64>,
    status: CacheStatus,
    /// The time the lookup took.
    pub(super) elapsed: Duration,
}

impl CacheSlot {
    /// Stores the image (a failed store never fails a link) and says how the cache took part.
    pub(super) fn store(self, linked: &Linked) -> CacheStatus {
        let mut status = self.status;
        if let Some((dir, key)) = &self.place {
            let entry = cache::Entry {
                cubin: linked.cubin.clone(),
                info_log: linked.info_log.clone(),
            };
            let stored = Some(cache::store(dir, key, &entry, self.max).map_err(|e| {
                format!(
                    "cannot store the linked image in the cache folder {}: {e}; hint: set \
                     `GPUKERNEL_CACHE_DIR` (or `CachePolicy::Dir`) to a folder this process can \
                     write, or turn the cache off with `CachePolicy::Disabled`",
                    dir.display()
                )
            }));
            match &mut status {
                CacheStatus::Miss { stored: s } | CacheStatus::Rebuilt { stored: s, .. } => {
                    *s = stored
                }
                _ => {}
            }
        }
        status
    }
}

impl Linker {
    /// Chooses the linker and rejects cubins and fatbins without code for `arch`.
    pub(super) fn plan(&self, arch: Arch, inputs: &[Input]) -> Result<Plan> {
        let uses_ltoir = self.uses_ltoir(inputs);
        let linker = match &self.target {
            // Raw options are nvJitLink's: the driver's linker takes typed values only.
            Target::Cuda { .. } if !uses_ltoir && self.raw_linker_options.is_empty() => {
                LinkerKind::CuLink
            }
            _ => LinkerKind::NvJitLink,
        };
        for input in inputs {
            check_arch(input, arch)?;
        }
        // cuLink hands PTX to the driver's JIT, which reads no ISA newer than its CUDA's.
        if linker == LinkerKind::CuLink {
            let driver = crate::driver::version();
            for input in inputs
                .iter()
                .filter(|i| i.kind == InputKind::Ptx && !self.links_machine_code(i, arch, inputs))
            {
                let text = String::from_utf8_lossy(format::trim_nul(&input.bytes));
                if let Some(isa) = format::version::isa_version(&text)
                    && let Some(needs_cuda) = format::version::too_new_for(isa, driver)
                {
                    return Err(Error::PtxTooNew {
                        what: format!("`{}`", input.name),
                        isa,
                        needs_cuda,
                        driver_cuda: driver,
                        error: None,
                    });
                }
            }
        }
        Ok(Plan {
            arch,
            linker,
            uses_ltoir,
        })
    }

    /// Whether `input` is linked as its relocatable machine code (`Linker::add_ptx_with_sass`)
    /// in a link compiled for `arch` (see `link/machine.rs`).
    pub(super) fn links_machine_code(&self, input: &Input, arch: Arch, inputs: &[Input]) -> bool {
        let lto = self.lto || self.uses_ltoir(inputs);
        matches!(
            crate::link::machine::choice(input, arch, lto, self.options),
            Some(Ok(()))
        )
    }

    /// Whether LTO-IR takes part in the link: an input carries it (`.ltoir`, or a fatbin,
    /// object or archive built with `-dlto`), or `.cu` inputs are compiled to it (`lto`).
    pub(super) fn uses_ltoir(&self, inputs: &[Input]) -> bool {
        inputs.iter().any(|i| {
            (self.lto && i.kind == InputKind::Cuda) || format::carries_ltoir(i.kind, &i.bytes)
        })
    }

    /// Refuses raw linker options the linker sets itself, and empty ones.
    pub(super) fn check_raw_linker_options(&self) -> Result<()> {
        for option in &self.raw_linker_options {
            let name = option.split('=').next().unwrap_or_default().trim();
            let reason = match name {
                "" => "an empty option: remove it",
                "-arch" => {
                    "the linker sets the architecture: use `Linker::for_arch`, or \
                     `assume_compute_capability` on a context's linker"
                }
                "-lto" => "the linker sets `-lto` when LTO-IR takes part: use `Linker::lto(true)`",
                _ if !name.starts_with('-') => {
                    "not an option (nvJitLink's options start with `-`, e.g. `-ftz=true`)"
                }
                _ => continue,
            };
            return Err(Error::InvalidLinkOption {
                option: option.clone(),
                reason: reason.into(),
            });
        }
        Ok(())
    }

    /// Looks the link up in the cache (a corrupt entry is a miss, to be rebuilt).
    pub(super) fn look_up_cache(
        &self,
        plan: &Plan,
        inputs: &[Input],
        used: &[foreign::UsedDecl],
    ) -> Result<CacheLookup> {
        let start = Instant::now();
        let Some(dir) = self.cache.dir() else {
            return Ok(CacheLookup::Miss(CacheSlot {
                place: None,
                max: None,
                status: CacheStatus::Disabled,
                elapsed: start.elapsed(),
            }));
        };
        // A bad bound is the user's to fix: reported, not ignored.
        let max = cache::max_from_env()?;
        let key = match self.cache_key(&dir, inputs, used, plan)? {
            Keyed::Key(key) => key,
            Keyed::Unknowable(reason) => {
                return Ok(CacheLookup::Miss(CacheSlot {
                    place: None,
                    max: None,
                    status: CacheStatus::Uncacheable { reason },
                    elapsed: start.elapsed(),
                }));
            }
        };
        let status = match cache::load(&dir, &key) {
            Ok(entry) => {
                let path = cache::entry_path(&dir, &key);
                cache::touch(&path);
                return Ok(CacheLookup::Hit {
                    entry,
                    path,
                    elapsed: start.elapsed(),
                });
            }
            Err(cache::Miss::Absent) => CacheStatus::Miss { stored: None },
            Err(cache::Miss::Invalid(reason)) => CacheStatus::Rebuilt {
                reason,
                stored: None,
            },
        };
        Ok(CacheLookup::Miss(CacheSlot {
            place: Some((dir, key)),
            max,
            status,
            elapsed: start.elapsed(),
        }))
    }

    /// Compiles the `.cu` inputs with NVRTC (to LTO-IR with `lto`); the others pass as they are.
    pub(super) fn compile(
        &self,
        arch: Arch,
        inputs: &[Input],
        used: &[foreign::UsedDecl],
    ) -> Result<Compiled> {
        let start = Instant::now();
        let mut logs = Vec::new();
        let mut units = Vec::with_capacity(inputs.len());
        let mut outputs = Vec::new();
        for input in inputs {
            if let Some(machine) = &input.machine
                && self.links_machine_code(input, arch, inputs)
            {
                units.push(Unit {
                    kind: InputKind::Fatbin,
                    bytes: machine.clone(),
                    name: format!("{} (relocatable machine code)", input.name),
                });
                continue;
            }
            if input.kind != InputKind::Cuda {
                units.push(Unit {
                    kind: input.kind,
                    bytes: input.bytes.clone(),
                    name: input.name.clone(),
                });
                continue;
            }
            let source = std::str::from_utf8(&input.bytes).unwrap_or_default();
            // The link's options first: the user's own NVRTC options can override them.
            let user: Vec<String> = self
                .options
                .nvrtc()
                .into_iter()
                .chain(self.nvrtc_options.iter().cloned())
                .collect();
            let options = nvrtc::options(
                input.path.as_deref(),
                arch,
                &self.include_dirs,
                &user,
                self.lto,
            );
            let (code, log) =
                compile_checked(source, &input.name, &self.headers, &options, self.lto, used)?;
            if !log.trim().is_empty() {
                logs.push((input.name.clone(), log));
            }
            let kind = if self.lto {
                InputKind::LtoIr
            } else {
                InputKind::Ptx
            };
            outputs.push(CompiledInput {
                input: input.name.clone(),
                kind,
                code: code.clone(),
                nvrtc_options: options,
            });
            units.push(Unit {
                kind,
                bytes: code.into(),
                name: format!("{}.{}", input.name, kind.extension()),
            });
        }
        Ok(Compiled {
            units,
            outputs,
            logs,
            elapsed: start.elapsed(),
        })
    }

    /// Hands the units to the chosen linker and turns its outcome into the cubin or the most
    /// specific error.
    pub(super) fn link_units(
        &self,
        plan: &Plan,
        units: &[Unit],
        inputs: &[Input],
        used: &[foreign::UsedDecl],
    ) -> Result<Linked> {
        let start = Instant::now();
        // Text goes to the linkers NUL-terminated, as their C APIs expect.
        let owned: Vec<Vec<u8>> = units
            .iter()
            .map(|unit| {
                let mut b = unit.bytes.to_vec();
                if unit.kind == InputKind::Ptx && b.last() != Some(&0) {
                    b.push(0);
                }
                b
            })
            .collect();
        let raw: Vec<sys::RawInput<'_>> = units
            .iter()
            .zip(&owned)
            .map(|(unit, bytes)| sys::RawInput {
                kind: unit.kind,
                bytes,
                name: &unit.name,
            })
            .collect();
        let out = match (&self.target, plan.linker) {
            (Target::Cuda { ctx, .. }, LinkerKind::CuLink) => {
                ctx.bind_to_thread()?;
                // SAFETY: the context was made current on this thread just above.
                unsafe { sys::culink_link(&raw, &self.options.culink())? }
            }
            _ => sys::nvjitlink_link(&self.linker_flags(plan), &raw)?,
        };
        let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
        let (cubin, info_log) = interpret(
            plan.linker,
            plan.arch,
            out,
            units,
            &names,
            &self.raw_linker_options,
            used,
        )?;
        Ok(Linked {
            cubin,
            info_log,
            elapsed: start.elapsed(),
        })
    }

    /// The options handed to the linker, as it spells them (the raw ones last).
    pub(super) fn linker_flags(&self, plan: &Plan) -> Vec<String> {
        match (&self.target, plan.linker) {
            (Target::Cuda { .. }, LinkerKind::CuLink) => self.options.culink_names(),
            _ => {
                let mut options = vec![format!("-arch={}", plan.arch)];
                if plan.uses_ltoir {
                    options.push("-lto".into());
                }
                options.extend(self.options.nvjitlink());
                options.extend(self.raw_linker_options.iter().cloned());
                options
            }
        }
    }

    fn cache_key(
        &self,
        dir: &std::path::Path,
        inputs: &[Input],
        used: &[foreign::UsedDecl],
        plan: &Plan,
    ) -> Result<Keyed> {
        let Plan {
            arch,
            linker,
            uses_ltoir,
        } = *plan;
        let mut key = cache::CacheKey::new();
        key.field("arch", arch.to_string().as_bytes());
        key.field("linker", linker.to_string().as_bytes());
        key.field("lto", &[u8::from(self.lto), u8::from(uses_ltoir)]);
        for option in self.linker_flags(plan) {
            key.field("linker-option", option.as_bytes());
        }
        for option in self.options.nvrtc() {
            key.field("link-nvrtc-option", option.as_bytes());
        }
        match (&self.target, linker) {
            (Target::Cuda { ctx, .. }, LinkerKind::CuLink) => {
                ctx.bind_to_thread()?;
                // SAFETY: a context exists, so the driver is loaded and initialised.
                let version = unsafe { sys::driver_version()? };
                key.field("driver", &version.to_le_bytes());
            }
            _ => {
                // The version, and the library file's identity (an exact build), without
                // loading nvJitLink once they are on record (`toolinfo`).
                let info = toolinfo::nvjitlink(Some(dir))?;
                key.field("nvjitlink", info.version.as_bytes());
                key.field("nvjitlink-library", info.identity.as_bytes());
            }
        }
        if inputs.iter().any(|i| i.kind == InputKind::Cuda) {
            let info = toolinfo::nvrtc(Some(dir))?;
            key.field("nvrtc", info.version.as_bytes());
            key.field("nvrtc-library", info.identity.as_bytes());
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
                key.field("cccl", &[u8::from(dir.join("cccl").is_dir())]);
                // The toolkit's headers are keyed by the installation's identity, not read.
                key.field("cuda-headers", nvrtc::toolkit_identity(&dir).as_bytes());
            }
        }
        for input in inputs {
            key.field("kind", input.kind.extension().as_bytes());
            key.field("name", input.name.as_bytes());
            key.field("bytes", &input.bytes);
            if let Some(machine) = &input.machine
                && self.links_machine_code(input, arch, inputs)
            {
                key.field("machine-code", machine);
            }
            if input.kind == InputKind::Cuda {
                let source = String::from_utf8_lossy(&input.bytes);
                // What NVRTC compiles: the source with the foreign declarations' checks.
                let compiled = foreign::with_checks(&source, &foreign::checkable(used));
                key.field("nvrtc-source", compiled.as_bytes());
                let scan = nvrtc::scan_headers(
                    input.path.as_deref(),
                    &input.name,
                    &source,
                    &self.include_dirs,
                    &self.nvrtc_options,
                    &self.headers,
                );
                if let Some(reason) = scan.unknowable {
                    return Ok(Keyed::Unknowable(reason));
                }
                for (path, bytes) in scan.files {
                    key.field("header", path.to_string_lossy().as_bytes());
                    key.field("header-bytes", &bytes);
                }
            }
        }
        Ok(Keyed::Key(key.finish()))
    }
}

/// [`Error::NvJitLinkTooOld`] when NVRTC, about to compile `name` to LTO-IR, is newer than the
/// nvJitLink that will link it (a failed version query is left to the compile and the link).
fn check_ltoir_consumer(name: &str) -> Result<()> {
    let (Ok((major, minor)), Ok(nvjitlink)) = (
        crate::link::sys::nvrtc_version(),
        crate::link::sys::nvjitlink_version(),
    ) else {
        return Ok(());
    };
    let producer_version = (major.max(0) as u32, minor.max(0) as u32);
    if ltoir_consumer_too_old(producer_version, nvjitlink) {
        return Err(Error::NvJitLinkTooOld {
            input: name.to_owned(),
            producer: "NVRTC",
            producer_version,
            nvjitlink,
        });
    }
    Ok(())
}

/// Whether an nvJitLink of version `consumer` cannot read LTO-IR made by a compiler of version
/// `producer` (both `(major, minor)`): it reads its own release's and older.
pub(crate) fn ltoir_consumer_too_old(producer: (u32, u32), consumer: (u32, u32)) -> bool {
    consumer < producer
}

/// Compiles a `.cu` source with the checks of the used foreign declarations
/// ([`foreign::compile_checked`]); then checks the definitions in the PTX it produced (LTO-IR
/// keeps no parameter lists: there the C-level checks alone judge).
fn compile_checked(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    ltoir: bool,
    used: &[foreign::UsedDecl],
) -> Result<(Vec<u8>, String)> {
    if ltoir {
        check_ltoir_consumer(name)?;
    }
    let ((code, log), unchecked) = foreign::compile_checked(source, name, used, |text| {
        nvrtc::compile(text, name, headers, options, ltoir)
    })?;
    if !unchecked.is_empty() {
        // Whether the source defines a symbol its check could not see: from its PTX (LTO-IR
        // keeps no symbol table this code reads: compile the source once more, to PTX).
        let ptx = if ltoir {
            let options: Vec<String> = options.iter().filter(|o| *o != "-dlto").cloned().collect();
            nvrtc::compile(source, name, headers, &options, false)?.0
        } else {
            code.clone()
        };
        let ptx = String::from_utf8_lossy(&ptx);
        foreign::refuse_unchecked_definitions(&ptx, name, source, used, &unchecked)?;
    }
    if !ltoir {
        foreign::check_ptx_definitions(&String::from_utf8_lossy(&code), name, used)?;
    }
    Ok((code, log))
}

/// Where the Rust declarations of `symbol` are (`file:line`, from their `declare_device!`
/// records), for an undefined-symbol error.
pub(super) fn declared_at(used: &[foreign::UsedDecl], symbol: &str) -> Box<[String]> {
    let mut at: Vec<String> = Vec::new();
    for decl in used.iter().map(|u| &u.decl).filter(|d| d.symbol == symbol) {
        if !at.contains(&decl.declared_at) {
            at.push(decl.declared_at.clone());
        }
    }
    at.into_boxed_slice()
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

/// Finds a symbol defined by two inputs, where both inputs' symbols are readable (PTX, and
/// so compiled `.cu`, cubins, fatbins, objects and archives; not LTO-IR). nvJitLink 13.0 only
/// prints `Multiple definition` to standard error and links anyway (and, after an LTO link in
/// the same process, crashes on it), so this is checked before linking, for every backend
/// alike.
pub(super) fn check_duplicates(units: &[Unit], inputs: &[Input]) -> Result<()> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (index, unit) in units.iter().enumerate() {
        let Some(symbols) = format::defined_symbols(unit.kind, &unit.bytes) else {
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

/// Turns a raw link's outcome into the cubin or the most specific error. `raw_options` are
/// the user's raw linker options (an option nvJitLink refuses is named), `used` the foreign
/// declarations (an undefined one is named with its Rust declaration).
fn interpret(
    linker: LinkerKind,
    arch: Arch,
    out: sys::RawLinkOutput,
    units: &[Unit],
    names: &[String],
    raw_options: &[String],
    used: &[foreign::UsedDecl],
) -> Result<(Vec<u8>, String)> {
    let sys::RawLinkOutput {
        result,
        error_log,
        info_log,
        failed_input,
    } = out;
    let both = format!("{error_log}\n{info_log}");
    let duplicate = |error_log: String, info_log: String| {
        let symbol = diagnose::duplicate_symbol(&both)?;
        let unit_names: Vec<String> = units.iter().map(|u| u.name.clone()).collect();
        let mut defined_in = diagnose::duplicate_inputs(&both, &symbol, &unit_names, names);
        if defined_in.len() < 2 || defined_in.iter().any(|d| !names.contains(d)) {
            // The log names no input, or one (nvJitLink calls the code of LTO `ltoPtx`):
            // those that define it, where readable, and those whose symbols cannot be read
            // before the link.
            defined_in = units
                .iter()
                .zip(names)
                .filter(|(u, _)| {
                    format::defined_symbols(u.kind, &u.bytes)
                        .is_none_or(|defs| defs.contains(&symbol))
                })
                .map(|(_, n)| n.clone())
                .collect();
        }
        Some(Error::DuplicateSymbol {
            symbol,
            defined_in,
            error_log,
            info_log,
        })
    };
    match result {
        Ok(cubin) => {
            // nvJitLink reports a symbol defined twice and links anyway: refused here.
            if let Some(e) = duplicate(error_log.clone(), info_log.clone()) {
                return Err(e);
            }
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
                    declared_at: declared_at(used, &symbol),
                    symbol,
                    inputs: names.to_vec(),
                    error_log,
                    info_log,
                });
            }
            // NVJITLINK_ERROR_UNRECOGNIZED_OPTION, NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS
            if let LinkErrorCode::NvJitLink { code: 1 | 11, .. } = code {
                let named = diagnose::unrecognized_option(&both);
                let option = named
                    .clone()
                    .or_else(|| (raw_options.len() == 1).then(|| raw_options[0].clone()))
                    .unwrap_or_else(|| raw_options.join(" "));
                let whose = if named.is_some_and(|n| raw_options.contains(&n)) {
                    "`Linker::linker_option`"
                } else {
                    "the link's options"
                };
                return Err(Error::InvalidLinkOption {
                    option,
                    reason: format!("nvJitLink refuses it ({whose}; {}): {}", code, both.trim()),
                });
            }
            if let Some(e) = duplicate(error_log.clone(), info_log.clone()) {
                return Err(e);
            }
            let arch_name = arch.to_string();
            let failed_name = failed_input
                .and_then(|i| units.get(i))
                .map(|u| u.name.clone());
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
            // NVJITLINK_ERROR_NVVM_COMPILE: libNVVM failed on the LTO part; say which inputs
            // make it up, and what commonly goes wrong there.
            let error_log = if let LinkErrorCode::NvJitLink { code: 5, .. } = code {
                let ltoir: Vec<&str> = units
                    .iter()
                    .zip(names)
                    .filter(|(u, _)| format::carries_ltoir(u.kind, &u.bytes))
                    .map(|(_, n)| n.as_str())
                    .collect();
                format!(
                    "(libNVVM failed on the LTO-IR of {}: LTO-IR must come from a compiler no \
                     newer than this nvJitLink, built for the link's architecture {arch})\n\
                     {error_log}",
                    if ltoir.is_empty() {
                        "no input".to_string()
                    } else {
                        ltoir.join(", ")
                    }
                )
            } else {
                error_log
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

#[cfg(test)]
mod ltoir_version_tests {
    use super::*;

    #[test]
    fn nvjitlink_must_be_as_new_as_the_ltoir_producer() {
        assert!(!ltoir_consumer_too_old((13, 0), (13, 0)));
        assert!(!ltoir_consumer_too_old((12, 8), (13, 0)));
        assert!(ltoir_consumer_too_old((13, 1), (13, 0)));
        assert!(ltoir_consumer_too_old((13, 0), (12, 9)));
        let e = Error::NvJitLinkTooOld {
            input: "functions.cu".into(),
            producer: "NVRTC",
            producer_version: (13, 1),
            nvjitlink: (13, 0),
        }
        .to_string();
        assert!(
            e.contains("`functions.cu` is compiled to LTO-IR by NVRTC 13.1"),
            "{e}"
        );
        assert!(e.contains("nvJitLink that would link it is 13.0"), "{e}");
        assert!(
            e.contains("nvJitLink 13.1 or newer") && e.contains("Linker::lto(false)"),
            "{e}"
        );
    }
}
