//! Copies between the memory of two devices: direct (`cuMemcpyPeerAsync`, NVLink or PCIe)
//! when peer access is enabled between their contexts, staged through page-locked host memory
//! otherwise. Both are ordered with the trackers of the two allocations, whichever context's
//! streams used them.

use std::sync::Arc;

use super::RawParts;
use crate::backend::{Backend, EventHandle};
use crate::context::mismatch;
use crate::error::Result;
use crate::stream::Stream;

/// Bytes per staging buffer of a copy through host memory (two alternate, so that one is
/// copied out to the destination while the next is filled from the source).
const STAGE_BYTES: usize = 16 << 20;

/// Copies `src` (memory of one context) to `dst` (memory of another) on `s`, a stream of
/// either; the lengths were checked.
pub(super) fn memcpy_peer(
    s: &Stream,
    dst: RawParts<'_>,
    src: RawParts<'_>,
    op: &'static str,
) -> Result<()> {
    let on_dst = Arc::ptr_eq(s.ctx(), dst.ctx);
    let on_src = Arc::ptr_eq(s.ctx(), src.ctx);
    if !on_dst && !on_src {
        return Err(mismatch(op, "the destination", s.ctx(), dst.ctx));
    }
    let bytes = dst.len * dst.elem;
    let direct = dst.ctx.can_use_memory_of(src.ctx) || src.ctx.can_use_memory_of(dst.ctx);
    if direct {
        let s = &s.enqueuing();
        // Both allocations' pending work is ordered before `s` (events across contexts).
        dst.order_on(s)?;
        src.order_on(s)?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both ranges are live allocations of their contexts (borrowed by the caller,
        // freed only after the tracked work), ordered on `s`; the destination is exclusively
        // borrowed, so they do not overlap.
        return unsafe {
            s.ctx().backend.memcpy_peer(
                dst.ptr,
                &*dst.ctx.backend,
                src.ptr,
                &*src.ctx.backend,
                bytes,
                s.handle(),
            )
        };
    }
    // Staged: out of the source on a stream of its context, into the destination on one of
    // its own.
    let src_stream = if on_src {
        s.clone()
    } else {
        src.tracker.home()
    };
    let dst_stream = if on_dst {
        s.clone()
    } else {
        dst.tracker.home()
    };
    // Both marked in flight until the staged copies are enqueued (`run` returns after them).
    let (src_stream, dst_stream) = (&src_stream.enqueuing(), &dst_stream.enqueuing());
    src.order_on(src_stream)?;
    dst.order_on(dst_stream)?;
    if bytes == 0 {
        return Ok(());
    }
    Staging::new(src_stream, dst_stream, bytes)?.run(dst.ptr, src.ptr, bytes)
}

/// Two page-locked buffers and an event per buffer (in the destination's context) that says
/// when its last copy into the destination is done.
struct Staging<'a> {
    src_stream: &'a Stream,
    dst_stream: &'a Stream,
    chunk: usize,
    buffers: [*mut u8; 2],
    events: [Option<EventHandle>; 2],
}

impl<'a> Staging<'a> {
    fn new(src_stream: &'a Stream, dst_stream: &'a Stream, bytes: usize) -> Result<Staging<'a>> {
        let chunk = bytes.min(STAGE_BYTES);
        let mut st = Staging {
            src_stream,
            dst_stream,
            chunk,
            buffers: [core::ptr::null_mut(); 2],
            events: [None, None],
        };
        let count = if bytes > chunk { 2 } else { 1 };
        for i in 0..count {
            // Page-locked memory of the source's context (portable: every context may use it).
            st.buffers[i] = src_stream.ctx().backend.host_alloc(chunk, 4096)?;
            st.events[i] = Some(dst_stream.ctx().backend.event_create(false, false)?);
        }
        Ok(st)
    }

    fn src(&self) -> &dyn Backend {
        &*self.src_stream.ctx().backend
    }

    fn dst(&self) -> &dyn Backend {
        &*self.dst_stream.ctx().backend
    }

    fn run(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        let mut done = 0;
        let mut i = 0;
        while done < bytes {
            let n = self.chunk.min(bytes - done);
            let (buf, ev) = (self.buffers[i % 2], self.events[i % 2]);
            let ev = ev.expect("an event per staging buffer in use");
            if i >= 2 {
                // The buffer's previous copy into the destination must be done before it is
                // filled again.
                self.dst()
                    .event_synchronize(ev, self.dst_stream.last_launch())?;
            }
            // SAFETY: `buf` holds `chunk >= n` bytes; the source range is inside a live
            // allocation ordered on `src_stream` (the caller); waited for right below.
            unsafe {
                self.src()
                    .memcpy_dtoh(buf, src + done as u64, n, self.src_stream.handle())
            }?;
            self.src_stream.wait_idle()?;
            // SAFETY: `buf` holds the chunk and is not written again before `ev` completes;
            // the destination range is inside a live, exclusively borrowed allocation ordered
            // on `dst_stream`.
            unsafe {
                self.dst()
                    .memcpy_htod(dst + done as u64, buf, n, self.dst_stream.handle())
            }?;
            self.dst().event_record(ev, self.dst_stream.handle())?;
            done += n;
            i += 1;
        }
        // The staging buffers are freed on return: the copies out of them must be complete.
        self.dst_stream.wait_idle()
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        // On an error path a copy out of a buffer may still be pending: wait (and on a failed
        // wait leak the buffers rather than free them under the copy).
        if self.dst_stream.wait_idle().is_err() {
            return;
        }
        for (buf, ev) in self.buffers.iter().zip(&self.events) {
            if !buf.is_null() {
                // SAFETY: allocated by `host_alloc(chunk, 4096)` of the source's backend; no copy
                // uses it any more (waited above).
                unsafe { self.src().host_free(*buf, self.chunk, 4096) };
            }
            if let Some(e) = ev {
                // SAFETY: created by the destination's backend, not used after.
                unsafe { self.dst().event_destroy(*e) };
            }
        }
    }
}
