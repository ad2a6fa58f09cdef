//! Foreign-call failures: a failing foreign function's status is recorded in its module's
//! record (see `gpukernel_device::ffi`), naming the kernel that made it, and the context's
//! *failure word* is set: a `u32` in page-locked host memory mapped into the device's address
//! space, whose device address every module's record holds (written at load); on the
//! simulator a host word the simulated launch sets. Every host observation point — a stream,
//! event or context synchronization, every device-to-host copy and pinned read — calls
//! [`check`] after its wait, which reports every failure visible by then, whichever stream or
//! module made it.
//!
//! Cost: while nothing failed, a check is one load of the word (no driver call, no lock), and
//! a launch stores the kernel's name in its module (one relaxed store). Only a set word reads
//! the records (driver copies), under a lock.
//!
//! Limits: a module's record holds its first failure until a check reads it; later failures of
//! that module's kernels before then are not kept (each kernel's first thread to fail wins,
//! as before). A record still being written by a kernel that runs concurrently with the check
//! is left for the next check (the device sets the word again once it is complete). The
//! kernel named is the one whose entry the failing thread ran (`#[kernel]` notes it in the
//! block's shared memory); for code not entered through `#[kernel]` (or built before this
//! record existed) it is the module's last launched kernel.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use crate::backend::{FfiRecord, ForeignFailure, LastLaunch, StreamHandle};
use crate::context::ContextInner;
use crate::error::{Error, Result};
use crate::module::ModuleInner;
use crate::stream::Stream;

/// A context's foreign-call failure word: non-zero once a foreign call failed since the last
/// check read the records. The device sets it with a store (after its record is complete, with
/// a system-scope fence); the host reads it with a load after a wait made the device's writes
/// visible.
#[derive(Debug)]
pub(crate) struct FailureWord {
    /// Page-locked, device-mapped host memory (CUDA) or a host allocation (simulator), valid
    /// for the life of the backend that made it.
    host: *const AtomicU32,
    /// The address the device writes (CUDA: `cuMemHostGetDevicePointer`); 0 on the simulator.
    pub(crate) device_addr: u64,
    /// Whether `host` came from `Box::into_raw` (the simulator's), freed on drop.
    boxed: bool,
}

impl Drop for FailureWord {
    fn drop(&mut self) {
        if self.boxed {
            // SAFETY: made by `Box::into_raw` in `on_host`, not used after this.
            drop(unsafe { Box::from_raw(self.host.cast_mut()) });
        }
    }
}

// SAFETY: the word is an atomic in memory that lives as long as its backend; the pointer is
// only read.
unsafe impl Send for FailureWord {}
// SAFETY: as above.
unsafe impl Sync for FailureWord {}

impl FailureWord {
    /// # Safety
    /// `host` points at a `u32` aligned to 4, zeroed, valid (and accessed only atomically) for
    /// the life of the returned value; `device_addr` is its device address, or 0.
    pub(crate) unsafe fn new(host: *const AtomicU32, device_addr: u64) -> FailureWord {
        FailureWord {
            host,
            device_addr,
            boxed: false,
        }
    }

    /// A word in host memory only (the simulator's: its launches run on the host).
    pub(crate) fn on_host() -> FailureWord {
        FailureWord {
            host: Box::into_raw(Box::new(AtomicU32::new(0))),
            device_addr: 0,
            boxed: true,
        }
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: valid for the life of `self` (see `new`).
        unsafe { &*self.host }
    }

    /// Whether a failure may be pending (the check's fast path: one load).
    #[inline(always)]
    pub(crate) fn is_set(&self) -> bool {
        self.word().load(Ordering::Acquire) != 0
    }

    /// Marks a failure pending (a simulated launch's, or one kept from a dropped module).
    pub(crate) fn set(&self) {
        self.word().store(1, Ordering::Release);
    }

    fn clear(&self) {
        self.word().store(0, Ordering::Release);
    }
}

/// A module's record and the kernel of the module launched last (what a failure is attributed
/// to when its record does not name the kernel).
#[derive(Debug, Default)]
pub(crate) struct FfiTracking {
    pub(crate) record: FfiRecord,
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

    /// Notes a launch of `kernel` (the launch hot path: one relaxed store). The context and
    /// stream are not needed: every launch's failure reaches the context's word.
    #[inline(always)]
    pub(crate) fn note_launch(
        &self,
        _ctx: &ContextInner,
        kernel: &'static &'static str,
        _stream: StreamHandle,
    ) {
        self.last_kernel.set(kernel);
    }

    /// The error for a failure read from this module's record. The record names the kernel
    /// the failing thread ran; the module's launch label (a graph node's, say) is kept when it
    /// is that kernel's.
    fn error(&self, m: &ModuleInner, f: ForeignFailure) -> Error {
        // A launch label is the kernel's name, then ` (` and where it ran (a graph node).
        let kernel_of = |label: &str| label.split_once(" (").map_or(label, |(k, _)| k).to_owned();
        let last = self.last_kernel.get();
        let kernel = match f.kernel {
            Some(k) if m.names().contains(&kernel_of(&k)) => Some(match last {
                Some(l) if l != k && kernel_of(l) == k => l.to_owned(),
                _ => k,
            }),
            // Not entered through `#[kernel]`: the module's last launch.
            _ => last.map(str::to_owned),
        };
        Error::ForeignCallFailed {
            function: f.function,
            status: f.status,
            thread: f.thread,
            kernel,
        }
    }
}

/// Keeps a failure read from a module as it is dropped, for the next check anywhere in the
/// context.
pub(crate) fn orphan(ctx: &ContextInner, m: &ModuleInner, f: ForeignFailure, t: &FfiTracking) {
    let error = t.error(m, f);
    ctx.ffi_orphans
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(error);
    ctx.backend.failure_word().set();
}

/// Reports a foreign-call failure recorded in `via`'s context and not reported yet, as
/// [`Error::ForeignCallFailed`] naming the kernel that made it; each failure is reported once,
/// the first found first. The caller waited for the work it observes, so every failure of
/// work that happened before is visible. `via` is the stream the record reads are ordered on
/// (when the word is set).
#[inline]
pub(crate) fn check(via: &Stream) -> Result<()> {
    via.not_capturing("reading the foreign-call records")?;
    if !via.ctx().backend.failure_word().is_set() {
        return Ok(());
    }
    read_records(via)
}

/// [`check`] for an observation with no stream of its own (an event, a pinned read): the
/// records, if the word is set, are read through the default stream.
#[inline]
pub(crate) fn check_context(ctx: &Arc<ContextInner>) -> Result<()> {
    if !ctx.backend.failure_word().is_set() {
        return Ok(());
    }
    check(&Stream::default_of(ctx.clone()))
}

#[cold]
#[inline(never)]
fn read_records(via: &Stream) -> Result<()> {
    let ctx = via.ctx();
    let word = ctx.backend.failure_word();
    // One reader at a time: a concurrent check waits here, then finds the word clear.
    let _serial = ctx.ffi_check.lock().unwrap_or_else(|p| p.into_inner());
    if !word.is_set() {
        return Ok(());
    }
    // Cleared before the reads: a failure published during them sets it again.
    word.clear();
    let mut found: Vec<Error> = core::mem::take(
        &mut *ctx.ffi_orphans.lock().unwrap_or_else(|p| p.into_inner()),
    );
    let modules: Vec<Arc<ModuleInner>> = {
        let list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().filter_map(Weak::upgrade).collect()
    };
    let mut failed_read = None;
    for m in &modules {
        let Some(t) = &m.ffi else { continue };
        match ctx.backend.take_foreign_failure(&t.record, via.handle()) {
            Ok(None) => {}
            Ok(Some(f)) => found.push(t.error(m, f)),
            Err(e) => {
                failed_read.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failed_read {
        // Nothing read is lost: the failures found wait for the next check.
        ctx.ffi_orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(found);
        word.set();
        return Err(e);
    }
    if found.is_empty() {
        return Ok(());
    }
    let first = found.remove(0);
    if !found.is_empty() {
        ctx.ffi_orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(found);
        word.set();
    }
    Err(first)
}
