//! Foreign-call failures: each module whose code holds a failure record (see
//! `gpukernel_device::ffi`) is checked wherever the host observes results — a stream, event or
//! context synchronization and every device-to-host copy — so a non-zero status of a foreign
//! function is never lost.
//!
//! Cost: a launch of such a module sets a few atomics; a check returns at once unless a kernel
//! of such a module ran since the last check (one atomic swap), and then reads each launched
//! module's record once.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Weak};

use crate::backend::{FfiRecord, ForeignFailure, LastLaunch, StreamHandle};
use crate::context::ContextInner;
use crate::error::{Error, Result};
use crate::module::ModuleInner;
use crate::stream::Stream;

/// A module's record and what the runtime knows of the launches that may have written it.
#[derive(Debug, Default)]
pub(crate) struct FfiTracking {
    pub(crate) record: FfiRecord,
    /// Set by each launch of a kernel of the module, cleared when its work is known done and
    /// the record read.
    launched: AtomicBool,
    /// The stream of the first launch since the last clear; `mixed` once another was used.
    stream: AtomicPtr<core::ffi::c_void>,
    mixed: AtomicBool,
    /// The kernel of the module launched last: what a failure is attributed to.
    last_kernel: LastLaunch,
}

impl FfiTracking {
    pub(crate) fn new(device_addr: u64) -> FfiTracking {
        FfiTracking {
            record: FfiRecord {
                device_addr,
                ..FfiRecord::default()
            },
            ..FfiTracking::default()
        }
    }

    /// Notes a launch of `kernel` on `stream` (the launch hot path: a few relaxed atomics).
    #[inline(always)]
    pub(crate) fn note_launch(
        &self,
        ctx: &ContextInner,
        kernel: &'static &'static str,
        stream: StreamHandle,
    ) {
        self.last_kernel.set(kernel);
        if let Err(first) = self.stream.compare_exchange(
            core::ptr::null_mut(),
            stream.0,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) && first != stream.0
        {
            self.mixed.store(true, Ordering::Relaxed);
        }
        self.launched.store(true, Ordering::Release);
        ctx.ffi_generation.fetch_add(1, Ordering::Release);
    }

    /// Whether a check after `done` should read this record: every launched record for a
    /// context-wide check, else those with a launch on the synchronized stream (a failure of
    /// work on other streams is reported where that work is observed).
    fn concerns(&self, done: Done<'_>) -> bool {
        match done {
            Done::All => true,
            Done::Streams(set) | Done::Before(set) => {
                let first = self.stream.load(Ordering::Relaxed);
                self.mixed.load(Ordering::Relaxed) || set.iter().any(|s| s.0 == first)
            }
        }
    }

    /// Whether every launch since the last clear is complete when `done` is.
    fn all_complete(&self, done: Done<'_>) -> bool {
        match done {
            Done::All => true,
            Done::Streams(set) => {
                let first = self.stream.load(Ordering::Relaxed);
                !self.mixed.load(Ordering::Relaxed) && set.iter().any(|s| s.0 == first)
            }
            Done::Before(_) => false,
        }
    }

    fn clear(&self) {
        self.stream.store(core::ptr::null_mut(), Ordering::Relaxed);
        self.mixed.store(false, Ordering::Relaxed);
        self.launched.store(false, Ordering::Relaxed);
    }
}

/// What work the caller knows to be complete when it checks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Done<'a> {
    /// Everything in the context (a context synchronization).
    All,
    /// Everything enqueued on these streams so far (a stream synchronization; a copy to the
    /// host, after which every stream that used the memory is done).
    Streams(&'a [StreamHandle]),
    /// Part of the work on these streams (an event recorded there): their records are read,
    /// but kept armed for the work after it.
    Before(&'a [StreamHandle]),
}

/// A failure read from a module as it was dropped, with the streams its launches used.
#[derive(Debug)]
pub(crate) struct Orphan {
    error: Error,
    stream: usize,
    mixed: bool,
}

/// Keeps a failure read from a module being dropped, for the next check that observes the
/// streams its kernels ran on.
pub(crate) fn orphan(
    ctx: &ContextInner,
    (function, status, thread): ForeignFailure,
    t: &FfiTracking,
) {
    let error = Error::ForeignCallFailed {
        function,
        status,
        thread,
        kernel: t.last_kernel.get().map(str::to_owned),
    };
    ctx.ffi_orphans
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Orphan {
            error,
            stream: t.stream.load(Ordering::Relaxed).addr(),
            mixed: t.mixed.load(Ordering::Relaxed),
        });
    ctx.ffi_generation.fetch_add(1, Ordering::Release);
}

impl Orphan {
    fn concerns(&self, done: Done<'_>) -> bool {
        match done {
            Done::All => true,
            Done::Streams(set) | Done::Before(set) => {
                self.mixed || set.iter().any(|s| s.0.addr() == self.stream)
            }
        }
    }
}

/// Reads and clears the foreign-call failure records of the modules of `via`'s context whose
/// kernels ran since the last check, returning [`Error::ForeignCallFailed`] (naming the
/// module's last launched kernel) for the first failure found. `via` is the stream the reads
/// are ordered on.
pub(crate) fn check(via: &Stream, done: Done<'_>) -> Result<()> {
    via.not_capturing("reading the foreign-call records")?;
    let ctx = via.ctx();
    // Free when nothing could have failed since everything was last known clean: every
    // launch of a module with a record (and every orphaned failure) bumps the generation.
    if ctx.ffi_generation.load(Ordering::Acquire) == ctx.ffi_clean.load(Ordering::Acquire) {
        return Ok(());
    }
    // One check at a time: a concurrent one waits here rather than seeing a half-done scan.
    let _serial = ctx.ffi_check.lock().unwrap_or_else(|p| p.into_inner());
    let generation = ctx.ffi_generation.load(Ordering::Acquire);
    // A failure of a module dropped since (it was read before the unload) comes first.
    let mut still_pending = {
        let mut orphans = ctx.ffi_orphans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = orphans.iter().position(|o| o.concerns(done)) {
            return Err(orphans.remove(i).error);
        }
        !orphans.is_empty()
    };
    let modules: Vec<Arc<ModuleInner>> = {
        let list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().filter_map(Weak::upgrade).collect()
    };
    let mut result = Ok(());
    for m in &modules {
        let Some(t) = &m.ffi else { continue };
        if !t.launched.load(Ordering::Acquire) {
            continue;
        }
        if result.is_err() || !t.concerns(done) {
            still_pending = true;
            continue;
        }
        // Cleared before the read, so a launch racing with this check re-arms it.
        if t.all_complete(done) {
            t.clear();
        } else {
            still_pending = true;
        }
        result = match ctx.backend.take_foreign_failure(&t.record, via.handle()) {
            Ok(None) => Ok(()),
            Ok(Some((function, status, thread))) => Err(Error::ForeignCallFailed {
                function,
                status,
                thread,
                kernel: t.last_kernel.get().map(str::to_owned),
            }),
            Err(e) => {
                still_pending = true;
                Err(e)
            }
        };
    }
    // Clean up to the generation read under the lock: a launch since then bumped it again.
    if !still_pending && result.is_ok() {
        ctx.ffi_clean.store(generation, Ordering::Release);
    }
    result
}
