//! Modules (loaded PTX, cubin or fatbin images) and their kernels.

use core::marker::PhantomData;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use gpukernel_device::signature::ParamSignature;
use gpukernel_device::{IntoKernel, Kernel};
use gpukernel_device::{LaunchDims, ParamList};

use crate::backend::{FunctionInfo, Image, JitOptions, ModuleHandle};
use crate::context::{ContextInner, intern};
use crate::error::{Error, Result};
use crate::foreign::FfiTracking;
use crate::format::{ImageKind, trim_nul};
use crate::memory::DevicePtr;

impl ImageKind {
    /// Classifies an image and checks its shape (headers within bounds), so the driver is
    /// never handed a truncated or foreign file.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::ImageKind;
    /// assert_eq!(ImageKind::detect(kernels_ptx().as_bytes())?, ImageKind::Ptx);
    /// assert!(ImageKind::detect(b"\x7fELF").is_err()); // a truncated cubin is refused
    /// # Ok(()) }
    /// ```
    pub fn detect(image: &[u8]) -> Result<ImageKind> {
        crate::format::detect_image(image).map_err(|reason| Error::InvalidModuleImage {
            reason,
            origin: None,
        })
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

pub(crate) struct ModuleInner {
    pub(crate) ctx: Arc<ContextInner>,
    handle: ModuleHandle,
    names: Vec<String>,
    /// The module's foreign-call failure record, when its code has one.
    pub(crate) ffi: Option<FfiTracking>,
    /// Whether a kernel of the module was ever launched (its unload then waits).
    pub(crate) launched: AtomicBool,
    /// Teardown hooks of its link inputs, in input order (see `crate::module_hooks`).
    teardowns: std::sync::Mutex<Vec<(String, crate::module_hooks::TeardownHook)>>,
}

impl ModuleInner {
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn handle(&self) -> ModuleHandle {
        self.handle
    }

    pub(crate) fn add_teardown(&self, input: String, hook: crate::module_hooks::TeardownHook) {
        self.teardowns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((input, hook));
    }
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
    /// module stays loaded rather than unloaded under running work. Dropped inside a graph
    /// host node, it also stays loaded (leaked): no backend call is allowed there, and
    /// synchronizing the context would wait for the host node itself.
    fn drop(&mut self) {
        let teardowns =
            core::mem::take(self.teardowns.get_mut().unwrap_or_else(|p| p.into_inner()));
        if crate::graph::in_host_node() {
            crate::module_hooks::run_teardowns(
                self,
                teardowns,
                Some("the module was dropped inside a graph host node"),
            );
            return;
        }
        if self.launched.load(Ordering::Acquire) {
            if self.ctx.backend.synchronize().is_err() {
                crate::module_hooks::run_teardowns(self, teardowns, Some("the context faulted"));
                return;
            }
            // A failure of its work is visible now: kept for the context's next check.
            if let Some(t) = &self.ffi
                && self.ctx.backend.failure_word().is_set()
            {
                let via = self.ctx.backend.default_stream();
                // Every failure the record holds (the simulator keeps one per stream).
                while let Ok(Some(f)) = self.ctx.backend.take_foreign_failure(&t.record, via) {
                    crate::foreign::orphan(&self.ctx, self, f, t);
                }
            }
        }
        crate::module_hooks::run_teardowns(self, teardowns, None);
        // SAFETY: every `Function` of the module holds an Arc to this, so none is left, and
        // the work that used it is complete (above; teardown hooks synchronize what they do).
        unsafe { self.ctx.backend.module_unload(self.handle) };
    }
}

/// A loaded module: kernels looked up by name, typed ([`Module::kernel`]) or not
/// ([`Module::function`]). On the simulator it is the set of kernel names of its image.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # let ptx = kernels_ptx();
/// let module = ctx.load_module(ptx.as_bytes())?;
/// let saxpy = module.kernel(saxpy)?; // typed: checked against the Rust declaration
/// let iota = module.function("iota")?; // untyped, by name
/// # Ok(()) }
/// ```
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
    pub(crate) fn inner(&self) -> &ModuleInner {
        &self.inner
    }

    pub(crate) fn load(
        ctx: Arc<ContextInner>,
        image: &[u8],
        origin: Option<String>,
    ) -> Result<Module> {
        Module::load_with(ctx, image, origin, JitOptions::default())
    }

    /// [`Module::load`] with code generation options for a PTX image's JIT compilation.
    pub(crate) fn load_with(
        ctx: Arc<ContextInner>,
        image: &[u8],
        origin: Option<String>,
        jit: JitOptions,
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
            jit,
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
            teardowns: std::sync::Mutex::new(Vec::new()),
        });
        if has_ffi {
            let mut list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&inner));
        }
        Module { inner }
    }

    /// The module of a simulator link: the PTX inputs' text, whose kernels (and their
    /// signature fingerprints) make the module.
    pub(crate) fn from_simulator_image(ctx: Arc<ContextInner>, image: &[u8]) -> Result<Module> {
        let loaded = ctx.backend.module_load(Image {
            bytes: image,
            kind: ImageKind::Ptx,
            origin: None,
            jit: JitOptions::default(),
        })?;
        Ok(Module::register(ctx, loaded))
    }

    /// The context the module was loaded in.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(module.context().device(), ctx.device());
    /// # Ok(()) }
    /// ```
    pub fn context(&self) -> crate::Context {
        crate::Context {
            inner: self.inner.ctx.clone(),
        }
    }

    /// The names of the module's kernels, sorted.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(module.kernel_names(), ["iota", "saxpy", "scale"]);
    /// # Ok(()) }
    /// ```
    pub fn kernel_names(&self) -> &[String] {
        &self.inner.names
    }

    /// The raw `CUmodule` (`None` on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// if let Some(raw) = module.raw() {
    ///     // a CUmodule, for a driver call the runtime does not wrap
    /// }
    /// assert!(module.raw().is_none()); // the simulator has none
    /// # Ok(()) }
    /// ```
    pub fn raw(&self) -> Option<cudarc::driver::sys::CUmodule> {
        let h = self.inner.handle;
        (!self.inner.ctx.backend.is_simulator()).then(|| h.0.cast())
    }

    /// The kernel `K` of this module, for typed launches: `module.kernel(saxpy)?` with the
    /// name of a `#[kernel] fn saxpy` (on the host a function returning the marker, so that
    /// `let saxpy = module.kernel(saxpy)?;` works; see [`IntoKernel`]). The `CUfunction` is
    /// looked up once, here.
    ///
    /// The entry must be the code of this very Rust declaration: its signature fingerprint
    /// (which `#[kernel]` exports beside every kernel, computed by the compiler from the
    /// device build's resolved types; see `gpukernel_device::signature`) must equal
    /// `K::SIGNATURE`, computed the same way from the host build's types. Else
    /// [`Error::KernelParamMismatch`] names the parameter whose type, lowering or `same_len`
    /// differs (a type alias that resolves otherwise on the device, a `cfg_attr` given to one
    /// target), [`Error::KernelFingerprintMismatch`] covers the rest (another crate's kernel of
    /// the same name, a kernel `unsafe` on one side only) and [`Error::KernelSignatureFormat`]
    /// a PTX from another version of gpukernel; an entry without one ([`Error::KernelNotVerified`]: a CUDA C
    /// `__global__`, PTX from elsewhere) needs [`kernel_unverified`](Self::kernel_unverified).
    /// Its parameter sizes must also match (`cuFuncGetParamInfo`): [`Error::KernelSignatureMismatch`].
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let saxpy = module.kernel(saxpy)?; // `saxpy` is the #[kernel] fn's name
    /// let x = ctx.htod_copy(&[1.0f32; 4])?;
    /// let mut y = ctx.alloc_zeros::<f32>(4)?;
    /// stream.launch(&saxpy, LaunchConfig::for_elements(4)?, (2.0f32, &x, &mut y))?;
    /// # Ok(()) }
    /// ```
    pub fn kernel<K: Kernel, M>(&self, kernel: impl IntoKernel<K, M>) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
        let _marker: K = kernel.into_kernel();
        crate::graph::not_in_host_node("Module::kernel")?;
        let function = self.function(K::NAME)?;
        let Some(found) = self
            .inner
            .ctx
            .backend
            .kernel_signature(self.inner.handle, K::NAME)?
        else {
            return Err(Error::KernelNotVerified {
                kernel: K::NAME.to_owned(),
                symbol: gpukernel_device::signature_symbol(K::NAME),
            });
        };
        verify_signature(K::NAME, K::SIGNATURE, K::PARAM_SIGNATURES, &found)?;
        self.typed(function)
    }

    /// As [`kernel`](Self::kernel), for an entry that carries no signature fingerprint (a CUDA
    /// C `__global__` kernel, PTX from elsewhere) described by a hand-written [`Kernel`]
    /// implementation. The parameter sizes are still checked.
    ///
    /// # Safety
    /// The entry's parameters must be exactly `K::Params` in types, not only in sizes (a
    /// pointer where the Rust side lends a read-only slice, say, would let safe code race),
    /// and its code must uphold what `K` promises: if `K` is a [`gpukernel_device::SafeKernel`],
    /// that any arguments of those types are sound.
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{DisjointSlice, Kernel, SafeKernel};
    /// /// `__global__ void iota(unsigned* out, size_t n)`, written in CUDA C.
    /// #[derive(Clone, Copy)]
    /// struct Iota;
    /// // SAFETY: the entry takes (pointer, length) and writes out[i] for i < n only; the simulator
    /// // runs the Rust twin of the same kernel.
    /// unsafe impl Kernel for Iota {
    ///     const NAME: &'static str = "iota";
    ///     type Params = (DisjointSlice<'static, u32>,);
    ///     const SIM_ENTRY: gpukernel_device::SimEntry = <iota as Kernel>::SIM_ENTRY;
    ///     const SIGNATURE: u64 = 0; // CUDA C carries no fingerprint
    /// }
    /// unsafe impl SafeKernel for Iota {}
    /// // SAFETY: as above.
    /// let k = unsafe { module.kernel_unverified(Iota)? };
    /// let mut out = ctx.alloc_zeros::<u32>(8)?;
    /// stream.launch(&k, LaunchConfig::for_elements(8)?, (&mut out,))?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn kernel_unverified<K: Kernel, M>(
        &self,
        kernel: impl IntoKernel<K, M>,
    ) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
        let _marker: K = kernel.into_kernel();
        let function = self.function(K::NAME)?;
        self.typed(function)
    }

    /// Checks the entry's parameter sizes against `K`'s lowering and makes the typed kernel.
    fn typed<K: Kernel>(&self, function: Function) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
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
            launch_dims: K::Params::LAUNCH_DIMS,
            _k: PhantomData,
        })
    }

    /// The kernel named `name`, for untyped launches ([`Stream::launch_untyped`](crate::Stream::launch_untyped)). An unknown
    /// name is [`Error::KernelNotFound`], listing the kernels the module has.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let f = module.function("saxpy")?;
    /// println!("{} uses {} registers", f.name(), f.num_registers());
    /// assert!(module.function("sxapy").is_err()); // Error::KernelNotFound lists the kernels
    /// # Ok(()) }
    /// ```
    pub fn function(&self, name: &str) -> Result<Function> {
        crate::graph::not_in_host_node("Module::function")?;
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // `__device__ int counter;` in a linked .cu file
    /// let (ptr, size) = module.global("counter")?;
    /// assert_eq!(size, 4);
    /// # Ok(()) }
    /// ```
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
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let f = module.function("iota")?;
/// let block = f.optimal_block_size(0)?.min(f.max_threads_per_block());
/// println!("{}: blocks of {block}", f.name());
/// # Ok(()) }
/// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(module.kernel(saxpy)?.name(), "saxpy");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The raw `CUfunction` (null on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let raw = module.function("iota")?.raw(); // a CUfunction for cuLaunchKernelEx and friends
    /// assert!(raw.is_null()); // on the simulator
    /// # Ok(()) }
    /// ```
    pub fn raw(&self) -> cudarc::driver::sys::CUfunction {
        self.info.handle.0.cast()
    }

    /// The most threads a block of this kernel may have (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let f = module.function("iota")?;
    /// let cfg = LaunchConfig::for_elements_with_block(4096, f.max_threads_per_block().min(512))?;
    /// # Ok(()) }
    /// ```
    pub fn max_threads_per_block(&self) -> u32 {
        self.info.max_threads_per_block
    }

    /// The registers each thread of the kernel uses (`CU_FUNC_ATTRIBUTE_NUM_REGS`; 0 on the
    /// simulator). At most [`Linker::max_registers`](crate::link::Linker::max_registers) when
    /// the link set it.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let regs = module.function("saxpy")?.num_registers(); // 0 on the simulator
    /// println!("{regs} registers per thread");
    /// # Ok(()) }
    /// ```
    pub fn num_registers(&self) -> u32 {
        self.info.num_registers
    }

    /// Bytes of static shared memory the kernel declares.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let bytes = module.function("saxpy")?.static_shared_bytes();
    /// assert_eq!(bytes, 0); // saxpy has no shared_array!
    /// # Ok(()) }
    /// ```
    pub fn static_shared_bytes(&self) -> u32 {
        self.info.static_shared_bytes
    }

    /// The block size that maximises occupancy with `dynamic_shared_bytes` of dynamic shared
    /// memory per block (`cuOccupancyMaxPotentialBlockSize`); 256 on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let f = module.function("saxpy")?;
    /// let block = f.optimal_block_size(0)?;
    /// let cfg = LaunchConfig::for_elements_with_block(1 << 20, block)?;
    /// # Ok(()) }
    /// ```
    pub fn optimal_block_size(&self, dynamic_shared_bytes: u32) -> Result<u32> {
        crate::graph::not_in_host_node("Function::optimal_block_size")?;
        let block = self
            .module
            .ctx
            .backend
            .optimal_block_size(self.info.handle, dynamic_shared_bytes)?;
        Ok(block.min(self.info.max_threads_per_block))
    }

    /// Allows launches with up to `bytes` of dynamic shared memory
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; needed above 48 KiB).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let f = module.function("saxpy")?;
    /// f.set_max_dynamic_shared_bytes(96 * 1024)?; // then launches may ask for up to 96 KiB
    /// let cfg = LaunchConfig::new(1, 256).with_shared_mem_bytes(96 * 1024);
    /// # Ok(()) }
    /// ```
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<()> {
        crate::graph::not_in_host_node("Function::set_max_dynamic_shared_bytes")?;
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
        // Set once and never cleared: read first, so that launches from several threads keep
        // the module's line shared instead of writing it each time.
        if !self.module.launched.load(Ordering::Relaxed) {
            self.module.launched.store(true, Ordering::Relaxed);
        }
        if let Some(t) = &self.module.ffi {
            t.note_launch(&self.module.ctx, self.name, stream);
        }
    }
}

/// A kernel `K` looked up in a module: what [`Stream::launch`](crate::Stream::launch) takes. Holds the `CUfunction`,
/// so launching does no lookup. Dereferences to its [`Function`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::TypedKernel;
/// let saxpy: TypedKernel<saxpy> = module.kernel(saxpy)?; // looked up once
/// println!("{} regs", saxpy.num_registers()); // derefs to its Function
/// let (x, mut y) = (ctx.alloc_zeros::<f32>(8)?, ctx.alloc_zeros::<f32>(8)?);
/// for _ in 0..3 {
///     stream.launch(&saxpy, LaunchConfig::for_elements(8)?, (1.0f32, &x, &mut y))?;
/// }
/// # Ok(()) }
/// ```
pub struct TypedKernel<K: Kernel> {
    pub(crate) function: Function,
    /// The launches `K` may have, from its parameter types (`ParamList::LAUNCH_DIMS`).
    pub(crate) launch_dims: LaunchDims,
    _k: PhantomData<K>,
}

impl<K: Kernel> TypedKernel<K> {
    /// The launch configurations the kernel accepts: one-dimensional when it takes a
    /// `DisjointSlice`, z extent 1 when it takes a `DisjointSlice2D`, any otherwise (see
    /// [`LaunchDims`]). Every typed launch checks it.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup();
    /// use gpukernel_runtime::LaunchDims;
    /// // `saxpy` writes a `DisjointSlice` at `thread::index()`: one-dimensional launches only.
    /// let saxpy = module.kernel(saxpy)?;
    /// assert_eq!(saxpy.launch_dims(), LaunchDims::One);
    /// let x = ctx.alloc_zeros::<f32>(64)?;
    /// let mut y = ctx.alloc_zeros::<f32>(64)?;
    /// let two_d = LaunchConfig::new((1, 2), 32);
    /// let e = ctx.default_stream().launch(&saxpy, two_d, (1.0f32, &x, &mut y)).unwrap_err();
    /// assert!(matches!(e, Error::LaunchDimensionsNotAllowed { dimension: "grid.y", .. }));
    /// # Ok(()) }
    /// ```
    pub fn launch_dims(&self) -> LaunchDims {
        self.launch_dims
    }
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

/// Compares a kernel's signature global (`found`, its bytes in the module) with the Rust
/// declaration's fingerprint (`expected`, `K::SIGNATURE`) and parameters
/// (`K::PARAM_SIGNATURES`). The global is either the words of
/// `gpukernel_device::signature::signature_words` or, as hand-written PTX may have it, one
/// `u64` holding the whole fingerprint. On a mismatch the first parameter whose fingerprint
/// differs is named.
pub(crate) fn verify_signature(
    kernel: &str,
    expected: u64,
    params: &[ParamSignature],
    found: &[u8],
) -> Result<()> {
    use gpukernel_device::signature::SIGNATURE_MAGIC;
    let format_error = |problem: String| Error::KernelSignatureFormat {
        kernel: kernel.to_owned(),
        symbol: gpukernel_device::signature_symbol(kernel),
        problem,
    };
    if found.is_empty() || !found.len().is_multiple_of(8) {
        return Err(format_error(format!(
            "{} bytes, not a whole number of 64-bit words",
            found.len()
        )));
    }
    let words: Vec<u64> = found
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let mismatch = |found: u64| Error::KernelFingerprintMismatch {
        kernel: kernel.to_owned(),
        expected,
        found,
    };
    if let [whole] = words[..] {
        // One word: a hand-written record (or an older format, whose value never matches).
        return if whole == expected {
            Ok(())
        } else {
            Err(mismatch(whole))
        };
    }
    if words[0] != SIGNATURE_MAGIC {
        let version = if words[0] >> 8 == SIGNATURE_MAGIC >> 8 {
            format!("signature format {}", words[0] & 0xff)
        } else {
            format!("first word {:#018x}", words[0])
        };
        return Err(format_error(format!(
            "{version}, this version writes format {}",
            gpukernel_device::signature::FORMAT_VERSION
        )));
    }
    let count = words.get(2).copied().unwrap_or(u64::MAX);
    if usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(2))
        .and_then(|n| n.checked_add(3))
        != Some(words.len())
    {
        return Err(format_error(format!(
            "{} words for {count} parameters",
            words.len()
        )));
    }
    let whole = words[1];
    if whole == expected {
        return Ok(());
    }
    if params.len() == words.len().saturating_sub(3) / 2 {
        for (i, p) in params.iter().enumerate() {
            let (fingerprint, summary) = (words[3 + 2 * i], words[4 + 2 * i]);
            if fingerprint != p.fingerprint(i) {
                let (expected, mut found) = (describe(p.summary()), describe(summary));
                if found == expected {
                    found.push_str(
                        " with other contents (a struct's fields or an array's elements)",
                    );
                }
                return Err(Error::KernelParamMismatch {
                    kernel: kernel.to_owned(),
                    param: p.name,
                    position: i,
                    ty: p.ty,
                    expected,
                    found,
                });
            }
        }
    }
    Err(mismatch(whole))
}

/// A parameter's summary word (`ParamSignature::summary`) in words.
fn describe(summary: u64) -> String {
    use gpukernel_device::signature::{kind, lowering};
    let size = summary & 0xffff_ffff;
    let align = 1u64
        .checked_shl(((summary >> 32) & 0xff) as u32)
        .unwrap_or(0);
    let kind = kind::name(((summary >> 40) & 0xff) as u8);
    let lowering = ((summary >> 48) & 0xff) as u8;
    let group = summary >> 56;
    let what = match lowering {
        lowering::BY_VALUE => format!("a {kind} value"),
        lowering::PTR_CONST | lowering::PTR_MUT => {
            format!("{} to a {kind}", lowering::name(lowering))
        }
        lowering::CONDITIONAL => lowering::name(lowering).to_owned(),
        l => format!("{} of {kind} elements", lowering::name(l)),
    };
    let same_len = if group == 0 {
        "in no `same_len` group".to_owned()
    } else {
        format!("in `same_len` group {group}")
    };
    format!("{what} of {size} bytes (align {align}), {same_len}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PTX declaring foreign functions (LLVM's form): the reader's own test text.
    use crate::format::ptx::tests::WITH_EXTERNS as PTX_WITH_EXTERNS;

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

    mod signatures {
        use super::*;
        use gpukernel_device::DisjointSlice;
        use gpukernel_device::signature::{
            FORMAT_VERSION, SIGNATURE_MAGIC, kernel_fingerprint, signature_words,
        };

        /// `add(x: &[Real], out: DisjointSlice<Real>)` with `Real` = `R`, `same_len(x, out)`
        /// when `same_len`.
        fn params<R: gpukernel_device::DeviceCopy>(same_len: bool) -> [ParamSignature; 2] {
            let g = u8::from(same_len);
            [
                ParamSignature::new::<&'static [R]>("x", "&[Real]", g),
                ParamSignature::new::<DisjointSlice<'static, R>>("out", "DisjointSlice<Real>", g),
            ]
        }

        fn bytes(p: &[ParamSignature; 2]) -> Vec<u8> {
            let w: [u64; 7] = signature_words(kernel_fingerprint("kc", "add", false, p), p);
            w.iter().flat_map(|w| w.to_le_bytes()).collect()
        }

        fn check(host: &[ParamSignature; 2], device: &[u8]) -> Result<()> {
            verify_signature(
                "add",
                kernel_fingerprint("kc", "add", false, host),
                host,
                device,
            )
        }

        #[test]
        fn equal_signatures_pass_in_both_forms() {
            let host = params::<f32>(true);
            check(&host, &bytes(&host)).unwrap();
            let whole = kernel_fingerprint("kc", "add", false, &host);
            check(&host, &whole.to_le_bytes()).unwrap();
        }

        #[test]
        fn a_parameter_of_another_type_is_named() {
            let e = check(&params::<f32>(true), &bytes(&params::<f64>(true))).unwrap_err();
            let Error::KernelParamMismatch {
                param,
                position,
                expected,
                found,
                ..
            } = &e
            else {
                panic!("{e}");
            };
            assert_eq!((*param, *position), ("x", 0));
            assert_eq!(
                expected,
                "`&[T]` of float elements of 4 bytes (align 4), in `same_len` group 1"
            );
            assert_eq!(
                found,
                "`&[T]` of float elements of 8 bytes (align 8), in `same_len` group 1"
            );
            assert!(
                e.to_string().contains("parameter `x` (#0, `&[Real]`)"),
                "{e}"
            );
            // One size, another kind.
            let e = check(&params::<bool>(false), &bytes(&params::<u8>(false))).unwrap_err();
            assert!(
                e.to_string().contains("`&[T]` of bool elements of 1 bytes (align 1), in no `same_len` group in this build, but the module's code was compiled for `&[T]` of unsigned integer elements"),
                "{e}"
            );
        }

        #[test]
        fn same_len_on_one_side_only_is_named() {
            let e = check(&params::<f32>(false), &bytes(&params::<f32>(true))).unwrap_err();
            assert!(
                e.to_string().contains("in no `same_len` group in this build, but the module's code was compiled for `&[T]` of float elements of 4 bytes (align 4), in `same_len` group 1"),
                "{e}"
            );
        }

        #[test]
        fn other_formats_and_names_are_refused() {
            let host = params::<f32>(true);
            // Another crate or kernel name: the parameters agree, the whole does not.
            let p = &host;
            let w: [u64; 7] = signature_words(kernel_fingerprint("other", "add", false, p), p);
            let other: Vec<u8> = w.iter().flat_map(|w| w.to_le_bytes()).collect();
            let e = check(&host, &other).unwrap_err();
            assert!(matches!(e, Error::KernelFingerprintMismatch { .. }), "{e}");
            // An older format's one word never matches.
            let e = check(&host, &0x1234u64.to_le_bytes()).unwrap_err();
            assert!(
                matches!(e, Error::KernelFingerprintMismatch { found: 0x1234, .. }),
                "{e}"
            );
            // Another version's magic.
            let mut old = bytes(&host);
            old[..8].copy_from_slice(&((SIGNATURE_MAGIC & !0xff) | 1).to_le_bytes());
            let e = check(&host, &old).unwrap_err();
            assert!(
                e.to_string().contains(&format!(
                    "signature format 1, this version writes format {FORMAT_VERSION}"
                )),
                "{e}"
            );
            // Truncated, misshapen.
            for bad in [&bytes(&host)[..40], &bytes(&host)[..5], &[][..]] {
                let e = check(&host, bad).unwrap_err();
                assert!(matches!(e, Error::KernelSignatureFormat { .. }), "{e}");
            }
        }
    }
}
