//! Contexts: one per device (the CUDA primary context), plus one for the simulator.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::device::Device;
use crate::driver::{self, DeviceAttr};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::module::{Module, ModuleInner};
use crate::stream::{Stream, StreamState};

/// A device's context: it owns the default stream, allocates memory, creates streams and
/// events and loads modules. Cheap to clone (a shared handle); `Send + Sync`.
///
/// On CUDA this is the device's primary context, made current on the calling thread by every
/// operation that needs it, so several devices can be used from one thread or many.
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

/// Launch limits of the device, cached so launches validate without driver calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_threads_per_block: u32,
    pub max_block: [u32; 3],
    pub max_grid: [u32; 3],
    pub max_shared_optin: u32,
}

pub(crate) enum CtxKind {
    Cuda { raw: driver::CUcontext, pools: bool },
    Sim,
}

pub(crate) struct ContextInner {
    pub(crate) device: Device,
    pub(crate) kind: CtxKind,
    pub(crate) limits: Limits,
    pub(crate) default_stream: StreamState,
    /// The last kernel launched in this context, for fault messages.
    pub(crate) last_launch: LastLaunch,
    /// Modules that hold a foreign-call failure record, checked at synchronization.
    pub(crate) ffi_modules: Mutex<Vec<Weak<ModuleInner>>>,
    /// `CUDA device 0 (NVIDIA H100…)`, for messages.
    pub(crate) label: String,
}

// SAFETY: the raw context handle is a process-wide driver object that any thread may make
// current; every field is either immutable after creation or synchronized (atomics, Mutex).
unsafe impl Send for ContextInner {}
// SAFETY: as above: shared access only reads immutable handles or goes through atomics/Mutex.
unsafe impl Sync for ContextInner {}

impl ContextInner {
    /// Makes the CUDA context current on this thread (no-op on the simulator).
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        match self.kind {
            // SAFETY: primary contexts are retained for the life of the process.
            CtxKind::Cuda { raw, .. } => unsafe { driver::ctx_bind(raw) },
            CtxKind::Sim => Ok(()),
        }
    }

    #[inline]
    pub(crate) fn is_sim(&self) -> bool {
        matches!(self.kind, CtxKind::Sim)
    }

    pub(crate) fn uses_pools(&self) -> bool {
        matches!(self.kind, CtxKind::Cuda { pools: true, .. })
    }
}

/// The name of the last kernel launched, stored without allocation or locking: a pointer to
/// an interned, leaked `&'static str`.
#[derive(Default)]
pub(crate) struct LastLaunch(AtomicPtr<&'static str>);

impl LastLaunch {
    #[inline(always)]
    pub(crate) fn set(&self, name: &'static &'static str) {
        self.0.store(
            name as *const &'static str as *mut &'static str,
            Ordering::Relaxed,
        );
    }

    pub(crate) fn copy_from(&self, other: &LastLaunch) {
        self.0
            .store(other.0.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> Option<&'static str> {
        let p = self.0.load(Ordering::Relaxed);
        // SAFETY: only `set` stores non-null pointers, and they come from `intern`, which leaks
        // them: they are valid for 'static.
        (!p.is_null()).then(|| unsafe { *p })
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

fn sim_context() -> Arc<ContextInner> {
    static SIM: OnceLock<Arc<ContextInner>> = OnceLock::new();
    SIM.get_or_init(|| {
        Arc::new(ContextInner {
            device: Device::simulator(),
            kind: CtxKind::Sim,
            limits: Limits {
                max_threads_per_block: 1024,
                max_block: [1024, 1024, 64],
                max_grid: [i32::MAX as u32, 65535, 65535],
                max_shared_optin: 227 * 1024,
            },
            default_stream: StreamState::sim(),
            last_launch: LastLaunch::default(),
            ffi_modules: Mutex::new(Vec::new()),
            label: "the simulator".to_owned(),
        })
    })
    .clone()
}

/// Every CUDA context this process made, by raw handle, for [`last_launch_of`]. Separate from
/// the map of [`cuda_context`], whose lock is held across driver calls (whose errors look
/// here); entries are never removed (primary contexts are never released).
static BY_RAW: RwLock<Vec<(usize, Arc<ContextInner>)>> = RwLock::new(Vec::new());

/// The last kernel launched in the context whose raw handle is `raw`, if this runtime made it.
pub(crate) fn last_launch_of(raw: driver::CUcontext) -> Option<&'static str> {
    let list = BY_RAW.read().unwrap_or_else(|p| p.into_inner());
    list.iter()
        .find(|(r, _)| *r == raw.addr())
        .and_then(|(_, c)| c.last_launch.get())
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
    // SAFETY: `dev` came from cuDeviceGet (a `Device` of kind CUDA is only built that way).
    let raw = unsafe { driver::primary_ctx_retain(dev) }?;
    // SAFETY: just retained; never released.
    unsafe { driver::ctx_bind(raw) }?;
    let attr = |a| -> Result<u32> {
        // SAFETY: `dev` is valid.
        unsafe { driver::device_attribute(dev, a) }.map(|v| v.max(0) as u32)
    };
    use DeviceAttr::*;
    let limits = Limits {
        max_threads_per_block: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block: [
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid: [
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        max_shared_optin: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
    };
    let pools = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0;
    if pools {
        // SAFETY: `dev` is valid.
        unsafe { driver::keep_default_pool_memory(dev) }?;
    }
    // SAFETY: the context is current on this thread (bound above).
    let stream = unsafe { driver::stream_create(0) }?;
    // SAFETY: `dev` is valid.
    let name = unsafe { driver::device_name(dev) }.unwrap_or_default();
    let inner = Arc::new(ContextInner {
        device,
        kind: CtxKind::Cuda { raw, pools },
        limits,
        default_stream: StreamState::cuda(stream),
        last_launch: LastLaunch::default(),
        ffi_modules: Mutex::new(Vec::new()),
        label: format!("CUDA device {ordinal} ({name})"),
    });
    BY_RAW
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .push((raw.addr(), inner.clone()));
    map.insert(ordinal, inner.clone());
    Ok(inner)
}

impl Context {
    pub(crate) fn primary(device: Device) -> Result<Context> {
        let inner = if device.is_simulator() {
            sim_context()
        } else {
            cuda_context(device)?
        };
        Ok(Context { inner })
    }

    /// The primary context of [`Device::default_device`] (see `GPUKERNEL_BACKEND`).
    pub fn default_context() -> Result<Context> {
        Device::default_device()?.primary_context()
    }

    /// The context's device.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether this is the simulator's context.
    pub fn is_simulator(&self) -> bool {
        self.inner.is_sim()
    }

    /// The device's compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        self.inner.device.compute_capability()
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`), for code that
    /// calls the driver directly. The runtime's own operations do this themselves.
    pub fn bind_to_thread(&self) -> Result<()> {
        self.inner.bind()
    }

    pub(crate) fn bind(&self) -> Result<()> {
        self.inner.bind()
    }

    /// The context's default stream, on which the buffer convenience methods run.
    pub fn default_stream(&self) -> Stream {
        Stream::default_of(self.inner.clone())
    }

    /// A new stream with the default priority (`cuStreamCreateWithPriority`).
    pub fn new_stream(&self) -> Result<Stream> {
        Stream::create(self.inner.clone(), 0)
    }

    /// A new stream with a priority; lower numbers are higher priorities, within
    /// [`Context::stream_priority_range`] (values outside are clamped by the driver).
    pub fn new_stream_with_priority(&self, priority: i32) -> Result<Stream> {
        Stream::create(self.inner.clone(), priority)
    }

    /// `(least, greatest)` stream priority (`cuCtxGetStreamPriorityRange`); greatest is the
    /// numerically smaller. `(0, 0)` on the simulator.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        if self.is_simulator() {
            return Ok((0, 0));
        }
        self.bind()?;
        // SAFETY: the context is current.
        unsafe { driver::ctx_stream_priority_range() }
    }

    /// A new event with timing enabled (`cuEventCreate`).
    pub fn new_event(&self) -> Result<Event> {
        Event::create(self.inner.clone(), true, false)
    }

    /// A new event; `timing` enables [`Event::elapsed_ms`], `blocking_sync` makes
    /// [`Event::synchronize`] sleep instead of spinning.
    pub fn new_event_with_flags(&self, timing: bool, blocking_sync: bool) -> Result<Event> {
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
    /// On the simulator the module is the set of kernel names the PTX declares (sorted, as on
    /// CUDA); `.extern .func` declarations are fine there, since the kernels' Rust bodies run
    /// with their foreign calls resolved when the host crate was built.
    pub fn load_module(&self, image: &[u8]) -> Result<Module> {
        Module::load(self.inner.clone(), image, None)
    }

    /// Waits for all work of the context (`cuCtxSynchronize`), then reports a kernel fault
    /// ([`Error::KernelFault`], naming the last launch) or a failed foreign call
    /// ([`Error::ForeignCallFailed`]).
    pub fn synchronize(&self) -> Result<()> {
        match self.inner.kind {
            CtxKind::Cuda { .. } => {
                self.bind()?;
                // SAFETY: the context is current.
                let r = unsafe { driver::ctx_synchronize() };
                crate::stream::sync_result("cuCtxSynchronize", r, self.inner.last_launch.get())?;
            }
            CtxKind::Sim => {}
        }
        crate::module::check_foreign_failures(&self.default_stream(), self.inner.last_launch.get())
    }
}

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
    Error::ContextMismatch {
        operation,
        what,
        expected: expected.label.clone(),
        found: found.label.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_launch_is_found_by_raw_handle() {
        let inner = Arc::new(ContextInner {
            device: Device::simulator(),
            kind: CtxKind::Sim,
            limits: sim_context().limits,
            default_stream: StreamState::sim(),
            last_launch: LastLaunch::default(),
            ffi_modules: Mutex::new(Vec::new()),
            label: "a registered test context".to_owned(),
        });
        // A handle no driver would give (odd, in the zero page).
        let raw: driver::CUcontext = core::ptr::without_provenance_mut(0x11);
        BY_RAW.write().unwrap().push((raw.addr(), inner.clone()));
        assert_eq!(last_launch_of(raw), None);
        inner.last_launch.set(intern("write_null"));
        assert_eq!(last_launch_of(raw), Some("write_null"));
        assert_eq!(
            last_launch_of(core::ptr::without_provenance_mut(0x13)),
            None
        );
    }
}
