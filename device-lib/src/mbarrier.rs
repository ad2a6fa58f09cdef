//! Shared-memory transaction barriers (`mbarrier`, sm_90): a 64-bit word in shared memory that
//! completes a phase once an expected number of threads arrived and an expected number of
//! bytes (of asynchronous copies: [`crate::tma`]) landed.
//!
//! Each phase starts with `count` pending arrivals (the count given to [`Mbarrier::init`]) and
//! a transaction count of zero; [`Mbarrier::arrive_expect_tx`] and [`Mbarrier::expect_tx`] add
//! bytes to wait for, the copies that name the barrier subtract the bytes they wrote. When
//! both reach zero the phase completes and the next one starts. Waiters name the phase by its
//! parity (0 for the first phase, 1 for the second, 0 again…): [`Mbarrier::wait_parity`]
//! returns once that phase completed.
//!
//! Every operation is `unsafe`: the word must be a barrier initialised once (by one thread,
//! before the others use it: [`Mbarrier::init`], then [`fence_init`] and a block barrier), and
//! the arrivals of a phase must not exceed its count; the hardware checks neither.
//!
//! In the simulator the word holds the same state in another encoding (pending arrivals,
//! expected count, transaction bytes, phase), updated atomically; a waiting thread lets the
//! others run, and a wait that can never complete is reported as an error, not a hang.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::mbarrier::{self, Mbarrier};
//! use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
//!
//! /// Thread 0 publishes a value; the others wait on an mbarrier (one arrival expected).
//! #[kernel]
//! pub fn publish(mut out: DisjointSlice<u32>) {
//!     let word = shared_array!(u64, 1);
//!     let value = shared_array!(u32, 1);
//!     let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
//!     let t = thread::thread_idx_x();
//!     if t == 0 {
//!         // SAFETY: initialised once, before the block barrier that publishes it.
//!         unsafe { bar.init(1) };
//!         mbarrier::fence_init();
//!     }
//!     sync::sync_threads();
//!     if t == 0 {
//!         // SAFETY: one writer; the arrival (release) publishes it; one arrival of one.
//!         unsafe {
//!             value.write(0, 42);
//!             bar.arrive();
//!         }
//!     }
//!     // SAFETY: an initialised barrier; phase 0 completes with thread 0's arrival.
//!     unsafe { bar.wait_parity(0) };
//!     out.set(thread::index(), unsafe { value.read(0) }); // SAFETY: written before phase 0 ended
//! }
//! ```

use crate::mma::SharedAddr;

/// A transaction barrier: the shared address of its 8-byte-aligned 64-bit word (a
/// `shared_array!(u64, n)` element, say).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::mbarrier::Mbarrier;
/// use gpukernel_device::{mma::SharedAddr, shared::shared_array, thread};
/// #[kernel]
/// pub fn two_barriers(mut out: DisjointSlice<u32>) {
///     let words = shared_array!(u64, 2);
///     let full = Mbarrier::at(SharedAddr::of(words.as_mut_ptr()));
///     let empty = Mbarrier::at(SharedAddr::of(words.as_mut_ptr()).add_bytes(8));
///     out.set(thread::index(), (full != empty) as u32);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mbarrier {
    addr: SharedAddr,
}

/// Makes barrier initialisations visible to the cluster and to the asynchronous proxy (the
/// copy engine): `fence.mbarrier_init.release.cluster`. Call it after [`Mbarrier::init`] and
/// before the block (or cluster) barrier that publishes the barriers.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::mbarrier::{self, Mbarrier};
/// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
/// #[kernel]
/// pub fn init_only(mut out: DisjointSlice<u32>) {
///     let w = shared_array!(u64, 1);
///     if thread::thread_idx_x() == 0 {
///         unsafe { Mbarrier::at(SharedAddr::of(w.as_mut_ptr())).init(1) }; // SAFETY: once
///         mbarrier::fence_init();
///     }
///     sync::sync_threads();
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub fn fence_init() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence.
    unsafe {
        core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack));
    }
}

// The simulator's encoding of the barrier word: pending arrivals (bits 0..21), expected
// arrivals per phase (21..42), outstanding transaction bytes as a signed 21-bit value
// (42..63), phase parity (63).
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use core::sync::atomic::{AtomicU64, Ordering};

    const FIELD: u64 = (1 << 21) - 1;
    pub(super) const MAX_COUNT: u32 = (1 << 20) - 1;

    fn pending(w: u64) -> u64 {
        w & FIELD
    }
    fn expected(w: u64) -> u64 {
        (w >> 21) & FIELD
    }
    fn tx(w: u64) -> i64 {
        let raw = (w >> 42) & FIELD;
        ((raw << 43) as i64) >> 43
    }
    pub(super) fn phase(w: u64) -> u32 {
        (w >> 63) as u32
    }
    fn pack(pending: u64, expected: u64, tx: i64, phase: u32) -> u64 {
        pending | (expected << 21) | (((tx as u64) & FIELD) << 42) | ((phase as u64) << 63)
    }

    pub(super) fn word<'a>(p: *mut u8) -> &'a AtomicU64 {
        assert!(
            (p as usize).is_multiple_of(8),
            "mbarrier at {p:p}: the barrier word must be 8-byte aligned"
        );
        // SAFETY: the caller of the `unsafe` barrier operation promised a barrier word in the
        // block's shared memory, live for the block; all accesses to it are atomic.
        unsafe { AtomicU64::from_ptr(p.cast()) }
    }

    pub(super) fn init(p: *mut u8, count: u32) {
        assert!(
            (1..=MAX_COUNT).contains(&count),
            "mbarrier init with count {count}: the count must be 1 to {MAX_COUNT}"
        );
        word(p).store(pack(count as u64, count as u64, 0, 0), Ordering::SeqCst);
    }

    /// Applies `arrivals` arrivals and `tx` transaction bytes (positive: expected, negative:
    /// completed); returns the phase before the update.
    pub(super) fn update(p: *mut u8, what: &str, arrivals: u64, tx_delta: i64) -> u32 {
        let w = word(p);
        let mut cur = w.load(Ordering::SeqCst);
        loop {
            let (mut pend, exp, mut t, mut ph) = (pending(cur), expected(cur), tx(cur), phase(cur));
            assert!(
                exp != 0,
                "{what} on an mbarrier that was not initialised (Mbarrier::init)"
            );
            assert!(
                arrivals <= pend,
                "{what}: more arrivals than the phase expects ({exp} per phase); the mbarrier's behaviour is undefined on the GPU"
            );
            pend -= arrivals;
            t += tx_delta;
            assert!(
                t.unsigned_abs() <= MAX_COUNT as u64,
                "{what}: the mbarrier's transaction count leaves its range (±{MAX_COUNT} bytes)"
            );
            let before = ph;
            if pend == 0 && t == 0 {
                pend = exp;
                ph ^= 1;
            }
            let new = pack(pend, exp, t, ph);
            match w.compare_exchange(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return before,
                Err(actual) => cur = actual,
            }
        }
    }

    pub(super) fn phase_done(p: *mut u8, parity: u32) -> bool {
        let w = word(p).load(Ordering::SeqCst);
        assert!(
            expected(w) != 0,
            "mbarrier wait on a barrier that was not initialised (Mbarrier::init)"
        );
        phase(w) != parity & 1
    }
}

/// Completes `bytes` of transactions on the barrier at `p` (the simulator's side of an
/// asynchronous copy that names the barrier).
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) fn sim_complete_tx(p: *mut u8, bytes: u32) {
    sim::update(p, "a bulk copy's completion", 0, -(bytes as i64));
    crate::host::with_context("mbarrier", |cx| cx.hooks().progress());
}

impl Mbarrier {
    /// The barrier whose word is at `addr` (8-byte aligned, in this block's shared memory).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::Mbarrier;
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn make(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let _bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     out.set(thread::index(), 0);
    /// }
    /// ```
    #[inline(always)]
    pub fn at(addr: SharedAddr) -> Mbarrier {
        Mbarrier { addr }
    }

    /// The barrier's shared address.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::Mbarrier;
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn same(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let a = SharedAddr::of(w.as_mut_ptr());
    ///     out.set(thread::index(), (Mbarrier::at(a).addr() == a) as u32);
    /// }
    /// ```
    #[inline(always)]
    pub fn addr(self) -> SharedAddr {
        self.addr
    }

    /// `mbarrier.init.shared::cta.b64`: the first phase expects `count` arrivals (1 to
    /// 2²⁰ − 1) and no bytes.
    ///
    /// # Safety
    /// One thread initialises the barrier, before any thread uses it (publish it with
    /// [`fence_init`] and a block barrier), and not while any thread waits on it.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn init_all(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(thread::block_dim_x()) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     unsafe { bar.arrive() }; // SAFETY: one arrival per thread of the block
    ///     unsafe { bar.wait_parity(0) };
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn init(self, count: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("mbarrier.init.shared::cta.b64 [{0}], {1};",
                in(reg32) self.addr.raw(), in(reg32) count, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::init(self.addr.raw(), count);
    }

    /// `mbarrier.arrive.release.cta.shared::cta.b64`: one arrival (releasing this thread's
    /// earlier writes to the threads that wait for the phase). Returns the barrier's state
    /// before the arrival (an opaque token).
    ///
    /// # Safety
    /// The barrier was initialised, and the phase still expects an arrival.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn everyone_arrives(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(thread::block_dim_x()) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     unsafe { bar.arrive() }; // SAFETY: one arrival per thread
    ///     unsafe { bar.wait_parity(0) };
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn arrive(self) -> u64 {
        #[cfg(target_arch = "nvptx64")]
        {
            let state: u64;
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!("mbarrier.arrive.release.cta.shared::cta.b64 {0}, [{1}];",
                    out(reg64) state, in(reg32) self.addr.raw(), options(nostack));
            }
            state
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let before = sim::update(self.addr.raw(), "Mbarrier::arrive", 1, 0);
            crate::host::with_context("Mbarrier::arrive", |cx| cx.hooks().progress());
            before as u64
        }
    }

    /// `mbarrier.arrive.expect_tx.release.cta.shared::cta.b64`: expects `bytes` more
    /// transaction bytes in the current phase, then arrives once (the usual call of the thread
    /// that issues a [`crate::tma`] load). Returns an opaque token.
    ///
    /// # Safety
    /// As [`arrive`](Self::arrive); `bytes` is what the copies naming this barrier write in
    /// this phase (more keeps the waiters waiting forever).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn zero_bytes(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.arrive_expect_tx(0) }; // SAFETY: the one arrival; no copy
    ///     }
    ///     unsafe { bar.wait_parity(0) };
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn arrive_expect_tx(self, bytes: u32) -> u64 {
        #[cfg(target_arch = "nvptx64")]
        {
            let state: u64;
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 {0}, [{1}], {2};",
                    out(reg64) state, in(reg32) self.addr.raw(), in(reg32) bytes,
                    options(nostack));
            }
            state
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let before = sim::update(
                self.addr.raw(),
                "Mbarrier::arrive_expect_tx",
                1,
                bytes as i64,
            );
            crate::host::with_context("Mbarrier::arrive_expect_tx", |cx| cx.hooks().progress());
            before as u64
        }
    }

    /// `mbarrier.expect_tx.relaxed.cta.shared::cta.b64`: expects `bytes` more transaction
    /// bytes in the current phase, without arriving.
    ///
    /// # Safety
    /// As [`arrive_expect_tx`](Self::arrive_expect_tx).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn expect_nothing(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.expect_tx(0) }; // SAFETY: no copies
    ///         unsafe { bar.arrive() };
    ///     }
    ///     unsafe { bar.wait_parity(0) };
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn expect_tx(self, bytes: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{0}], {1};",
                in(reg32) self.addr.raw(), in(reg32) bytes, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::update(self.addr.raw(), "Mbarrier::expect_tx", 0, bytes as i64);
            crate::host::with_context("Mbarrier::expect_tx", |cx| cx.hooks().progress());
        }
    }

    /// `mbarrier.try_wait.parity.acquire.cta.shared::cta.b64`: whether the phase of parity
    /// `parity & 1` completed (waiting a hardware-chosen while first), acquiring the writes
    /// released by its arrivals and copies when it did.
    ///
    /// # Safety
    /// The barrier was initialised; the phase of that parity is the current one or the one
    /// just before (an older phase's parity names a newer phase).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn poll(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     let before = unsafe { bar.try_wait_parity(0) }; // nobody arrived: false
    ///     sync::sync_threads();
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.arrive() }; // SAFETY: the one arrival
    ///     }
    ///     unsafe { bar.wait_parity(0) };
    ///     out.set(thread::index(), before as u32);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn try_wait_parity(self, parity: u32) -> bool {
        #[cfg(target_arch = "nvptx64")]
        {
            let done: u32;
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [{1}], {2}; selp.u32 {0}, 1, 0, p; }}",
                    out(reg32) done, in(reg32) self.addr.raw(), in(reg32) parity & 1,
                    options(nostack));
            }
            done != 0
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::phase_done(self.addr.raw(), parity)
        }
    }

    /// Waits until the phase of parity `parity & 1` completed ([`try_wait_parity`](Self::try_wait_parity)
    /// in a loop).
    ///
    /// # Safety
    /// As [`try_wait_parity`](Self::try_wait_parity), and the phase's arrivals and bytes
    /// do come (else the thread waits forever on the GPU; the simulator reports it).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn two_phases(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(thread::block_dim_x()) }; // SAFETY: once, before use
    ///         mbarrier::fence_init();
    ///     }
    ///     sync::sync_threads();
    ///     for phase in 0..2 {
    ///         unsafe { bar.arrive() }; // SAFETY: one arrival per thread per phase
    ///         unsafe { bar.wait_parity(phase) };
    ///     }
    ///     out.set(thread::index(), 2);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn wait_parity(self, parity: u32) {
        // The loop is one asm statement (a PTX label is local to its braces, so the name is
        // unique): a Rust loop around `try_wait_parity` leaves a result register and a retry
        // block to ptxas, which in the warp-specialised attention then serialised every
        // `wgmma` of the kernel (C7513).
        #[cfg(target_arch = "nvptx64")]
        #[allow(named_asm_labels)]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; WAIT: mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [{0}], {1}; @!p bra WAIT; }}",
                in(reg32) self.addr.raw(), in(reg32) parity & 1,
                options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let p = self.addr.raw();
            if !sim::phase_done(p, parity) {
                crate::host::with_context("Mbarrier::wait_parity", |cx| {
                    cx.hooks()
                        .wait_until("Mbarrier::wait_parity", &mut || sim::phase_done(p, parity))
                });
            }
        }
    }

    /// `mbarrier.inval.shared::cta.b64`: ends the barrier's life, so its word may hold other
    /// data.
    ///
    /// # Safety
    /// No thread uses the barrier afterwards (until a new [`init`](Self::init)), and no copy
    /// naming it is in flight.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
    /// #[kernel]
    /// pub fn init_and_drop(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     if thread::thread_idx_x() == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once
    ///         unsafe { bar.inval() }; // SAFETY: nobody used it
    ///     }
    ///     out.set(thread::index(), 0);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn inval(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("mbarrier.inval.shared::cta.b64 [{0}];",
                in(reg32) self.addr.raw(), options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::word(self.addr.raw()).store(0, core::sync::atomic::Ordering::SeqCst);
    }

    /// `mbarrier.arrive.release.cta.shared::cluster.b64`: arrives once on the barrier at this
    /// barrier's offset in the block of rank `rank` of the cluster (`mapa`). What a consumer of
    /// a [multicast](crate::tma::load_multicast) tile uses to tell every block that writes into
    /// it that the slot is free again: its reads of the slot are complete (it waited for them)
    /// before it arrives. The release is at CTA scope (PTX's default for `mbarrier.arrive`, and
    /// CUTLASS's `ClusterBarrier::arrive`): it does not make this thread's writes visible to the
    /// peer's threads; [`arrive_cluster_release`](Self::arrive_cluster_release) does, at the cost
    /// of a memory barrier of GPU scope before the arrival (`MEMBAR.ALL.GPU` in the SASS: in a
    /// GEMM's main loop, on every stage, it cost 40% of the throughput). A `rank` outside the
    /// cluster stops the kernel.
    ///
    /// # Safety
    /// As [`arrive`](Self::arrive), for the barrier in block `rank`: initialised there and made
    /// visible to this block by a cluster barrier ([`crate::cluster::sync`]) after its
    /// [`fence_init`]; that block has not exited. The waiters on that barrier must not rely on
    /// seeing this thread's memory writes through it.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// /// Each block of a cluster of two arrives on its peer's barrier (one arrival expected).
    /// #[kernel]
    /// pub fn knock(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     let t = thread::thread_idx_x();
    ///     if t == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once, published by the cluster barrier
    ///         mbarrier::fence_init();
    ///     }
    ///     cluster::sync();
    ///     if t == 0 {
    ///         // SAFETY: the peer's barrier is initialised; it waits below before exiting.
    ///         unsafe { bar.arrive_cluster(cluster::block_rank() ^ 1) };
    ///     }
    ///     unsafe { bar.wait_parity(0) }; // SAFETY: initialised; the peer's arrival completes it
    ///     cluster::sync();
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn arrive_cluster(self, rank: u32) {
        let peer = crate::cluster::map_shared_rank_addr(self.addr, rank);
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("mbarrier.arrive.release.cta.shared::cluster.b64 _, [{0}];",
                in(reg32) peer.raw(), options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::update(peer.raw(), "Mbarrier::arrive_cluster", 1, 0);
            crate::host::with_context("Mbarrier::arrive_cluster", |cx| cx.hooks().progress());
        }
    }

    /// `mbarrier.arrive.release.cluster.shared::cluster.b64`: as
    /// [`arrive_cluster`](Self::arrive_cluster), releasing at cluster scope: this thread's
    /// earlier memory writes (into the peer's shared memory, say) are visible to the peer's
    /// threads once their wait on that barrier's phase returns. Costs a GPU-scope memory barrier
    /// before the arrival.
    ///
    /// # Safety
    /// As [`arrive_cluster`](Self::arrive_cluster), without its last condition.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::mbarrier::{self, Mbarrier};
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// /// Rank 0 writes a word into rank 1's shared memory and publishes it on rank 1's barrier.
    /// #[kernel]
    /// pub fn post(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u64, 1);
    ///     let slot = shared_array!(u32, 1);
    ///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
    ///     let (t, rank) = (thread::thread_idx_x(), cluster::block_rank());
    ///     if t == 0 {
    ///         unsafe { bar.init(1) }; // SAFETY: once, published by the cluster barrier
    ///         mbarrier::fence_init();
    ///     }
    ///     cluster::sync();
    ///     if t == 0 && rank == 0 {
    ///         // SAFETY: rank 1's slot is written by this thread alone, read after the phase;
    ///         // its barrier is initialised and rank 1 waits on it before exiting.
    ///         unsafe {
    ///             cluster::map_shared_rank(slot.as_mut_ptr(), 1).write(7);
    ///             bar.arrive_cluster_release(1);
    ///         }
    ///     }
    ///     let mut v = 0;
    ///     if rank == 1 {
    ///         unsafe { bar.wait_parity(0) }; // SAFETY: initialised; rank 0's arrival ends it
    ///         v = unsafe { slot.read(0) }; // SAFETY: published by the release
    ///     }
    ///     cluster::sync();
    ///     out.set(thread::index(), v);
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn arrive_cluster_release(self, rank: u32) {
        let peer = crate::cluster::map_shared_rank_addr(self.addr, rank);
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{0}];",
                in(reg32) peer.raw(), options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::update(peer.raw(), "Mbarrier::arrive_cluster_release", 1, 0);
            crate::host::with_context("Mbarrier::arrive_cluster_release", |cx| {
                cx.hooks().progress()
            });
        }
    }
}
