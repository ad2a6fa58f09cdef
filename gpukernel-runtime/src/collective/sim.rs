//! Collectives of simulated devices: a clique per communicator, whose ranks' parts of each
//! operation meet in order (the n-th operation of every rank forms the n-th collective); the
//! rank that completes a collective computes it on host memory (simulated device memory is
//! host memory) for all ranks. A rank outside a group waits until its collective is complete,
//! as a GPU's stream would; inside a group, the group's end waits.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::types::{CollectiveType, DataType, UniqueId};
use super::{Failures, HostCall, Kind, Op, RawComm};
use crate::backend::StreamHandle;
use crate::error::{Error, Result};

/// How long a rank waits for the others before its collective is reported incomplete (the
/// other ranks were never called: a missing group, or a rank that failed): 30 s, or
/// `GPUKERNEL_SIM_PATIENCE_MS` milliseconds (1 to a day; anything else is an error naming the
/// variable, where a huge value used to overflow the deadline into a panic).
fn patience() -> Result<Duration> {
    static P: OnceLock<std::result::Result<Duration, String>> = OnceLock::new();
    P.get_or_init(|| parse_patience(std::env::var("GPUKERNEL_SIM_PATIENCE_MS").ok().as_deref()))
        .clone()
        .map_err(|value| Error::InvalidEnvVar {
            variable: "GPUKERNEL_SIM_PATIENCE_MS",
            value,
            accepted: "a number of milliseconds from 1 to 86400000 (a day)",
        })
}

/// The patience a `GPUKERNEL_SIM_PATIENCE_MS` value gives (`None`: unset), or the value.
fn parse_patience(value: Option<&str>) -> std::result::Result<Duration, String> {
    const MAX_MS: u64 = 24 * 60 * 60 * 1000;
    match value {
        None => Ok(Duration::from_secs(30)),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(ms) if (1..=MAX_MS).contains(&ms) => Ok(Duration::from_millis(ms)),
            _ => Err(v.to_owned()),
        },
    }
}

/// The state of one communicator shared by its ranks.
struct Clique {
    size: usize,
    state: Mutex<CliqueState>,
    arrived: Condvar,
}

#[derive(Default)]
struct CliqueState {
    /// Per rank: the sequence number of its next operation.
    next: Vec<u64>,
    /// Collectives some but not all ranks joined: their parts by rank.
    pending: HashMap<u64, Vec<Option<Op>>>,
    /// Outcomes of completed collectives, with how many ranks have not yet read theirs.
    done: HashMap<u64, (std::result::Result<(), String>, usize)>,
    /// Ranks claimed through `init_rank`.
    joined: Vec<bool>,
    /// Per rank: why it can join no further collective (its thread panicked with a group
    /// open, or its communicator was dropped). A collective missing such a rank fails at
    /// once for the ranks that wait for it.
    failed: Vec<Option<String>>,
    /// The ranks in `failed`, in the order they failed: the first is the cause a waiting rank
    /// reports (a rank that gave up on it fails after it).
    failed_order: Vec<usize>,
}

impl Clique {
    fn new(size: usize) -> Arc<Clique> {
        Arc::new(Clique {
            size,
            state: Mutex::new(CliqueState {
                next: vec![0; size],
                joined: vec![false; size],
                failed: vec![None; size],
                ..CliqueState::default()
            }),
            arrived: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CliqueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `rank`'s part; computes the collective if it was the last. Returns its number.
    ///
    /// # Safety
    /// As `RawComm::enqueue`: the part's memory stays valid until the collective completes or
    /// the part is withdrawn.
    unsafe fn join(&self, rank: usize, op: Op) -> u64 {
        let mut st = self.lock();
        let seq = st.next[rank];
        st.next[rank] += 1;
        let size = self.size;
        let parts = st.pending.entry(seq).or_insert_with(|| vec![None; size]);
        parts[rank] = Some(op);
        if parts.iter().all(Option::is_some) {
            let parts: Vec<Op> = st
                .pending
                .remove(&seq)
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .collect();
            // SAFETY: every rank's part is live (each rank keeps its memory borrowed until
            // its collective completes); computed under the lock, so no part is withdrawn
            // meanwhile.
            let run = std::panic::AssertUnwindSafe(|| unsafe { compute(&parts) });
            // A panic of the computation fails the collective for every rank at once
            // instead of leaving them to wait for an outcome that never comes.
            let outcome = std::panic::catch_unwind(run).unwrap_or_else(|p| {
                Err(format!(
                    "the simulator's computation of the collective panicked: {}",
                    panic_message(&*p)
                ))
            });
            st.done.insert(seq, (outcome, size));
            self.arrived.notify_all();
        }
        seq
    }

    /// Waits until collective `seq` is complete and returns `rank`'s outcome; after
    /// [`patience`] withdraws the rank's part and reports the collective incomplete.
    fn wait(&self, rank: usize, seq: u64, operation: &'static str) -> Result<()> {
        let patience = patience()?;
        let deadline = Instant::now() + patience;
        let mut st = self.lock();
        loop {
            if let Some((outcome, readers)) = st.done.get_mut(&seq) {
                let outcome = outcome.clone();
                *readers -= 1;
                if *readers == 0 {
                    st.done.remove(&seq);
                }
                return outcome.map_err(|reason| Error::InvalidCollective { operation, reason });
            }
            let failed = st.pending.get(&seq).and_then(|p| {
                st.failed_order
                    .iter()
                    .find(|&&r| p[r].is_none())
                    .map(|&r| (r, st.failed[r].clone().unwrap_or_default()))
            });
            if let Some((failed_rank, reason)) = failed {
                self.withdraw(&mut st, rank, seq);
                return Err(Error::CollectiveRankFailed {
                    operation,
                    rank: failed_rank,
                    reason,
                });
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> = st
                    .pending
                    .get(&seq)
                    .map(|p| (0..p.len()).filter(|&r| p[r].is_none()).collect())
                    .unwrap_or_default();
                self.withdraw(&mut st, rank, seq);
                return Err(Error::CollectiveIncomplete {
                    operation,
                    rank,
                    missing,
                    waited_ms: patience.as_millis() as u64,
                });
            }
            st = self
                .arrived
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Clique {
    /// Takes `rank`'s part of collective `seq` back (its memory may go now); a collective no
    /// rank holds a part of any more is forgotten.
    fn withdraw(&self, st: &mut CliqueState, rank: usize, seq: u64) {
        if let Some(p) = st.pending.get_mut(&seq) {
            p[rank] = None;
            if p.iter().all(Option::is_none) {
                st.pending.remove(&seq);
            }
        }
    }

    /// Records that `rank` joins no further collective, and wakes the ranks waiting for it.
    fn fail_rank(&self, rank: usize, reason: &str) {
        let mut st = self.lock();
        if st.failed[rank].is_none() {
            st.failed[rank] = Some(reason.to_owned());
            st.failed_order.push(rank);
        }
        drop(st);
        self.arrived.notify_all();
    }

    /// The end of a group whose thread is unwinding: collective `seq` keeps its outcome if
    /// it completed; otherwise `rank`'s part is withdrawn (the buffers the group borrowed go
    /// with the unwinding) and the rank fails, so that the other ranks stop waiting at once.
    fn abandon(&self, rank: usize, seq: u64) {
        let mut st = self.lock();
        if let Some((_, readers)) = st.done.get_mut(&seq) {
            *readers -= 1;
            if *readers == 0 {
                st.done.remove(&seq);
            }
            return;
        }
        self.withdraw(&mut st, rank, seq);
        drop(st);
        self.fail_rank(
            rank,
            "its thread panicked inside `collective::group` before the group's end",
        );
    }
}

/// The message of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a non-string panic payload)".to_owned())
}

/// One rank of a simulated communicator.
struct SimComm {
    clique: Arc<Clique>,
    rank: usize,
}

/// A collective joined inside a group: its clique, the rank, its number, its name.
type Joined = (Arc<Clique>, usize, u64, &'static str);

thread_local! {
    /// The open groups of this thread: their depth, and the collectives joined inside them
    /// that the outermost end waits for.
    static GROUP: RefCell<(usize, Vec<Joined>)> = const { RefCell::new((0, Vec::new())) };
}

impl RawComm for SimComm {
    fn implementation(&self) -> &'static str {
        "simulator"
    }

    unsafe fn enqueue(&self, op: &Op, _s: StreamHandle, grouped: bool) -> Result<()> {
        let name = super::operation_name(op.kind);
        // SAFETY: forwarded from the caller: the memory stays borrowed until the collective
        // completes (this call's wait, or the group's end).
        let seq = unsafe { self.clique.join(self.rank, *op) };
        if grouped {
            GROUP.with(|g| {
                g.borrow_mut()
                    .1
                    .push((self.clique.clone(), self.rank, seq, name))
            });
            Ok(())
        } else {
            self.clique.wait(self.rank, seq, name)
        }
    }

    fn group_start(&self) -> Result<()> {
        GROUP.with(|g| g.borrow_mut().0 += 1);
        Ok(())
    }

    unsafe fn replayable(&self, op: &Op, failures: &Failures) -> Option<HostCall> {
        Some(replay(
            self.clique.clone(),
            self.rank,
            *op,
            failures.clone(),
        ))
    }

    fn group_end(&self) -> Result<()> {
        let waits = GROUP.with(|g| {
            let mut g = g.borrow_mut();
            g.0 = g.0.saturating_sub(1);
            if g.0 == 0 {
                core::mem::take(&mut g.1)
            } else {
                Vec::new()
            }
        });
        let mut result = Ok(());
        // Unwinding (a panic inside the group): this thread will issue nothing more, so waiting
        // for its other ranks could only time out.
        let unwinding = std::thread::panicking();
        for (clique, rank, seq, name) in waits {
            if unwinding {
                clique.abandon(rank, seq);
                continue;
            }
            let r = clique.wait(rank, seq, name);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}

impl Drop for SimComm {
    fn drop(&mut self) {
        // The rank joins nothing more: a collective of the other ranks that still needs it
        // fails at once (on a GPU it would wait forever).
        self.clique.fail_rank(
            self.rank,
            if std::thread::panicking() {
                "its thread panicked, dropping its communicator"
            } else {
                "its communicator was dropped, so it joins no further collective"
            },
        );
    }
}

/// `size` ranks of a new clique (the simulator's `ncclCommInitAll`).
pub(super) fn comm_init_all(size: usize) -> Vec<Box<dyn RawComm>> {
    let clique = Clique::new(size);
    {
        let mut st = clique.lock();
        st.joined.iter_mut().for_each(|j| *j = true);
    }
    (0..size)
        .map(|rank| {
            Box::new(SimComm {
                clique: clique.clone(),
                rank,
            }) as Box<dyn RawComm>
        })
        .collect()
}

/// The cliques made from ids, while any of their ranks lives.
fn registry() -> &'static Mutex<HashMap<[u8; UniqueId::LEN], Weak<Clique>>> {
    static REG: OnceLock<Mutex<HashMap<[u8; UniqueId::LEN], Weak<Clique>>>> = OnceLock::new();
    REG.get_or_init(Default::default)
}

/// A fresh simulator id: unique in this process (a counter and the time, hashed).
pub(super) fn new_id() -> UniqueId {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut h = blake3::Hasher::new();
    h.update(&n.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(format!("{:?}", Instant::now()).as_bytes());
    let mut bytes = [0u8; UniqueId::LEN];
    h.finalize_xof().fill(&mut bytes);
    UniqueId {
        bytes,
        simulated: true,
    }
}

/// Rank `rank` of the clique `id` names (made by its first rank).
pub(super) fn comm_init_rank(id: &UniqueId, rank: usize, size: usize) -> Result<Box<dyn RawComm>> {
    const OP: &str = "Communicator::init_rank";
    let clique = {
        let mut reg = registry().lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|_, w| w.strong_count() > 0);
        match reg.get(&id.bytes).and_then(Weak::upgrade) {
            Some(c) => c,
            None => {
                let c = Clique::new(size);
                reg.insert(id.bytes, Arc::downgrade(&c));
                c
            }
        }
    };
    if clique.size != size {
        return Err(Error::InvalidCollective {
            operation: OP,
            reason: format!(
                "{size} ranks asked, but the id's communicator has {}",
                clique.size
            ),
        });
    }
    let mut st = clique.lock();
    if st.joined[rank] {
        return Err(Error::InvalidCollective {
            operation: OP,
            reason: format!("rank {rank} joined the communicator already"),
        });
    }
    st.joined[rank] = true;
    drop(st);
    Ok(Box::new(SimComm { clique, rank }))
}

/// Computes a collective from every rank's part, or says why the parts disagree.
///
/// # Safety
/// Every part's addresses are live simulated device memory of the sizes its `count` implies.
unsafe fn compute(parts: &[Op]) -> std::result::Result<(), String> {
    let first = parts[0];
    for (r, p) in parts.iter().enumerate().skip(1) {
        if p.kind != first.kind || p.count != first.count || p.dtype != first.dtype {
            return Err(format!(
                "the ranks disagree: rank 0 called {:?} on {} {:?} elements, rank {r} {:?} on {} {:?} elements",
                first.kind, first.count, first.dtype, p.kind, p.count, p.dtype
            ));
        }
    }
    // SAFETY: forwarded from the caller; the element type is the parts' `dtype`.
    unsafe {
        match first.dtype {
            DataType::I8 => run::<i8>(parts),
            DataType::U8 => run::<u8>(parts),
            DataType::I32 => run::<i32>(parts),
            DataType::U32 => run::<u32>(parts),
            DataType::I64 => run::<i64>(parts),
            DataType::U64 => run::<u64>(parts),
            DataType::F32 => run::<f32>(parts),
            DataType::F64 => run::<f64>(parts),
        }
    }
    Ok(())
}

/// # Safety
/// As [`compute`], with `T` the parts' element type.
unsafe fn run<T: CollectiveType>(parts: &[Op]) {
    let n = parts.len();
    let count = parts[0].count;
    // Every input is read into host vectors before any output is written: a rank's send and
    // receive buffers may be the same memory (in place).
    let read = |addr: u64, len: usize| -> Vec<T> {
        // SAFETY: `addr` holds `len` initialised `T`s (caller); copied out at once.
        unsafe { std::slice::from_raw_parts(addr as *const T, len) }.to_vec()
    };
    let write = |addr: u64, data: &[T]| {
        // SAFETY: `addr` has room for `data.len()` `T`s (caller), and no reference to it is
        // alive (inputs were copied out).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut T, data.len()) }
    };
    let reduce = |len: usize, op| -> Vec<T> {
        let mut acc = read(parts[0].send, len);
        for p in &parts[1..] {
            for (a, b) in acc.iter_mut().zip(read(p.send, len)) {
                *a = T::combine(op, *a, b);
            }
        }
        if op == super::ReduceOp::Avg {
            acc.iter_mut().for_each(|a| *a = a.divide(n));
        }
        acc
    };
    match parts[0].kind {
        Kind::AllReduce(op) => {
            let out = reduce(count, op);
            parts.iter().for_each(|p| write(p.recv, &out));
        }
        Kind::Broadcast { root } => {
            let out = read(parts[root].send, count);
            parts.iter().for_each(|p| write(p.recv, &out));
        }
        Kind::AllGather => {
            let mut out = Vec::with_capacity(count * n);
            parts.iter().for_each(|p| out.extend(read(p.send, count)));
            parts.iter().for_each(|p| write(p.recv, &out));
        }
        Kind::ReduceScatter(op) => {
            let out = reduce(count * n, op);
            for (r, p) in parts.iter().enumerate() {
                write(p.recv, &out[r * count..(r + 1) * count]);
            }
        }
    }
}

/// A captured collective's part of `rank`, run by the graph's host node at each launch: joins
/// the clique's next collective and waits for it, as a direct call does; a failure goes to
/// `failures` (the graph's launch has no other way back).
fn replay(clique: Arc<Clique>, rank: usize, op: Op, failures: Failures) -> HostCall {
    Box::new(move || {
        let name = super::operation_name(op.kind);
        // SAFETY: the graph that calls this borrows the part's memory for its lifetime and
        // orders each launch after the memory's pending work (`RawComm::replayable`); the
        // wait below keeps the launch running until the collective completed or the part
        // was withdrawn.
        let seq = unsafe { clique.join(rank, op) };
        if let Err(e) = clique.wait(rank, seq, name) {
            failures.lock().unwrap_or_else(|p| p.into_inner()).push(e);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_values_are_checked() {
        assert_eq!(parse_patience(None), Ok(Duration::from_secs(30)));
        assert_eq!(
            parse_patience(Some(" 250 ")),
            Ok(Duration::from_millis(250))
        );
        for bad in ["18446744073709551615", "0", "-5", "1s", "86400001"] {
            assert_eq!(parse_patience(Some(bad)), Err(bad.to_owned()));
        }
    }
}
