//! Streams and events.

use core::ffi::{c_int, c_uint};

use cudarc::driver::sys;

use super::{CUevent, CUstream, check};
use crate::error::Result;

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

/// Begins capturing `s` into a new graph, in thread-local mode (only this thread's calls
/// that are unsafe during a capture are refused; other threads are unaffected).
///
/// # Safety
/// A context must be current; `s` is a live stream of it.
pub(crate) unsafe fn stream_begin_capture(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuStreamBeginCapture", unsafe {
        sys::cuStreamBeginCapture_v2(
            s,
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
    })
}

/// Runs `f` with this thread's stream-capture mode relaxed (`cuThreadExchangeStreamCaptureMode`),
/// restoring the previous mode afterwards: calls that are unsafe during a capture (allocations,
/// `cuCtxEnablePeerAccess`) are then allowed from this thread. For libraries that set up
/// resources lazily inside an operation that may be captured (NCCL connects its peers at a
/// communicator's first collective of each algorithm, also inside a capture).
#[cfg(feature = "nccl")]
pub(crate) fn with_relaxed_capture_mode<R>(f: impl FnOnce() -> R) -> Result<R> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: a valid in/out pointer; the mode is this thread's alone.
    check("cuThreadExchangeStreamCaptureMode", unsafe {
        sys::cuThreadExchangeStreamCaptureMode(&mut mode)
    })?;
    let r = f();
    // SAFETY: as above; puts the thread's previous mode back.
    check("cuThreadExchangeStreamCaptureMode", unsafe {
        sys::cuThreadExchangeStreamCaptureMode(&mut mode)
    })?;
    Ok(r)
}

/// Ends the capture of `s`, returning the captured graph (owned by the caller).
///
/// # Safety
/// As [`stream_begin_capture`], on the thread that began it.
pub(crate) unsafe fn stream_end_capture(s: CUstream) -> Result<sys::CUgraph> {
    let mut g: sys::CUgraph = core::ptr::null_mut();
    // SAFETY: valid out-pointer; forwarded from the caller.
    check("cuStreamEndCapture", unsafe {
        sys::cuStreamEndCapture(s, &mut g)
    })?;
    Ok(g)
}

/// The node a capturing stream last added (its one dependency for the next operation), or
/// `None` when the capture has none yet.
///
/// # Safety
/// As [`stream_begin_capture`], on a capturing stream.
pub(crate) unsafe fn stream_capture_tail(s: CUstream) -> Result<Option<sys::CUgraphNode>> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: sys::cuuint64_t = 0;
    let mut graph: sys::CUgraph = core::ptr::null_mut();
    let mut deps: *const sys::CUgraphNode = core::ptr::null();
    let mut n: usize = 0;
    // SAFETY: valid out-pointers; the edge data is optional (null).
    check("cuStreamGetCaptureInfo", unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            s,
            &mut status,
            &mut id,
            &mut graph,
            &mut deps,
            core::ptr::null_mut(),
            &mut n,
        )
    })?;
    if n == 0 || deps.is_null() {
        return Ok(None);
    }
    // SAFETY: the driver returned `n` nodes at `deps`, valid until the next call on `s`; the
    // last one is the newest (a single-stream capture has exactly one).
    Ok(Some(unsafe { *deps.add(n - 1) }))
}

/// The graph a capturing stream records into and the nodes its next operation depends on.
///
/// # Safety
/// As [`stream_begin_capture`], on a capturing stream.
pub(crate) unsafe fn stream_capture_info(
    s: CUstream,
) -> Result<(sys::CUgraph, Vec<sys::CUgraphNode>)> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: sys::cuuint64_t = 0;
    let mut graph: sys::CUgraph = core::ptr::null_mut();
    let mut deps: *const sys::CUgraphNode = core::ptr::null();
    let mut n: usize = 0;
    // SAFETY: valid out-pointers; the edge data is optional (null).
    check("cuStreamGetCaptureInfo", unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            s,
            &mut status,
            &mut id,
            &mut graph,
            &mut deps,
            core::ptr::null_mut(),
            &mut n,
        )
    })?;
    let deps = if n == 0 || deps.is_null() {
        Vec::new()
    } else {
        // SAFETY: the driver returned `n` nodes at `deps`, valid until the next call on `s`.
        unsafe { core::slice::from_raw_parts(deps, n) }.to_vec()
    };
    Ok((graph, deps))
}

/// Makes `node` the one dependency of the capture's next operation (after adding it to the
/// capture's graph by hand).
///
/// # Safety
/// As [`stream_begin_capture`], on a capturing stream; `node` is a node of its graph.
pub(crate) unsafe fn stream_capture_set_tail(s: CUstream, node: sys::CUgraphNode) -> Result<()> {
    let mut node = node;
    // SAFETY: forwarded from the caller; one dependency, no edge data.
    check("cuStreamUpdateCaptureDependencies", unsafe {
        sys::cuStreamUpdateCaptureDependencies_v2(
            s,
            &mut node,
            core::ptr::null(),
            1,
            sys::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES as u32,
        )
    })
}
