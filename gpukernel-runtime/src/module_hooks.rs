//! Module setup and teardown hooks (Numba's `setup` / `teardown` on linkable code): user code
//! that runs once when a module holding a given link input is loaded
//! ([`Linker::setup`](crate::link::Linker::setup)) and once when it is unloaded
//! ([`Linker::teardown`](crate::link::Linker::teardown)).
//!
//! - **Setup** gets the loaded [`Module`] before anyone else can launch its kernels (e.g. to
//!   initialize a `__device__` global with [`Module::write_global`]). Setups run in the order
//!   their inputs were added; the first error is returned from
//!   [`Linker::link_and_load`](crate::link::Linker::link_and_load) as [`Error::ModuleHook`],
//!   naming the input, and the module is dropped (running the teardowns of the inputs whose
//!   setup succeeded).
//! - **Teardown** gets a [`ModuleView`] (globals, kernel names; it cannot keep the module
//!   loaded) after the module's work is done and before it is unloaded, in reverse input
//!   order. Its error cannot be returned from `Drop`: it is recorded in the context, named by
//!   input, and read with [`Context::take_teardown_failures`](crate::Context::take_teardown_failures)
//!   (never printed, never a panic). A panic in a teardown is caught and recorded the same
//!   way. If the context has faulted, teardowns are not run (the module stays loaded, as
//!   any module under possibly running work) and that is recorded too.

use std::sync::Arc;

use gpukernel_device::{AnyBitPattern, DeviceCopy};

use crate::context::{Context, ContextInner};
use crate::error::{Error, Result};
use crate::memory::DevicePtr;
use crate::module::{Module, ModuleInner};

/// A setup hook: runs with the module just loaded.
pub(crate) type SetupHook = Arc<dyn Fn(&Module) -> Result<()> + Send + Sync>;
/// A teardown hook: runs with a view of the module about to be unloaded.
pub(crate) type TeardownHook = Arc<dyn Fn(&ModuleView<'_>) -> Result<()> + Send + Sync>;

/// A module being unloaded, as a teardown hook sees it: its globals and kernel names. It
/// cannot be cloned into a [`Module`], so it cannot keep the module loaded.
///
/// ```no_run
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
/// use gpukernel_runtime::link::Linker;
/// let mut linker = Linker::new(&ctx)?;
/// linker
///     .add_cuda_source("__device__ unsigned hits = 0;", "hits.cu")
///     .teardown(|view| {
///         let (ptr, bytes) = view.global("hits")?;
///         assert_eq!(bytes, 4);
///         assert!(!ptr.is_null());
///         let hits: u32 = view.read_global("hits")?;
///         view.write_global("hits", &0u32)?;
///         println!("{hits} hits; kernels: {:?}", view.kernel_names());
///         Ok(())
///     });
/// drop(linker.link_and_load()?);
/// # Ok(()) }
/// ```
pub struct ModuleView<'m> {
    pub(crate) inner: &'m ModuleInner,
}

impl std::fmt::Debug for ModuleView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleView")
            .field("kernels", &self.inner.names())
            .finish()
    }
}

impl ModuleView<'_> {
    /// The module's kernel names.
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// use gpukernel_runtime::link::Linker;
    /// let mut linker = Linker::new(&ctx)?;
    /// linker
    ///     .add_cuda_source("__device__ unsigned hits = 0;", "hits.cu")
    ///     .teardown(|view| {
    ///         let (ptr, bytes) = view.global("hits")?;
    ///         assert_eq!(bytes, 4);
    ///         assert!(!ptr.is_null());
    ///         let hits: u32 = view.read_global("hits")?;
    ///         view.write_global("hits", &0u32)?;
    ///         println!("{hits} hits; kernels: {:?}", view.kernel_names());
    ///         Ok(())
    ///     });
    /// drop(linker.link_and_load()?);
    /// # Ok(()) }
    /// ```
    pub fn kernel_names(&self) -> &[String] {
        self.inner.names()
    }

    /// As [`Module::global`].
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// use gpukernel_runtime::link::Linker;
    /// let mut linker = Linker::new(&ctx)?;
    /// linker
    ///     .add_cuda_source("__device__ unsigned hits = 0;", "hits.cu")
    ///     .teardown(|view| {
    ///         let (ptr, bytes) = view.global("hits")?;
    ///         assert_eq!(bytes, 4);
    ///         assert!(!ptr.is_null());
    ///         let hits: u32 = view.read_global("hits")?;
    ///         view.write_global("hits", &0u32)?;
    ///         println!("{hits} hits; kernels: {:?}", view.kernel_names());
    ///         Ok(())
    ///     });
    /// drop(linker.link_and_load()?);
    /// # Ok(()) }
    /// ```
    pub fn global(&self, name: &str) -> Result<(DevicePtr<u8>, usize)> {
        global(self.inner, name)
    }

    /// As [`Module::read_global`].
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// use gpukernel_runtime::link::Linker;
    /// let mut linker = Linker::new(&ctx)?;
    /// linker
    ///     .add_cuda_source("__device__ unsigned hits = 0;", "hits.cu")
    ///     .teardown(|view| {
    ///         let (ptr, bytes) = view.global("hits")?;
    ///         assert_eq!(bytes, 4);
    ///         assert!(!ptr.is_null());
    ///         let hits: u32 = view.read_global("hits")?;
    ///         view.write_global("hits", &0u32)?;
    ///         println!("{hits} hits; kernels: {:?}", view.kernel_names());
    ///         Ok(())
    ///     });
    /// drop(linker.link_and_load()?);
    /// # Ok(()) }
    /// ```
    pub fn read_global<T: AnyBitPattern>(&self, name: &str) -> Result<T> {
        read_global(self.inner, name)
    }

    /// As [`Module::write_global`].
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// use gpukernel_runtime::link::Linker;
    /// let mut linker = Linker::new(&ctx)?;
    /// linker
    ///     .add_cuda_source("__device__ unsigned hits = 0;", "hits.cu")
    ///     .teardown(|view| {
    ///         let (ptr, bytes) = view.global("hits")?;
    ///         assert_eq!(bytes, 4);
    ///         assert!(!ptr.is_null());
    ///         let hits: u32 = view.read_global("hits")?;
    ///         view.write_global("hits", &0u32)?;
    ///         println!("{hits} hits; kernels: {:?}", view.kernel_names());
    ///         Ok(())
    ///     });
    /// drop(linker.link_and_load()?);
    /// # Ok(()) }
    /// ```
    pub fn write_global<T: DeviceCopy>(&self, name: &str, value: &T) -> Result<()> {
        write_global(self.inner, name, value)
    }
}

impl Module {
    /// Reads the module global `name` as a `T` (its size must be `size_of::<T>()`), after
    /// the context's pending work. Not available on the simulator (no device globals there).
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// let module = gpukernel_runtime::link::Linker::new(&ctx)?
    ///     .add_cuda_source("__device__ double limit = 0.5;", "limit.cu")
    ///     .link_and_load()?;
    /// assert_eq!(module.read_global::<f64>("limit")?, 0.5);
    /// assert!(module.read_global::<f32>("limit").is_err()); // 8 bytes, not 4
    /// # Ok(()) }
    /// ```
    pub fn read_global<T: AnyBitPattern>(&self, name: &str) -> Result<T> {
        read_global(self.inner(), name)
    }

    /// Writes `value` to the module global `name` (its size must be `size_of::<T>()`), after
    /// the context's pending work, so no running kernel reads it meanwhile; later launches
    /// see it. Not available on the simulator.
    ///
    /// ```no_run
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::get(0)?.primary_context()?;
    /// let module = gpukernel_runtime::link::Linker::new(&ctx)?
    ///     .add_cuda_source("__device__ int mode;", "mode.cu")
    ///     .link_and_load()?;
    /// module.write_global("mode", &3i32)?;
    /// assert_eq!(module.read_global::<i32>("mode")?, 3);
    /// # Ok(()) }
    /// ```
    pub fn write_global<T: DeviceCopy>(&self, name: &str, value: &T) -> Result<()> {
        write_global(self.inner(), name, value)
    }
}

pub(crate) fn global(m: &ModuleInner, name: &str) -> Result<(DevicePtr<u8>, usize)> {
    match m.ctx.backend.module_global(m.handle(), name)? {
        Some((addr, bytes)) => Ok((DevicePtr::from_addr(addr), bytes)),
        None => Err(Error::GlobalNotFound {
            name: name.to_owned(),
        }),
    }
}

fn sized_global<T>(m: &ModuleInner, name: &str, operation: &'static str) -> Result<u64> {
    let (ptr, bytes) = global(m, name)?;
    if bytes != size_of::<T>() {
        return Err(Error::LengthMismatch {
            operation,
            destination: bytes,
            source_len: size_of::<T>(),
        });
    }
    Ok(ptr.addr())
}

fn read_global<T: AnyBitPattern>(m: &ModuleInner, name: &str) -> Result<T> {
    let addr = sized_global::<T>(m, name, "Module::read_global")?;
    let backend = &m.ctx.backend;
    backend.synchronize()?;
    let mut value = core::mem::MaybeUninit::<T>::zeroed();
    let s = backend.default_stream();
    // SAFETY: `addr` is a live global of exactly `size_of::<T>()` bytes (the module is held);
    // `value` is as large, and written before it is read (the stream is synchronized below).
    unsafe {
        backend.memcpy_dtoh(value.as_mut_ptr().cast(), addr, size_of::<T>(), s)?;
    }
    backend.stream_synchronize(s, None)?;
    // SAFETY: zeroed then overwritten by the copy; any bit pattern is a `T`.
    Ok(unsafe { value.assume_init() })
}

fn write_global<T: DeviceCopy>(m: &ModuleInner, name: &str, value: &T) -> Result<()> {
    let addr = sized_global::<T>(m, name, "Module::write_global")?;
    let backend = &m.ctx.backend;
    backend.synchronize()?;
    let s = backend.default_stream();
    // SAFETY: `addr` is a live global of `size_of::<T>()` bytes; no kernel runs (the context
    // was synchronized); `value` is read before the stream's synchronization below returns.
    unsafe {
        backend.memcpy_htod(addr, core::ptr::from_ref(value).cast(), size_of::<T>(), s)?;
    }
    backend.stream_synchronize(s, None)
}

/// A teardown hook's failure, recorded in its context (see
/// [`Linker::teardown`](crate::link::Linker::teardown)).
///
/// ```
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// for failure in ctx.take_teardown_failures() {
///     eprintln!("teardown of `{}` failed: {}", failure.input, failure.error);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TeardownFailure {
    /// The link input the hook belongs to.
    pub input: String,
    /// What went wrong: the hook's error, its panic, or why it did not run.
    pub error: Error,
}

impl Context {
    /// The teardown hooks that failed since the last call (their errors cannot be returned
    /// from a module's drop), oldest first.
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let mut linker = gpukernel_runtime::link::Linker::new(&ctx)?;
    /// linker
    ///     .add_ptx(".version 8.0\n.target sm_90\n.address_size 64\n", "empty.ptx")
    ///     .teardown(|_| panic!("a bug in a teardown"));
    /// drop(linker.link_and_load()?);
    /// let failures = ctx.take_teardown_failures();
    /// assert!(failures.iter().any(|f| f.input == "empty.ptx"));
    /// assert!(ctx.take_teardown_failures().is_empty()); // taken
    /// # Ok(()) }
    /// ```
    pub fn take_teardown_failures(&self) -> Vec<TeardownFailure> {
        core::mem::take(
            &mut *self
                .inner
                .teardown_failures
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }
}

/// Runs a module's teardowns (newest input first), recording failures in its context.
/// `not_run`: why the hooks are skipped (the module stays loaded), or `None` to run them.
pub(crate) fn run_teardowns(
    m: &ModuleInner,
    hooks: Vec<(String, TeardownHook)>,
    not_run: Option<&str>,
) {
    let ctx: &ContextInner = &m.ctx;
    let mut failures = Vec::new();
    for (input, hook) in hooks.into_iter().rev() {
        let error = if let Some(why) = not_run {
            Some(Error::ModuleHook {
                hook: "teardown",
                input: input.clone(),
                message: format!("not run: {why}, so the module stays loaded"),
                source: None,
            })
        } else {
            let view = ModuleView { inner: m };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&view))) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(Error::ModuleHook {
                    hook: "teardown",
                    input: input.clone(),
                    message: e.to_string(),
                    source: Some(Box::new(e)),
                }),
                Err(panic) => Some(Error::ModuleHook {
                    hook: "teardown",
                    input: input.clone(),
                    message: format!("panicked: {}", panic_message(&*panic)),
                    source: None,
                }),
            }
        };
        if let Some(error) = error {
            failures.push(TeardownFailure { input, error });
        }
    }
    if !failures.is_empty() {
        ctx.teardown_failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(failures);
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Runs the setups of a module just loaded; registers the teardowns of the inputs whose
/// setup succeeded (all, when every setup does). `hooks` are in input order.
pub(crate) fn run_setups(
    module: &Module,
    hooks: Vec<(String, Option<SetupHook>, Option<TeardownHook>)>,
) -> Result<()> {
    for (input, setup, teardown) in hooks {
        if let Some(setup) = setup {
            setup(module).map_err(|e| Error::ModuleHook {
                hook: "setup",
                input: input.clone(),
                message: e.to_string(),
                source: Some(Box::new(e)),
            })?;
        }
        if let Some(teardown) = teardown {
            module.inner().add_teardown(input, teardown);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use crate::link::Linker;
    use crate::{Device, Error};

    const A: &str =
        ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry hook_a() { ret; }\n";
    const B: &str =
        ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry hook_b() { ret; }\n";

    fn log_to(log: &'static Mutex<Vec<String>>, what: String) {
        log.lock().unwrap().push(what);
    }

    #[test]
    fn setups_run_at_each_load_in_input_order_and_teardowns_at_unload_in_reverse() {
        static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ctx = Device::simulator().primary_context().unwrap();
        let mut l = Linker::new(&ctx).unwrap();
        l.add_ptx(A, "a.ptx")
            .setup(|m| {
                log_to(&LOG, format!("setup a {:?}", m.kernel_names()));
                Ok(())
            })
            .teardown(|v| {
                log_to(&LOG, format!("teardown a {:?}", v.kernel_names()));
                Ok(())
            })
            .add_ptx(B, "b.ptx")
            .teardown(|_| {
                log_to(&LOG, "teardown b".into());
                Ok(())
            })
            .setup(|_| {
                log_to(&LOG, "setup b".into());
                Ok(())
            });
        let m1 = l.link_and_load().unwrap();
        let m2 = l.link_and_load().unwrap();
        assert_eq!(LOG.lock().unwrap().len(), 4, "one setup per input per load");
        let clone = m1.clone();
        drop(m1);
        assert_eq!(
            LOG.lock().unwrap().len(),
            4,
            "a clone keeps the module loaded"
        );
        drop(clone);
        drop(m2);
        let log = LOG.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                "setup a [\"hook_a\", \"hook_b\"]",
                "setup b",
                "setup a [\"hook_a\", \"hook_b\"]",
                "setup b",
                "teardown b",
                "teardown a [\"hook_a\", \"hook_b\"]",
                "teardown b",
                "teardown a [\"hook_a\", \"hook_b\"]",
            ]
        );
    }

    #[test]
    fn a_failed_setup_fails_the_load_naming_its_input_and_tears_down_the_earlier_inputs() {
        static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ctx = Device::simulator().primary_context().unwrap();
        let mut l = Linker::new(&ctx).unwrap();
        l.add_ptx(A, "first.ptx")
            .setup(|_| Ok(()))
            .teardown(|_| {
                log_to(&LOG, "teardown first".into());
                Ok(())
            })
            .add_ptx(B, "second.ptx")
            .setup(|m| m.read_global::<u32>("scale").map(drop))
            .teardown(|_| {
                log_to(&LOG, "teardown second".into());
                Ok(())
            });
        let e = l.link_and_load().unwrap_err();
        match &e {
            Error::ModuleHook {
                hook: "setup",
                input,
                source: Some(source),
                ..
            } => {
                assert_eq!(input, "second.ptx");
                // No device globals on the simulator: the hook's own error, kept as the source.
                assert!(matches!(**source, Error::Unsupported { .. }), "{source}");
            }
            other => panic!("unexpected {other}"),
        }
        assert!(
            e.to_string()
                .contains("module setup of link input `second.ptx` failed"),
            "{e}"
        );
        assert_eq!(*LOG.lock().unwrap(), ["teardown first"]);
    }

    #[test]
    fn teardown_errors_and_panics_are_recorded_in_the_context() {
        let ctx = Device::simulator().primary_context().unwrap();
        let mut l = Linker::new(&ctx).unwrap();
        l.add_ptx(A, "fails.ptx")
            .teardown(|v| v.write_global("missing", &1u32))
            .add_ptx(B, "panics.ptx")
            .teardown(|_| panic!("teardown bug"));
        drop(l.link_and_load().unwrap());
        let mine: Vec<_> = ctx
            .take_teardown_failures()
            .into_iter()
            .filter(|f| f.input == "fails.ptx" || f.input == "panics.ptx")
            .collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert_eq!(mine[0].input, "panics.ptx", "reverse input order");
        assert!(mine[0].error.to_string().contains("panicked: teardown bug"));
        assert!(matches!(
            &mine[1].error,
            Error::ModuleHook { hook: "teardown", source: Some(s), .. }
                if matches!(**s, Error::Unsupported { .. })
        ));
    }

    #[test]
    fn a_hook_before_any_input_is_a_named_error() {
        let ctx = Device::simulator().primary_context().unwrap();
        let mut l = Linker::new(&ctx).unwrap();
        l.setup(|_| Ok(())).add_ptx(A, "a.ptx");
        let e = l.link_and_load().unwrap_err();
        assert!(
            matches!(&e, Error::ModuleHook { hook: "setup", input, .. } if input == "(none)"),
            "{e}"
        );
    }
}
