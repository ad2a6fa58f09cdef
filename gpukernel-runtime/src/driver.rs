//! Every raw CUDA driver call of the core runtime, on cudarc's `sys` layer (libcuda is loaded at
//! run time).
//!
//! Each function here is a thin, checked wrapper: it turns the `CUresult` into an [`Error`]
//! naming the call, all through [`error_of`]: [`Error::KernelFault`] (naming the last launch)
//! for a sticky kernel fault, whichever call observes it, else [`Error::Driver`]. Functions that take raw handles are `unsafe` and state what
//! the handles must be; callers uphold it through the owning types (`Context`, `Stream`,
//! `DeviceBuffer`…).
//!
//! cudarc resolves each symbol lazily and panics when `libcuda` is missing, so nothing here
//! may run before [`init`] succeeded; every handle type in this crate is only created after it.

use core::ffi::{c_char, c_int, c_uint, c_void};
use std::ffi::CStr;
use std::sync::OnceLock;

use cudarc::driver::sys;

pub(crate) use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

use crate::error::{CudaError, Error, Result};

/// The code, name and description of a driver result.
pub(crate) fn cuda_error(r: sys::CUresult) -> CudaError {
    let code = r as u32;
    let mut name: *const c_char = core::ptr::null();
    let mut desc: *const c_char = core::ptr::null();
    // SAFETY: both calls write a pointer to a static, NUL-terminated string owned by the driver
    // (or leave it untouched and return an error); the out-pointers are valid locals.
    let (name_ok, desc_ok) = unsafe {
        (
            sys::cuGetErrorName(r, &mut name) == sys::CUresult::CUDA_SUCCESS && !name.is_null(),
            sys::cuGetErrorString(r, &mut desc) == sys::CUresult::CUDA_SUCCESS && !desc.is_null(),
        )
    };
    let to_static = |p: *const c_char| -> &'static str {
        // SAFETY: on success the driver returned pointers to static strings that live as long
        // as the loaded library, which cudarc never unloads.
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .unwrap_or("(non-UTF-8 driver string)")
    };
    CudaError {
        code,
        name: if name_ok {
            to_static(name)
        } else {
            "CUDA_ERROR_UNKNOWN_CODE"
        },
        description: if desc_ok {
            to_static(desc)
        } else {
            "unrecognized error code"
        },
    }
}

/// `Ok` for `CUDA_SUCCESS`, else [`Error::Driver`] naming `call`.
#[inline]
pub(crate) fn check(call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(call, r))
    }
}

#[cold]
#[inline(never)]
fn driver_error(call: &'static str, r: sys::CUresult) -> Error {
    error_of(call, cuda_error(r), None)
}

/// The one conversion of a failed driver call into an [`Error`].
///
/// A sticky kernel-execution fault ([`CudaError::is_kernel_fault`]: illegal address, trap,
/// misaligned access…) is reported by whichever call comes next in the faulted context, be it a
/// synchronization, a copy, an allocation or a launch; it becomes [`Error::KernelFault`] naming
/// `call` and the kernel launched last: `last_launch` when the caller knows a closer one (the
/// synchronized stream's), else the last launch of the context current on this thread. Any
/// other code is [`Error::Driver`].
#[cold]
#[inline(never)]
pub(crate) fn error_of(
    call: &'static str,
    error: CudaError,
    last_launch: Option<&'static str>,
) -> Error {
    if error.is_kernel_fault() {
        let last_launch =
            last_launch.or_else(|| current_context().and_then(crate::context::last_launch_of));
        return Error::KernelFault {
            call,
            error,
            last_launch: last_launch.map(str::to_owned),
        };
    }
    Error::Driver {
        call,
        error,
        context: None,
    }
}

/// The context current on this thread, if any (failures read as none: this serves messages).
/// `cuCtxGetCurrent` does not report a context's sticky error.
fn current_context() -> Option<CUcontext> {
    init().ok()?;
    let mut cur: CUcontext = core::ptr::null_mut();
    // SAFETY: the driver is loaded and initialised (above); valid out-pointer.
    let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
    (r == sys::CUresult::CUDA_SUCCESS && !cur.is_null()).then_some(cur)
}

#[derive(Clone)]
enum InitFailure {
    NoLibrary,
    Init(CudaError),
}

/// Loads libcuda and calls `cuInit(0)`, once per process.
pub(crate) fn init() -> Result<()> {
    static INIT: OnceLock<Result<(), InitFailure>> = OnceLock::new();
    let r = INIT.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to open the library (and closes it again).
        if !unsafe { sys::is_culib_present() } {
            return Err(InitFailure::NoLibrary);
        }
        // SAFETY: the library is present, so the symbol resolves; cuInit takes flags 0.
        let r = unsafe { sys::cuInit(0) };
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(InitFailure::Init(cuda_error(r)))
        }
    });
    match r {
        Ok(()) => Ok(()),
        Err(InitFailure::NoLibrary) => Err(Error::DriverUnavailable {
            reason: "libcuda could not be loaded (no NVIDIA driver on this machine, or it is \
                     not on the library search path)"
                .to_owned(),
            error: None,
        }),
        Err(InitFailure::Init(e)) => Err(Error::DriverUnavailable {
            reason: format!("cuInit failed: {e}"),
            error: Some(*e),
        }),
    }
}

// ----------------------------------------------------------------------------------------------
// Devices
// ----------------------------------------------------------------------------------------------

pub(crate) fn device_count() -> Result<usize> {
    match init() {
        // cuInit reports CUDA_ERROR_NO_DEVICE (100) when the driver is installed but no device
        // is visible: that is zero devices, not a missing driver.
        Err(Error::DriverUnavailable { error: Some(e), .. }) if e.code == 100 => return Ok(0),
        r => r?,
    }
    let mut n: c_int = 0;
    // SAFETY: init succeeded; `n` is a valid out-pointer.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

pub(crate) fn device_get(ordinal: usize) -> Result<CUdevice> {
    init()?;
    let mut dev: CUdevice = 0;
    let ord = c_int::try_from(ordinal).unwrap_or(c_int::MAX);
    // SAFETY: init succeeded; `dev` is a valid out-pointer.
    check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ord) })?;
    Ok(dev)
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_name(dev: CUdevice) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 chars and we pass its length; `dev` is valid (caller).
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(buf.as_mut_ptr(), 256, dev)
    })?;
    // SAFETY: the driver wrote a NUL-terminated string into the buffer (it truncates to fit).
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_attribute(dev: CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, dev)
    })?;
    Ok(v)
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_total_mem(dev: CUdevice) -> Result<usize> {
    let mut v: usize = 0;
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut v, dev)
    })?;
    Ok(v)
}

// ----------------------------------------------------------------------------------------------
// Contexts
// ----------------------------------------------------------------------------------------------

/// # Safety
/// `dev` must come from [`device_get`]. The context is retained until the process exits (the
/// runtime never releases primary contexts).
pub(crate) unsafe fn primary_ctx_retain(dev: CUdevice) -> Result<CUcontext> {
    let mut ctx: CUcontext = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    })?;
    Ok(ctx)
}

/// Makes `ctx` current on this thread unless it already is.
///
/// # Safety
/// `ctx` must be a live context.
#[inline]
pub(crate) unsafe fn ctx_bind(ctx: CUcontext) -> Result<()> {
    let mut cur: CUcontext = core::ptr::null_mut();
    // SAFETY: valid out-pointer.
    check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
    if cur != ctx {
        // SAFETY: `ctx` is live (caller).
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
    }
    Ok(())
}

/// Synchronizes the current context. Returns the raw result so the caller can classify faults.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn ctx_synchronize() -> sys::CUresult {
    // SAFETY: a context is current (caller).
    unsafe { sys::cuCtxSynchronize() }
}

/// `(least, greatest)` stream priorities of the current context (greatest is numerically lowest).
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn ctx_stream_priority_range() -> Result<(i32, i32)> {
    let (mut least, mut greatest): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers; a context is current (caller).
    check("cuCtxGetStreamPriorityRange", unsafe {
        sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
    })?;
    Ok((least, greatest))
}

// ----------------------------------------------------------------------------------------------
// Streams and events
// ----------------------------------------------------------------------------------------------

/// Creates a stream (default flags: ordered with the legacy NULL stream) with a priority.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn stream_create(priority: i32) -> Result<CUstream> {
    let mut s: CUstream = core::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuStreamCreateWithPriority", unsafe {
        sys::cuStreamCreateWithPriority(
            &mut s,
            sys::CUstream_flags::CU_STREAM_DEFAULT as c_uint,
            priority,
        )
    })?;
    Ok(s)
}

/// # Safety
/// `s` must be a live stream that is not used afterwards.
pub(crate) unsafe fn stream_destroy(s: CUstream) -> Result<()> {
    // SAFETY: the caller gives up `s`; pending work completes before the driver frees it.
    check("cuStreamDestroy", unsafe { sys::cuStreamDestroy_v2(s) })
}

/// Returns the raw result so the caller can classify kernel faults.
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_synchronize(s: CUstream) -> sys::CUresult {
    // SAFETY: `s` is live (caller).
    unsafe { sys::cuStreamSynchronize(s) }
}

/// `Ok(true)` when all work is done, `Ok(false)` while some is pending; other results are
/// returned raw.
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_query(s: CUstream) -> std::result::Result<bool, sys::CUresult> {
    // SAFETY: `s` is live (caller).
    match unsafe { sys::cuStreamQuery(s) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        r => Err(r),
    }
}

/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_priority(s: CUstream) -> Result<i32> {
    let mut p: c_int = 0;
    // SAFETY: valid out-pointer; `s` is live (caller).
    check("cuStreamGetPriority", unsafe {
        sys::cuStreamGetPriority(s, &mut p)
    })?;
    Ok(p)
}

/// # Safety
/// Both handles must be live and belong to the current context.
pub(crate) unsafe fn stream_wait_event(s: CUstream, e: CUevent) -> Result<()> {
    // SAFETY: handles are live (caller); flags 0.
    check("cuStreamWaitEvent", unsafe {
        sys::cuStreamWaitEvent(s, e, 0)
    })
}

/// Makes `waiter` wait for the work enqueued on `other` so far (an event recorded now).
///
/// # Safety
/// Both streams must be live and belong to the current context.
pub(crate) unsafe fn stream_wait_stream(waiter: CUstream, other: CUstream) -> Result<()> {
    // SAFETY: a context is current (caller).
    let e = unsafe { event_create(false, false) }?;
    // SAFETY: `e` was just created; the streams are live (caller). The event is destroyed in
    // every case; destroying a pending event is allowed (released once it completes).
    let r = unsafe { event_record(e, other).and_then(|()| stream_wait_event(waiter, e)) };
    // SAFETY: `e` is not used after this.
    let d = unsafe { event_destroy(e) };
    r.and(d)
}

/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn event_create(timing: bool, blocking_sync: bool) -> Result<CUevent> {
    let mut flags = 0u32;
    if !timing {
        flags |= sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    }
    if blocking_sync {
        flags |= sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
    }
    let mut e: CUevent = core::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuEventCreate", unsafe {
        sys::cuEventCreate(&mut e, flags)
    })?;
    Ok(e)
}

/// # Safety
/// `e` and `s` must be live and of the same context.
pub(crate) unsafe fn event_record(e: CUevent, s: CUstream) -> Result<()> {
    // SAFETY: handles are live (caller).
    check("cuEventRecord", unsafe { sys::cuEventRecord(e, s) })
}

/// Returns the raw result so the caller can classify faults.
///
/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_synchronize(e: CUevent) -> sys::CUresult {
    // SAFETY: `e` is live (caller).
    unsafe { sys::cuEventSynchronize(e) }
}

/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_query(e: CUevent) -> std::result::Result<bool, sys::CUresult> {
    // SAFETY: `e` is live (caller).
    match unsafe { sys::cuEventQuery(e) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        r => Err(r),
    }
}

/// Milliseconds between two recorded, completed events.
///
/// # Safety
/// Both events must be live.
pub(crate) unsafe fn event_elapsed(start: CUevent, end: CUevent) -> Result<f32> {
    let mut ms: f32 = 0.0;
    // SAFETY: valid out-pointer; events live (caller).
    check("cuEventElapsedTime", unsafe {
        sys::cuEventElapsedTime_v2(&mut ms, start, end)
    })?;
    Ok(ms)
}

/// # Safety
/// `e` must be live and not used afterwards.
pub(crate) unsafe fn event_destroy(e: CUevent) -> Result<()> {
    // SAFETY: the caller gives up `e`.
    check("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(e) })
}

// ----------------------------------------------------------------------------------------------
// Memory
// ----------------------------------------------------------------------------------------------

/// Keeps freed memory in the device's default pool instead of returning it to the system at
/// every synchronization (release threshold = unlimited), as the CUDA runtime's users usually
/// configure it: stream-ordered allocations then reuse memory without driver round trips.
///
/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn keep_default_pool_memory(dev: CUdevice) -> Result<()> {
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceGetDefaultMemPool", unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, dev)
    })?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a cuuint64_t.
    check("cuMemPoolSetAttribute", unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&raw mut threshold).cast(),
        )
    })
}

/// Stream-ordered allocation from the device's default pool.
///
/// # Safety
/// `s` must be a live stream of the current context; `bytes > 0`.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: CUstream) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; stream live (caller).
    check("cuMemAllocAsync", unsafe {
        sys::cuMemAllocAsync(&mut p, bytes, s)
    })?;
    Ok(p)
}

/// # Safety
/// A context must be current; `bytes > 0`.
pub(crate) unsafe fn mem_alloc(bytes: usize) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
    Ok(p)
}

/// # Safety
/// `p` must come from [`mem_alloc_async`] and not be used by work enqueued after this on any
/// stream that is not ordered after `s`.
pub(crate) unsafe fn mem_free_async(p: CUdeviceptr, s: CUstream) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFreeAsync", unsafe { sys::cuMemFreeAsync(p, s) })
}

/// # Safety
/// `p` must come from [`mem_alloc`] and no pending work may use it.
pub(crate) unsafe fn mem_free(p: CUdeviceptr) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFree", unsafe { sys::cuMemFree_v2(p) })
}

/// # Safety
/// `dst` must be valid device memory of `bytes` bytes, `src` valid host memory of `bytes` bytes
/// that stays valid and unmodified until the copy completes (pageable memory is staged before
/// this returns; pinned memory must be kept alive by the caller), `s` a live stream.
pub(crate) unsafe fn memcpy_htod_async(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyHtoDAsync", unsafe {
        sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// `dst` must be valid host memory of `bytes` bytes that nobody reads or writes until the copy
/// completes, `src` valid device memory, `s` a live stream.
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// Both ranges must be valid device memory of `bytes` bytes, `s` a live stream.
pub(crate) unsafe fn memcpy_dtod_async(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemcpyDtoDAsync", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s)
    })
}

/// # Safety
/// `dst` must be valid device memory of `bytes` bytes, `s` a live stream.
pub(crate) unsafe fn memset_d8_async(
    dst: CUdeviceptr,
    value: u8,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, value, bytes, s)
    })
}

/// Page-locked host memory usable by every context (`CU_MEMHOSTALLOC_PORTABLE`).
///
/// # Safety
/// A context must be current; `bytes > 0`.
pub(crate) unsafe fn mem_host_alloc(bytes: usize) -> Result<*mut c_void> {
    let mut p: *mut c_void = core::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current (caller).
    check("cuMemHostAlloc", unsafe {
        sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
    })?;
    Ok(p)
}

/// # Safety
/// `p` must come from [`mem_host_alloc`] and no pending work may use it.
pub(crate) unsafe fn mem_free_host(p: *mut c_void) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuMemFreeHost", unsafe { sys::cuMemFreeHost(p) })
}

// ----------------------------------------------------------------------------------------------
// Modules and functions
// ----------------------------------------------------------------------------------------------

/// Size of each JIT log buffer handed to `cuModuleLoadDataEx`.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// Why `cuModuleLoadDataEx` failed: the driver's code and the JIT compiler's logs.
#[derive(Debug)]
pub(crate) struct ModuleLoadFailure {
    pub(crate) error: CudaError,
    pub(crate) error_log: String,
    pub(crate) info_log: String,
}

/// Loads a module (`cuModuleLoadDataEx`) with the JIT's error and info logs captured
/// (non-verbose), so a PTX the JIT rejects says why.
///
/// # Safety
/// A context must be current; `image` must be a complete PTX (NUL-terminated), cubin or fatbin
/// image (the caller checked its kind and shape).
pub(crate) unsafe fn module_load_data_ex(
    image: &[u8],
) -> std::result::Result<CUmodule, ModuleLoadFailure> {
    let mut info = vec![0u8; JIT_LOG_BYTES];
    let mut error = vec![0u8; JIT_LOG_BYTES];
    let mut options = [
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // Option values are pointer-sized slots: buffers by address, sizes and flags by value. The
    // size slots are in/out: the driver writes back how many bytes of each log it used.
    let mut values: [*mut c_void; 5] = [
        info.as_mut_ptr().cast(),
        core::ptr::without_provenance_mut(JIT_LOG_BYTES),
        error.as_mut_ptr().cast(),
        core::ptr::without_provenance_mut(JIT_LOG_BYTES),
        core::ptr::without_provenance_mut(0), // CU_JIT_LOG_VERBOSE off
    ];
    let mut m: CUmodule = core::ptr::null_mut();
    // SAFETY: a context is current and the image is complete (caller); the slice outlives the
    // call (the driver copies it); `options` and `values` have 5 entries each, and the log
    // buffers have the announced sizes and outlive the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut m,
            image.as_ptr().cast(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(m);
    }
    Err(ModuleLoadFailure {
        error: cuda_error(r),
        error_log: jit_log(error, values[3].addr()),
        info_log: jit_log(info, values[1].addr()),
    })
}

/// The text of a JIT log buffer of which the driver says it used `used` bytes (clamped to the
/// buffer, cut at the first NUL, trailing whitespace trimmed).
fn jit_log(mut buf: Vec<u8>, used: usize) -> String {
    buf.truncate(used.min(buf.len()));
    if let Some(nul) = buf.iter().position(|&b| b == 0) {
        buf.truncate(nul);
    }
    let text = String::from_utf8_lossy(&buf);
    text.trim_end().to_owned()
}

/// # Safety
/// `m` must be live and not used afterwards; its context must be current.
pub(crate) unsafe fn module_unload(m: CUmodule) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuModuleUnload", unsafe { sys::cuModuleUnload(m) })
}

/// `Ok(None)` when the module has no such function.
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_get_function(m: CUmodule, name: &CStr) -> Result<Option<CUfunction>> {
    let mut f: CUfunction = core::ptr::null_mut();
    // SAFETY: valid out-pointer, NUL-terminated name; `m` live (caller).
    match unsafe { sys::cuModuleGetFunction(&mut f, m, name.as_ptr()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(Some(f)),
        sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        r => Err(driver_error("cuModuleGetFunction", r)),
    }
}

/// `Ok(None)` when the module has no such global.
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_get_global(
    m: CUmodule,
    name: &CStr,
) -> Result<Option<(CUdeviceptr, usize)>> {
    let mut p: CUdeviceptr = 0;
    let mut bytes: usize = 0;
    // SAFETY: valid out-pointers, NUL-terminated name; `m` live (caller).
    match unsafe { sys::cuModuleGetGlobal_v2(&mut p, &mut bytes, m, name.as_ptr()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(Some((p, bytes))),
        sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        r => Err(driver_error("cuModuleGetGlobal", r)),
    }
}

/// The names of the kernels of a module (`cuModuleEnumerateFunctions`, CUDA 12.4+).
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_function_names(m: CUmodule) -> Result<Vec<String>> {
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointer; `m` live (caller).
    check("cuModuleGetFunctionCount", unsafe {
        sys::cuModuleGetFunctionCount(&mut count, m)
    })?;
    let mut funcs: Vec<CUfunction> = vec![core::ptr::null_mut(); count as usize];
    if count > 0 {
        // SAFETY: the array holds `count` handles.
        check("cuModuleEnumerateFunctions", unsafe {
            sys::cuModuleEnumerateFunctions(funcs.as_mut_ptr(), count, m)
        })?;
    }
    let mut names = Vec::with_capacity(funcs.len());
    for f in funcs {
        // SAFETY: `f` was just returned by the driver for a live module.
        names.push(unsafe { function_name(f) }?);
    }
    names.sort();
    Ok(names)
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_name(f: CUfunction) -> Result<String> {
    let mut p: *const c_char = core::ptr::null();
    // SAFETY: valid out-pointer; `f` live (caller).
    check("cuFuncGetName", unsafe { sys::cuFuncGetName(&mut p, f) })?;
    if p.is_null() {
        return Ok(String::new());
    }
    // SAFETY: the driver returns a NUL-terminated name owned by the module.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_attribute(
    f: CUfunction,
    attr: sys::CUfunction_attribute,
) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer; `f` live (caller).
    check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(&mut v, attr, f)
    })?;
    Ok(v)
}

/// The byte sizes of a kernel's parameters (`cuFuncGetParamInfo`, CUDA 12.4+), or `None`
/// when the driver cannot tell. The list ends where the driver answers
/// `CUDA_ERROR_INVALID_VALUE`: before CUDA 13.2 there is no `cuFuncGetParamCount`, and the
/// probe past the end is what detects an image with more parameters than the Rust signature
/// (compute-sanitizer reports that expected answer as an API error).
///
/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_param_sizes(f: CUfunction) -> Option<Vec<usize>> {
    let mut sizes = Vec::new();
    for index in 0.. {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers; `f` live (caller). Past the last parameter the driver
        // returns CUDA_ERROR_INVALID_VALUE, which ends the list.
        let r = unsafe { sys::cuFuncGetParamInfo(f, index, &mut offset, &mut size) };
        match r {
            sys::CUresult::CUDA_SUCCESS => sizes.push(size),
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
            _ => return None,
        }
    }
    Some(sizes)
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_set_attribute(
    f: CUfunction,
    attr: sys::CUfunction_attribute,
    value: i32,
) -> Result<()> {
    // SAFETY: `f` live (caller).
    check("cuFuncSetAttribute", unsafe {
        sys::cuFuncSetAttribute(f, attr, value)
    })
}

/// `(min_grid_size, block_size)` maximising occupancy.
///
/// # Safety
/// `f` must be a live function handle; its context current.
pub(crate) unsafe fn occupancy_max_potential_block_size(
    f: CUfunction,
    dynamic_shared_bytes: usize,
    block_size_limit: i32,
) -> Result<(i32, i32)> {
    let (mut min_grid, mut block): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers; no per-block-size callback; `f` live (caller).
    check("cuOccupancyMaxPotentialBlockSize", unsafe {
        sys::cuOccupancyMaxPotentialBlockSize(
            &mut min_grid,
            &mut block,
            f,
            None,
            dynamic_shared_bytes,
            block_size_limit,
        )
    })?;
    Ok((min_grid, block))
}

/// Enqueues a kernel: the raw `cuLaunchKernel`.
///
/// # Safety
/// `f` must be a live function of the current context, `s` a live stream of that context, and
/// `params` must point to one valid pointer per kernel parameter, each to a value of the
/// parameter's ABI type, valid for the duration of the call (the driver copies the values).
/// Whatever memory the kernel reaches through them must stay valid until it completes.
#[inline(always)]
pub(crate) unsafe fn launch_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    s: CUstream,
    params: *mut *mut c_void,
) -> sys::CUresult {
    // SAFETY: forwarded from the caller; no `extra` array.
    unsafe {
        sys::cuLaunchKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_mem_bytes,
            s,
            params,
            core::ptr::null_mut(),
        )
    }
}

/// The raw result type, for callers that classify results themselves.
pub(crate) type CuResult = sys::CUresult;

/// Whether a raw result is success.
#[inline(always)]
pub(crate) fn is_success(r: CuResult) -> bool {
    r == sys::CUresult::CUDA_SUCCESS
}

/// Device attributes the runtime reads.
pub(crate) use sys::CUdevice_attribute as DeviceAttr;
/// Function attributes the runtime reads.
pub(crate) use sys::CUfunction_attribute as FuncAttr;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jit_log_uses_the_size_the_driver_wrote_back() {
        let mut buf = b"ptxas fatal   : Unresolved extern function 'f'\n".to_vec();
        let used = buf.len();
        buf.resize(64, 0);
        assert_eq!(
            jit_log(buf.clone(), used),
            "ptxas fatal   : Unresolved extern function 'f'"
        );
        // Cut at the size written back, and at a NUL inside it; a size past the buffer clamps.
        assert_eq!(jit_log(buf.clone(), 5), "ptxas");
        assert_eq!(
            jit_log(buf.clone(), 1 << 20),
            "ptxas fatal   : Unresolved extern function 'f'"
        );
        assert_eq!(jit_log(vec![0; 16], 16), "");
    }

    fn code(code: u32, name: &'static str) -> CudaError {
        CudaError {
            code,
            name,
            description: "",
        }
    }

    #[test]
    fn every_call_reporting_a_sticky_fault_gives_a_kernel_fault() {
        for (c, name) in [
            (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
            (702, "CUDA_ERROR_LAUNCH_TIMEOUT"),
            (710, "CUDA_ERROR_ASSERT"),
            (714, "CUDA_ERROR_HARDWARE_STACK_ERROR"),
            (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
            (716, "CUDA_ERROR_MISALIGNED_ADDRESS"),
            (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
            (718, "CUDA_ERROR_INVALID_PC"),
            (719, "CUDA_ERROR_LAUNCH_FAILED"),
            (721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"),
            (214, "CUDA_ERROR_ECC_UNCORRECTABLE"),
            (226, "CUDA_ERROR_CONTAINED"),
        ] {
            match error_of("cuMemcpyDtoHAsync", code(c, name), Some("write_null")) {
                Error::KernelFault {
                    call,
                    error,
                    last_launch,
                } => {
                    assert_eq!(call, "cuMemcpyDtoHAsync");
                    assert_eq!(error.code(), c);
                    assert_eq!(last_launch.as_deref(), Some("write_null"));
                }
                other => panic!("{name}: unexpected {other}"),
            }
        }
        for (c, name) in [
            (1, "CUDA_ERROR_INVALID_VALUE"),
            (2, "CUDA_ERROR_OUT_OF_MEMORY"),
            (218, "CUDA_ERROR_INVALID_PTX"),
            (701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
            (720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
        ] {
            assert!(
                matches!(
                    error_of("cuMemAllocAsync", code(c, name), Some("k")),
                    Error::Driver {
                        call: "cuMemAllocAsync",
                        context: None,
                        ..
                    }
                ),
                "{name}"
            );
        }
    }
}
