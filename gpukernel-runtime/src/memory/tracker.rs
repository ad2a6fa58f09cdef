//! Stream ordering of one allocation (a buffer or pinned host memory): the [`Tracker`].
//!
//! Rule: before work touching bytes `[start, end)` of the allocation is enqueued on stream
//! `s`, `s` is ordered (an event recorded on the other stream, waited on by `s`) after every
//! earlier use on another stream that conflicts with it — a write overlapping the range, or
//! for a write, any overlapping use — unless `s` is already ordered after that use. Exclusive
//! use of the whole allocation (`&mut DeviceBuffer`) conflicts with everything and forgets the
//! other streams' uses afterwards (they are all ordered before it).
//!
//! Steady state is free: a stream that already waited for another stream's last use does not
//! wait again (reading on `s2` an input written once on `s1` costs one event, then nothing),
//! and disjoint ranges (the halves of `split_at_mut`) never wait for each other, so their work
//! on two streams overlaps. Each stream's uses are kept as the hull of the byte ranges it read
//! and wrote (conservative: a hull may conflict where the exact ranges would not).
//!
//! The common case takes no lock: after each ordering step the tracker publishes a *grant*
//! (its stream, the strongest access and the bytes for which that stream has nothing new to
//! wait for and whose use is already on record), read lock-free under a sequence counter. A use on
//! the granted stream, no stronger and within the bytes, returns after a few loads; anything
//! else (another stream, more bytes, a stronger access) takes the lock and withdraws the
//! grant. The uses made under a grant need no record of their own: the granted stream's clock
//! was set when the grant was published, and no other stream can have been ordered after that
//! clock without withdrawing the grant, so later conflicting work waits for all of them.
//!
//! Work in flight: a use is recorded (or passes the grant) before its work is enqueued, and
//! an event recorded on its stream in between does not cover it. So every use is made under an
//! [`Enqueuing`] guard of its stream, held until the backend has the work, and a stream `s2`
//! ordered after a stream `s1` that has any operation in flight (`Stream::enqueuing_now`, read
//! before the event is recorded) is not marked as having seen `s1`'s recorded uses: `s2` waits
//! for what is enqueued now, publishes no grant, and its next conflicting use waits again
//! (by then for the work itself); it first waits a little (spinning, at most 20 µs) for the
//! other stream to have nothing in flight, which one thread launching in a loop there allows
//! between its launches. Without this, a thread ordering `s2` after `s1` while
//! another thread was between recording a write on `s1` and enqueuing it would mark that write
//! as waited for, and a later read of those bytes on `s2` would run before it. The guard's
//! count is per stream and taken once per operation (one atomic add and subtract), and the
//! fast path reads nothing more: a use passing the grant had its stream's count raised before
//! its grant check (both SeqCst), so a tracker withdrawing that grant afterwards (a SeqCst
//! store) sees it in flight.
//!
//! Why borrows make this enough: accesses that can be enqueued concurrently from several
//! threads are shared reads or writes to disjoint views, which never conflict; any two
//! conflicting accesses are separated by the end of a borrow, so the later one's ordering
//! happens after the earlier one's work was enqueued (its event covers it). What concurrent
//! enqueues can do is make a stream appear to have seen uses it has not, handled above. On
//! the simulator work is synchronous and the backend's waits are no-ops.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

use crate::error::Result;
use crate::stream::{Enqueuing, Stream};

/// How an operation uses the bytes it names (ordered weakest first: a stronger access orders
/// everything a weaker one would).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// Reads them (kernel inputs, copy sources).
    Read,
    /// Writes them (outputs through a view, copy destinations).
    Write,
    /// Uses the whole allocation exclusively (`&mut DeviceBuffer`).
    Exclusive,
}

/// How long an ordering step waits for another thread's enqueue on the stream it orders after
/// (about one driver call) before it assumes that work in flight (see the module docs).
const SETTLE: std::time::Duration = std::time::Duration::from_micros(20);

/// A half-open byte range `[start, end)`.
type Span = (u64, u64);

fn overlaps(a: Span, b: Option<Span>) -> bool {
    b.is_some_and(|b| a.0 < b.1 && b.0 < a.1)
}

fn hull(a: Option<Span>, b: Span) -> Option<Span> {
    Some(a.map_or(b, |a| (a.0.min(b.0), a.1.max(b.1))))
}

/// What one stream did with the allocation since the last exclusive use.
struct StreamUse {
    stream: Stream,
    reads: Option<Span>,
    writes: Option<Span>,
    /// The clock of its latest use.
    last: u64,
    /// For other streams (by id): the clock up to which this stream is ordered after their uses.
    seen: Vec<(usize, u64)>,
}

impl StreamUse {
    fn new(stream: Stream) -> StreamUse {
        StreamUse {
            stream,
            reads: None,
            writes: None,
            last: 0,
            seen: Vec::new(),
        }
    }

    fn seen(&self, other: usize) -> u64 {
        self.seen
            .iter()
            .find(|(id, _)| *id == other)
            .map_or(0, |&(_, c)| c)
    }

    fn set_seen(&mut self, other: usize, clock: u64) {
        match self.seen.iter_mut().find(|(id, _)| *id == other) {
            Some(e) => e.1 = clock,
            None => self.seen.push((other, clock)),
        }
    }
}

struct TrackState {
    /// The stream host-side operations use: the allocating one, then the last exclusive user.
    home: Stream,
    uses: Vec<StreamUse>,
    clock: u64,
    /// Cross-stream waits issued (for tests of the steady state).
    waits: u64,
    /// Whether a grant is published.
    granted: bool,
}

/// The lock-free grant (see the module documentation): a sequence lock whose writers hold the
/// tracker's mutex. `owner` is the granted stream's id with the access's code (1 read, 2
/// write, 3 exclusive) in its two low bits, 0 when nothing is granted; `[lo, hi)` the bytes.
struct Grant {
    /// Even while the fields are stable, odd while a writer changes them.
    seq: AtomicU64,
    owner: AtomicUsize,
    lo: AtomicU64,
    hi: AtomicU64,
}

impl Grant {
    const ACCESS_BITS: usize = 0b11;

    fn code(access: Access) -> usize {
        match access {
            Access::Read => 1,
            Access::Write => 2,
            Access::Exclusive => 3,
        }
    }

    /// Whether a use of `span` by stream `me` with `access` is covered (lock-free).
    #[inline(always)]
    fn covers(&self, me: usize, span: Span, access: Access) -> bool {
        // SeqCst (a plain load on x86): ordered after the caller's `Stream::enqueuing`, so a
        // grant withdrawn after this read sees that use in flight (see the module docs).
        let s1 = self.seq.load(Ordering::SeqCst);
        let owner = self.owner.load(Ordering::Relaxed);
        let lo = self.lo.load(Ordering::Relaxed);
        let hi = self.hi.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let s2 = self.seq.load(Ordering::Relaxed);
        s1 == s2
            && s1 & 1 == 0
            && owner & !Self::ACCESS_BITS == me
            && Self::code(access) <= owner & Self::ACCESS_BITS
            && lo <= span.0
            && span.1 <= hi
    }

    /// Publishes `owner` (0: nothing) for `span`. Only under the tracker's mutex.
    fn publish(&self, owner: usize, span: Span) {
        let s = self.seq.load(Ordering::Relaxed);
        // SeqCst: a use that read the grant before this store had raised its stream's
        // in-flight count before, which the ordering that follows reads (SeqCst too).
        self.seq.store(s.wrapping_add(1), Ordering::SeqCst);
        fence(Ordering::Release);
        self.owner.store(owner, Ordering::Relaxed);
        self.lo.store(span.0, Ordering::Relaxed);
        self.hi.store(span.1, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

/// See the module documentation.
pub(crate) struct Tracker {
    grant: Grant,
    state: Mutex<TrackState>,
}

impl Tracker {
    /// A tracker for an allocation made (and initialised) by work on `stream`: a write of
    /// everything there.
    pub(crate) fn new(stream: Stream) -> Tracker {
        let mut first = StreamUse::new(stream.clone());
        first.writes = Some((0, u64::MAX));
        first.last = 1;
        let mut st = TrackState {
            home: stream,
            uses: vec![first],
            clock: 1,
            waits: 0,
            granted: false,
        };
        let grant = Grant {
            seq: AtomicU64::new(0),
            owner: AtomicUsize::new(0),
            lo: AtomicU64::new(0),
            hi: AtomicU64::new(0),
        };
        Self::grant_after(&grant, &mut st, 0, (0, u64::MAX), Access::Exclusive);
        Tracker {
            grant,
            state: Mutex::new(st),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TrackState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Orders work about to be enqueued on `s`, using bytes `span` as `access` says, after the
    /// conflicting work pending on the allocation. `s` stays marked in flight until the work is
    /// enqueued (the guard is dropped after the backend call).
    #[inline]
    pub(crate) fn use_on(&self, s: &Enqueuing<'_>, span: Span, access: Access) -> Result<()> {
        // Work enqueued on a capturing stream does not run now: ordering it here would wait
        // on events the capture cannot take. Captured work is ordered when its graph launches.
        s.not_capturing("a stream-ordered use of a buffer")?;
        // The same stream again (a launch in a loop): its last ordering step covered these
        // bytes with at least this access, and no other stream used the allocation since.
        if self.grant.covers(s.id, span, access) {
            return Ok(());
        }
        self.use_slow(s, span, access)
    }

    /// Whether the grant covers a use of `span` on `s` with `access` (lock-free): then
    /// [`use_on`](Self::use_on) would return at once, with nothing to order.
    #[inline(always)]
    pub(crate) fn granted(&self, s: &Enqueuing<'_>, span: Span, access: Access) -> bool {
        self.grant.covers(s.id, span, access)
    }

    /// `use_on` under the lock: withdraws the grant, orders `s`, records the use and publishes
    /// the grant for it.
    #[cold]
    #[inline(never)]
    fn use_slow(&self, s: &Stream, span: Span, access: Access) -> Result<()> {
        let mut st = self.lock();
        st.clock += 1;
        let now = st.clock;
        let me = s.id();
        // From here on no use goes without the lock. The granted stream's clock needs no
        // update for the uses it made without it: they all came after the grant was published,
        // when its clock was set, and no other stream was ordered after it since (that would
        // have withdrawn the grant), so a later conflicting use waits for all of them.
        if core::mem::take(&mut st.granted) {
            self.grant.publish(0, (0, 0));
        }
        // The common case, one stream: nothing to order.
        let alone = st.uses.len() == 1 && st.uses[0].stream.id() == me;
        let (mine, complete) = if alone {
            (0, true)
        } else {
            Self::order(&mut st, s, span, access)?
        };
        let u = &mut st.uses[mine];
        match access {
            Access::Read => u.reads = hull(u.reads, span),
            Access::Write => u.writes = hull(u.writes, span),
            Access::Exclusive => u.writes = Some((0, u64::MAX)),
        }
        u.last = now;
        let mine = if access == Access::Exclusive {
            // Everything else is ordered before `s` now.
            let kept = st.uses.swap_remove(mine);
            st.uses.clear();
            st.uses.push(kept);
            st.uses[0].seen.clear();
            st.home = s.clone();
            0
        } else {
            mine
        };
        // A stream ordered after another's work in flight has something left to wait for:
        // no grant, its next use takes the lock and orders again.
        if complete {
            Self::grant_after(&self.grant, &mut st, mine, span, access);
        }
        Ok(())
    }

    /// Publishes the grant after `uses[mine]`'s stream was ordered for, and recorded, a use of
    /// `span` with `access`: the same again needs nothing. Alone on the allocation, at home,
    /// with a write of everything on record, that stream may do anything.
    fn grant_after(grant: &Grant, st: &mut TrackState, mine: usize, span: Span, access: Access) {
        let u = &st.uses[mine];
        let id = u.stream.id();
        if id & Grant::ACCESS_BITS != 0 {
            // Not aligned as a stream's state is: no grant (every use takes the lock).
            return;
        }
        let (access, span) =
            if st.uses.len() == 1 && st.home.id() == id && u.writes == Some((0, u64::MAX)) {
                (Access::Exclusive, (0, u64::MAX))
            } else if access == Access::Exclusive {
                return;
            } else {
                (access, span)
            };
        grant.publish(id | Grant::code(access), span);
        st.granted = true;
    }

    /// Makes `s` wait for the conflicting uses on other streams it is not yet ordered after;
    /// returns the index of `s`'s entry (made if new) and whether every use it waited for was
    /// enqueued (else the uses of a stream with work in flight are not marked as seen).
    #[cold]
    fn order(st: &mut TrackState, s: &Stream, span: Span, access: Access) -> Result<(usize, bool)> {
        let me = s.id();
        let mine = match st.uses.iter().position(|u| u.stream.id() == me) {
            Some(i) => i,
            None => {
                st.uses.push(StreamUse::new(s.clone()));
                st.uses.len() - 1
            }
        };
        let mut complete = true;
        for i in 0..st.uses.len() {
            if i == mine {
                continue;
            }
            let other = &st.uses[i];
            let conflicts = match access {
                Access::Read => overlaps(span, other.writes),
                Access::Write => overlaps(span, other.writes) || overlaps(span, other.reads),
                Access::Exclusive => other.writes.is_some() || other.reads.is_some(),
            };
            let (oid, olast) = (other.stream.id(), other.last);
            if conflicts && st.uses[mine].seen(oid) < olast {
                // Both streams are live (held here and by the caller); they may belong to two
                // contexts (memory used by a peer device), which `order_after` handles.
                let o = st.uses[i].stream.clone();
                // Read before the event is recorded: 0 means every use up to `olast` was
                // enqueued before it (each guard dropped after its enqueue, Release). Work
                // being enqueued there is waited for briefly, so that one thread launching in
                // a loop on `o` does not keep `s` from its grant. (An exclusive use forgets the
                // other streams' uses whatever is in flight: nothing of this allocation is.)
                let in_flight =
                    access != Access::Exclusive && o.enqueuing_now() && !o.settle_enqueuing(SETTLE);
                s.order_after(&o)?;
                st.waits += 1;
                if in_flight {
                    complete = false;
                } else {
                    st.uses[mine].set_seen(oid, olast);
                }
            }
        }
        Ok((mine, complete))
    }

    /// The stream that host-side operations use for this allocation.
    pub(crate) fn home(&self) -> Stream {
        self.lock().home.clone()
    }

    /// The streams that used the allocation since its last exclusive use.
    fn streams(&self) -> Vec<Stream> {
        self.lock().uses.iter().map(|u| u.stream.clone()).collect()
    }

    /// Waits (on the host) for every stream that used the allocation and reports a kernel
    /// fault or foreign-call failure of their work: for host reads of the allocation.
    pub(crate) fn synchronize_all(&self) -> Result<()> {
        for s in &self.streams() {
            s.synchronize()?;
        }
        Ok(())
    }

    /// Waits (on the host) for every stream that used the allocation (for frees: reports
    /// nothing but a failed wait).
    pub(crate) fn wait_all(&self) -> Result<()> {
        for s in &self.streams() {
            s.wait_idle()?;
        }
        Ok(())
    }

    /// For `Drop`: orders the home stream after every use, and returns it (the free is then
    /// enqueued there).
    pub(crate) fn join_for_drop(&mut self) -> Result<Stream> {
        let home = self.home();
        // The guard may end before the free is enqueued: the free is no use of another
        // allocation, and nothing uses this one after it.
        self.use_on(&home.enqueuing(), (0, u64::MAX), Access::Exclusive)?;
        Ok(home)
    }

    /// Cross-stream waits issued so far.
    #[cfg(test)]
    pub(crate) fn waits(&self) -> u64 {
        self.lock().waits
    }
}
