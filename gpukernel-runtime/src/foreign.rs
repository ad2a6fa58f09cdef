//! Foreign-call failures: a failing foreign function's status is recorded in its module's
//! record (see `gpukernel_device::ffi`), naming the kernel that made it, and the context's
//! *failure word* is set: a `u32` in page-locked host memory mapped into the device's address
//! space, whose device address every module's record holds (written at load); on the
//! simulator a host word the simulated launch sets. Every host observation point — a stream,
//! event or context synchronization, every device-to-host copy and pinned read — calls
//! [`check`] after its wait, which reports a failure of any work that happened before it:
//! work of the streams the observed one waited for (`Stream::happened_before`: the streams it
//! was ordered after, for buffers or by `wait_stream` / `wait_event`, transitively), whichever
//! module's kernel failed; a context synchronization, every failure. Each failure is reported
//! once to each stream it may concern, and one error reports every failure the observation covers: the first in full
//! ([`Error::ForeignCallFailed`]) with how many more failed and, as far as known, where. A
//! failure of unrelated work (another thread's stream) stays for the checks it concerns.
//!
//! Cost: while nothing failed, a check is two loads (the word and the pending flag: no driver
//! call, no lock), and a launch notes its kernel and stream in its module (a relaxed store
//! and, the first time, a compare-and-swap). Only a set word reads the records (driver
//! copies), under a lock. On the device, the failure path only: every failing call adds one to
//! its module's count (an atomic), the first since the last read also writes the record in
//! full, and each sets the word; a kernel records its name in shared memory only if it can
//! reach a failure (nvptx-builder's kernel-name pass).
//!
//! Nothing is dropped: the device counts every failure, and the host remembers how many of a
//! record's it has read (`FfiRecord::seen`), so a failure whose details the record could not
//! keep (it held an earlier one) is still reported, as a count ([`Error::ForeignCallsFailed`]
//! when no failure of the observation was kept in full). The simulator keeps the first failure
//! of each stream with that stream's count. On a GPU the record does not say which stream the
//! launch ran on: a failure is attributed to the streams the module's kernels were launched on
//! since the last context synchronization, and when that was several it is reported to a check
//! of each of them (once each: the stream that failed never reads its results without the
//! error, and the others may see it too); past 9 streams they are not known, and the first
//! check reports it. A
//! record still being written by a kernel that runs concurrently with the check is left for
//! the next check (the device sets the word again once it is complete). The kernel named is
//! the one whose entry the failing thread ran (`#[kernel]` notes it in the block's shared
//! memory); for code not entered through `#[kernel]` (or built before this record existed) it
//! is the module's last launched kernel.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use crate::backend::{FfiRecord, ForeignFailure, LastLaunch, StreamHandle};
use crate::context::ContextInner;
use crate::error::{Error, Result};
use crate::module::ModuleInner;
use crate::stream::{After, Stream};

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

/// A module's record, the kernel of the module launched last (what a failure is attributed
/// to when its record does not name the kernel) and the stream its launches used.
#[derive(Debug, Default)]
pub(crate) struct FfiTracking {
    pub(crate) record: FfiRecord,
    last_kernel: LastLaunch,
    /// The stream of the first launch since the last reset; `mixed` once another was used.
    stream: AtomicPtr<core::ffi::c_void>,
    mixed: AtomicBool,
    /// The other streams used since the last reset, while they fit (`overflow` past that:
    /// the streams are not known).
    others: [AtomicPtr<core::ffi::c_void>; OTHER_STREAMS],
    overflow: AtomicBool,
}

/// How many streams besides the first a module's record attributes its failures to.
const OTHER_STREAMS: usize = 8;

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

    /// Notes a launch of `kernel` on `stream` (the launch hot path: a relaxed store and a
    /// relaxed load; a compare-and-swap only on the first launch since the last reset, a
    /// read-modify-write being a locked instruction even when it fails).
    #[inline(always)]
    pub(crate) fn note_launch(
        &self,
        _ctx: &ContextInner,
        kernel: &'static &'static str,
        stream: StreamHandle,
    ) {
        self.last_kernel.set(kernel);
        let seen = self.stream.load(Ordering::Relaxed);
        if seen == stream.0 {
            return;
        }
        if !seen.is_null() {
            self.note_other(stream);
            return;
        }
        if let Err(first) = self.stream.compare_exchange(
            core::ptr::null_mut(),
            stream.0,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) && first != stream.0
        {
            self.note_other(stream);
        }
    }

    /// Notes a stream other than the first (the several-streams path: a scan of the few
    /// slots, a compare-and-swap the first time a stream is seen).
    fn note_other(&self, stream: StreamHandle) {
        if !self.mixed.load(Ordering::Relaxed) {
            self.mixed.store(true, Ordering::Relaxed);
        }
        for slot in &self.others {
            let s = slot.load(Ordering::Relaxed);
            if s == stream.0 {
                return;
            }
            if s.is_null() {
                match slot.compare_exchange(
                    core::ptr::null_mut(),
                    stream.0,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(s) if s == stream.0 => return,
                    Err(_) => continue,
                }
            }
        }
        if !self.overflow.load(Ordering::Relaxed) {
            self.overflow.store(true, Ordering::Relaxed);
        }
    }

    /// The streams the module's launches used since the last reset (`None`: not known).
    fn launched_on(&self) -> Option<Vec<usize>> {
        let s = self.stream.load(Ordering::Relaxed);
        if s.is_null() || self.overflow.load(Ordering::Relaxed) {
            return None;
        }
        let mut streams = vec![s.addr()];
        if self.mixed.load(Ordering::Relaxed) {
            streams.extend(
                self.others
                    .iter()
                    .map(|o| o.load(Ordering::Relaxed))
                    .filter(|o| !o.is_null())
                    .map(|o| o.addr()),
            );
        }
        Some(streams)
    }

    fn reset_streams(&self) {
        self.stream.store(core::ptr::null_mut(), Ordering::Relaxed);
        for slot in &self.others {
            slot.store(core::ptr::null_mut(), Ordering::Relaxed);
        }
        self.mixed.store(false, Ordering::Relaxed);
        self.overflow.store(false, Ordering::Relaxed);
    }

    /// The pending failures for one read from this module's record. The record names the
    /// kernel the failing thread ran; the module's launch label (a graph node's, say) is kept
    /// when it is that kernel's.
    fn pending(&self, m: &ModuleInner, f: ForeignFailure) -> Pending {
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
        // Where the failures without details ran: the module's kernels, as far as known.
        let names = m.names();
        let scope = match names.len() {
            0 => "a module's kernels".to_owned(),
            1 => format!("`{}`", names[0]),
            n if n <= 4 => format!("the kernels of one module (`{}`)", names.join("`, `")),
            n => format!(
                "the kernels of one module (`{}`, and {} more)",
                names[..3].join("`, `"),
                n - 3
            ),
        };
        Pending {
            first: f.detailed.then_some(Details {
                function: f.function,
                status: f.status,
                thread: f.thread,
                kernel,
            }),
            count: f.count.max(1),
            scope,
            streams: f.stream.map(|s| vec![s]).or_else(|| self.launched_on()),
        }
    }
}

/// The first failure of a read, in full.
#[derive(Debug, Clone)]
struct Details {
    function: String,
    status: i32,
    thread: u64,
    kernel: Option<String>,
}

impl Details {
    fn describe(&self) -> String {
        let mut s = format!(
            "`{}` returned {} (thread {})",
            self.function, self.status, self.thread
        );
        if let Some(k) = &self.kernel {
            s.push_str(&format!(" in a launch of `{k}`"));
        }
        s
    }
}

/// Failures read from a record and not reported yet: the first in full (when the record kept
/// it), how many in all, and the streams their launches may have run on (`None`: not known).
/// A failure of several possible streams is reported to a check of each of them (the record
/// does not tell which one failed, and the one that did must not read its results without
/// the error), and kept until each has observed it.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    first: Option<Details>,
    count: u64,
    /// The kernels they may have run in (the module's), for the failures without details.
    scope: String,
    streams: Option<Vec<usize>>,
}

/// The one error for every failure an observation covers: the first detailed one, with how
/// many more and where (see [`Error::ForeignCallFailed`]); [`Error::ForeignCallsFailed`] when
/// none was kept in full.
fn report(mut found: Vec<Pending>) -> Error {
    let total: u64 = found.iter().map(|p| p.count).sum();
    let lead = found.iter().position(|p| p.first.is_some());
    let Some((lead, first)) = lead.and_then(|i| Some((i, found[i].first.take()?))) else {
        let mut kernels: Vec<String> = found.into_iter().map(|p| p.scope).collect();
        kernels.dedup();
        return Error::ForeignCallsFailed {
            count: total,
            kernels,
        };
    };
    let mut others = Vec::new();
    for (i, p) in found.into_iter().enumerate() {
        let detailed = i == lead || p.first.is_some();
        if let Some(d) = &p.first {
            others.push(d.describe());
        }
        // The failures counted besides the detailed one (all of them without one).
        let extra = if detailed { p.count - 1 } else { p.count };
        if extra > 0 {
            others.push(format!(
                "{extra} {} in launches of {}",
                if detailed { "more" } else { "others" },
                p.scope
            ));
        }
    }
    Error::ForeignCallFailed {
        function: first.function,
        status: first.status,
        thread: first.thread,
        kernel: first.kernel,
        more: total - 1,
        others,
    }
}

fn keep(ctx: &ContextInner, found: impl IntoIterator<Item = Pending>) {
    let mut pending = ctx.ffi_pending.lock().unwrap_or_else(|p| p.into_inner());
    pending.extend(found);
    ctx.ffi_any_pending
        .store(!pending.is_empty(), Ordering::Release);
}

/// Keeps a failure read from a module as it is dropped, for the checks it concerns.
pub(crate) fn orphan(ctx: &ContextInner, m: &ModuleInner, f: ForeignFailure, t: &FfiTracking) {
    keep(ctx, [t.pending(m, f)]);
}

#[inline(always)]
fn anything(ctx: &ContextInner) -> bool {
    ctx.backend.failure_word().is_set() || ctx.ffi_any_pending.load(Ordering::Acquire)
}

/// After a wait for `via`'s work: reports a foreign-call failure of work that happened before
/// it (see the module docs) as [`Error::ForeignCallFailed`], naming the kernel that failed.
/// `via` is also the stream the record reads are ordered on.
#[inline]
pub(crate) fn check(via: &Stream) -> Result<()> {
    via.not_capturing("reading the foreign-call records")?;
    if !anything(via.ctx()) {
        return Ok(());
    }
    read_records(via, &via.happened_before())
}

/// [`check`] after a context synchronization: every failure in the context. Everything
/// launched so far is done, so the streams the modules' next launches use are noted afresh.
pub(crate) fn check_all(via: &Stream) -> Result<()> {
    via.not_capturing("reading the foreign-call records")?;
    let ctx = via.ctx();
    let result = if anything(ctx) {
        read_records(via, &After::everything())
    } else {
        Ok(())
    };
    let list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
    for m in list.iter().filter_map(Weak::upgrade) {
        if let Some(t) = &m.ffi {
            t.reset_streams();
        }
    }
    result
}

/// [`check`] for an observation of the work before an event (`before`); the records are read,
/// if the word is set, through the default stream.
#[inline]
pub(crate) fn check_context(ctx: &Arc<ContextInner>, before: &After) -> Result<()> {
    if !anything(ctx) {
        return Ok(());
    }
    read_records(&Stream::default_of(ctx.clone()), before)
}

/// How many failures one check reads from one module's record at most.
const MAX_READS_PER_MODULE: usize = 64;

#[cold]
#[inline(never)]
fn read_records(via: &Stream, before: &After) -> Result<()> {
    let ctx = via.ctx();
    let word = ctx.backend.failure_word();
    // One reader at a time: a concurrent check waits here, then sees what this one left.
    let _serial = ctx.ffi_check.lock().unwrap_or_else(|p| p.into_inner());
    let mut failed_read = None;
    if word.is_set() {
        // Cleared before the reads: a failure published during them sets it again.
        word.clear();
        let modules: Vec<Arc<ModuleInner>> = {
            let list = ctx.ffi_modules.lock().unwrap_or_else(|p| p.into_inner());
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut found = Vec::new();
        let mut left = false;
        for m in &modules {
            let Some(t) = &m.ffi else { continue };
            // A record may hold several failures (the simulator keeps one per stream): read
            // until it is empty, a bounded number of times (what is left stays for the next
            // check).
            let mut reads = 0;
            loop {
                if reads == MAX_READS_PER_MODULE {
                    left = true;
                    break;
                }
                reads += 1;
                match ctx.backend.take_foreign_failure(&t.record, via.handle()) {
                    Ok(None) => break,
                    Ok(Some(f)) => found.push(t.pending(m, f)),
                    Err(e) => {
                        failed_read.get_or_insert(e);
                        break;
                    }
                }
            }
        }
        keep(ctx, found);
        if failed_read.is_some() || left {
            word.set();
        }
    }
    // Every failure this observation covers, in one error.
    let mut pending = ctx.ffi_pending.lock().unwrap_or_else(|p| p.into_inner());
    let mut mine: Vec<Pending> = Vec::new();
    pending.retain_mut(|p| {
        // Not known: the first check reports it.
        let Some(streams) = &p.streams else {
            mine.push(p.clone());
            return false;
        };
        let left: Vec<usize> = streams
            .iter()
            .copied()
            .filter(|&s| !before.includes(Some(s)))
            .collect();
        if left.len() == streams.len() {
            return true;
        }
        mine.push(p.clone());
        let done = left.is_empty();
        p.streams = Some(left);
        !done
    });
    ctx.ffi_any_pending
        .store(!pending.is_empty(), Ordering::Release);
    drop(pending);
    match (mine.is_empty(), failed_read) {
        (false, _) => Err(report(mine)),
        (true, Some(e)) => Err(e),
        (true, None) => Ok(()),
    }
}
