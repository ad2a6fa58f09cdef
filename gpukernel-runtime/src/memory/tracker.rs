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
//! Why borrows make this enough: accesses that can be enqueued concurrently from several
//! threads are shared reads or writes to disjoint views, which never conflict; any two
//! conflicting accesses are separated by the end of a borrow, so the later one's event is
//! recorded after the earlier one's work was enqueued. On the simulator work is synchronous
//! and the backend's waits are no-ops.

use std::sync::Mutex;

use crate::error::Result;
use crate::stream::Stream;

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
    /// The latest use: its stream's id, that stream's index in `uses`, the access and the
    /// bytes. While it is this stream's, no other stream used the allocation since, so a use
    /// of no more bytes and no stronger access has nothing new to wait for.
    latest: Option<(usize, usize, Access, Span)>,
}

/// See the module documentation.
pub(crate) struct Tracker {
    state: Mutex<TrackState>,
}

impl Tracker {
    /// A tracker for an allocation made (and initialised) by work on `stream`: a write of
    /// everything there.
    pub(crate) fn new(stream: Stream) -> Tracker {
        let mut first = StreamUse::new(stream.clone());
        first.writes = Some((0, u64::MAX));
        first.last = 1;
        Tracker {
            state: Mutex::new(TrackState {
                home: stream,
                uses: vec![first],
                clock: 1,
                waits: 0,
                latest: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TrackState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Orders work about to be enqueued on `s`, using bytes `span` as `access` says, after the
    /// conflicting work pending on the allocation.
    #[inline]
    pub(crate) fn use_on(&self, s: &Stream, span: Span, access: Access) -> Result<()> {
        // Work enqueued on a capturing stream does not run now: ordering it here would wait
        // on events the capture cannot take. Captured work is ordered when its graph launches.
        s.not_capturing("a stream-ordered use of a buffer")?;
        let mut st = self.lock();
        st.clock += 1;
        let now = st.clock;
        let me = s.id();
        // The common case, one stream: nothing to order, and an exclusive use changes nothing
        // but the clock when that stream is already home.
        let alone = st.uses.len() == 1 && st.uses[0].stream.id() == me;
        if alone && access == Access::Exclusive && st.home.id() == me {
            st.uses[0].last = now;
            return Ok(());
        }
        // The same stream again (a launch in a loop, its inputs shared with other streams):
        // its last use ordered it after everything this one conflicts with, and its record
        // already covers these bytes with at least this access.
        if let Some((id, i, a, (lo, hi))) = st.latest
            && id == me
            && access <= a
            && access != Access::Exclusive
            && lo <= span.0
            && span.1 <= hi
        {
            st.uses[i].last = now;
            return Ok(());
        }
        let mine = if alone {
            0
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
        if access == Access::Exclusive {
            // Everything else is ordered before `s` now.
            let kept = st.uses.swap_remove(mine);
            st.uses.clear();
            st.uses.push(kept);
            st.uses[0].seen.clear();
            st.home = s.clone();
            st.latest = Some((me, 0, access, span));
        } else {
            st.latest = Some((me, mine, access, span));
        }
        Ok(())
    }

    /// Makes `s` wait for the conflicting uses on other streams it is not yet ordered after;
    /// returns the index of `s`'s entry (made if new).
    #[cold]
    fn order(st: &mut TrackState, s: &Stream, span: Span, access: Access) -> Result<usize> {
        let me = s.id();
        let mine = match st.uses.iter().position(|u| u.stream.id() == me) {
            Some(i) => i,
            None => {
                st.uses.push(StreamUse::new(s.clone()));
                st.uses.len() - 1
            }
        };
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
                s.order_after(&o)?;
                st.waits += 1;
                st.uses[mine].set_seen(oid, olast);
            }
        }
        Ok(mine)
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
        self.use_on(&home, (0, u64::MAX), Access::Exclusive)?;
        Ok(home)
    }

    /// Cross-stream waits issued so far.
    #[cfg(test)]
    pub(crate) fn waits(&self) -> u64 {
        self.lock().waits
    }
}
