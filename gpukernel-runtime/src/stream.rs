//! Streams, and the stream ordering of buffers ([`Tracker`]).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{LastLaunch, StreamHandle};
use crate::context::{Context, ContextInner};
use crate::error::Result;
use crate::event::Event;

/// Per-stream state: the backend's handle and the last launch on it.
pub(crate) struct StreamState {
    pub(crate) handle: StreamHandle,
    pub(crate) last_launch: LastLaunch,
    /// Whether the stream is being captured into a graph (`Stream::capture`).
    pub(crate) capturing: AtomicBool,
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
            capturing: AtomicBool::new(false),
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

    /// An identity for bookkeeping: equal for clones of one stream.
    #[inline(always)]
    pub(crate) fn id(&self) -> usize {
        core::ptr::from_ref(self.state()).addr()
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

    /// Whether the stream is being captured into a graph ([`Stream::capture`]).
    pub fn is_capturing(&self) -> bool {
        self.state().capturing.load(Ordering::Acquire)
    }

    /// [`Error::StreamCapturing`](crate::Error::StreamCapturing) when the stream is being
    /// captured: called before anything reaches the driver, so the capture is left intact.
    #[inline(always)]
    pub(crate) fn not_capturing(&self, operation: &'static str) -> Result<()> {
        if self.is_capturing() {
            Err(crate::error::Error::StreamCapturing { operation })
        } else {
            Ok(())
        }
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
        self.not_capturing("Stream::synchronize")?;
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
        self.not_capturing("Stream::query")?;
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

    /// Makes later work on this stream wait for the work enqueued so far on `other`, which may
    /// be a stream of another context: then an event of `other`'s context is recorded there
    /// and waited for here (`cuStreamWaitEvent` accepts another device's event).
    pub(crate) fn order_after(&self, other: &Stream) -> Result<()> {
        if Arc::ptr_eq(self.ctx(), other.ctx()) {
            return self
                .ctx()
                .backend
                .stream_wait_stream(self.handle(), other.handle());
        }
        let theirs = &other.ctx().backend;
        let e = theirs.event_create(false, false)?;
        let r = theirs
            .event_record(e, other.handle())
            .and_then(|()| self.ctx().backend.stream_wait_event(self.handle(), e));
        // SAFETY: made above and not used after; a pending event is released once complete.
        unsafe { theirs.event_destroy(e) };
        r
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
