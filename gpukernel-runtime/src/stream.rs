//! Streams, and the stream ordering of buffers ([`Tracker`]).

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::context::{Context, ContextInner, LastLaunch};
use crate::driver::{self, CUstream};
use crate::error::{Error, Result};
use crate::event::Event;

/// Per-stream state: the raw handle (null on the simulator) and the last launch on it.
pub(crate) struct StreamState {
    pub(crate) raw: CUstream,
    pub(crate) last_launch: LastLaunch,
}

impl StreamState {
    pub(crate) fn sim() -> Self {
        StreamState {
            raw: core::ptr::null_mut(),
            last_launch: LastLaunch::default(),
        }
    }

    pub(crate) fn cuda(raw: CUstream) -> Self {
        StreamState {
            raw,
            last_launch: LastLaunch::default(),
        }
    }
}

struct OwnedStream {
    state: StreamState,
    ctx: Arc<ContextInner>,
}

// SAFETY: a CUDA stream handle may be used from any thread; the other fields are Sync.
unsafe impl Send for OwnedStream {}
// SAFETY: as above.
unsafe impl Sync for OwnedStream {}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        if !self.ctx.is_sim() && self.ctx.bind().is_ok() {
            // SAFETY: this is the last handle to the stream (buffers that used it hold a clone
            // of it, so they are gone too). Pending work completes before the driver releases
            // it. An error (a faulted context) leaves nothing to clean up.
            let _ = unsafe { driver::stream_destroy(self.state.raw) };
        }
    }
}

#[derive(Clone)]
enum Repr {
    /// The context's default stream (owned by the context).
    Default(Arc<ContextInner>),
    Owned(Arc<OwnedStream>),
}

/// A CUDA stream: work enqueued on it runs in order. Cheap to clone (a shared handle);
/// `Send + Sync`. On the simulator every operation runs to completion before returning.
#[derive(Clone)]
pub struct Stream {
    repr: Repr,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.ctx().device)
            .field("default", &matches!(self.repr, Repr::Default(_)))
            .field("raw", &self.raw())
            .finish()
    }
}

impl Stream {
    pub(crate) fn default_of(ctx: Arc<ContextInner>) -> Stream {
        Stream {
            repr: Repr::Default(ctx),
        }
    }

    pub(crate) fn create(ctx: Arc<ContextInner>, priority: i32) -> Result<Stream> {
        let state = if ctx.is_sim() {
            StreamState::sim()
        } else {
            ctx.bind()?;
            // SAFETY: the context is current.
            StreamState::cuda(unsafe { driver::stream_create(priority) }?)
        };
        Ok(Stream {
            repr: Repr::Owned(Arc::new(OwnedStream { state, ctx })),
        })
    }

    #[inline(always)]
    pub(crate) fn ctx(&self) -> &Arc<ContextInner> {
        match &self.repr {
            Repr::Default(c) => c,
            Repr::Owned(o) => &o.ctx,
        }
    }

    #[inline(always)]
    pub(crate) fn state(&self) -> &StreamState {
        match &self.repr {
            Repr::Default(c) => &c.default_stream,
            Repr::Owned(o) => &o.state,
        }
    }

    /// The raw `CUstream` (null on the simulator), for code that calls the driver directly.
    /// It stays valid while any clone of this `Stream` lives.
    #[inline(always)]
    pub fn raw(&self) -> CUstream {
        self.state().raw
    }

    /// The stream's context.
    pub fn context(&self) -> Context {
        Context {
            inner: self.ctx().clone(),
        }
    }

    /// Whether both handles are the same stream.
    #[inline(always)]
    pub fn same_as(&self, other: &Stream) -> bool {
        core::ptr::eq(self.state(), other.state())
    }

    pub(crate) fn is_sim(&self) -> bool {
        self.ctx().is_sim()
    }

    /// The last kernel launched on this stream, if any.
    pub fn last_launch(&self) -> Option<&'static str> {
        self.state().last_launch.get()
    }

    /// Waits until all work on the stream is done (`cuStreamSynchronize`), then reports a kernel
    /// fault ([`Error::KernelFault`], naming the last launch on this stream) or a failed
    /// foreign call ([`Error::ForeignCallFailed`]).
    pub fn synchronize(&self) -> Result<()> {
        self.wait_idle()?;
        crate::module::check_foreign_failures(self, self.last_launch())
    }

    /// `cuStreamSynchronize` with fault classification, without the foreign-call check.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        if self.is_sim() {
            return Ok(());
        }
        // The driver API needs the stream's context current on this thread (which may be a
        // fresh thread that never used the context).
        self.ctx().bind()?;
        // SAFETY: the stream is live while `self` is.
        let r = unsafe { driver::stream_synchronize(self.raw()) };
        sync_result("cuStreamSynchronize", r, self.fault_suspect())
    }

    /// The launch a fault seen by this stream's synchronization is attributed to: the last on
    /// this stream, else the last in its context (a sticky fault of a kernel on another
    /// stream is reported by every later synchronization).
    fn fault_suspect(&self) -> Option<&'static str> {
        self.last_launch().or_else(|| self.ctx().last_launch.get())
    }

    /// Whether all work on the stream is done (`cuStreamQuery`); never blocks.
    pub fn query(&self) -> Result<bool> {
        if self.is_sim() {
            return Ok(true);
        }
        self.ctx().bind()?;
        // SAFETY: the stream is live while `self` is.
        match unsafe { driver::stream_query(self.raw()) } {
            Ok(done) => Ok(done),
            Err(r) => sync_result("cuStreamQuery", r, self.fault_suspect()).map(|()| false),
        }
    }

    /// Makes later work on this stream wait until `event` completes (`cuStreamWaitEvent`).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        crate::context::check_same("Stream::wait_event", "the event", self.ctx(), event.ctx())?;
        if self.is_sim() {
            return Ok(());
        }
        self.ctx().bind()?;
        // SAFETY: both are live and of the same (current) context.
        unsafe { driver::stream_wait_event(self.raw(), event.raw()) }
    }

    /// Records `event` at the current end of this stream (`cuEventRecord`).
    pub fn record_event(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// The stream's priority (`cuStreamGetPriority`); 0 on the simulator.
    pub fn priority(&self) -> Result<i32> {
        if self.is_sim() {
            return Ok(0);
        }
        self.ctx().bind()?;
        // SAFETY: the stream is live while `self` is.
        unsafe { driver::stream_priority(self.raw()) }
    }

    /// Makes this stream wait for the work enqueued so far on `other`.
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        crate::context::check_same(
            "Stream::wait_stream",
            "the other stream",
            self.ctx(),
            other.ctx(),
        )?;
        if self.is_sim() || self.same_as(other) {
            return Ok(());
        }
        self.ctx().bind()?;
        // SAFETY: both streams are live and of the current context.
        unsafe { driver::stream_wait_stream(self.raw(), other.raw()) }
    }
}

/// Turns the raw result of a synchronizing call into `Ok` or the error
/// [`driver::error_of`] makes of it ([`Error::KernelFault`] naming `last_launch`, else
/// [`Error::Driver`]).
pub(crate) fn sync_result(
    call: &'static str,
    r: driver::CuResult,
    last_launch: Option<&'static str>,
) -> Result<()> {
    if driver::is_success(r) {
        return Ok(());
    }
    Err(classify(call, driver::cuda_error(r), last_launch))
}

/// [`driver::error_of`], for callers that hold a `CudaError` already.
#[cold]
pub(crate) fn classify(
    call: &'static str,
    error: crate::error::CudaError,
    last_launch: Option<&'static str>,
) -> Error {
    driver::error_of(call, error, last_launch)
}

/// The streams that may still have work pending on one allocation (a buffer or pinned host
/// memory), so that work on another stream is ordered after it.
///
/// Rule: before work touching the allocation is enqueued on stream `s`, `s` waits (through an
/// event recorded now) on every other stream in the set, and `s` joins the set. Only an
/// access with exclusive use of the whole allocation (`&mut DeviceBuffer`) shrinks the set to
/// `{s}`. Accesses that can run concurrently from several threads (shared borrows, disjoint
/// mutable views) never conflict with one another, and any two conflicting accesses are
/// separated by the end of a borrow, so the later one's events are recorded after the earlier
/// one's work was enqueued. When the set is just `{s}` nothing is done (single-stream use is
/// free apart from one uncontended lock). On the simulator work is synchronous: no-op.
pub(crate) struct Tracker {
    state: Mutex<TrackState>,
}

struct TrackState {
    first: Stream,
    others: Vec<Stream>,
}

impl Tracker {
    pub(crate) fn new(stream: Stream) -> Tracker {
        Tracker {
            state: Mutex::new(TrackState {
                first: stream,
                others: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TrackState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Orders work about to be enqueued on `s` after everything pending on the allocation.
    #[inline]
    pub(crate) fn use_on(&self, s: &Stream) -> Result<()> {
        let mut st = self.lock();
        if st.others.is_empty() && st.first.same_as(s) {
            return Ok(());
        }
        Self::order_after_all(&mut st, s)
    }

    /// As [`use_on`](Self::use_on), for a caller that has exclusive use of the allocation: the
    /// set becomes `{s}`.
    #[inline]
    pub(crate) fn use_exclusive(&self, s: &Stream) -> Result<()> {
        let mut st = self.lock();
        if st.others.is_empty() && st.first.same_as(s) {
            return Ok(());
        }
        Self::order_after_all(&mut st, s)?;
        st.first = s.clone();
        st.others.clear();
        Ok(())
    }

    #[cold]
    fn order_after_all(st: &mut TrackState, s: &Stream) -> Result<()> {
        if s.is_sim() {
            return Ok(());
        }
        s.ctx().bind()?;
        let mut member = false;
        for o in std::iter::once(&st.first).chain(st.others.iter()) {
            if o.same_as(s) {
                member = true;
            } else {
                // SAFETY: both streams are live (held by the set and the caller) and belong
                // to the current context (buffers check the context before tracking).
                unsafe { driver::stream_wait_stream(s.raw(), o.raw()) }?;
            }
        }
        if !member {
            st.others.push(s.clone());
        }
        Ok(())
    }

    /// The stream that host-side operations use for this allocation.
    pub(crate) fn home(&self) -> Stream {
        self.lock().first.clone()
    }

    /// Waits (on the host) for every stream in the set.
    pub(crate) fn wait_all(&self) -> Result<()> {
        let streams: Vec<Stream> = {
            let st = self.lock();
            std::iter::once(&st.first)
                .chain(st.others.iter())
                .cloned()
                .collect()
        };
        for s in &streams {
            s.wait_idle()?;
        }
        Ok(())
    }

    /// For `Drop`: makes the home stream wait for all others, and returns it (the free is then
    /// enqueued there).
    pub(crate) fn join_for_drop(&mut self) -> Result<Stream> {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let home = st.first.clone();
        if !st.others.is_empty() {
            Self::order_after_all(st, &home)?;
            st.others.clear();
        }
        Ok(home)
    }
}
