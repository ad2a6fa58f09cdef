//! Modules (loaded PTX, cubin or fatbin images) and their kernels.

use core::marker::PhantomData;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use gpukernel_device::ParamList;
use gpukernel_device::{IntoKernel, Kernel};

use crate::backend::{FunctionInfo, Image, ModuleHandle};
use crate::context::{ContextInner, intern};
use crate::driver;
use crate::error::{Error, Result};
use crate::foreign::FfiTracking;
use crate::memory::DevicePtr;

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

/// PTX without its trailing NULs (the backend adds the one the driver needs); other kinds as
/// they are.
fn trim_nul_ptx(kind: ImageKind, image: &[u8]) -> &[u8] {
    if kind == ImageKind::Ptx {
        trim_nul(image)
    } else {
        image
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
pub(crate) fn load_error(image: Image<'_>, failure: driver::ModuleLoadFailure) -> Error {
    let driver::ModuleLoadFailure {
        error,
        error_log,
        info_log,
    } = failure;
    if error.is_kernel_fault() {
        return driver::error_of("cuModuleLoadDataEx", error, None);
    }
    if image.kind == ImageKind::Ptx {
        let symbols = crate::link::diagnose::unresolved_functions(&error_log);
        if !symbols.is_empty() {
            let text = std::str::from_utf8(trim_nul(image.bytes)).unwrap_or("");
            let also_declared = ptx_extern_functions(text)
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
        kind: image.kind,
        origin: image.origin.map(str::to_owned),
        error,
        error_log,
        info_log,
    }
}

pub(crate) struct ModuleInner {
    pub(crate) ctx: Arc<ContextInner>,
    handle: ModuleHandle,
    names: Vec<String>,
    /// The module's foreign-call failure record, when its code has one.
    pub(crate) ffi: Option<FfiTracking>,
    /// Whether a kernel of the module was ever launched (its unload then waits).
    pub(crate) launched: AtomicBool,
}

// SAFETY: a module handle may be used from any thread (the backend binds its context); the
// other fields are immutable or atomic.
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    /// Unloads the module only after the work that may use it is done: if any of its kernels
    /// was launched, the context is synchronized first (a launch does not record its stream
    /// for this, to keep launches free), and the module's foreign-call record is read and a
    /// failure kept for the context's next check. If the wait fails (a faulted context), the
    /// module stays loaded rather than unloaded under running work.
    fn drop(&mut self) {
        if self.launched.load(Ordering::Acquire) {
            if self.ctx.backend.synchronize().is_err() {
                return;
            }
            if let Some(t) = &self.ffi {
                let via = self.ctx.backend.default_stream();
                if let Ok(Some(f)) = self.ctx.backend.take_foreign_failure(&t.record, via) {
                    crate::foreign::orphan(&self.ctx, f, t);
                }
            }
        }
        // SAFETY: every `Function` of the module holds an Arc to this, so none is left, and
        // the work that used it is complete (above).
        unsafe { self.ctx.backend.module_unload(self.handle) };
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
        let loaded = ctx.backend.module_load(Image {
            bytes: trim_nul_ptx(kind, image),
            kind,
            origin: origin.as_deref(),
        })?;
        Ok(Module::register(ctx, loaded))
    }

    /// Wraps a module the backend loaded, registering its foreign-call record with the
    /// context.
    fn register(ctx: Arc<ContextInner>, loaded: crate::backend::LoadedModule) -> Module {
        let ffi = loaded.ffi_record.map(FfiTracking::new);
        let has_ffi = ffi.is_some();
        let inner = Arc::new(ModuleInner {
            ctx: ctx.clone(),
            handle: loaded.handle,
            names: loaded.names,
            ffi,
            launched: AtomicBool::new(false),
        });
        if has_ffi {
            let mut list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&inner));
        }
        Module { inner }
    }

    /// A module of the given kernels, without an image: the simulator's form of a linked
    /// image (sorted and without duplicates like a CUDA module's names).
    pub(crate) fn from_kernel_names(ctx: Arc<ContextInner>, names: Vec<String>) -> Result<Module> {
        let loaded = ctx.backend.module_from_names(names)?;
        Ok(Module::register(ctx, loaded))
    }

    /// The names of the module's kernels, sorted.
    pub fn kernel_names(&self) -> &[String] {
        &self.inner.names
    }

    /// The raw `CUmodule` (`None` on the simulator).
    pub fn raw(&self) -> Option<cudarc::driver::sys::CUmodule> {
        let h = self.inner.handle;
        (h != ModuleHandle::NULL).then(|| h.0.cast())
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
        // A typed launch writes the parameters the Rust signature lowers to: the entry in the
        // image must declare exactly those, or the launch would be undefined.
        let found = self
            .inner
            .ctx
            .backend
            .function_param_sizes(function.info.handle)?;
        if let Some(found) = found {
            let expected: Vec<usize> = K::Params::PARTS
                .iter()
                .flat_map(|p| p.iter().copied())
                .collect();
            if found != expected {
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
        // A backend failure names the kernel being looked up.
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
        let info = self
            .inner
            .ctx
            .backend
            .function(self.inner.handle, &self.inner.names, name)
            .map_err(with_name)?
            .ok_or_else(not_found)?;
        Ok(Function {
            module: self.inner.clone(),
            info,
            name: intern(name),
            max_dynamic_shared_bytes: AtomicU32::new(info.max_dynamic_shared_bytes),
        })
    }

    /// The address and size of a module global (`cuModuleGetGlobal`). Not available on the
    /// simulator.
    pub fn global(&self, name: &str) -> Result<(DevicePtr<u8>, usize)> {
        let not_found = || Error::GlobalNotFound {
            name: name.to_owned(),
        };
        match self
            .inner
            .ctx
            .backend
            .module_global(self.inner.handle, name)?
        {
            Some((addr, bytes)) => Ok((DevicePtr::from_addr(addr), bytes)),
            None => Err(not_found()),
        }
    }
}

/// A kernel of a loaded module, for untyped launches; it keeps its module loaded.
pub struct Function {
    pub(crate) module: Arc<ModuleInner>,
    pub(crate) info: FunctionInfo,
    pub(crate) name: &'static &'static str,
    pub(crate) max_dynamic_shared_bytes: AtomicU32,
}

// SAFETY: a function handle may be used from any thread; the rest is immutable or atomic.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name())
            .field("max_threads_per_block", &self.info.max_threads_per_block)
            .finish()
    }
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The raw `CUfunction` (null on the simulator).
    pub fn raw(&self) -> cudarc::driver::sys::CUfunction {
        self.info.handle.0.cast()
    }

    /// The most threads a block of this kernel may have (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub fn max_threads_per_block(&self) -> u32 {
        self.info.max_threads_per_block
    }

    /// Bytes of static shared memory the kernel declares.
    pub fn static_shared_bytes(&self) -> u32 {
        self.info.static_shared_bytes
    }

    /// The block size that maximises occupancy with `dynamic_shared_bytes` of dynamic shared
    /// memory per block (`cuOccupancyMaxPotentialBlockSize`); 256 on the simulator.
    pub fn optimal_block_size(&self, dynamic_shared_bytes: u32) -> Result<u32> {
        let block = self
            .module
            .ctx
            .backend
            .optimal_block_size(self.info.handle, dynamic_shared_bytes)?;
        Ok(block.min(self.info.max_threads_per_block))
    }

    /// Allows launches with up to `bytes` of dynamic shared memory
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; needed above 48 KiB).
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<()> {
        let limit = self
            .module
            .ctx
            .limits
            .max_shared_optin
            .saturating_sub(self.info.static_shared_bytes);
        if bytes > limit {
            return Err(Error::InvalidLaunchConfig {
                kernel: self.name().to_owned(),
                dimension: "max dynamic shared memory bytes",
                value: bytes as u64,
                min: 0,
                max: limit as u64,
            });
        }
        self.module
            .ctx
            .backend
            .set_max_dynamic_shared_bytes(self.info.handle, bytes)?;
        self.max_dynamic_shared_bytes
            .store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Marks the module's foreign-call record as worth reading at the next check.
    #[inline(always)]
    pub(crate) fn note_launch(&self, stream: crate::backend::StreamHandle) {
        self.module.launched.store(true, Ordering::Relaxed);
        if let Some(t) = &self.module.ffi {
            t.note_launch(&self.module.ctx, self.name, stream);
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
            Image {
                bytes: PTX_WITH_EXTERNS.as_bytes(),
                kind: ImageKind::Ptx,
                origin: Some("kernels.ptx"),
            },
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: log.into(),
                info_log: String::new(),
            },
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
            Image {
                bytes: PTX_WITH_EXTERNS.as_bytes(),
                kind: ImageKind::Ptx,
                origin: None,
            },
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: "ptxas fatal   : Unresolved extern function 'add_one'\n\
                            ptxas fatal   : Unresolved extern function 'mul_f32_f32'"
                    .into(),
                info_log: String::new(),
            },
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
            Image {
                bytes: PTX.as_bytes(),
                kind: ImageKind::Ptx,
                origin: None,
            },
            driver::ModuleLoadFailure {
                error: invalid_ptx(),
                error_log: "ptxas application ptx input, line 4; error   : syntax error".into(),
                info_log: "ptxas info    : 0 bytes gmem".into(),
            },
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
            Image {
                bytes: b"",
                kind: ImageKind::Cubin,
                origin: Some("k.cubin"),
            },
            driver::ModuleLoadFailure {
                error: crate::error::CudaError {
                    code: 209,
                    name: "CUDA_ERROR_NO_BINARY_FOR_GPU",
                    description: "no kernel image is available for execution on the device",
                },
                error_log: String::new(),
                info_log: String::new(),
            },
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
            Image {
                bytes: PTX.as_bytes(),
                kind: ImageKind::Ptx,
                origin: None,
            },
            driver::ModuleLoadFailure {
                error: crate::error::CudaError {
                    code: 700,
                    name: "CUDA_ERROR_ILLEGAL_ADDRESS",
                    description: "an illegal memory access was encountered",
                },
                error_log: String::new(),
                info_log: String::new(),
            },
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
