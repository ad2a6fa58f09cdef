//! Events: markers in a stream, for ordering between streams and for timing.

use std::fmt;
use std::sync::Arc;

use core::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::backend::{EventHandle, LastLaunch};
use crate::context::ContextInner;
use crate::error::Result;
use crate::stream::Stream;

/// A CUDA event (`cuEventCreate`): record it on a stream, wait for it, make another stream
/// wait for it, or measure the time between two of them. `Send + Sync`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let (producer, consumer) = (ctx.new_stream()?, ctx.new_stream()?);
/// let data = producer.htod_copy(&[1.0f32; 256])?;
/// let ready = ctx.new_event()?;
/// ready.record(&producer)?;
/// consumer.wait_event(&ready)?; // consumer's later work starts after the copy
/// # Ok(()) }
/// ```
pub struct Event {
    ctx: Arc<ContextInner>,
    handle: EventHandle,
    timing: bool,
    /// Whether other processes can open it (`CU_EVENT_INTERPROCESS`; see `crate::ipc`).
    pub(crate) interprocess: bool,
    /// The last launch on the stream when the event was recorded (for fault messages).
    recorded_after: LastLaunch,
    /// The stream it was last recorded on (null before), for fault messages.
    recorded_on: AtomicPtr<c_void>,
    /// The streams whose work so far happens before the event (that stream's
    /// `Stream::happened_before` at the record), for foreign-call checks.
    before: std::sync::Mutex<crate::stream::After>,
}

// SAFETY: events may be used from any thread (the backend binds its context); the other
// fields are Sync.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.ctx.device)
            .field("timing", &self.timing)
            .finish()
    }
}

impl Event {
    pub(crate) fn create(
        ctx: Arc<ContextInner>,
        timing: bool,
        blocking_sync: bool,
    ) -> Result<Event> {
        let handle = ctx.backend.event_create(timing, blocking_sync)?;
        Ok(Event::from_handle(ctx, handle, timing, false))
    }

    /// An event around a handle the backend made (interprocess events, opened IPC events);
    /// the event destroys it when dropped.
    pub(crate) fn from_handle(
        ctx: Arc<ContextInner>,
        handle: EventHandle,
        timing: bool,
        interprocess: bool,
    ) -> Event {
        Event {
            ctx,
            handle,
            timing,
            interprocess,
            recorded_after: LastLaunch::default(),
            recorded_on: AtomicPtr::new(core::ptr::null_mut()),
            before: std::sync::Mutex::new(crate::stream::After::default()),
        }
    }

    pub(crate) fn ctx(&self) -> &Arc<ContextInner> {
        &self.ctx
    }

    pub(crate) fn handle(&self) -> EventHandle {
        self.handle
    }

    /// The raw `CUevent` (meaningless on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let event = ctx.new_event()?;
    /// let raw = event.raw(); // for a library that takes a CUevent, or a driver call not wrapped here
    /// # Ok(()) }
    /// ```
    pub fn raw(&self) -> cudarc::driver::sys::CUevent {
        if self.ctx.backend.is_simulator() {
            return core::ptr::null_mut();
        }
        self.handle.0.cast()
    }

    /// Records the event at the current end of `stream` (`cuEventRecord`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let event = ctx.new_event()?;
    /// let buf = stream.htod_copy(&[0u8; 4096])?;
    /// event.record(&stream)?; // marks the point after the copy
    /// event.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn record(&self, stream: &Stream) -> Result<()> {
        crate::graph::not_in_host_node("Event::record")?;
        crate::context::check_same("Event::record", "the stream", &self.ctx, stream.ctx())?;
        self.recorded_after.copy_from(&stream.state().last_launch);
        self.recorded_on.store(stream.handle().0, Ordering::Relaxed);
        *self.before.lock().unwrap_or_else(|p| p.into_inner()) = stream.happened_before();
        self.ctx.backend.event_record(self.handle, stream.handle())
    }

    /// Notes a record by a graph node launched on `stream` (after the launch was enqueued):
    /// what [`record`](Self::record) notes, for fault messages and foreign-call checks.
    pub(crate) fn note_recorded(&self, stream: &Stream) {
        self.recorded_after.copy_from(&stream.state().last_launch);
        self.recorded_on.store(stream.handle().0, Ordering::Relaxed);
        *self.before.lock().unwrap_or_else(|p| p.into_inner()) = stream.happened_before();
    }

    /// The launch a fault seen through this event is attributed to: the last one on the
    /// recorded stream before the event, else the last in the context.
    fn fault_suspect(&self) -> Option<&'static str> {
        self.recorded_after.get().or_else(|| self.ctx.last_launch())
    }

    /// Waits until the work recorded before the event is done (`cuEventSynchronize`); a kernel
    /// fault is reported as [`Error::KernelFault`](crate::Error::KernelFault), a failed
    /// foreign call as [`Error::ForeignCallFailed`](crate::Error::ForeignCallFailed).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let done = ctx.new_event()?;
    /// let out = stream.alloc_zeros::<u32>(64)?;
    /// done.record(&stream)?;
    /// done.synchronize()?; // the host waits here for the allocation and everything before it
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::not_in_host_node("Event::synchronize")?;
        self.ctx
            .backend
            .event_synchronize(self.handle, self.fault_suspect())?;
        crate::foreign::check_context(&self.ctx, &self.happened_before())
    }

    /// The streams whose work so far happens before the event: the stream it was recorded on
    /// and what that stream had waited for.
    pub(crate) fn happened_before(&self) -> crate::stream::After {
        self.before
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the work recorded before the event is done (`cuEventQuery`); never blocks.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let done = ctx.new_event()?;
    /// done.record(&stream)?;
    /// while !done.query()? {
    ///     std::thread::yield_now(); // do host work meanwhile
    /// }
    /// # Ok(()) }
    /// ```
    pub fn query(&self) -> Result<bool> {
        crate::graph::not_in_host_node("Event::query")?;
        self.ctx
            .backend
            .event_query(self.handle, self.fault_suspect())
    }

    /// Milliseconds from `self` (the start) to `end` (`cuEventElapsedTime`). Both must have
    /// been recorded with timing enabled; waits for `end` first.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    /// start.record(&stream)?;
    /// let mut out = stream.alloc_zeros::<u32>(1 << 16)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1 << 16)?, (&mut out,))?;
    /// end.record(&stream)?;
    /// println!("iota took {:.3} ms", start.elapsed_ms(&end)?);
    /// # Ok(()) }
    /// ```
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        crate::context::check_same("Event::elapsed_ms", "the end event", &self.ctx, &end.ctx)?;
        end.synchronize()?;
        self.ctx.backend.event_elapsed(self.handle, end.handle)
    }
}

impl Drop for Event {
    /// Dropped inside a graph host node the event is leaked: no backend call is allowed there.
    fn drop(&mut self) {
        if crate::graph::in_host_node() {
            return;
        }
        // SAFETY: the event is not used after this; destroying a pending event is allowed.
        unsafe { self.ctx.backend.event_destroy(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use crate::{Context, Device, Error};

    /// Synchronizing, querying and timing from a thread that never made the context current.
    fn sync_from_a_fresh_thread(ctx: &Context) {
        let s = ctx.new_stream().unwrap();
        let (a, b) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
        a.record(&s).unwrap();
        b.record(&s).unwrap();
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    s.synchronize().unwrap();
                    assert!(s.query().unwrap());
                    s.priority().unwrap();
                    b.synchronize().unwrap();
                    assert!(b.query().unwrap());
                    assert!(a.elapsed_ms(&b).unwrap() >= 0.0);
                    ctx.default_stream().synchronize().unwrap();
                })
                .join()
                .unwrap();
        });
    }

    #[test]
    fn sync_from_a_fresh_thread_on_the_simulator() {
        sync_from_a_fresh_thread(&Device::simulator().primary_context().unwrap());
    }

    #[test]
    #[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
    fn sync_from_a_fresh_thread_on_the_gpu() {
        sync_from_a_fresh_thread(&Device::get(0).unwrap().primary_context().unwrap());
    }

    #[test]
    fn events_and_streams_on_the_simulator() {
        let ctx = Device::simulator().primary_context().unwrap();
        let s = ctx.new_stream_with_priority(-1).unwrap();
        assert_eq!(s.priority().unwrap(), 0);
        assert_eq!(ctx.stream_priority_range().unwrap(), (0, 0));
        let (a, b) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
        assert!(matches!(
            a.elapsed_ms(&b),
            Err(Error::EventNotRecorded { .. })
        ));
        a.record(&s).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        s.record_event(&b).unwrap();
        let ms = a.elapsed_ms(&b).unwrap();
        assert!(ms >= 1.0, "{ms}");
        assert!(a.query().unwrap() && s.query().unwrap());
        b.synchronize().unwrap();
        let other = ctx.new_stream().unwrap();
        other.wait_event(&b).unwrap();
        other.wait_stream(&s).unwrap();
        other.synchronize().unwrap();
        let untimed = ctx.new_event_with_flags(false, true).unwrap();
        untimed.record(&s).unwrap();
        assert!(a.elapsed_ms(&untimed).is_err());
    }
}
