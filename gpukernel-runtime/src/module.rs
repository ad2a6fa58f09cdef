//! Modules (loaded PTX, cubin or fatbin images) and their kernels.

use core::marker::PhantomData;
use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use gpukernel_device::Kernel;
use gpukernel_device::ParamList;
use gpukernel_device::ffi::{FFI_ERROR_SYMBOL, FfiErrorRecord};

use crate::context::{ContextInner, intern};
use crate::driver::{self, CUfunction, CUmodule, FuncAttr};
use crate::error::{Error, Result};
use crate::memory::DevicePtr;
use crate::stream::Stream;

use crate::format::{ImageKind, ptx, trim_nul};

impl ImageKind {
    /// Classifies an image and checks its shape (headers within bounds), so the driver is
    /// never handed a truncated or foreign file.
    pub fn detect(image: &[u8]) -> Result<ImageKind> {
        crate::format::detect_image(image).map_err(|reason| Error::InvalidModuleImage {
            reason,
            origin: None,
        })
    }
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
            let also_declared = ptx::extern_functions(ptx_text)
                .into_iter()
                .filter(|n| !symbols.contains(n) && !ptx::is_system_call(n))
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
        let ptx_names = || ptx::entries(ptx_text());
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

    /// The kernel `K` of this module, for typed launches: `module.kernel(saxpy)?`. The
    /// `CUfunction` is looked up once, here.
    pub fn kernel<K: Kernel>(&self, _kernel: K) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
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
}
