//! Streams, and the stream ordering of buffers ([`Tracker`]).

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::backend::{LastLaunch, StreamHandle};
use crate::context::{Context, ContextInner};
use crate::error::Result;
use crate::event::Event;

/// Per-stream state: the backend's handle and the last launch on it.
pub(crate) struct StreamState {
    pub(crate) handle: StreamHandle,
    pub(crate) last_launch: LastLaunch,
}

// SAFETY: a stream handle may be used from any thread (the backend binds its context); the
// last-launch record is atomic.
unsafe impl Send for StreamState {}
// SAFETY: as above.
unsafe impl Sync for StreamState {}

impl StreamState {
    pub(crate) fn new(handle: StreamHandle) -> Self {
        StreamState {
            handle,
            last_launch: LastLaunch::default(),
        }
    }
}

struct OwnedStream {
    state: StreamState,
    ctx: Arc<ContextInner>,
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        // SAFETY: this is the last handle to the stream (buffers that used it hold a clone of
        // it, so they are gone too).
        unsafe { self.ctx.backend.stream_destroy(self.state.handle) };
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
        let state = StreamState::new(ctx.backend.stream_create(priority)?);
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
    pub fn raw(&self) -> cudarc::driver::sys::CUstream {
        if self.ctx().backend.is_simulator() {
            return core::ptr::null_mut();
        }
        self.handle().0.cast()
    }

    /// The backend's handle of this stream.
    #[inline(always)]
    pub(crate) fn handle(&self) -> StreamHandle {
        self.state().handle
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

    /// The last kernel launched on this stream, if any.
    pub fn last_launch(&self) -> Option<&'static str> {
        self.state().last_launch.get()
    }

    /// Waits until all work on the stream is done (`cuStreamSynchronize`), then reports a kernel
    /// fault ([`Error::KernelFault`], naming the last launch on this stream) or a failed
    /// foreign call ([`Error::ForeignCallFailed`]).
    pub fn synchronize(&self) -> Result<()> {
        self.wait_idle()?;
        crate::foreign::check(self, crate::foreign::Done::Streams(&[self.handle()]))
    }

    /// `cuStreamSynchronize` with fault classification, without the foreign-call check.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        self.ctx()
            .backend
            .stream_synchronize(self.handle(), self.fault_suspect())
    }

    /// The launch a fault seen by this stream's synchronization is attributed to: the last on
    /// this stream, else the last in its context (a sticky fault of a kernel on another
    /// stream is reported by every later synchronization).
    fn fault_suspect(&self) -> Option<&'static str> {
        self.last_launch().or_else(|| self.ctx().last_launch())
    }

    /// Whether all work on the stream is done (`cuStreamQuery`); never blocks.
    pub fn query(&self) -> Result<bool> {
        self.ctx()
            .backend
            .stream_query(self.handle(), self.fault_suspect())
    }

    /// Makes later work on this stream wait until `event` completes (`cuStreamWaitEvent`).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        crate::context::check_same("Stream::wait_event", "the event", self.ctx(), event.ctx())?;
        self.ctx()
            .backend
            .stream_wait_event(self.handle(), event.handle())
    }

    /// Records `event` at the current end of this stream (`cuEventRecord`).
    pub fn record_event(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// The stream's priority (`cuStreamGetPriority`); 0 on the simulator.
    pub fn priority(&self) -> Result<i32> {
        self.ctx().backend.stream_priority(self.handle())
    }

    /// Makes this stream wait for the work enqueued so far on `other`.
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        crate::context::check_same(
            "Stream::wait_stream",
            "the other stream",
            self.ctx(),
            other.ctx(),
        )?;
        if self.same_as(other) {
            return Ok(());
        }
        self.ctx()
            .backend
            .stream_wait_stream(self.handle(), other.handle())
    }
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
        let mut member = false;
        for o in std::iter::once(&st.first).chain(st.others.iter()) {
            if o.same_as(s) {
                member = true;
            } else {
                // Both streams are live (held by the set and the caller) and belong to one
                // context (buffers check the context before tracking).
                s.ctx().backend.stream_wait_stream(s.handle(), o.handle())?;
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

    /// Waits (on the host) for every stream in the set and reports a foreign-call failure of
    /// their work: for host reads of the allocation.
    pub(crate) fn synchronize_all(&self) -> Result<()> {
        for s in &self.streams() {
            s.synchronize()?;
        }
        Ok(())
    }

    /// The handles of the streams in the set.
    pub(crate) fn handles(&self) -> Vec<crate::backend::StreamHandle> {
        let st = self.lock();
        std::iter::once(&st.first)
            .chain(st.others.iter())
            .map(Stream::handle)
            .collect()
    }

    fn streams(&self) -> Vec<Stream> {
        let st = self.lock();
        std::iter::once(&st.first)
            .chain(st.others.iter())
            .cloned()
            .collect()
    }

    /// Waits (on the host) for every stream in the set (for frees: reports nothing but a
    /// failed wait).
    pub(crate) fn wait_all(&self) -> Result<()> {
        for s in &self.streams() {
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
