//! Named barriers with a thread count (`barrier.sync id, count` / `barrier.arrive id, count`):
//! a block's 16 hardware barriers, of which [`crate::sync::sync_threads`] uses number 0, let a
//! subset of the block's warps meet without the others, and let one group of warps signal
//! another without waiting (the producer/consumer hand-offs of warp-specialised kernels, or
//! the turn-taking of two consumer warpgroups whose softmax and matrix products alternate).
//!
//! A barrier completes when `count` threads arrived at it, by [`NamedBarrier::sync`] (which
//! waits for the completion) or [`NamedBarrier::arrive`] (which does not), and is then
//! immediately reusable. Arrivals are counted per warp on the GPU: every lane of a warp that
//! takes part makes the call, and `count` is a multiple of 32.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::named_barrier::NamedBarrier;
//! use gpukernel_device::{shared::shared_array, thread};
//!
//! /// Warps 0–1 write a tile, warps 2–3 read it: the writers arrive, the readers wait, at
//! /// barrier 1 for 128 threads (launch with 128 threads).
//! #[kernel]
//! pub fn hand_off(mut out: DisjointSlice<u32>) {
//!     let tile = shared_array!(u32, 64);
//!     let ready = NamedBarrier::new(1, 128);
//!     let t = thread::thread_idx_x() as usize;
//!     if t < 64 {
//!         unsafe { tile.write(t, 10 * t as u32) }; // SAFETY: own slot, read after the barrier
//!         ready.arrive();
//!     } else {
//!         ready.sync();
//!         out.set(thread::index(), unsafe { tile.read(t - 64) }); // SAFETY: written before
//!     }
//! }
//! ```
//!
//! # Which instructions, and why the safe forms are defined
//!
//! [`NamedBarrier::sync`] and [`NamedBarrier::arrive`] lower to the PTX ISA's non-aligned
//! `barrier.sync` and `barrier.arrive`, defined wherever threads reach them from (see
//! [`crate::sync`]): a misuse (too few arrivals, or threads of one barrier passing different
//! counts) hangs the block or completes the barrier early, a bug but not undefined
//! behaviour. What the ISA leaves undefined, a count that is no multiple of the warp size or
//! above the block's threads, and a barrier number above 15, [`NamedBarrier::new`] refuses
//! (the kernel traps naming the barrier). Number 0 is the one every
//! [`crate::sync::sync_threads`] waits at; a count on it would mix the two uses, so it is
//! refused too.
//!
//! The aligned forms (`bar.sync`, `bar.arrive`: what CUDA's `__syncthreads` and CUTLASS's
//! named barriers emit) promise that every thread of each warp taking part executes the same
//! instruction; they are [`NamedBarrier::sync_aligned`] and [`NamedBarrier::arrive_aligned`],
//! `unsafe`.
//!
//! As on the GPU, a lane arriving at a barrier waits until every lane of its warp that has not
//! exited arrived at the same barrier, and the warp then counts as 32 threads: a warp taking
//! part with some of its lanes while the others go on (without exiting) keeps them waiting, and
//! lanes that exited do not. The simulator counts the same way; a barrier whose waiters can
//! never be released is reported ("can never complete", naming the barrier), as are threads of
//! one phase passing different counts.

#[cfg(target_arch = "nvptx64")]
mod nv {
    unsafe extern "C" {
        // LLVM's barrier intrinsics with a thread count (the first operand is the barrier's
        // number, the second the count).
        #[link_name = "llvm.nvvm.barrier.cta.sync.count"]
        pub fn sync_count(id: u32, count: u32);
        #[link_name = "llvm.nvvm.barrier.cta.sync.aligned.count"]
        pub fn sync_aligned_count(id: u32, count: u32);
        #[link_name = "llvm.nvvm.barrier.cta.arrive.count"]
        pub fn arrive_count(id: u32, count: u32);
        #[link_name = "llvm.nvvm.barrier.cta.arrive.aligned.count"]
        pub fn arrive_aligned_count(id: u32, count: u32);
    }
}

/// The highest barrier number (the hardware has 16 per block, 0 to 15).
pub const MAX_ID: u32 = 15;

/// One of the block's named barriers (numbers 1 to [`MAX_ID`]) with the number of threads
/// that complete it. A value, checked once by [`new`](Self::new); copying it is free.
///
/// ```
/// use gpukernel_device::prelude::*;
/// use gpukernel_device::named_barrier::NamedBarrier;
/// use gpukernel_device::thread;
///
/// /// Two groups of 64 threads (launch with 128) meet at their own barriers, 1 and 2.
/// #[kernel]
/// pub fn two_groups(mut out: DisjointSlice<u32>) {
///     let group = thread::thread_idx_x() / 64;
///     let mine = NamedBarrier::new(1 + group, 64);
///     mine.sync();
///     out.set(thread::index(), group);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedBarrier {
    id: u32,
    count: u32,
}

impl NamedBarrier {
    /// Barrier `id` completed by `count` threads. Traps unless `id` is 1 to [`MAX_ID`] and
    /// `count` a non-zero multiple of 32 no larger than the block's threads rounded up to
    /// whole warps.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// use gpukernel_device::thread;
    ///
    /// /// Two groups of 64 threads, each meeting at its own barrier (launch with 128).
    /// #[kernel]
    /// pub fn halves(mut out: DisjointSlice<u32>) {
    ///     let half = thread::thread_idx_x() / 64;
    ///     NamedBarrier::new(1 + half, 64).sync();
    ///     out.set(thread::index(), half);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn new(id: u32, count: u32) -> NamedBarrier {
        let threads = crate::thread::block_dim().volume();
        assert!(
            (1..=MAX_ID).contains(&id),
            "NamedBarrier::new: barrier number {id}: use 1 to 15 (0 is sync_threads')"
        );
        assert!(
            count > 0 && count.is_multiple_of(32) && u64::from(count) <= threads.div_ceil(32) * 32,
            "NamedBarrier::new: barrier {id} with count {count}: the count must be a non-zero multiple of 32 (whole warps), at most the block's {threads} threads"
        );
        NamedBarrier { id, count }
    }

    /// The barrier's number.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// #[kernel]
    /// pub fn number(mut out: DisjointSlice<u32>) {
    ///     let b = NamedBarrier::new(3, 32);
    ///     out.set(gpukernel_device::thread::index(), b.id() + b.count());
    /// }
    /// ```
    #[inline(always)]
    pub fn id(self) -> u32 {
        self.id
    }

    /// The number of threads that complete it.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// #[kernel]
    /// pub fn count(mut out: DisjointSlice<u32>) {
    ///     out.set(gpukernel_device::thread::index(), NamedBarrier::new(2, 64).count());
    /// }
    /// ```
    #[inline(always)]
    pub fn count(self) -> u32 {
        self.count
    }

    /// `barrier.sync id, count`: arrives and waits until `count` threads arrived (this one
    /// included) in the barrier's current phase; memory accesses the arriving threads made
    /// before are then visible to the waiting ones (as [`crate::sync::sync_threads`] for the
    /// block). Every lane of the calling warp takes part.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// use gpukernel_device::thread;
    /// #[kernel]
    /// pub fn first_warps(mut out: DisjointSlice<u32>) {
    ///     if thread::thread_idx_x() < 64 {
    ///         NamedBarrier::new(5, 64).sync(); // the other warps never wait here
    ///     }
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn sync(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the non-aligned form is defined from any control flow; `new` checked the
        // number and the count.
        unsafe {
            nv::sync_count(self.id, self.count)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::sync(self, "NamedBarrier::sync");
    }

    /// `barrier.arrive id, count`: arrives without waiting (the signalling side of a
    /// hand-off: memory accesses made before it are visible to the threads that the phase's
    /// completion releases). Every lane of the calling warp takes part.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// use gpukernel_device::thread;
    /// #[kernel]
    /// pub fn signal(mut out: DisjointSlice<u32>) {
    ///     let b = NamedBarrier::new(1, 64);
    ///     if thread::thread_idx_x() < 32 { b.arrive() } else { b.sync() }
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn arrive(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as `sync`.
        unsafe {
            nv::arrive_count(self.id, self.count)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::arrive(self, "NamedBarrier::arrive");
    }

    /// The aligned form of [`sync`](Self::sync) (`barrier.sync.aligned id, count`, i.e.
    /// `bar.sync`).
    ///
    /// # Safety
    /// Every thread of each warp that takes part executes this same call, converged: it is not
    /// reachable from code only some lanes of a warp run. (The PTX ISA leaves the program
    /// undefined otherwise.) The simulator checks what it can of this as for
    /// [`sync`](Self::sync).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// use gpukernel_device::thread;
    /// #[kernel]
    /// pub fn warpgroups(mut out: DisjointSlice<u32>) {
    ///     let wg = thread::thread_idx_x() / 128; // uniform per warp
    ///     // SAFETY: whole warps (a warpgroup-uniform branch) run this call together.
    ///     unsafe { NamedBarrier::new(1 + wg, 128).sync_aligned() };
    ///     out.set(thread::index(), wg);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn sync_aligned(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's promise; `new` checked the number and the count.
        unsafe {
            nv::sync_aligned_count(self.id, self.count)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::sync(self, "NamedBarrier::sync_aligned");
    }

    /// The aligned form of [`arrive`](Self::arrive) (`barrier.arrive.aligned id, count`, i.e.
    /// `bar.arrive`).
    ///
    /// # Safety
    /// As [`sync_aligned`](Self::sync_aligned).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::named_barrier::NamedBarrier;
    /// use gpukernel_device::thread;
    /// #[kernel]
    /// pub fn turn(mut out: DisjointSlice<u32>) {
    ///     let b = NamedBarrier::new(1, 64);
    ///     // SAFETY: warp-uniform branch; whole warps make each call.
    ///     if thread::thread_idx_x() < 32 { unsafe { b.arrive_aligned() } } else { unsafe { b.sync_aligned() } }
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn arrive_aligned(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as `sync_aligned`.
        unsafe {
            nv::arrive_aligned_count(self.id, self.count)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        sim::arrive(self, "NamedBarrier::arrive_aligned");
    }
}

/// The simulator's barriers, counted per warp as on the GPU: `barrier.sync` / `barrier.arrive`
/// make each lane wait until every lane of its warp that has not exited arrived at the same
/// barrier, then count the *warp's* arrival as 32 threads. Per number, one word holds the
/// phase (bits 32..64), the count of the phase's first arrival (16..32) and the threads
/// arrived so far (0..16); per number and warp, another holds the lanes arrived for the
/// warp's next arrival (0..32) and how many arrivals the warp made (32..64); a third, the
/// phase the warp's latest arrival was counted in.
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use super::{MAX_ID, NamedBarrier};
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    /// The key of the block's barrier words (its address is unique to this declaration).
    static KEY: u8 = 0;

    /// Warps per block at most (1024 threads).
    const WARPS: usize = 32;
    const IDS: usize = MAX_ID as usize + 1;

    /// The block's barrier words: per number, the barrier's word; per number and warp, the
    /// warp's word and the phase its latest arrival was counted in.
    #[derive(Clone, Copy)]
    struct Words(*mut u8);

    impl Words {
        fn get(what: &str) -> Words {
            Words(crate::host::with_context(what, |cx| {
                cx.hooks().static_shared(
                    core::ptr::addr_of!(KEY) as usize,
                    IDS * 8 + IDS * WARPS * 8 + IDS * WARPS * 4,
                    8,
                )
            }))
        }

        fn barrier(self, id: u32) -> &'static AtomicU64 {
            // SAFETY: the block's zeroed storage, 8-byte aligned, live while the block runs
            // (the only time a simulated thread can call this); accessed atomically only.
            unsafe { AtomicU64::from_ptr(self.0.cast::<u64>().add(id as usize)) }
        }

        fn warp(self, id: u32, warp: usize) -> &'static AtomicU64 {
            // SAFETY: as `barrier`, the 16 × 32 words after the barriers' 16.
            unsafe {
                AtomicU64::from_ptr(self.0.cast::<u64>().add(IDS + id as usize * WARPS + warp))
            }
        }

        fn warp_phase(self, id: u32, warp: usize) -> &'static AtomicU32 {
            // SAFETY: as `barrier`, the 16 × 32 words of 4 bytes after the warps' words.
            unsafe {
                AtomicU32::from_ptr(
                    self.0
                        .add(IDS * 8 + IDS * WARPS * 8)
                        .cast::<u32>()
                        .add(id as usize * WARPS + warp),
                )
            }
        }
    }

    /// Counts a warp's arrival (32 threads) at `b`; returns the word's phase before it.
    #[track_caller]
    fn add_warp(words: Words, b: NamedBarrier, what: &str) -> u32 {
        let w = words.barrier(b.id);
        let mut cur = w.load(Ordering::SeqCst);
        loop {
            let (phase, count, arrived) = ((cur >> 32) as u32, (cur >> 16) & 0xffff, cur & 0xffff);
            assert!(
                arrived == 0 || count == b.count as u64,
                "{what}: named barrier {} reached with count {} while threads of the same phase passed {count}: every thread of a phase must pass one count",
                b.id,
                b.count
            );
            let new = if arrived + 32 >= b.count as u64 {
                (phase.wrapping_add(1) as u64) << 32
            } else {
                ((phase as u64) << 32) | ((b.count as u64) << 16) | (arrived + 32)
            };
            match w.compare_exchange(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return phase,
                Err(actual) => cur = actual,
            }
        }
    }

    /// This lane's arrival: waits until every lane of its warp that exists and has not exited
    /// arrived at `b` (the last of them counts the warp's arrival), then, for `sync`, until
    /// the phase the warp's arrival was counted in completed.
    #[track_caller]
    fn add(b: NamedBarrier, what: &'static str, sync: bool) {
        let threads = crate::thread::block_dim().volume();
        let (dim, idx) = (crate::thread::block_dim(), crate::thread::thread_idx());
        let linear = (idx.z as u64 * dim.y as u64 + idx.y as u64) * dim.x as u64 + idx.x as u64;
        let (warp, lane) = ((linear / 32) as usize, (linear % 32) as u32);
        assert!(warp < WARPS, "{what}: a block of more than 1024 threads");
        let lanes = (threads - warp as u64 * 32).min(32) as u32;
        let existing = if lanes == 32 {
            u32::MAX
        } else {
            (1u32 << lanes) - 1
        };
        // A phase's threads pass one count (checked again when the warp's arrival is counted).
        let words = Words::get(what);
        let w = words.barrier(b.id);
        let cur = w.load(Ordering::SeqCst);
        assert!(
            cur & 0xffff == 0 || (cur >> 16) & 0xffff == b.count as u64,
            "{what}: named barrier {} reached with count {} while threads of the same phase passed {}: every thread of a phase must pass one count",
            b.id,
            b.count,
            (cur >> 16) & 0xffff
        );
        let ww = words.warp(b.id, warp);
        let generation = (ww.fetch_or(1u64 << lane, Ordering::SeqCst) >> 32) as u32;
        // The phase the warp's arrival was counted in, once it was.
        let mut counted: Option<u32> = None;
        let mut ready = || {
            let phase = match counted {
                Some(p) => p,
                None => {
                    let cur = ww.load(Ordering::SeqCst);
                    let p = if (cur >> 32) as u32 != generation {
                        // Another lane counted the warp's arrival.
                        words.warp_phase(b.id, warp).load(Ordering::SeqCst)
                    } else {
                        let exited =
                            crate::host::with_context(what, |cx| cx.hooks().warp_exited_lanes());
                        let live = existing & !exited;
                        if cur as u32 & live != live {
                            return false;
                        }
                        // Every live lane of the warp arrived: this one counts the warp.
                        let p = add_warp(words, b, what);
                        words.warp_phase(b.id, warp).store(p, Ordering::SeqCst);
                        ww.store((generation.wrapping_add(1) as u64) << 32, Ordering::SeqCst);
                        crate::host::with_context(what, |cx| cx.hooks().progress());
                        p
                    };
                    counted = Some(p);
                    p
                }
            };
            !sync || (w.load(Ordering::SeqCst) >> 32) as u32 != phase
        };
        if !ready() {
            crate::host::with_context(what, |cx| cx.hooks().wait_until(what, &mut ready));
        }
    }

    #[track_caller]
    pub(super) fn arrive(b: NamedBarrier, what: &'static str) {
        add(b, what, false);
    }

    #[track_caller]
    pub(super) fn sync(b: NamedBarrier, what: &'static str) {
        add(b, what, true);
    }
}
