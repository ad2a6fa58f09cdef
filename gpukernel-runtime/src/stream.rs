//! Streams, and the stream ordering of buffers ([`Tracker`]).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    /// The streams this stream's work was ordered after (see [`Stream::note_after`]).
    pub(crate) after: std::sync::Mutex<After>,
    /// How many operations are between their memory uses' ordering and their hand-over to
    /// the backend ([`Enqueuing`]).
    enqueuing: AtomicUsize,
}

/// The streams (by handle address) whose work, up to some point, happens before later work of
/// a stream: every stream it waited for, and what those had waited for (cumulative, never
/// trimmed: an over-approximation). What a foreign-call check on the stream concerns.
#[derive(Debug, Default, Clone)]
pub(crate) struct After {
    streams: Vec<usize>,
    /// Past [`After::MAX`] streams: every stream.
    all: bool,
}

impl After {
    const MAX: usize = 64;

    fn add(&mut self, s: usize) {
        if self.all || self.streams.contains(&s) {
            return;
        }
        if self.streams.len() == Self::MAX {
            self.all = true;
            self.streams = Vec::new();
        } else {
            self.streams.push(s);
        }
    }

    fn merge(&mut self, other: &After) {
        if other.all {
            self.all = true;
            self.streams = Vec::new();
        }
        for &s in &other.streams {
            self.add(s);
        }
    }

    /// Whether work of stream `s` happens before (`None`: of a stream not known, or of
    /// several: assumed to).
    pub(crate) fn includes(&self, s: Option<usize>) -> bool {
        self.all || s.is_none_or(|s| self.streams.contains(&s))
    }

    /// Everything: a context-wide observation.
    pub(crate) fn everything() -> After {
        After {
            streams: Vec::new(),
            all: true,
        }
    }
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
            after: std::sync::Mutex::new(After::default()),
            enqueuing: AtomicUsize::new(0),
        }
    }
}

/// An operation being enqueued on a stream: held from before its memory uses are ordered (a
/// tracker records them) until the backend has the work. While any is held, work recorded on
/// the stream may not exist yet, so an event recorded there now may not cover it: a tracker
/// that orders another stream after this one then does not count the recorded uses as waited
/// for (`memory/tracker.rs`). Every tracker use takes one (`Tracker::use_on`), and it
/// dereferences to the stream, so an operation takes it first and works through it:
/// `let s = &stream.enqueuing();`.
#[doc(hidden)]
#[allow(
    missing_debug_implementations,
    reason = "hidden plumbing of the argument traits"
)]
pub struct Enqueuing<'s> {
    stream: &'s Stream,
    /// The stream's context and [`Stream::id`], read once per operation (a launch compares
    /// them for each buffer argument, between atomic loads that keep the compiler from
    /// reusing what it read through the stream).
    pub(crate) ctx: &'s Arc<ContextInner>,
    pub(crate) id: usize,
}

impl core::ops::Deref for Enqueuing<'_> {
    type Target = Stream;

    #[inline(always)]
    fn deref(&self) -> &Stream {
        self.stream
    }
}

impl Drop for Enqueuing<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: the enqueue happened before a tracker that reads 0 records its event.
        self.stream
            .state()
            .enqueuing
            .fetch_sub(1, Ordering::Release);
    }
}

/// [`Enqueuing`] held past the call that ordered the work, for work enqueued later (a
/// collective group's operations, enqueued when the group ends).
pub(crate) struct InFlight {
    stream: Stream,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.stream
            .state()
            .enqueuing
            .fetch_sub(1, Ordering::Release);
    }
}

struct OwnedStream {
    state: StreamState,
    ctx: Arc<ContextInner>,
}

impl Drop for OwnedStream {
    /// Dropped inside a graph host node the stream is leaked: no backend call is allowed there.
    fn drop(&mut self) {
        if crate::graph::in_host_node() {
            return;
        }
        // SAFETY: this is the last handle to the stream (buffers that used it hold a clone of
        // it, so they are gone too).
        unsafe { self.ctx.backend.stream_destroy(self.state.handle) };
    }
}

/// A stream another library owns (see `interop`): never destroyed here; `_owner` keeps it
/// alive.
struct BorrowedStream {
    state: StreamState,
    ctx: Arc<ContextInner>,
    _owner: Box<dyn std::any::Any + Send + Sync>,
}

#[derive(Clone)]
enum Repr {
    /// The context's default stream (owned by the context).
    Default(Arc<ContextInner>),
    Owned(Arc<OwnedStream>),
    Borrowed(Arc<BorrowedStream>),
}

/// A CUDA stream: work enqueued on it runs in order. Cheap to clone (a shared handle);
/// `Send + Sync`. On the simulator every operation runs to completion before returning.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let stream = ctx.new_stream()?;
/// let x = stream.htod_copy(&[1.0f32; 512])?;
/// let mut y = stream.alloc_zeros::<f32>(512)?;
/// stream.launch(&module.kernel(saxpy)?, LaunchConfig::for_elements(512)?, (3.0f32, &x, &mut y))?;
/// stream.synchronize()?; // copies, launch: in order on `stream`
/// assert_eq!(y.to_host_vec()?[0], 3.0);
/// # Ok(()) }
/// ```
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
        crate::graph::not_in_host_node("Context::new_stream")?;
        let state = StreamState::new(ctx.backend.stream_create(priority)?);
        Ok(Stream {
            repr: Repr::Owned(Arc::new(OwnedStream { state, ctx })),
        })
    }

    /// A stream around another library's handle, which `owner` keeps alive (it is dropped
    /// with the last clone of the returned stream; the handle is never destroyed here).
    ///
    /// # Safety
    /// `handle` is a live stream of `ctx`'s backend while `owner` lives.
    #[cfg_attr(
        not(feature = "cudarc-interop"),
        allow(dead_code, reason = "used by the cudarc interop feature")
    )]
    pub(crate) unsafe fn borrowed(
        ctx: Arc<ContextInner>,
        handle: StreamHandle,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Stream {
        Stream {
            repr: Repr::Borrowed(Arc::new(BorrowedStream {
                state: StreamState::new(handle),
                ctx,
                _owner: owner,
            })),
        }
    }

    #[inline(always)]
    pub(crate) fn ctx(&self) -> &Arc<ContextInner> {
        match &self.repr {
            Repr::Default(c) => c,
            Repr::Owned(o) => &o.ctx,
            Repr::Borrowed(b) => &b.ctx,
        }
    }

    #[inline(always)]
    pub(crate) fn state(&self) -> &StreamState {
        match &self.repr {
            Repr::Default(c) => &c.default_stream,
            Repr::Owned(o) => &o.state,
            Repr::Borrowed(b) => &b.state,
        }
    }

    /// The raw `CUstream` (null on the simulator), for code that calls the driver directly.
    /// It stays valid while any clone of this `Stream` lives.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let raw = ctx.new_stream()?.raw(); // for a library call that takes a CUstream (e.g. cuBLAS)
    /// assert!(raw.is_null()); // on the simulator
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// assert_eq!(stream.context().device(), ctx.device());
    /// # Ok(()) }
    /// ```
    pub fn context(&self) -> Context {
        Context {
            inner: self.ctx().clone(),
        }
    }

    /// Marks an operation as being enqueued on this stream until the returned guard drops
    /// (after the backend call that enqueues it): see [`Enqueuing`].
    #[inline(always)]
    pub(crate) fn enqueuing(&self) -> Enqueuing<'_> {
        // SeqCst, paired with the trackers' SeqCst reads of their grant and of this count: a
        // use that passed a grant check before the grant was withdrawn is seen in flight here.
        self.state().enqueuing.fetch_add(1, Ordering::SeqCst);
        Enqueuing {
            stream: self,
            ctx: self.ctx(),
            id: self.id(),
        }
    }

    /// [`enqueuing`](Self::enqueuing) until the returned value drops, for work the backend
    /// enqueues after the ordering call returns.
    pub(crate) fn in_flight(&self) -> InFlight {
        self.state().enqueuing.fetch_add(1, Ordering::SeqCst);
        InFlight {
            stream: self.clone(),
        }
    }

    /// Whether an operation may be between the ordering of its memory uses and its enqueue on
    /// this stream (another thread's, or the caller's own): then an event recorded on the
    /// stream now may not cover every use the trackers recorded for it.
    #[inline]
    pub(crate) fn enqueuing_now(&self) -> bool {
        self.state().enqueuing.load(Ordering::SeqCst) != 0
    }

    /// Waits (spinning, at most `limit`) until no operation is being enqueued on this stream;
    /// returns whether that moment came. An operation holds its guard for about one driver
    /// call, so one thread launching in a loop leaves such moments between its launches;
    /// operations enqueued later (a collective group's, a cudarc view's) or the caller's own
    /// may not end in time: then `false`, and the caller assumes work in flight.
    #[cold]
    pub(crate) fn settle_enqueuing(&self, limit: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        loop {
            for _ in 0..64 {
                if !self.enqueuing_now() {
                    return true;
                }
                core::hint::spin_loop();
            }
            if start.elapsed() >= limit {
                return false;
            }
        }
    }

    /// An identity for bookkeeping: equal for clones of one stream.
    #[inline(always)]
    pub(crate) fn id(&self) -> usize {
        core::ptr::from_ref(self.state()).addr()
    }

    /// Whether both handles are the same stream.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let a = ctx.new_stream()?;
    /// assert!(a.same_as(&a.clone()));
    /// assert!(!a.same_as(&ctx.new_stream()?));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn same_as(&self, other: &Stream) -> bool {
        core::ptr::eq(self.state(), other.state())
    }

    /// The last kernel launched on this stream, if any.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let mut out = stream.alloc_zeros::<u32>(32)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(32)?, (&mut out,))?;
    /// assert_eq!(stream.last_launch(), Some("iota"));
    /// # Ok(()) }
    /// ```
    pub fn last_launch(&self) -> Option<&'static str> {
        self.state().last_launch.get()
    }

    /// Whether the stream is being captured into a graph ([`Stream::capture`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let graph = stream.capture("empty", |c| {
    ///     assert!(c.raw_stream() == stream.raw() && stream.is_capturing());
    ///     Ok(())
    /// })?;
    /// assert!(!stream.is_capturing());
    /// # Ok(()) }
    /// ```
    pub fn is_capturing(&self) -> bool {
        self.state().capturing.load(Ordering::Acquire)
    }

    /// [`Error::StreamCapturing`](crate::Error::StreamCapturing) when the stream is being
    /// captured: called before anything reaches the driver, so the capture is left intact.
    #[inline(always)]
    pub(crate) fn not_capturing(&self, operation: &'static str) -> Result<()> {
        crate::graph::not_in_host_node(operation)?;
        if self.is_capturing() {
            Err(crate::error::Error::StreamCapturing { operation })
        } else {
            Ok(())
        }
    }

    /// Waits until all work on the stream is done (`cuStreamSynchronize`), then reports a kernel
    /// fault ([`Error::KernelFault`](crate::Error::KernelFault), naming the last launch on this stream) or a failed
    /// foreign call ([`Error::ForeignCallFailed`](crate::Error::ForeignCallFailed)).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let mut out = stream.alloc_zeros::<u32>(1024)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut out,))?;
    /// stream.synchronize()?; // a fault of `iota` would be returned here
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.wait_idle()?;
        crate::foreign::check(self)
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream()?;
    /// let buf = stream.alloc_zeros::<u8>(1 << 20)?;
    /// if !stream.query()? {
    ///     // still running: do host work, then synchronize
    /// }
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn query(&self) -> Result<bool> {
        self.not_capturing("Stream::query")?;
        self.ctx()
            .backend
            .stream_query(self.handle(), self.fault_suspect())
    }

    /// Makes later work on this stream wait until `event` completes (`cuStreamWaitEvent`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (a, b) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let x = a.htod_copy(&[1.0f32; 64])?;
    /// let copied = ctx.new_event()?;
    /// a.record_event(&copied)?;
    /// b.wait_event(&copied)?; // b's later work starts after the copy on a
    /// # Ok(()) }
    /// ```
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        crate::graph::not_in_host_node("Stream::wait_event")?;
        crate::context::check_same("Stream::wait_event", "the event", self.ctx(), event.ctx())?;
        self.note_after_set(&event.happened_before());
        self.ctx()
            .backend
            .stream_wait_event(self.handle(), event.handle())
    }

    /// Records `event` at the current end of this stream (`cuEventRecord`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let done = ctx.new_event()?;
    /// let buf = stream.alloc_zeros::<f32>(256)?;
    /// stream.record_event(&done)?; // same as done.record(&stream)
    /// done.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn record_event(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// The stream's priority (`cuStreamGetPriority`); 0 on the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let stream = ctx.new_stream_with_priority(0)?;
    /// println!("priority {}", stream.priority()?);
    /// # Ok(()) }
    /// ```
    pub fn priority(&self) -> Result<i32> {
        crate::graph::not_in_host_node("Stream::priority")?;
        self.ctx().backend.stream_priority(self.handle())
    }

    /// Makes later work on this stream wait for the work enqueued so far on `other`, which may
    /// be a stream of another context: then an event of `other`'s context is recorded there
    /// and waited for here (`cuStreamWaitEvent` accepts another device's event).
    pub(crate) fn order_after(&self, other: &Stream) -> Result<()> {
        self.note_after(other);
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (upload, compute) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let x = upload.htod_copy(&[2.0f32; 128])?;
    /// compute.wait_stream(&upload)?; // compute's later work runs after the upload
    /// # Ok(()) }
    /// ```
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        crate::graph::not_in_host_node("Stream::wait_stream")?;
        crate::context::check_same(
            "Stream::wait_stream",
            "the other stream",
            self.ctx(),
            other.ctx(),
        )?;
        if self.same_as(other) {
            return Ok(());
        }
        self.note_after(other);
        self.ctx()
            .backend
            .stream_wait_stream(self.handle(), other.handle())
    }

    /// Notes that this stream's later work happens after the work enqueued so far on `other`
    /// (and what that work happened after), for the foreign-call check (`crate::foreign`).
    pub(crate) fn note_after(&self, other: &Stream) {
        if self.same_as(other) {
            return;
        }
        let theirs = other
            .state()
            .after
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut mine = self.state().after.lock().unwrap_or_else(|p| p.into_inner());
        mine.add(other.handle().0.addr());
        mine.merge(&theirs);
    }

    /// Notes that this stream's later work happens after the work of `streams` (an event's).
    pub(crate) fn note_after_set(&self, streams: &After) {
        self.state()
            .after
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merge(streams);
    }

    /// What a foreign-call check after waiting for this stream concerns: its own work and
    /// the streams it was ordered after.
    pub(crate) fn happened_before(&self) -> After {
        let mut a = self
            .state()
            .after
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        a.add(self.handle().0.addr());
        a
    }
}
