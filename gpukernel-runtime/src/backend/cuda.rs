//! The CUDA backend: a device's primary context, over the driver layer (`crate::driver`).
//!
//! Every method makes the context current on the calling thread first (a no-op when it is),
//! and attributes a sticky kernel fault that a driver call reports to the context's last
//! launch when the caller knows no closer suspect.

mod share;

use core::ffi::c_void;
use std::ffi::CString;

use gpukernel_device::ffi::{FFI_ERROR_SYMBOL, FfiErrorRecord};

use super::{
    Backend, ConditionalKind, CopyEnd, EventHandle, FfiRecord, ForeignFailure, FunctionHandle,
    FunctionInfo, GraphExecHandle, GraphHandle, GraphNode, Image, JitOptions, LastLaunch,
    LaunchDesc, Limits, LoadedModule, ModuleHandle, NodeHandle, RawAlloc, StreamHandle,
};
use crate::driver::{self, CUcontext, CUdevice, DeviceAttr, FuncAttr};
use crate::error::{CudaError, Error, Result};
use crate::format::ImageKind;

/// A CUDA device's primary context (retained for the life of the process) and what the
/// runtime caches about it.
#[derive(Debug)]
pub(crate) struct CudaBackend {
    raw: CUcontext,
    dev: CUdevice,
    ordinal: usize,
    pools: bool,
    default_stream: StreamHandle,
    limits: Limits,
    label: String,
    last_launch: LastLaunch,
    /// The context's foreign-call failure word, in mapped page-locked memory (kept for the
    /// life of the process, as the primary context is).
    failure_word: crate::foreign::FailureWord,
}

// SAFETY: the context and stream handles are process-wide driver objects that any thread may
// use (with the context current, which every method ensures); the rest is immutable or atomic.
unsafe impl Send for CudaBackend {}
// SAFETY: as above.
unsafe impl Sync for CudaBackend {}

fn stream(s: StreamHandle) -> driver::CUstream {
    s.0.cast()
}

fn event(e: EventHandle) -> driver::CUevent {
    e.0.cast()
}

fn function(f: FunctionHandle) -> driver::CUfunction {
    f.0.cast()
}

fn module(m: ModuleHandle) -> driver::CUmodule {
    m.0.cast()
}

fn graph(g: GraphHandle) -> driver::CUgraph {
    g.0.cast()
}

fn exec(e: GraphExecHandle) -> driver::CUgraphExec {
    e.0.cast()
}

fn node(n: NodeHandle) -> driver::CUgraphNode {
    n.0.cast()
}

fn nodes(deps: &[NodeHandle]) -> Vec<driver::CUgraphNode> {
    deps.iter().map(|&n| node(n)).collect()
}

fn copy_end(e: CopyEnd) -> driver::CopyEnd {
    match e {
        CopyEnd::Host(p) => driver::CopyEnd::Host(p.cast()),
        CopyEnd::Device(d) => driver::CopyEnd::Device(d),
    }
}

/// The name of a device (`cuDeviceGetName`).
pub(crate) fn device_name(dev: CUdevice) -> Result<String> {
    // SAFETY: a `Device` of kind CUDA holds a handle from cuDeviceGet.
    unsafe { driver::device_name(dev) }
}

/// A device attribute (`cuDeviceGetAttribute`), negative values read as 0.
pub(crate) fn device_attribute(dev: CUdevice, attr: DeviceAttr) -> Result<u32> {
    // SAFETY: as above.
    unsafe { driver::device_attribute(dev, attr) }.map(|v| v.max(0) as u32)
}

/// A device's global memory in bytes (`cuDeviceTotalMem`).
pub(crate) fn device_total_memory(dev: CUdevice) -> Result<usize> {
    // SAFETY: as above.
    unsafe { driver::device_total_mem(dev) }
}

impl CudaBackend {
    /// Retains the primary context of `dev` (ordinal `ordinal`) and reads its limits.
    pub(crate) fn new(dev: CUdevice, ordinal: usize) -> Result<CudaBackend> {
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
        let default_stream = unsafe { driver::stream_create(0) }?;
        // SAFETY: the context is current; 64 bytes (one word used, a line of its own).
        let (word, word_device) = unsafe { driver::mem_host_alloc_mapped(64) }?;
        // SAFETY: zeroed, page-aligned, never freed; the host accesses it only through the
        // `FailureWord` (atomics), the device only by the stores `report_foreign_failure` makes.
        let failure_word = unsafe {
            crate::foreign::FailureWord::new(
                word.cast::<core::sync::atomic::AtomicU32>(),
                word_device,
            )
        };
        // SAFETY: `dev` is valid.
        let name = unsafe { driver::device_name(dev) }.unwrap_or_default();
        Ok(CudaBackend {
            raw,
            dev,
            ordinal,
            pools,
            default_stream: StreamHandle(default_stream.cast()),
            limits,
            label: format!("CUDA device {ordinal} ({name})"),
            last_launch: LastLaunch::default(),
            failure_word,
        })
    }

    #[inline(always)]
    fn bind_raw(&self) -> Result<()> {
        // SAFETY: primary contexts are retained for the life of the process.
        unsafe { driver::ctx_bind(self.raw) }.map_err(|e| self.attribute(e, None))
    }

    /// Names the launch a sticky kernel fault is attributed to: `suspect`, else the context's
    /// last launch.
    #[cold]
    fn attribute(&self, e: Error, suspect: Option<&'static str>) -> Error {
        attribute_fault(e, suspect.or_else(|| self.last_launch.get()))
    }

    /// Binds, runs `f`, and attributes a fault it reports.
    #[inline(always)]
    fn call<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.bind_raw()?;
        f().map_err(|e| self.attribute(e, None))
    }

    /// As [`call`](Self::call), with a closer suspect for a fault.
    #[inline(always)]
    fn call_suspect<T>(
        &self,
        suspect: Option<&'static str>,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        self.bind_raw()?;
        f().map_err(|e| self.attribute(e, suspect))
    }

    /// Reads one foreign-call record (see `gpukernel_device::ffi::FfiErrorRecord`): the
    /// failures counted since the last read, with the first in full if the record holds it
    /// (then re-armed); `None` when nothing new was counted, or when a claimant is still
    /// writing (it sets the failure word again once it has published, for a later check).
    /// Called under the context's check lock (`record.seen`).
    fn read_and_clear(
        &self,
        record: &FfiRecord,
        s: driver::CUstream,
    ) -> Result<Option<ForeignFailure>> {
        use gpukernel_device::ffi::{FREE, PUBLISHED};
        use std::sync::atomic::Ordering::Relaxed;
        const MAX_NAME: u64 = 4096;
        let addr = record.device_addr;
        let seen = record.seen.load(Relaxed);
        // Copies `bytes` bytes at `offset` of the record into `dst` and waits.
        let read = |dst: *mut u8, offset: usize, bytes: usize| -> Result<()> {
            // SAFETY: `addr` is the module global of `size_of::<FfiErrorRecord>()` bytes
            // (checked at load; the module is held by the caller) and `offset + bytes` lies in
            // it; `dst` has `bytes` bytes we wait for below.
            unsafe { driver::memcpy_dtoh_async(dst.cast(), addr + offset as u64, bytes, s) }?;
            // SAFETY: `s` is live (the caller's stream).
            driver::sync_result("cuStreamSynchronize", unsafe {
                driver::stream_synchronize(s)
            })
        };
        // The count first, then the claim: a count read while the claim was FREE holds no
        // claimant (a claimant counts itself only after claiming; only this reader re-arms).
        let mut counted = 0u64;
        read(
            (&raw mut counted).cast(),
            core::mem::offset_of!(FfiErrorRecord, failures),
            8,
        )?;
        let mut claimed = 0u32;
        read((&raw mut claimed).cast(), 0, 4)?;
        if claimed == FREE {
            let new = counted.wrapping_sub(seen);
            if new == 0 {
                return Ok(None);
            }
            record.seen.store(counted, Relaxed);
            return Ok(Some(ForeignFailure {
                function: String::new(),
                status: 0,
                thread: 0,
                kernel: None,
                stream: None,
                count: new,
                detailed: false,
            }));
        }
        if claimed != PUBLISHED {
            return Ok(None);
        }
        // Published: the fields are complete and stay so until we re-arm it; read them now.
        // SAFETY: `FfiErrorRecord` is plain integers, valid when zeroed.
        let mut rec: FfiErrorRecord = unsafe { core::mem::zeroed() };
        read((&raw mut rec).cast(), 0, size_of::<FfiErrorRecord>())?;
        // Reads a string the device named by address and length in the module's global
        // memory; `None` for an address the driver refuses.
        let text = |ptr: u64, len: u64| -> Option<String> {
            let len = len.min(MAX_NAME) as usize;
            if len == 0 || ptr == 0 {
                return None;
            }
            let mut bytes = vec![0u8; len];
            // SAFETY: `bytes` has `len` bytes and we wait for the copy below; a bad address
            // is refused by the driver (not a fault: the copy is the host's).
            unsafe { driver::memcpy_dtoh_async(bytes.as_mut_ptr().cast(), ptr, len, s) }.ok()?;
            // SAFETY: `s` is live.
            driver::sync_result("cuStreamSynchronize", unsafe {
                driver::stream_synchronize(s)
            })
            .ok()?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        };
        let function = text(rec.name_ptr, rec.name_len).unwrap_or_default();
        let kernel = text(rec.kernel_ptr, rec.kernel_len);
        // Re-armed by the claim alone (one aligned word; the count is never reset).
        // SAFETY: a live module global of at least this size.
        unsafe { driver::memset_d8_async(addr, 0, 4, s) }?;
        // SAFETY: as above.
        driver::sync_result("cuStreamSynchronize", unsafe {
            driver::stream_synchronize(s)
        })?;
        // The claimant counted itself before publishing: `rec.failures` includes it.
        record.seen.store(rec.failures, Relaxed);
        Ok(Some(ForeignFailure {
            function,
            status: rec.status,
            thread: rec.thread,
            kernel,
            stream: None,
            count: rec.failures.wrapping_sub(seen).max(1),
            detailed: true,
        }))
    }
}

/// The error for a module image the driver rejected: a kernel fault if that is what the call
/// reported, [`Error::UnresolvedForeignSymbols`] if the JIT log names unresolved foreign
/// functions of a PTX, else [`Error::ModuleLoad`] with the logs.
#[cold]
/// [`Error::PtxTooNew`] when the PTX of `image` (a PTX image, or a fatbin's PTX entry) is of an
/// ISA newer than a driver of CUDA `driver` reads.
fn ptx_too_new(image: Image<'_>, driver: u32, error: Option<CudaError>) -> Option<Error> {
    use crate::format::version;
    let isa = match image.kind {
        ImageKind::Ptx => {
            version::isa_version(std::str::from_utf8(crate::format::trim_nul(image.bytes)).ok()?)?
        }
        ImageKind::Fatbin => crate::format::fatbin::Fatbin::read(image.bytes)
            .ok()?
            .images()
            .filter_map(|i| match i {
                Some(crate::format::fatbin::Image::Ptx(text)) => version::isa_version(&text),
                _ => None,
            })
            .max()?,
        _ => return None,
    };
    let needs_cuda = version::too_new_for(isa, driver)?;
    Some(Error::PtxTooNew {
        what: image
            .origin
            .map_or_else(|| "the module image".to_owned(), |o| format!("`{o}`")),
        isa,
        needs_cuda,
        driver_cuda: driver,
        error,
    })
}

/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`.
const UNSUPPORTED_PTX_VERSION: u32 = 222;

fn load_error(image: Image<'_>, failure: driver::ModuleLoadFailure) -> Error {
    let driver::ModuleLoadFailure {
        error,
        error_log,
        info_log,
    } = failure;
    if error.is_kernel_fault() {
        return driver::error_of("cuModuleLoadDataEx", error, None);
    }
    if error.code == UNSUPPORTED_PTX_VERSION
        && let Some(e) = ptx_too_new(image, driver::version(), Some(error))
    {
        return e;
    }
    if image.kind == ImageKind::Ptx {
        let symbols = crate::format::log::unresolved_functions(&error_log);
        if !symbols.is_empty() {
            let text = std::str::from_utf8(crate::format::trim_nul(image.bytes)).unwrap_or("");
            let also_declared = crate::format::ptx::extern_functions(text)
                .into_iter()
                .filter(|n| !symbols.contains(n) && !crate::format::ptx::is_system_call(n))
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

/// The driver's spelling of a load's JIT options.
fn jit_options(jit: JitOptions) -> Vec<driver::JitOption> {
    let mut out = Vec::new();
    if let Some(n) = jit.max_registers {
        out.push(driver::JitOption::MaxRegisters(n));
    }
    if let Some(n) = jit.optimization_level {
        out.push(driver::JitOption::OptimizationLevel(n));
    }
    if jit.line_info {
        out.push(driver::JitOption::LineInfo);
    }
    if jit.debug {
        out.push(driver::JitOption::DebugInfo);
    }
    out
}

/// A [`Error::KernelFault`] that names no launch yet names `suspect`; other errors pass.
#[cold]
fn attribute_fault(e: Error, suspect: Option<&'static str>) -> Error {
    match e {
        Error::KernelFault {
            call,
            error,
            last_launch: None,
        } => Error::KernelFault {
            call,
            error,
            last_launch: suspect.map(str::to_owned),
        },
        e => e,
    }
}

impl Backend for CudaBackend {
    fn is_simulator(&self) -> bool {
        false
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn last_launch(&self) -> &LastLaunch {
        &self.last_launch
    }

    fn failure_word(&self) -> &crate::foreign::FailureWord {
        &self.failure_word
    }

    fn bind(&self) -> Result<()> {
        self.bind_raw()
    }

    fn synchronize(&self) -> Result<()> {
        self.call(|| {
            // SAFETY: the context is current.
            driver::sync_result("cuCtxSynchronize", unsafe { driver::ctx_synchronize() })
        })
    }

    fn stream_priority_range(&self) -> Result<(i32, i32)> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::ctx_stream_priority_range() })
    }

    fn default_stream(&self) -> StreamHandle {
        self.default_stream
    }

    fn stream_create(&self, priority: i32) -> Result<StreamHandle> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::stream_create(priority) })
            .map(|s| StreamHandle(s.cast()))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) {
        if self.bind_raw().is_ok() {
            // SAFETY: the caller gives `s` up; pending work completes before the driver
            // releases it. An error (a faulted context) leaves nothing to clean up.
            let _ = unsafe { driver::stream_destroy(stream(s)) };
        }
    }

    fn stream_synchronize(&self, s: StreamHandle, suspect: Option<&'static str>) -> Result<()> {
        self.call_suspect(suspect, || {
            // SAFETY: the stream is live while its owner is.
            driver::sync_result("cuStreamSynchronize", unsafe {
                driver::stream_synchronize(stream(s))
            })
        })
    }

    fn stream_query(&self, s: StreamHandle, suspect: Option<&'static str>) -> Result<bool> {
        self.call_suspect(suspect, || {
            // SAFETY: the stream is live while its owner is.
            match unsafe { driver::stream_query(stream(s)) } {
                Ok(done) => Ok(done),
                Err(r) => driver::sync_result("cuStreamQuery", r).map(|()| false),
            }
        })
    }

    fn stream_priority(&self, s: StreamHandle) -> Result<i32> {
        // SAFETY: the stream is live while its owner is.
        self.call(|| unsafe { driver::stream_priority(stream(s)) })
    }

    fn stream_wait_stream(&self, waiter: StreamHandle, other: StreamHandle) -> Result<()> {
        // SAFETY: both streams are live and of this (current) context.
        self.call(|| unsafe { driver::stream_wait_stream(stream(waiter), stream(other)) })
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        // SAFETY: both are live and of this (current) context.
        self.call(|| unsafe { driver::stream_wait_event(stream(s), event(e)) })
    }

    fn event_create(&self, timing: bool, blocking_sync: bool) -> Result<EventHandle> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::event_create(timing, blocking_sync) })
            .map(|e| EventHandle(e.cast()))
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: event and stream are live and of this (current) context.
        self.call(|| unsafe { driver::event_record(event(e), stream(s)) })
    }

    fn event_synchronize(&self, e: EventHandle, suspect: Option<&'static str>) -> Result<()> {
        self.call_suspect(suspect, || {
            // SAFETY: the event is live while its owner is.
            driver::sync_result("cuEventSynchronize", unsafe {
                driver::event_synchronize(event(e))
            })
        })
    }

    fn event_query(&self, e: EventHandle, suspect: Option<&'static str>) -> Result<bool> {
        self.call_suspect(suspect, || {
            // SAFETY: the event is live while its owner is.
            match unsafe { driver::event_query(event(e)) } {
                Ok(done) => Ok(done),
                Err(r) => driver::sync_result("cuEventQuery", r).map(|()| false),
            }
        })
    }

    fn event_elapsed(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        driver::require(12080, "Event::elapsed_ms (cuEventElapsedTime_v2)")?;
        // SAFETY: both events are live and of this context.
        self.call(|| unsafe { driver::event_elapsed(event(start), event(end)) })
    }

    unsafe fn event_destroy(&self, e: EventHandle) {
        if self.bind_raw().is_ok() {
            // SAFETY: the caller gives `e` up; destroying a pending event is allowed (the
            // driver releases it once it completes).
            let _ = unsafe { driver::event_destroy(event(e)) };
        }
    }

    fn alloc(&self, bytes: usize, align: usize, s: StreamHandle) -> Result<RawAlloc> {
        let with = |e: Error| match e {
            Error::Driver { call, error, .. } => Error::Driver {
                call,
                error,
                context: Some(format!("allocating {bytes} bytes on {}", self.label)),
            },
            e => e,
        };
        self.call(|| {
            // Device allocations are aligned to at least 256 bytes.
            let ptr = if self.pools {
                // SAFETY: the context is current, the stream is live and of it; bytes > 0.
                unsafe { driver::mem_alloc_async(bytes, stream(s)) }
            } else {
                // SAFETY: the context is current; bytes > 0.
                unsafe { driver::mem_alloc(bytes) }
            };
            ptr.map_err(with)
        })
        .map(|ptr| RawAlloc {
            ptr,
            bytes,
            align,
            pooled: self.pools,
        })
    }

    unsafe fn free(&self, a: RawAlloc, home: StreamHandle) -> Result<()> {
        self.call(|| {
            if a.pooled {
                // SAFETY: allocated by cuMemAllocAsync; all work that used it is ordered
                // before `home` (caller), where the free is enqueued.
                unsafe { driver::mem_free_async(a.ptr, stream(home)) }
            } else {
                // SAFETY: `home` is live; after it is idle nothing uses the memory.
                driver::sync_result("cuStreamSynchronize", unsafe {
                    driver::stream_synchronize(stream(home))
                })?;
                // SAFETY: allocated by cuMemAlloc; all work that used it is complete.
                unsafe { driver::mem_free(a.ptr) }
            }
        })
    }

    fn host_alloc(&self, bytes: usize, _align: usize) -> Result<*mut u8> {
        self.call(|| {
            // SAFETY: the context is current; bytes > 0.
            let p = unsafe { driver::mem_host_alloc(bytes) }?.cast::<u8>();
            // SAFETY: `p` points to `bytes` writable bytes (page-aligned).
            unsafe { core::ptr::write_bytes(p, 0, bytes) };
            Ok(p)
        })
    }

    unsafe fn host_free(&self, p: *mut u8, _bytes: usize, _align: usize) {
        if self.bind_raw().is_ok() {
            // SAFETY: allocated by cuMemHostAlloc; no copy is pending (caller).
            let _ = unsafe { driver::mem_free_host(p.cast()) };
        }
    }

    unsafe fn memcpy_htod(
        &self,
        dst: u64,
        src: *const u8,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::memcpy_htod_async(dst, src.cast(), bytes, stream(s)) })
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::memcpy_dtoh_async(dst.cast(), src, bytes, stream(s)) })
    }

    unsafe fn memcpy_dtod(&self, dst: u64, src: u64, bytes: usize, s: StreamHandle) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::memcpy_dtod_async(dst, src, bytes, stream(s)) })
    }

    unsafe fn memset_d8(&self, dst: u64, value: u8, bytes: usize, s: StreamHandle) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::memset_d8_async(dst, value, bytes, stream(s)) })
    }

    fn module_load(&self, image: Image<'_>) -> Result<LoadedModule> {
        self.bind_raw()?;
        // A PTX the driver cannot read is named before the driver refuses it.
        if image.kind == ImageKind::Ptx
            && let Some(e) = ptx_too_new(image, driver::version(), None)
        {
            return Err(e);
        }
        let owned;
        let bytes: &[u8] = if image.kind == ImageKind::Ptx && image.bytes.last() != Some(&0) {
            let mut v = Vec::with_capacity(image.bytes.len() + 1);
            v.extend_from_slice(image.bytes);
            v.push(0);
            owned = v;
            &owned
        } else {
            image.bytes
        };
        // SAFETY: the context is current; the image's kind and shape were checked, PTX is
        // NUL-terminated.
        let raw = unsafe { driver::module_load_data_ex(bytes, &jit_options(image.jit)) }
            .map_err(|f| load_error(image, f))
            .map_err(|e| self.attribute(e, None))?;
        let ptx_text = || std::str::from_utf8(image.bytes).unwrap_or("");
        // SAFETY: `raw` was just loaded.
        let names = match unsafe { driver::module_function_names(raw) } {
            Ok(n) => n,
            Err(_) if image.kind == ImageKind::Ptx => crate::format::ptx::entries(ptx_text()),
            Err(_) => Vec::new(),
        };
        let symbol = CString::new(FFI_ERROR_SYMBOL).unwrap_or_default();
        // SAFETY: `raw` is live.
        let ffi_record = match unsafe { driver::module_get_global(raw, &symbol) } {
            Ok(Some((addr, bytes))) if bytes >= size_of::<FfiErrorRecord>() => Some(addr),
            // A record of an earlier layout: its failures could not be read, so it is not
            // loaded at all (a failure must never pass unseen).
            Ok(Some((_, bytes))) => {
                // SAFETY: just loaded, not handed out.
                let _ = unsafe { driver::module_unload(raw) };
                return Err(Error::InvalidModuleImage {
                    reason: format!(
                        "its foreign-call record `{FFI_ERROR_SYMBOL}` is {bytes} bytes, the layout \
                         of an earlier gpukernel (this runtime's is {} bytes): its foreign-call \
                         failures could not be reported; rebuild the kernels crate with this \
                         version",
                        size_of::<FfiErrorRecord>()
                    ),
                    origin: None,
                });
            }
            _ => None,
        };
        if let Some(addr) = ffi_record {
            // The record points at the context's failure word, which a failing call sets.
            let sink = self.failure_word.device_addr.to_ne_bytes();
            let s = stream(self.default_stream);
            let written = (|| {
                // SAFETY: `addr` is the module's record (checked size above), `sink` a local
                // we wait for below.
                unsafe {
                    driver::memcpy_htod_async(
                        addr + gpukernel_device::ffi::SINK_OFFSET as u64,
                        sink.as_ptr().cast(),
                        sink.len(),
                        s,
                    )
                }?;
                // SAFETY: the default stream lives as long as the context.
                driver::sync_result("cuStreamSynchronize", unsafe {
                    driver::stream_synchronize(s)
                })
            })();
            if let Err(e) = written {
                // SAFETY: just loaded, not handed out.
                let _ = unsafe { driver::module_unload(raw) };
                return Err(self.attribute(e, None));
            }
        }
        Ok(LoadedModule {
            handle: ModuleHandle(raw.cast()),
            names,
            ffi_record,
        })
    }

    unsafe fn module_unload(&self, m: ModuleHandle) {
        if self.bind_raw().is_ok() {
            // SAFETY: forwarded from the caller.
            let _ = unsafe { driver::module_unload(module(m)) };
        }
    }

    fn function(
        &self,
        m: ModuleHandle,
        _names: &[String],
        name: &str,
    ) -> Result<Option<FunctionInfo>> {
        let Ok(cname) = CString::new(name) else {
            return Ok(None);
        };
        self.call(|| {
            // SAFETY: the module is live while its owner is.
            let Some(f) = (unsafe { driver::module_get_function(module(m), &cname) })? else {
                return Ok(None);
            };
            let attr = |a| {
                // SAFETY: `f` was just returned for a live module.
                unsafe { driver::function_attribute(f, a) }.map(|v| v.max(0) as u32)
            };
            Ok(Some(FunctionInfo {
                handle: FunctionHandle(f.cast()),
                max_threads_per_block: attr(FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                static_shared_bytes: attr(FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                max_dynamic_shared_bytes: attr(
                    FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )?,
                num_registers: attr(FuncAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            }))
        })
    }

    fn function_param_sizes(&self, f: FunctionHandle) -> Result<Option<Vec<usize>>> {
        // SAFETY: `f` is live while its module is.
        self.call(|| unsafe { driver::function_param_sizes(function(f)) }.map(Some))
    }

    fn kernel_signature(&self, m: ModuleHandle, kernel: &str) -> Result<Option<Vec<u8>>> {
        let symbol = gpukernel_device::signature_symbol(kernel);
        let Some((addr, size)) = self.module_global(m, &symbol)? else {
            return Ok(None);
        };
        if size == 0 || size > crate::format::ptx::MAX_GLOBAL_BYTES {
            // Not a signature `#[kernel]` wrote: the lookup reports a malformed one.
            return Ok(Some(Vec::new()));
        }
        let mut value = vec![0u8; size];
        self.call(|| {
            let s = stream(self.default_stream);
            // SAFETY: `addr` is the module's global of `size` bytes (the module is held by
            // the caller); `value` is a buffer of that size we wait for below.
            unsafe { driver::memcpy_dtoh_async(value.as_mut_ptr().cast(), addr, size, s) }?;
            // SAFETY: the default stream lives as long as the context.
            driver::sync_result("cuStreamSynchronize", unsafe {
                driver::stream_synchronize(s)
            })
        })?;
        Ok(Some(value))
    }

    fn module_global(&self, m: ModuleHandle, name: &str) -> Result<Option<(u64, usize)>> {
        let Ok(cname) = CString::new(name) else {
            return Ok(None);
        };
        // SAFETY: the module is live while its owner is.
        self.call(|| unsafe { driver::module_get_global(module(m), &cname) })
    }

    fn optimal_block_size(&self, f: FunctionHandle, dynamic_shared_bytes: u32) -> Result<u32> {
        self.call(|| {
            // SAFETY: the function is live (its module is held) and its context current.
            let (_, block) = unsafe {
                driver::occupancy_max_potential_block_size(
                    function(f),
                    dynamic_shared_bytes as usize,
                    0,
                )
            }?;
            Ok(block.max(1) as u32)
        })
    }

    fn max_cluster_size(
        &self,
        f: FunctionHandle,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
    ) -> Result<u32> {
        self.call(|| {
            // SAFETY: the function is live (its module is held) and its context current.
            let n = unsafe {
                driver::occupancy_max_potential_cluster_size(
                    function(f),
                    grid,
                    block,
                    shared_mem_bytes,
                )
            }?;
            Ok(n.max(0) as u32)
        })
    }

    fn max_active_blocks_per_sm(
        &self,
        f: FunctionHandle,
        threads: u32,
        shared_mem_bytes: u32,
    ) -> Result<u32> {
        self.call(|| {
            // SAFETY: the function is live and its context current.
            let n = unsafe {
                driver::occupancy_max_active_blocks(function(f), threads, shared_mem_bytes)
            }?;
            Ok(n.max(0) as u32)
        })
    }

    fn cooperative_multiprocessors(&self) -> Result<u32> {
        let coop = device_attribute(self.dev, DeviceAttr::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?;
        let sms = device_attribute(
            self.dev,
            DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        if coop == 0 {
            return Err(Error::Unsupported {
                operation: "a cooperative launch",
                backend: "this CUDA device",
                hint: Some("the device reports CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 0"),
            });
        }
        Ok(sms)
    }

    unsafe fn encode_tensor_map(&self, m: &crate::driver::TiledMap) -> Result<[u64; 16]> {
        // SAFETY: forwarded from the caller; the fields were checked.
        self.call(|| unsafe { driver::tensor_map_encode_tiled(m) })
    }

    fn set_max_dynamic_shared_bytes(&self, f: FunctionHandle, bytes: u32) -> Result<()> {
        self.call(|| {
            // SAFETY: the function is live and its context current.
            unsafe {
                driver::function_set_attribute(
                    function(f),
                    FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
            }
        })
    }

    #[inline(always)]
    unsafe fn launch(
        &self,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
        stream_last: &LastLaunch,
    ) -> Result<()> {
        self.bind_raw()?;
        // SAFETY: the function and stream are live and of the current context; `params` is
        // the caller's responsibility.
        let r = if desc.attributes.any() {
            // SAFETY: as below; the attributes were checked by `LaunchConfig::validate`.
            unsafe {
                driver::launch_kernel_ex(
                    function(desc.function),
                    desc.grid,
                    desc.block,
                    desc.shared_mem_bytes,
                    stream(desc.stream),
                    params.as_mut_ptr(),
                    &launch_attrs(&desc.attributes),
                )
            }
        } else {
            // SAFETY: the function and stream are live and of the current context; `params`
            // is the caller's responsibility.
            unsafe {
                driver::launch_kernel(
                    function(desc.function),
                    desc.grid,
                    desc.block,
                    desc.shared_mem_bytes,
                    stream(desc.stream),
                    params.as_mut_ptr(),
                )
            }
        };
        if !driver::is_success(r) {
            return Err(self.launch_failed(desc, r));
        }
        stream_last.set(desc.name);
        self.last_launch.set(desc.name);
        Ok(())
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }

    fn can_access_peer(&self, peer: &dyn Backend) -> Result<bool> {
        let Some(peer) = peer.as_any().downcast_ref::<CudaBackend>() else {
            return Ok(false);
        };
        // SAFETY: both devices came from cuDeviceGet.
        unsafe { driver::device_can_access_peer(self.dev, peer.dev) }
    }

    fn enable_peer_access(&self, peer: &dyn Backend) -> Result<()> {
        let Some(peer) = peer.as_any().downcast_ref::<CudaBackend>() else {
            return Err(Error::Unsupported {
                operation: "Context::enable_peer_access",
                backend: "simulator",
                hint: Some("peer access joins two CUDA devices or two simulated devices"),
            });
        };
        self.call(|| {
            // SAFETY: this context is current (bound by `call`); the peer's primary context
            // is retained for the life of the process.
            unsafe { driver::ctx_enable_peer_access(peer.raw) }?;
            if peer.pools {
                // Stream-ordered allocations of the peer are reachable only once its pool
                // grants this device access.
                // SAFETY: both devices are valid.
                unsafe { driver::mem_pool_grant_access(peer.dev, self.ordinal) }?;
            }
            Ok(())
        })
    }

    unsafe fn memcpy_peer(
        &self,
        dst: u64,
        dst_owner: &dyn Backend,
        src: u64,
        src_owner: &dyn Backend,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        let raw = |b: &dyn Backend| {
            b.as_any()
                .downcast_ref::<CudaBackend>()
                .map(|c| c.raw)
                .ok_or(Error::Unsupported {
                    operation: "a copy between devices",
                    backend: "simulator",
                    hint: Some("copy through host memory (`to_host_vec`, `copy_from_host`)"),
                })
        };
        let (dst_ctx, src_ctx) = (raw(dst_owner)?, raw(src_owner)?);
        // SAFETY: forwarded from the caller; both contexts are retained primary contexts.
        self.call(|| unsafe {
            driver::memcpy_peer_async(dst, dst_ctx, src, src_ctx, bytes, stream(s))
        })
    }

    fn take_foreign_failure(
        &self,
        record: &FfiRecord,
        s: StreamHandle,
    ) -> Result<Option<ForeignFailure>> {
        self.call(|| self.read_and_clear(record, stream(s)))
    }

    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the context is current; the stream is live while its owner is.
        self.call(|| unsafe { driver::stream_begin_capture(stream(s)) })
    }

    unsafe fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        // SAFETY: the context is current; `s` is capturing (caller).
        self.call(|| unsafe { driver::stream_end_capture(stream(s)) })
            .map(|g| GraphHandle(g.cast()))
    }

    unsafe fn stream_capture_node(
        &self,
        s: StreamHandle,
        what: GraphNode<'_, '_>,
    ) -> Result<NodeHandle> {
        // SAFETY: the context is current and `s` capturing (caller).
        let (g, deps) = self.call(|| unsafe { driver::stream_capture_info(stream(s)) })?;
        let deps: Vec<NodeHandle> = deps.into_iter().map(|n| NodeHandle(n.cast())).collect();
        // SAFETY: `deps` are nodes of the capture's graph `g`; the node's memory is the
        // caller's (as `graph_add_node`).
        let n = unsafe { self.graph_add_node(GraphHandle(g.cast()), &deps, what) }?;
        // SAFETY: `n` is a node of the capture's graph.
        self.call(|| unsafe { driver::stream_capture_set_tail(stream(s), node(n)) })?;
        Ok(n)
    }

    unsafe fn stream_capture_tail(&self, s: StreamHandle) -> Result<Option<NodeHandle>> {
        // SAFETY: as above.
        self.call(|| unsafe { driver::stream_capture_tail(stream(s)) })
            .map(|n| n.map(|n| NodeHandle(n.cast())))
    }

    fn graph_create(&self) -> Result<GraphHandle> {
        // SAFETY: the context is current.
        self.call(|| unsafe { driver::graph_create() })
            .map(|g| GraphHandle(g.cast()))
    }

    unsafe fn graph_destroy(&self, g: GraphHandle) {
        if self.bind_raw().is_ok() {
            // SAFETY: the caller gives `g` up; its instantiations are independent of it.
            let _ = unsafe { driver::graph_destroy(graph(g)) };
        }
    }

    unsafe fn graph_conditional_handle(&self, g: GraphHandle, default: u32) -> Result<u64> {
        // SAFETY: forwarded from the caller; the context is current.
        self.call(|| unsafe { driver::graph_conditional_handle(graph(g), self.raw, default) })
    }

    unsafe fn graph_add_node(
        &self,
        g: GraphHandle,
        deps: &[NodeHandle],
        n: GraphNode<'_, '_>,
    ) -> Result<NodeHandle> {
        let deps = nodes(deps);
        self.call(|| {
            // SAFETY: forwarded from the caller; the context is current.
            let raw = unsafe {
                match n {
                    GraphNode::Kernel { desc, params } => driver::graph_add_kernel(
                        graph(g),
                        &deps,
                        function(desc.function),
                        desc.grid,
                        desc.block,
                        desc.shared_mem_bytes,
                        params.as_mut_ptr(),
                    )
                    .and_then(|n| {
                        if desc.attributes.any() {
                            // `n` is the kernel node just added (live).
                            driver::graph_kernel_node_set_attrs(
                                n,
                                &launch_attrs(&desc.attributes),
                            )?;
                        }
                        Ok(n)
                    }),
                    GraphNode::Copy { dst, src, bytes } => driver::graph_add_memcpy(
                        graph(g),
                        &deps,
                        copy_end(dst),
                        copy_end(src),
                        bytes,
                        self.raw,
                    ),
                    GraphNode::Memset { dst, value, bytes } => {
                        driver::graph_add_memset(graph(g), &deps, dst, value, bytes, self.raw)
                    }
                    GraphNode::Host { f, data } => driver::graph_add_host(graph(g), &deps, f, data),
                    GraphNode::Empty => driver::graph_add_empty(graph(g), &deps),
                    GraphNode::EventRecord { event: e } => {
                        driver::graph_add_event(graph(g), &deps, event(e), true)
                    }
                    GraphNode::EventWait { event: e } => {
                        driver::graph_add_event(graph(g), &deps, event(e), false)
                    }
                    GraphNode::Child { graph: child } => {
                        driver::graph_add_child(graph(g), &deps, graph(child))
                    }
                    GraphNode::Conditional { handle, kind, body } => {
                        let (n, b) = driver::graph_add_conditional(
                            graph(g),
                            &deps,
                            handle,
                            kind == ConditionalKind::While,
                            self.raw,
                        )?;
                        *body = GraphHandle(b.cast());
                        Ok(n)
                    }
                }
            }?;
            Ok(NodeHandle(raw.cast()))
        })
    }

    unsafe fn graph_add_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe { driver::graph_add_dependency(graph(g), node(from), node(to)) })
    }

    unsafe fn graph_add_programmatic_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.call(|| unsafe {
            driver::graph_add_programmatic_dependency(graph(g), node(from), node(to))
        })
    }

    unsafe fn graph_instantiate(&self, g: GraphHandle) -> Result<GraphExecHandle> {
        // SAFETY: forwarded from the caller; the context is current.
        self.call(|| unsafe { driver::graph_instantiate(graph(g)) })
            .map(|e| GraphExecHandle(e.cast()))
    }

    unsafe fn graph_exec_destroy(&self, e: GraphExecHandle) {
        if self.bind_raw().is_ok() {
            // SAFETY: the caller gives `e` up.
            let _ = unsafe { driver::graph_exec_destroy(exec(e)) };
        }
    }

    unsafe fn graph_launch(
        &self,
        e: GraphExecHandle,
        s: StreamHandle,
        name: &'static &'static str,
        stream_last: &LastLaunch,
    ) -> Result<()> {
        self.bind_raw()?;
        // SAFETY: forwarded from the caller.
        let r = unsafe { driver::graph_launch(exec(e), stream(s)) };
        if !driver::is_success(r) {
            let error = driver::cuda_error(r);
            if error.is_kernel_fault() {
                return Err(self.attribute(driver::error_of("cuGraphLaunch", error, None), None));
            }
            return Err(Error::Driver {
                call: "cuGraphLaunch",
                error,
                context: Some(format!("launching {}", *name)),
            });
        }
        stream_last.set(name);
        self.last_launch.set(name);
        Ok(())
    }

    unsafe fn graph_exec_set_kernel(
        &self,
        e: GraphExecHandle,
        n: NodeHandle,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        self.call(|| {
            // SAFETY: forwarded from the caller.
            unsafe {
                driver::graph_exec_kernel_set_params(
                    exec(e),
                    node(n),
                    function(desc.function),
                    desc.grid,
                    desc.block,
                    desc.shared_mem_bytes,
                    params.as_mut_ptr(),
                )
            }
        })
    }

    unsafe fn graph_exec_update(&self, e: GraphExecHandle, g: GraphHandle) -> Result<()> {
        // SAFETY: forwarded from the caller.
        match self.call(|| unsafe { driver::graph_exec_update(exec(e), graph(g)) })? {
            Ok(()) => Ok(()),
            Err(reason) => Err(Error::GraphUpdateRefused {
                graph: String::new(),
                reason: reason.to_owned(),
            }),
        }
    }
}

impl CudaBackend {
    #[cold]
    #[inline(never)]
    fn launch_failed(&self, desc: &LaunchDesc<'_>, r: driver::CuResult) -> Error {
        let error = driver::cuda_error(r);
        if error.is_kernel_fault() {
            // A sticky fault of an earlier kernel, reported by this call.
            return self.attribute(driver::error_of("cuLaunchKernel", error, None), None);
        }
        Error::Driver {
            call: "cuLaunchKernel",
            error,
            context: Some(format!(
                "launching `{}` with grid {:?}, block {:?}, {} bytes of dynamic shared memory",
                *desc.name, desc.grid, desc.block, desc.shared_mem_bytes
            )),
        }
    }
}

/// The driver's form of the launch attributes.
fn launch_attrs(a: &crate::launch::LaunchAttributes) -> driver::LaunchAttrs {
    driver::LaunchAttrs {
        cluster: a.cluster.map(|c| c.to_array()),
        cooperative: a.cooperative,
        programmatic: a.programmatic_dependent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CudaError;
    use crate::format::ptx::tests::{COMMENTED as PTX, WITH_EXTERNS as PTX_WITH_EXTERNS};

    fn invalid_ptx() -> crate::error::CudaError {
        crate::error::CudaError {
            code: 218,
            name: "CUDA_ERROR_INVALID_PTX",
            description: "a PTX JIT compilation failed",
        }
    }

    fn ptx_of_isa(isa: &str) -> String {
        format!(
            ".version {isa}\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\tret;\n}}\n"
        )
    }

    #[test]
    fn ptx_newer_than_the_driver_names_the_cuda_release_it_needs() {
        let text = ptx_of_isa("9.0");
        let image = Image {
            bytes: text.as_bytes(),
            kind: ImageKind::Ptx,
            origin: Some("suite.ptx"),
            jit: JitOptions::default(),
        };
        // A CUDA 12.8 driver (r570) reads up to ISA 8.7: NVRTC 13.0's PTX needs CUDA 13.0.
        let e = ptx_too_new(image, 12080, None)
            .expect("too new")
            .to_string();
        assert!(e.contains("`suite.ptx` is PTX ISA 9.0"), "{e}");
        assert!(e.contains("CUDA 13.0 introduced"), "{e}");
        assert!(e.contains("supports CUDA 12.8 (PTX ISA up to 8.7)"), "{e}");
        assert!(e.contains("Builder::sass_archs"), "{e}");
        // The same driver reads the Rust kernels' ISA 7.8; a CUDA 13.0 driver reads 9.0.
        let ok = ptx_of_isa("7.8");
        assert!(
            ptx_too_new(
                Image {
                    bytes: ok.as_bytes(),
                    ..image
                },
                12080,
                None
            )
            .is_none()
        );
        assert!(ptx_too_new(image, 13000, None).is_none());
    }

    #[test]
    fn unsupported_ptx_version_from_the_driver_becomes_ptx_too_new() {
        let text = ptx_of_isa("9.9");
        let image = Image {
            bytes: text.as_bytes(),
            kind: ImageKind::Ptx,
            origin: None,
            jit: JitOptions::default(),
        };
        let error = CudaError {
            code: UNSUPPORTED_PTX_VERSION,
            name: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            description: "the PTX was compiled with an unsupported toolchain",
        };
        let e = ptx_too_new(image, 13000, Some(error)).expect("too new");
        let text = e.to_string();
        assert!(
            matches!(
                e,
                Error::PtxTooNew {
                    isa: (9, 9),
                    needs_cuda: None,
                    driver_cuda: 13000,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(text.contains("the module image is PTX ISA 9.9"), "{text}");
        assert!(text.contains("newer than this runtime knows"), "{text}");
        assert!(
            text.contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
            "{text}"
        );
    }

    #[test]
    fn unresolved_extern_is_a_dedicated_error_with_the_log_and_a_hint() {
        let log = "ptxas fatal   : Unresolved extern function 'mul_f32_f32'";
        let e = load_error(
            Image {
                bytes: PTX_WITH_EXTERNS.as_bytes(),
                kind: ImageKind::Ptx,
                origin: Some("kernels.ptx"),
                jit: JitOptions::default(),
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
                jit: JitOptions::default(),
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
                jit: JitOptions::default(),
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
                jit: JitOptions::default(),
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
                jit: JitOptions::default(),
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

    const ILLEGAL_ADDRESS: CudaError = CudaError {
        code: 700,
        name: "CUDA_ERROR_ILLEGAL_ADDRESS",
        description: "an illegal memory access was encountered",
    };

    #[test]
    fn a_fault_seen_by_any_call_names_the_suspect_unless_it_names_one_already() {
        let fault = driver::error_of("cuMemAllocAsync", ILLEGAL_ADDRESS, None);
        match attribute_fault(fault, Some("write_null")) {
            Error::KernelFault {
                call, last_launch, ..
            } => {
                assert_eq!(call, "cuMemAllocAsync");
                assert_eq!(last_launch.as_deref(), Some("write_null"));
            }
            other => panic!("unexpected {other}"),
        }
        let named = driver::error_of("cuStreamSynchronize", ILLEGAL_ADDRESS, Some("k1"));
        assert!(matches!(
            attribute_fault(named, Some("k2")),
            Error::KernelFault { last_launch: Some(l), .. } if l == "k1"
        ));
        let other = Error::GlobalNotFound { name: "g".into() };
        assert!(matches!(
            attribute_fault(other, Some("k")),
            Error::GlobalNotFound { .. }
        ));
    }
}
