//! Modules (loaded PTX, cubin or fatbin images) and their kernels.

use core::marker::PhantomData;
use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use gpukernel_device::ParamList;
use gpukernel_device::ffi::{FFI_ERROR_SYMBOL, FfiErrorRecord};
use gpukernel_device::{IntoKernel, Kernel};

use crate::context::{ContextInner, intern};
use crate::driver::{self, CUfunction, CUmodule, FuncAttr};
use crate::error::{Error, Result};
use crate::memory::DevicePtr;
use crate::stream::Stream;

/// The kind of a module image, told apart by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// PTX assembly text.
    Ptx,
    /// A CUDA ELF object (`EM_CUDA`): a cubin.
    Cubin,
    /// A fat binary (magic `0xBA55ED50`).
    Fatbin,
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Ptx => "PTX",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbin => "fatbin",
        })
    }
}

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const EM_CUDA: u16 = 190;

impl ImageKind {
    /// Classifies an image and checks its shape (headers within bounds), so the driver is
    /// never handed a truncated or foreign file.
    pub fn detect(image: &[u8]) -> Result<ImageKind> {
        let bad = |reason: String| Error::InvalidModuleImage {
            reason,
            origin: None,
        };
        if image.is_empty() {
            return Err(bad("the image is empty".into()));
        }
        if image.starts_with(b"\x7fELF") {
            if image.len() < 64 {
                return Err(bad(format!("truncated ELF header ({} bytes)", image.len())));
            }
            if image[4] != 2 || image[5] != 1 {
                return Err(bad("not a 64-bit little-endian ELF object".into()));
            }
            let machine = u16::from_le_bytes([image[18], image[19]]);
            if machine != EM_CUDA {
                return Err(bad(format!(
                    "an ELF object for machine {machine}, not a CUDA cubin (EM_CUDA = {EM_CUDA})"
                )));
            }
            let shoff = u64::from_le_bytes(image[0x28..0x30].try_into().unwrap_or_default());
            let shentsize = u16::from_le_bytes([image[0x3A], image[0x3B]]) as u64;
            let shnum = u16::from_le_bytes([image[0x3C], image[0x3D]]) as u64;
            let end = shoff.checked_add(shentsize * shnum);
            if end.is_none_or(|e| e > image.len() as u64) {
                return Err(bad(format!(
                    "truncated cubin: its section headers end at byte {} but it has {} bytes",
                    end.map_or("overflow".to_string(), |e| e.to_string()),
                    image.len()
                )));
            }
            return Ok(ImageKind::Cubin);
        }
        if image.len() >= 4
            && u32::from_le_bytes([image[0], image[1], image[2], image[3]]) == FATBIN_MAGIC
        {
            if image.len() < 16 {
                return Err(bad("truncated fatbin header".into()));
            }
            let header = u16::from_le_bytes([image[6], image[7]]) as u64;
            let size = u64::from_le_bytes(image[8..16].try_into().unwrap_or_default());
            if header
                .checked_add(size)
                .is_none_or(|e| e > image.len() as u64)
            {
                return Err(bad(format!(
                    "truncated fatbin: header says {} bytes, the image has {}",
                    header.saturating_add(size),
                    image.len()
                )));
            }
            return Ok(ImageKind::Fatbin);
        }
        if image.starts_with(b"!<arch>\n") {
            return Err(bad(
                "a static library (ar archive) is not a module: link it with the Linker first"
                    .into(),
            ));
        }
        let text = trim_nul(image);
        match std::str::from_utf8(text) {
            Ok(t) if t.contains(".version") || t.contains(".target") || t.contains(".entry") => {
                if text.contains(&0) {
                    return Err(bad("PTX text contains a NUL byte before its end".into()));
                }
                Ok(ImageKind::Ptx)
            }
            _ => Err(bad(format!(
                "not PTX, a cubin or a fatbin (first bytes: {:02x?})",
                &image[..image.len().min(8)]
            ))),
        }
    }
}

fn trim_nul(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && b[end - 1] == 0 {
        end -= 1;
    }
    &b[..end]
}

/// A PTX text with its comments replaced by a space (line comments keep their newline).
fn strip_comments(ptx: &str) -> String {
    let mut clean = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            clean.push(' ');
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            clean.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    clean
}

fn is_ptx_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'
}

/// The identifier at the start of `s` (after leading whitespace), if any.
fn leading_ident(s: &str) -> Option<&str> {
    let t = s.trim_start();
    let end = t.find(|c: char| !is_ptx_ident(c)).unwrap_or(t.len());
    (end > 0).then(|| &t[..end])
}

/// The positions just after each whole-word occurrence of `directive` (e.g. `.entry`) in a
/// comment-free PTX text.
fn after_directive<'a>(clean: &'a str, directive: &'a str) -> impl Iterator<Item = &'a str> {
    clean.match_indices(directive).filter_map(move |(i, _)| {
        let before_ok = i == 0 || clean[..i].ends_with(|c: char| c.is_whitespace());
        let rest = &clean[i + directive.len()..];
        (before_ok && rest.starts_with(|c: char| c.is_whitespace())).then_some(rest)
    })
}

/// The `.entry` names of a PTX text, in order of appearance (comments skipped).
pub(crate) fn ptx_entry_names(ptx: &str) -> Vec<String> {
    let clean = strip_comments(ptx);
    after_directive(&clean, ".entry")
        .filter_map(leading_ident)
        .map(str::to_owned)
        .collect()
}

/// The functions a PTX text declares `.extern .func` (defined elsewhere), in order of
/// appearance: `.extern .func (.param .b32 func_retval0) name(...)`, `.extern .func name(...)`.
pub(crate) fn ptx_extern_functions(ptx: &str) -> Vec<String> {
    let clean = strip_comments(ptx);
    let mut names: Vec<String> = Vec::new();
    for rest in after_directive(&clean, ".extern") {
        let Some(rest) = rest.trim_start().strip_prefix(".func") else {
            continue;
        };
        let mut rest = rest.trim_start();
        // The return parameter list, if any.
        if rest.starts_with('(') {
            let Some(close) = rest.find(')') else {
                continue;
            };
            rest = &rest[close + 1..];
        }
        if let Some(name) = leading_ident(rest)
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Functions that the PTX JIT provides itself (system calls), so an `.extern .func` of them
/// needs no definition.
const PTX_SYSTEM_CALLS: [&str; 4] = ["vprintf", "malloc", "free", "__assertfail"];

/// Whether the PTX JIT provides `name` itself (see [`PTX_SYSTEM_CALLS`]).
pub(crate) fn is_ptx_system_call(name: &str) -> bool {
    PTX_SYSTEM_CALLS.contains(&name)
}

/// The error for a module image the driver rejected: a kernel fault if that is what the call
/// reported, [`Error::UnresolvedForeignSymbols`] if the JIT log names unresolved foreign
/// functions of a PTX, else [`Error::ModuleLoad`] with the logs.
#[cold]
fn load_error(
    kind: ImageKind,
    origin: Option<String>,
    failure: driver::ModuleLoadFailure,
    ptx_text: &str,
) -> Error {
    let driver::ModuleLoadFailure {
        error,
        error_log,
        info_log,
    } = failure;
    if error.is_kernel_fault() {
        return driver::error_of("cuModuleLoadDataEx", error, None);
    }
    if kind == ImageKind::Ptx {
        let symbols = crate::link::diagnose::unresolved_functions(&error_log);
        if !symbols.is_empty() {
            let also_declared = ptx_extern_functions(ptx_text)
                .into_iter()
                .filter(|n| !symbols.contains(n) && !PTX_SYSTEM_CALLS.contains(&n.as_str()))
                .collect();
            return Error::UnresolvedForeignSymbols {
                symbols,
                also_declared,
                error,
                error_log,
            };
        }
    }
    Error::ModuleLoad {
        kind,
        origin,
        error,
        error_log,
        info_log,
    }
}

pub(crate) struct FfiRecordRef {
    addr: u64,
    /// Set by the first launch of a kernel of this module; until then there is nothing to read.
    launched: AtomicBool,
}

pub(crate) struct ModuleInner {
    pub(crate) ctx: Arc<ContextInner>,
    raw: Option<CUmodule>,
    names: Vec<String>,
    pub(crate) ffi: Option<FfiRecordRef>,
}

// SAFETY: a CUmodule handle may be used from any thread (with its context current); the other
// fields are immutable or atomic.
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if let Some(m) = self.raw
            && self.ctx.bind().is_ok()
        {
            // SAFETY: every `Function` of the module holds an Arc to this, so none is left;
            // kernels already enqueued keep their code alive in the driver.
            let _ = unsafe { driver::module_unload(m) };
        }
    }
}

/// A loaded module: kernels looked up by name, typed ([`Module::kernel`]) or not
/// ([`Module::function`]). On the simulator it is the set of kernel names of its image.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("device", &self.inner.ctx.device)
            .field("kernels", &self.inner.names)
            .finish()
    }
}

impl Module {
    pub(crate) fn load(
        ctx: Arc<ContextInner>,
        image: &[u8],
        origin: Option<String>,
    ) -> Result<Module> {
        let with_origin = |e: Error| match e {
            Error::InvalidModuleImage {
                reason,
                origin: None,
            } => Error::InvalidModuleImage {
                reason,
                origin: origin.clone(),
            },
            e => e,
        };
        let kind = ImageKind::detect(image).map_err(with_origin)?;
        let ptx_text = || std::str::from_utf8(trim_nul(image)).unwrap_or("");
        let ptx_names = || ptx_entry_names(ptx_text());
        if ctx.is_sim() {
            if kind != ImageKind::Ptx {
                return Err(Error::Unsupported {
                    operation: "loading a cubin or fatbin",
                    backend: "simulator",
                    hint: Some("load the kernels' PTX: the simulator runs their Rust bodies"),
                });
            }
            // `.extern .func` declarations are no error here: the simulator runs the kernels'
            // Rust bodies, whose foreign calls were resolved when the host crate was built.
            return Ok(Module::from_kernel_names(ctx, ptx_names()));
        }
        ctx.bind()?;
        let owned;
        let bytes: &[u8] = if kind == ImageKind::Ptx && image.last() != Some(&0) {
            let mut v = Vec::with_capacity(image.len() + 1);
            v.extend_from_slice(image);
            v.push(0);
            owned = v;
            &owned
        } else {
            image
        };
        // SAFETY: the context is current; the image's kind and shape were checked, PTX is
        // NUL-terminated.
        let raw = unsafe { driver::module_load_data_ex(bytes) }
            .map_err(|f| load_error(kind, origin, f, ptx_text()))?;
        // SAFETY: `raw` was just loaded.
        let names = match unsafe { driver::module_function_names(raw) } {
            Ok(n) => n,
            Err(_) if kind == ImageKind::Ptx => ptx_names(),
            Err(_) => Vec::new(),
        };
        let symbol = CString::new(FFI_ERROR_SYMBOL).unwrap_or_default();
        // SAFETY: `raw` is live.
        let ffi = match unsafe { driver::module_get_global(raw, &symbol) } {
            Ok(Some((addr, bytes))) if bytes >= size_of::<FfiErrorRecord>() => Some(FfiRecordRef {
                addr,
                launched: AtomicBool::new(false),
            }),
            _ => None,
        };
        let has_ffi = ffi.is_some();
        let inner = Arc::new(ModuleInner {
            ctx: ctx.clone(),
            raw: Some(raw),
            names,
            ffi,
        });
        if has_ffi {
            let mut list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&inner));
        }
        Ok(Module { inner })
    }

    /// A simulator module: the set of kernel names (for `load_module` and the linker's
    /// simulator path), sorted and without duplicates like a CUDA module's.
    pub(crate) fn from_kernel_names(ctx: Arc<ContextInner>, mut names: Vec<String>) -> Module {
        names.sort();
        names.dedup();
        Module {
            inner: Arc::new(ModuleInner {
                ctx,
                raw: None,
                names,
                ffi: None,
            }),
        }
    }

    /// The names of the module's kernels, sorted.
    pub fn kernel_names(&self) -> &[String] {
        &self.inner.names
    }

    /// The raw `CUmodule` (`None` on the simulator).
    pub fn raw(&self) -> Option<CUmodule> {
        self.inner.raw
    }

    /// The kernel `K` of this module, for typed launches: `module.kernel(saxpy)?` with the
    /// name of a `#[kernel] fn saxpy` (on the host a function returning the marker, so that
    /// `let saxpy = module.kernel(saxpy)?;` works; see [`IntoKernel`]). The `CUfunction` is
    /// looked up once, here.
    pub fn kernel<K: Kernel, M>(&self, kernel: impl IntoKernel<K, M>) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
        let _marker: K = kernel.into_kernel();
        let function = self.function(K::NAME)?;
        if !function.raw.is_null() {
            // A typed launch writes the parameters the Rust signature lowers to: the entry in
            // the image must declare exactly those, or the launch would be undefined.
            let expected: Vec<usize> = K::Params::PARTS
                .iter()
                .flat_map(|p| p.iter().copied())
                .collect();
            // SAFETY: `function.raw` is live while the module is.
            if let Some(found) = unsafe { driver::function_param_sizes(function.raw) }
                && found != expected
            {
                return Err(Error::KernelSignatureMismatch {
                    kernel: K::NAME.to_owned(),
                    expected,
                    found,
                });
            }
        }
        Ok(TypedKernel {
            function,
            _k: PhantomData,
        })
    }

    /// The kernel named `name`, for untyped launches ([`Stream::launch_untyped`]). An unknown
    /// name is [`Error::KernelNotFound`], listing the kernels the module has.
    pub fn function(&self, name: &str) -> Result<Function> {
        let not_found = || Error::KernelNotFound {
            name: name.to_owned(),
            available: self.inner.names.clone(),
        };
        let Some(m) = self.inner.raw else {
            if !self.inner.names.iter().any(|n| n == name) {
                return Err(not_found());
            }
            return Ok(Function {
                module: self.inner.clone(),
                raw: core::ptr::null_mut(),
                name: intern(name),
                max_threads_per_block: self.inner.ctx.limits.max_threads_per_block,
                static_shared_bytes: 0,
                max_dynamic_shared_bytes: AtomicU32::new(48 * 1024),
            });
        };
        let cname = CString::new(name).map_err(|_| not_found())?;
        // A driver failure names the kernel being looked up.
        let with_name = |e: Error| match e {
            Error::Driver {
                call,
                error,
                context: None,
            } => Error::Driver {
                call,
                error,
                context: Some(format!("looking up kernel `{name}`")),
            },
            e => e,
        };
        self.inner.ctx.bind()?;
        // SAFETY: the module is live.
        let f = unsafe { driver::module_get_function(m, &cname) }
            .map_err(with_name)?
            .ok_or_else(not_found)?;
        let attr = |a| {
            // SAFETY: `f` was just returned for a live module.
            unsafe { driver::function_attribute(f, a) }
                .map(|v| v.max(0) as u32)
                .map_err(with_name)
        };
        Ok(Function {
            module: self.inner.clone(),
            raw: f,
            name: intern(name),
            max_threads_per_block: attr(FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: attr(FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            max_dynamic_shared_bytes: AtomicU32::new(attr(
                FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            )?),
        })
    }

    /// The address and size of a module global (`cuModuleGetGlobal`). Not available on the
    /// simulator.
    pub fn global(&self, name: &str) -> Result<(DevicePtr<u8>, usize)> {
        let Some(m) = self.inner.raw else {
            return Err(Error::Unsupported {
                operation: "Module::global",
                backend: "simulator",
                hint: None,
            });
        };
        let cname = CString::new(name).map_err(|_| Error::GlobalNotFound {
            name: name.to_owned(),
        })?;
        self.inner.ctx.bind()?;
        // SAFETY: the module is live.
        match unsafe { driver::module_get_global(m, &cname) }? {
            Some((addr, bytes)) => Ok((DevicePtr::from_addr(addr), bytes)),
            None => Err(Error::GlobalNotFound {
                name: name.to_owned(),
            }),
        }
    }
}

/// A kernel of a loaded module, for untyped launches; it keeps its module loaded.
pub struct Function {
    pub(crate) module: Arc<ModuleInner>,
    pub(crate) raw: CUfunction,
    pub(crate) name: &'static &'static str,
    pub(crate) max_threads_per_block: u32,
    pub(crate) static_shared_bytes: u32,
    pub(crate) max_dynamic_shared_bytes: AtomicU32,
}

// SAFETY: a CUfunction handle may be used from any thread; the rest is immutable or atomic.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name())
            .field("max_threads_per_block", &self.max_threads_per_block)
            .finish()
    }
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The raw `CUfunction` (null on the simulator).
    pub fn raw(&self) -> CUfunction {
        self.raw
    }

    /// The most threads a block of this kernel may have (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub fn max_threads_per_block(&self) -> u32 {
        self.max_threads_per_block
    }

    /// Bytes of static shared memory the kernel declares.
    pub fn static_shared_bytes(&self) -> u32 {
        self.static_shared_bytes
    }

    /// The block size that maximises occupancy with `dynamic_shared_bytes` of dynamic shared
    /// memory per block (`cuOccupancyMaxPotentialBlockSize`); 256 on the simulator.
    pub fn optimal_block_size(&self, dynamic_shared_bytes: u32) -> Result<u32> {
        if self.raw.is_null() {
            return Ok(256.min(self.max_threads_per_block));
        }
        self.module.ctx.bind()?;
        // SAFETY: the function is live (its module is held) and its context current.
        let (_, block) = unsafe {
            driver::occupancy_max_potential_block_size(self.raw, dynamic_shared_bytes as usize, 0)
        }?;
        Ok(block.max(1) as u32)
    }

    /// Allows launches with up to `bytes` of dynamic shared memory
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; needed above 48 KiB).
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<()> {
        let limit = self
            .module
            .ctx
            .limits
            .max_shared_optin
            .saturating_sub(self.static_shared_bytes);
        if bytes > limit {
            return Err(Error::InvalidLaunchConfig {
                kernel: self.name().to_owned(),
                dimension: "max dynamic shared memory bytes",
                value: bytes as u64,
                min: 0,
                max: limit as u64,
            });
        }
        if !self.raw.is_null() {
            self.module.ctx.bind()?;
            // SAFETY: the function is live and its context current.
            unsafe {
                driver::function_set_attribute(
                    self.raw,
                    FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
            }?;
        }
        self.max_dynamic_shared_bytes
            .store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Marks the module's foreign-call record as worth reading at the next synchronization.
    #[inline(always)]
    pub(crate) fn note_launch(&self) {
        if let Some(r) = &self.module.ffi {
            r.launched.store(true, Ordering::Relaxed);
        }
    }
}

/// A kernel `K` looked up in a module: what [`Stream::launch`] takes. Holds the `CUfunction`,
/// so launching does no lookup. Dereferences to its [`Function`].
pub struct TypedKernel<K: Kernel> {
    pub(crate) function: Function,
    _k: PhantomData<K>,
}

impl<K: Kernel> fmt::Debug for TypedKernel<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TypedKernel").field(&K::NAME).finish()
    }
}

impl<K: Kernel> core::ops::Deref for TypedKernel<K> {
    type Target = Function;
    fn deref(&self) -> &Function {
        &self.function
    }
}

/// Reads and clears the foreign-call failure records of the stream's context (GPU) or the
/// simulator's, returning [`Error::ForeignCallFailed`] for the first failure found.
pub(crate) fn check_foreign_failures(
    stream: &Stream,
    last_launch: Option<&'static str>,
) -> Result<()> {
    let ctx = stream.ctx();
    if ctx.is_sim() {
        return match crate::sim::take_foreign_failure() {
            Some((function, status, thread)) => Err(Error::ForeignCallFailed {
                function,
                status,
                thread,
                kernel: last_launch.map(str::to_owned),
            }),
            None => Ok(()),
        };
    }
    let modules: Vec<Arc<ModuleInner>> = {
        let list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().filter_map(Weak::upgrade).collect()
    };
    for m in modules {
        let Some(rec) = &m.ffi else { continue };
        if !rec.launched.load(Ordering::Relaxed) {
            continue;
        }
        if let Some((function, status, thread)) = read_and_clear(stream, rec.addr)? {
            return Err(Error::ForeignCallFailed {
                function,
                status,
                thread,
                kernel: last_launch.map(str::to_owned),
            });
        }
    }
    Ok(())
}

/// Reads one record; if claimed, reads the name and zeroes the record.
fn read_and_clear(stream: &Stream, addr: u64) -> Result<Option<(String, i32, u64)>> {
    const MAX_NAME: u64 = 4096;
    stream.ctx().bind()?;
    let mut rec = FfiErrorRecord {
        claimed: 0,
        status: 0,
        name_ptr: 0,
        name_len: 0,
        thread: 0,
    };
    // SAFETY: `addr` is the module global of `size_of::<FfiErrorRecord>()` bytes (checked at
    // load; the module is held by the caller); `rec` is a local written before we read it,
    // and `FfiErrorRecord` is plain integers, valid for any bits.
    unsafe {
        driver::memcpy_dtoh_async(
            (&raw mut rec).cast(),
            addr,
            size_of::<FfiErrorRecord>(),
            stream.raw(),
        )
    }?;
    stream.wait_idle()?;
    if rec.claimed == 0 {
        return Ok(None);
    }
    let len = rec.name_len.min(MAX_NAME) as usize;
    let mut name = vec![0u8; len];
    if len > 0 && rec.name_ptr != 0 {
        // SAFETY: the device wrote the address and length of a string in the module's global
        // memory (`report_foreign_failure`); `name` has `len` bytes.
        unsafe {
            driver::memcpy_dtoh_async(name.as_mut_ptr().cast(), rec.name_ptr, len, stream.raw())
        }?;
    }
    // SAFETY: zeroing the record (a live module global) re-arms it.
    unsafe { driver::memset_d8_async(addr, 0, size_of::<FfiErrorRecord>(), stream.raw()) }?;
    stream.wait_idle()?;
    Ok(Some((
        String::from_utf8_lossy(&name).into_owned(),
        rec.status,
        rec.thread,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by hand
//
.version 7.8
.target sm_90
.address_size 64

// .entry commented_out(
/* .entry also_commented( */
.visible .entry saxpy(
    .param .f32 saxpy_param_0
)
{
    ret;
}
.func helper()
{
    ret;
}
.entry empty_kernel()
{
    ret;
}
"#;

    /// What a kernels crate's PTX looks like when it calls foreign functions (LLVM's form).
    const PTX_WITH_EXTERNS: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) mul_f32_f32
(
	.param .b64 mul_f32_f32_param_0,
	.param .b32 mul_f32_f32_param_1
)
;
// .extern .func commented_out(
.extern .func add_one(.param .b64 add_one_param_0);
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.extern .global .align 4 .u32 some_global;
.visible .entry uses_foreign(.param .u64 p)
{
	ret;
}
.visible .entry a_kernel()
{
	ret;
}
"#;

    fn invalid_ptx() -> crate::error::CudaError {
        crate::error::CudaError {
            code: 218,
            name: "CUDA_ERROR_INVALID_PTX",
            description: "a PTX JIT compilation failed",
        }
    }

    #[test]
    fn extern_functions_are_found() {
        assert_eq!(
            ptx_extern_functions(PTX_WITH_EXTERNS),
            ["mul_f32_f32", "add_one", "vprintf"]
        );
        assert!(ptx_extern_functions(PTX).is_empty());
    }

    #[test]
    fn unresolved_extern_is_a_dedicated_error_with_the_log_and_a_hint() {
        let log = "ptxas fatal   : Unresolved extern function 'mul_f32_f32'";
        let e = load_error(
            ImageKind::Ptx,
            Some("kernels.ptx".into()),
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: log.into(),
                info_log: String::new(),
            },
            PTX_WITH_EXTERNS,
        );
        match &e {
            Error::UnresolvedForeignSymbols {
                symbols,
                also_declared,
                error,
                error_log,
            } => {
                assert_eq!(symbols, &["mul_f32_f32"]);
                // vprintf is a PTX system call: never unresolved.
                assert_eq!(also_declared, &["add_one"]);
                assert_eq!(error.code(), 218);
                assert_eq!(error_log, log);
            }
            other => panic!("unexpected {other}"),
        }
        assert_eq!(e.cuda_error().map(|c| c.code()), Some(218));
        assert_eq!(
            e.to_string(),
            "cannot load the PTX image: unresolved foreign device function \
             `mul_f32_f32` (the PTX also declares `add_one`); hint: this PTX calls foreign \
             device functions; link it with `gpukernel_runtime::link::Linker` together with \
             the .cu/.ptx/cubin/fatbin/.a that defines them (use \
             `Linker::add_ptx_kernels(ptx, name, &[kernels])` to keep only the kernels you \
             launch)\ncuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation \
             failed\nJIT error log:\nptxas fatal   : Unresolved extern function 'mul_f32_f32'"
        );

        // Several names in the log: all of them, plural.
        let e = load_error(
            ImageKind::Ptx,
            None,
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: "ptxas fatal   : Unresolved extern function 'add_one'\n\
                            ptxas fatal   : Unresolved extern function 'mul_f32_f32'"
                    .into(),
                info_log: String::new(),
            },
            PTX_WITH_EXTERNS,
        );
        let s = e.to_string();
        assert!(
            s.starts_with(
                "cannot load the PTX image: unresolved foreign device functions \
                 `add_one`, `mul_f32_f32`; hint: this PTX calls foreign device functions"
            ),
            "{s}"
        );
    }

    #[test]
    fn other_load_failures_keep_the_code_and_both_logs() {
        let e = load_error(
            ImageKind::Ptx,
            None,
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: "ptxas application ptx input, line 4; error   : syntax error".into(),
                info_log: "ptxas info    : 0 bytes gmem".into(),
            },
            PTX,
        );
        assert!(
            matches!(
                e,
                Error::ModuleLoad {
                    kind: ImageKind::Ptx,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "cuModuleLoadDataEx could not load the PTX image: CUDA_ERROR_INVALID_PTX (218): a \
             PTX JIT compilation failed\nJIT error log:\nptxas application ptx input, line 4; \
             error   : syntax error\nJIT info log:\nptxas info    : 0 bytes gmem"
        );
        // A cubin whose log happens to name an unresolved function is not treated as PTX.
        let e = load_error(
            ImageKind::Cubin,
            Some("k.cubin".into()),
            driver::ModuleLoadFailure {
                error: crate::error::CudaError {
                    code: 209,
                    name: "CUDA_ERROR_NO_BINARY_FOR_GPU",
                    description: "no kernel image is available for execution on the device",
                },
                error_log: String::new(),
                info_log: String::new(),
            },
            "",
        );
        assert_eq!(
            e.to_string(),
            "cuModuleLoadDataEx could not load the cubin image from `k.cubin`: \
             CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel image is available for execution on \
             the device\nJIT error log:\n(empty)"
        );
    }

    #[test]
    fn a_sticky_fault_seen_by_the_load_is_a_kernel_fault() {
        let e = load_error(
            ImageKind::Ptx,
            None,
            driver::ModuleLoadFailure {
                error: crate::error::CudaError {
                    code: 700,
                    name: "CUDA_ERROR_ILLEGAL_ADDRESS",
                    description: "an illegal memory access was encountered",
                },
                error_log: String::new(),
                info_log: String::new(),
            },
            PTX,
        );
        assert!(
            matches!(
                e,
                Error::KernelFault {
                    call: "cuModuleLoadDataEx",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn simulator_loads_ptx_with_extern_functions() {
        let ctx = crate::Device::simulator().primary_context().unwrap();
        let m = ctx.load_module(PTX_WITH_EXTERNS.as_bytes()).unwrap();
        // Sorted, as on CUDA.
        assert_eq!(m.kernel_names(), ["a_kernel", "uses_foreign"]);
        assert!(m.function("uses_foreign").is_ok());
        // Other images are still checked the same way as on CUDA.
        let e = ctx.load_module(b"\x7fELF\x02\x01").unwrap_err();
        assert!(matches!(e, Error::InvalidModuleImage { .. }), "{e}");
    }

    #[test]
    fn ptx_entries_are_found_and_comments_skipped() {
        assert_eq!(ptx_entry_names(PTX), vec!["saxpy", "empty_kernel"]);
    }

    #[test]
    fn image_kinds() {
        assert_eq!(ImageKind::detect(PTX.as_bytes()).unwrap(), ImageKind::Ptx);
        let mut with_nul = PTX.as_bytes().to_vec();
        with_nul.push(0);
        assert_eq!(ImageKind::detect(&with_nul).unwrap(), ImageKind::Ptx);

        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        assert_eq!(ImageKind::detect(&elf).unwrap(), ImageKind::Cubin);
        // Section headers past the end: truncated.
        elf[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        let e = ImageKind::detect(&elf).unwrap_err().to_string();
        assert!(e.contains("truncated cubin"), "{e}");
        // x86-64 ELF.
        elf[18..20].copy_from_slice(&62u16.to_le_bytes());
        let e = ImageKind::detect(&elf).unwrap_err().to_string();
        assert!(e.contains("machine 62"), "{e}");

        let mut fat = vec![0u8; 16];
        fat[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fat[6..8].copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(ImageKind::detect(&fat).unwrap(), ImageKind::Fatbin);
        fat[8..16].copy_from_slice(&100u64.to_le_bytes());
        assert!(
            ImageKind::detect(&fat)
                .unwrap_err()
                .to_string()
                .contains("truncated fatbin")
        );

        let e = ImageKind::detect(b"!<arch>\nfoo").unwrap_err().to_string();
        assert!(e.contains("static library"), "{e}");
        let e = ImageKind::detect(b"\x01\x02\x03garbage")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not PTX, a cubin or a fatbin"), "{e}");
        assert!(ImageKind::detect(b"").is_err());
        let e = ImageKind::detect(b".version 7.8\0.entry x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("NUL"), "{e}");
    }
}
