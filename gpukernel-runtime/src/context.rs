//! Contexts: one per device (the CUDA primary context), plus one for the simulator.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::backend::cuda::CudaBackend;
use crate::backend::sim::SimBackend;
use crate::backend::{Backend, Limits};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::module::{Module, ModuleInner};
use crate::stream::{Stream, StreamState};

/// A device's context: it owns the default stream, allocates memory, creates streams and
/// events and loads modules. Cheap to clone (a shared handle); `Send + Sync`.
///
/// On CUDA this is the device's primary context, made current on the calling thread by every
/// operation that needs it, so several devices can be used from one thread or many.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> { let (_, module) = doc_setup();
/// let ctx = Device::simulator().primary_context()?;
/// let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0])?;
/// let mut y = ctx.htod_copy(&[10.0f32; 3])?;
/// let saxpy = module.kernel(saxpy)?;
/// ctx.default_stream().launch(&saxpy, LaunchConfig::for_elements(3)?, (2.0f32, &x, &mut y))?;
/// assert_eq!(y.to_host_vec()?, [12.0, 14.0, 16.0]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.inner.device)
            .finish()
    }
}

/// What every safe type of a context shares: the device, its backend (where CUDA and the
/// simulator differ), the default stream's state and the modules to check for foreign-call
/// failures.
pub(crate) struct ContextInner {
    pub(crate) device: Device,
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) limits: Limits,
    pub(crate) default_stream: StreamState,
    /// Modules that hold a foreign-call failure record, checked wherever the host observes results (see `crate::foreign`).
    pub(crate) ffi_modules: Mutex<Vec<Weak<ModuleInner>>>,
    /// Serializes the reads of the records (after the failure word was found set).
    pub(crate) ffi_check: Mutex<()>,
    /// Failures read but not reported yet (from modules as they were dropped, or not
    /// concerning the check that read them), for the checks they concern.
    pub(crate) ffi_pending: Mutex<Vec<crate::foreign::Pending>>,
    /// Whether `ffi_pending` holds any (the checks' fast path reads this and the failure
    /// word).
    pub(crate) ffi_any_pending: std::sync::atomic::AtomicBool,
    /// The contexts whose memory this context's work may access (peer access enabled; never
    /// disabled, so a check made at a launch stays true while the work runs).
    pub(crate) peers: Mutex<Vec<Weak<ContextInner>>>,
    /// Teardown hooks that failed (see `crate::module_hooks`).
    pub(crate) teardown_failures: Mutex<Vec<crate::module_hooks::TeardownFailure>>,
}

impl ContextInner {
    fn new(device: Device, backend: Box<dyn Backend>) -> ContextInner {
        ContextInner {
            device,
            limits: backend.limits(),
            default_stream: StreamState::new(backend.default_stream()),
            backend,
            ffi_modules: Mutex::new(Vec::new()),
            teardown_failures: Mutex::new(Vec::new()),
            ffi_check: Mutex::new(()),
            ffi_pending: Mutex::new(Vec::new()),
            ffi_any_pending: std::sync::atomic::AtomicBool::new(false),
            peers: Mutex::new(Vec::new()),
        }
    }

    /// Whether work of this context may access `other`'s memory: the same context, or peer
    /// access enabled from this one to `other`.
    pub(crate) fn can_use_memory_of(&self, other: &ContextInner) -> bool {
        core::ptr::eq(self, other)
            || self
                .peers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|w| core::ptr::eq(w.as_ptr(), other))
    }

    /// `CUDA device 0 (NVIDIA H100…)` or `the simulator`, for messages.
    pub(crate) fn label(&self) -> &str {
        self.backend.label()
    }

    /// The last kernel launched in this context.
    pub(crate) fn last_launch(&self) -> Option<&'static str> {
        self.backend.last_launch().get()
    }
}

/// A `'static` reference to a `'static` copy of `name`, the same one for equal names (so the
/// leak is bounded by the number of distinct kernel names).
pub(crate) fn intern(name: &str) -> &'static &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static &'static str>>> = OnceLock::new();
    let mut map = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(n) = map.get(name) {
        return n;
    }
    let s: &'static str = Box::leak(name.to_owned().into_boxed_str());
    let r: &'static &'static str = Box::leak(Box::new(s));
    map.insert(name.to_owned(), r);
    r
}

fn sim_context(device: Device) -> Arc<ContextInner> {
    static SIM: OnceLock<Mutex<HashMap<usize, Arc<ContextInner>>>> = OnceLock::new();
    let index = device.index();
    let mut map = SIM
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    map.entry(index)
        .or_insert_with(|| Arc::new(ContextInner::new(device, Box::new(SimBackend::new(index)))))
        .clone()
}

fn cuda_context(device: Device) -> Result<Arc<ContextInner>> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<ContextInner>>>> = OnceLock::new();
    let ordinal = device.ordinal().unwrap_or(0);
    let mut map = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(c) = map.get(&ordinal) {
        return Ok(c.clone());
    }
    let dev = device.raw().ok_or(Error::NoDevice { ordinal, count: 0 })?;
    let backend = CudaBackend::new(dev, ordinal)?;
    let inner = Arc::new(ContextInner::new(device, Box::new(backend)));
    map.insert(ordinal, inner.clone());
    Ok(inner)
}

#[cfg(test)]
impl Context {
    /// A simulator context of its own, not the shared primary one: the foreign-call failures
    /// of a test's launches are then observed by that test alone, whatever runs beside it.
    pub(crate) fn private_simulator_for_tests() -> Context {
        let device = Device::simulator();
        Context {
            inner: Arc::new(ContextInner::new(
                device,
                Box::new(SimBackend::new(device.index())),
            )),
        }
    }
}

impl Context {
    pub(crate) fn primary(device: Device) -> Result<Context> {
        let inner = if device.is_simulator() {
            sim_context(device)
        } else {
            cuda_context(device)?
        };
        Ok(Context { inner })
    }

    /// The primary context of [`Device::default_device`] (see `GPUKERNEL_BACKEND`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // GPUKERNEL_BACKEND=sim|cuda|auto chooses; auto takes CUDA device 0 when there is one.
    /// let ctx = Context::default_context()?;
    /// println!("running on {}", ctx.device());
    /// # Ok(()) }
    /// ```
    pub fn default_context() -> Result<Context> {
        Device::default_device()?.primary_context()
    }

    /// The context's device.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(ctx.device().is_simulator());
    /// println!("{}", ctx.device().name()?);
    /// # Ok(()) }
    /// ```
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether this is the simulator's context.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let ctx = Device::simulator().primary_context()?;
    /// assert!(ctx.is_simulator());
    /// # Ok(()) }
    /// ```
    pub fn is_simulator(&self) -> bool {
        self.inner.backend.is_simulator()
    }

    /// The device's compute capability `(major, minor)`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (major, minor) = ctx.compute_capability()?;
    /// println!("sm_{major}{minor}");
    /// # Ok(()) }
    /// ```
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        self.inner.device.compute_capability()
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`), for code that
    /// calls the driver directly. The runtime's own operations do this themselves.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| ctx.bind_to_thread()).join().unwrap() // now raw driver calls may follow
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn bind_to_thread(&self) -> Result<()> {
        self.inner.backend.bind()
    }

    /// The context's default stream, on which the buffer convenience methods run.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.default_stream();
    /// let buf = stream.alloc_zeros::<f32>(1024)?;
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn default_stream(&self) -> Stream {
        Stream::default_of(self.inner.clone())
    }

    /// A new stream with the default priority (`cuStreamCreateWithPriority`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?; // work on it may overlap with other streams
    /// let x = stream.htod_copy(&[1u32, 2, 3])?;
    /// assert_eq!(x.to_host_vec()?, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn new_stream(&self) -> Result<Stream> {
        Stream::create(self.inner.clone(), 0)
    }

    /// A new stream with a priority; lower numbers are higher priorities, within
    /// [`Context::stream_priority_range`] (values outside are clamped by the driver).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (_least, greatest) = ctx.stream_priority_range()?;
    /// let urgent = ctx.new_stream_with_priority(greatest)?;
    /// assert_eq!(urgent.priority()?, greatest);
    /// # Ok(()) }
    /// ```
    pub fn new_stream_with_priority(&self, priority: i32) -> Result<Stream> {
        Stream::create(self.inner.clone(), priority)
    }

    /// `(least, greatest)` stream priority (`cuCtxGetStreamPriorityRange`); greatest is the
    /// numerically smaller. `(0, 0)` on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (least, greatest) = ctx.stream_priority_range()?;
    /// assert!(greatest <= least); // lower numbers are higher priorities
    /// # Ok(()) }
    /// ```
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        self.inner.backend.stream_priority_range()
    }

    /// A new event with timing enabled (`cuEventCreate`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    /// start.record(&stream)?;
    /// let buf = stream.alloc_zeros::<u8>(1 << 20)?;
    /// end.record(&stream)?;
    /// println!("{} ms", start.elapsed_ms(&end)?);
    /// # Ok(()) }
    /// ```
    pub fn new_event(&self) -> Result<Event> {
        crate::graph::not_in_host_node("Context::new_event")?;
        Event::create(self.inner.clone(), true, false)
    }

    /// A new event; `timing` enables [`Event::elapsed_ms`], `blocking_sync` makes
    /// [`Event::synchronize`] sleep instead of spinning.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // No timing (cheaper to record); the host sleeps while waiting.
    /// let done = ctx.new_event_with_flags(false, true)?;
    /// done.record(&stream)?;
    /// done.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn new_event_with_flags(&self, timing: bool, blocking_sync: bool) -> Result<Event> {
        crate::graph::not_in_host_node("Context::new_event_with_flags")?;
        Event::create(self.inner.clone(), timing, blocking_sync)
    }

    /// Loads a module from an image: PTX text (NUL-terminated here if needed), a cubin or a
    /// fatbin, told apart by their magic (`cuModuleLoadDataEx`, with the JIT's logs captured).
    ///
    /// A PTX that calls foreign device functions it only declares (`.extern .func`, from
    /// `declare_device!`) cannot be loaded alone: that is
    /// [`Error::UnresolvedForeignSymbols`], naming them; link such PTX with
    /// [`Linker`](crate::link::Linker). Other driver rejections are [`Error::ModuleLoad`], with
    /// the JIT's error log.
    ///
    /// A kernels crate's `FATBIN` (nvptx-builder's `<name>.fatbin`: SASS for the architectures
    /// it names, sm_80 and sm_90 by default, and the PTX) loads here too: on a listed GPU the
    /// driver takes the machine code and compiles nothing; on a newer one it JIT-compiles the
    /// PTX. A PTX of an ISA newer than the driver reads is [`Error::PtxTooNew`].
    ///
    /// On the simulator the module is the set of kernel names the PTX declares (sorted, as on
    /// CUDA; a fatbin's PTX entry); `.extern .func` declarations are fine there, since the
    /// kernels' Rust bodies run with their foreign calls resolved when the host crate was
    /// built.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # let ptx = kernels_ptx();
    /// // `ptx` as nvptx-builder writes it: include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"))
    /// let module = ctx.load_module(ptx.as_bytes())?;
    /// assert_eq!(module.kernel_names(), ["iota", "saxpy", "scale"]);
    /// # Ok(()) }
    /// ```
    pub fn load_module(&self, image: &[u8]) -> Result<Module> {
        crate::graph::not_in_host_node("Context::load_module")?;
        Module::load(self.inner.clone(), image, None)
    }

    /// Waits for all work of the context (`cuCtxSynchronize`), then reports a kernel fault
    /// ([`Error::KernelFault`], naming the last launch) or a failed foreign call
    /// ([`Error::ForeignCallFailed`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let iota = module.kernel(iota)?;
    /// let mut out = ctx.alloc_zeros::<u32>(256)?;
    /// ctx.new_stream()?.launch(&iota, LaunchConfig::for_elements(256)?, (&mut out,))?;
    /// ctx.synchronize()?; // every stream's work is done; a kernel fault would be reported here
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::not_in_host_node("Context::synchronize")?;
        self.inner.backend.synchronize()?;
        crate::foreign::check_all(&self.default_stream())
    }
}

impl Context {
    /// Whether work of this context can access memory of `peer`'s device directly
    /// (`cuDeviceCanAccessPeer`): NVLink or PCIe peer-to-peer between the two GPUs. Always
    /// true for the same context and between simulated devices; false between the simulator
    /// and a GPU.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let sim = Device::simulator().primary_context()?;
    /// assert!(sim.can_access_peer(&sim)?); // simulated devices reach each other; a GPU and the simulator do not
    /// # Ok(()) }
    /// ```
    pub fn can_access_peer(&self, peer: &Context) -> Result<bool> {
        if Arc::ptr_eq(&self.inner, &peer.inner) {
            return Ok(true);
        }
        self.inner.backend.can_access_peer(&*peer.inner.backend)
    }

    /// Lets this context's work access `peer`'s memory (`cuCtxEnablePeerAccess`, and access
    /// to `peer`'s stream-ordered memory pool): kernels launched here may then take `peer`'s
    /// buffers as arguments, and copies between the two go directly (`cuMemcpyPeerAsync`)
    /// instead of through host memory. One direction only: call it on both contexts for both.
    /// Enabling twice is harmless; access stays enabled for the life of the process.
    ///
    /// [`Error::PeerAccessUnsupported`] when the devices cannot reach each other
    /// ([`can_access_peer`](Self::can_access_peer) is false).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // With `GPUKERNEL_SIM_DEVICES=2` (or two GPUs) `other` would be a second device.
    /// let other = Device::all()?.last().copied().unwrap_or(ctx.device()).primary_context()?;
    /// if ctx.can_access_peer(&other)? {
    ///     ctx.enable_peer_access(&other)?; // kernels of `ctx` may now take `other`'s buffers
    /// }
    /// # Ok(()) }
    /// ```
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        if Arc::ptr_eq(&self.inner, &peer.inner) || self.peer_access_enabled(peer) {
            return Ok(());
        }
        if !self.can_access_peer(peer)? {
            return Err(Error::PeerAccessUnsupported {
                from: self.inner.label().to_owned(),
                to: peer.inner.label().to_owned(),
            });
        }
        self.inner
            .backend
            .enable_peer_access(&*peer.inner.backend)?;
        let mut peers = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.push(Arc::downgrade(&peer.inner));
        Ok(())
    }

    /// Whether [`enable_peer_access`](Self::enable_peer_access) made `peer`'s memory
    /// accessible to this context's work (true for the context itself).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(ctx.peer_access_enabled(&ctx)); // a context always reaches its own memory
    /// # Ok(()) }
    /// ```
    pub fn peer_access_enabled(&self, peer: &Context) -> bool {
        self.inner.can_use_memory_of(&peer.inner)
    }
}

/// The hint of a [`Error::ContextMismatch`] between two devices' contexts.
pub(crate) const PEER_HINT: &str = "memory of another device is usable here only after `ctx.enable_peer_access(&owner)` (where `ctx.can_access_peer(&owner)` is true); copy it with `copy_from_device` otherwise";

pub(crate) fn check_same(
    operation: &'static str,
    what: &'static str,
    expected: &Arc<ContextInner>,
    found: &Arc<ContextInner>,
) -> Result<()> {
    if Arc::ptr_eq(expected, found) {
        Ok(())
    } else {
        Err(mismatch(operation, what, expected, found))
    }
}

#[cold]
#[inline(never)]
pub(crate) fn mismatch(
    operation: &'static str,
    what: &'static str,
    expected: &ContextInner,
    found: &ContextInner,
) -> Error {
    // Two devices of one backend: peer access may be the fix.
    let hint =
        (expected.backend.is_simulator() == found.backend.is_simulator()).then_some(PEER_HINT);
    Error::ContextMismatch {
        operation,
        what,
        expected: expected.label().to_owned(),
        found: found.label().to_owned(),
        hint,
    }
}
