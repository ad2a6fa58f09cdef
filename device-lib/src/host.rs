//! The host backend: the simulated thread's context that the runtime's simulator installs,
//! and the C entry points that foreign `.cu` code compiled for the host calls.
//!
//! device-lib does not know how the simulator schedules threads. The simulator owns one
//! [`ThreadContext`] per simulated thread, makes it current on the OS thread with
//! [`set_current`] before it resumes that thread's coroutine, and implements [`SimHooks`]:
//! the barrier, the warp exchange and the block's shared memory. Every intrinsic on the host
//! reads the current context; outside a simulated launch it panics with a message naming the
//! intrinsic.

use crate::thread::{Dim3, WARP_SIZE};
use core::any::Any;
use core::cell::Cell;
use core::ptr::NonNull;
use std::boxed::Box;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The values the lanes of a warp contributed to one warp-wide operation.
#[derive(Debug, Clone, Copy)]
pub struct WarpExchange {
    /// `values[lane]` is what `lane` contributed; lanes not in `participants` hold 0.
    pub values: [u64; 32],
    /// The lanes that took part: the operation's mask, restricted to the lanes that exist in
    /// the warp (the last warp of a block whose size is not a multiple of 32 is partial).
    pub participants: u32,
}

/// The kind of warp-wide instruction a lane executes. The lanes of one mask must meet at
/// operations of one kind: lanes of a mask in a shuffle while others of it wait in a vote
/// never complete on the GPU (the warp hangs), so the simulator reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarpOpKind {
    /// `shfl.sync` (any mode, width or value size): `warp::shfl*_sync`, `__shfl*_sync`.
    Shuffle,
    /// `vote.sync`: `warp::all_sync`, `any_sync`, `ballot_sync` and their C forms.
    Vote,
    /// `bar.warp.sync`: `sync::sync_warp`, `__syncwarp`.
    Sync,
    /// A warp-collective instruction that the simulator computes from every lane's registers
    /// (`mma.sync`, `ldmatrix`, `wgmma`): the lanes must call the same one (same name).
    Collective,
}

/// One lane's warp-wide operation: its kind and, for messages, the function called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarpOp {
    /// What kind of instruction it is.
    pub kind: WarpOpKind,
    /// The function the lane called (`warp::shfl_sync`, `__ballot_sync`, `mma::mma_bf16`…).
    pub name: &'static str,
}

impl WarpOp {
    /// Whether lanes calling `self` and `other` under one mask meet at one instruction.
    pub fn meets(&self, other: &WarpOp) -> bool {
        self.kind == other.kind && (self.kind != WarpOpKind::Collective || self.name == other.name)
    }
}

/// The kind of a block-wide barrier: the plain one or one of its reductions. The threads of a
/// block must wait at barriers of one kind at a time (the PTX ISA calls mixing `barrier.red`
/// with `barrier.sync` unpredictable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierKind {
    /// `sync_threads` / `__syncthreads`.
    Sync,
    /// `sync_threads_count` / `__syncthreads_count`.
    Count,
    /// `sync_threads_and` / `__syncthreads_and`.
    And,
    /// `sync_threads_or` / `__syncthreads_or`.
    Or,
}

impl BarrierKind {
    /// The Rust function of this kind, for messages.
    pub fn name(self) -> &'static str {
        match self {
            BarrierKind::Sync => "sync_threads",
            BarrierKind::Count => "sync_threads_count",
            BarrierKind::And => "sync_threads_and",
            BarrierKind::Or => "sync_threads_or",
        }
    }
}

/// One thread's arrival at a block-wide barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Barrier {
    /// Which barrier.
    pub kind: BarrierKind,
    /// The thread's predicate (false for [`BarrierKind::Sync`]).
    pub predicate: bool,
    /// For the aligned form (`sync_threads_aligned`), where it was called: every thread of the
    /// block must then wait at that same call.
    pub aligned_at: Option<&'static core::panic::Location<'static>>,
}

/// What the simulator provides to the simulated thread whose context names it.
///
/// Every method is called from inside that thread's coroutine, on the OS thread that
/// resumed it; a method that has to wait for other threads (a barrier, a warp exchange)
/// suspends the coroutine and returns once the other threads arrived.
pub trait SimHooks {
    /// A block-wide barrier: waits until every thread of the block arrived, then returns the
    /// number of threads that passed `predicate == true`. Threads arriving at barriers of
    /// different kinds, or some at an aligned barrier and others elsewhere, are an error the
    /// simulator reports.
    fn barrier(&self, barrier: Barrier) -> u32;

    /// A warp-synchronous exchange: waits until every lane of `mask` that exists in the
    /// calling thread's warp called it (with the same mask), then returns what each lane
    /// contributed. The calling lane must be in `mask` (the callers in this module check it
    /// first, naming the operation). Lanes of one mask waiting at operations that do not
    /// [meet](WarpOp::meets) (a shuffle on some, a vote on others) are an error the simulator
    /// reports, naming both operations and lanes.
    fn warp_exchange(&self, op: WarpOp, mask: u32, value: u64) -> WarpExchange;

    /// The block's storage for the static shared-memory array identified by `key` (the
    /// address of a static unique to the declaration), `size` bytes aligned to `align`,
    /// zeroed when a block first asks for it and the same for every thread of the block.
    fn static_shared(&self, key: usize, size: usize, align: usize) -> *mut u8;

    /// The block's dynamic shared memory: its address (aligned to 16 bytes) and the size the
    /// launch asked for, in bytes.
    fn dynamic_shared(&self) -> (*mut u8, usize);

    /// Records a failed foreign call of this launch (the first one of the launch wins); the
    /// simulator hands it to the launching thread with [`post_foreign_failure`].
    fn record_foreign_failure(&self, failure: ForeignFailure);

    /// Ends the calling simulated thread without unwinding its stack: a panic (`payload`)
    /// was caught in an entry point that foreign code called, so the frames between the
    /// thread's start and here include foreign (C++) frames and the `extern "C"` import that
    /// called them, which a Rust unwind must not cross. The simulator suspends the thread for
    /// good, reports the panic as the thread's failure (unless it is the simulator's own abort
    /// of the thread) and discards the thread's stack without running its destructors.
    fn fault(&self, payload: Box<dyn Any + Send>) -> !;

    /// The launch's cluster dimensions, in blocks (1 × 1 × 1 for a launch without clusters:
    /// every block is then a cluster of its own, as on the GPU).
    fn cluster_dim(&self) -> Dim3;

    /// Whether the launch named cluster dimensions (`%is_explicit_cluster`), even 1 × 1 × 1.
    /// By default, whether the cluster has more than one block.
    fn cluster_is_explicit(&self) -> bool {
        self.cluster_dim() != Dim3::new(1, 1, 1)
    }

    /// `barrier.cluster.arrive`: the calling thread arrives at its cluster's barrier without
    /// waiting. A thread that arrives twice without a [`cluster_wait`](Self::cluster_wait)
    /// between is an error the simulator reports.
    fn cluster_arrive(&self);

    /// `barrier.cluster.wait`: waits until every thread of the cluster that has not exited
    /// arrived at the phase this thread arrived at. Waiting without having arrived is an error
    /// the simulator reports.
    fn cluster_wait(&self);

    /// `mapa`: the address in the shared memory of the block of rank `rank` in this thread's
    /// cluster that corresponds to `p`, an address in this block's shared memory. The simulator
    /// reports an address outside this block's shared memory, or a rank outside the cluster.
    fn map_shared_rank(&self, p: *mut u8, rank: u32) -> *mut u8;

    /// A grid-wide barrier of a cooperative launch: waits until every thread of the grid
    /// arrived. Outside a cooperative launch, an error the simulator reports.
    fn grid_sync(&self);

    /// Suspends the calling thread until `ready()` holds, letting the other threads of the
    /// block (and of its cluster or cooperative grid) run: the wait of an `mbarrier` phase, say.
    /// When no thread that could make it hold can make progress, the simulator reports the
    /// wait (`what` names it) instead of hanging.
    fn wait_until(&self, what: &'static str, ready: &mut dyn FnMut() -> bool);

    /// Notes that the calling thread changed state that a [`wait_until`](Self::wait_until)
    /// may be waiting for (an `mbarrier` arrival, a completed copy).
    fn progress(&self);

    /// The lanes of the calling thread's warp that have exited (bit `i` for lane `i`): a warp
    /// arrives at a named barrier once every lane that exists and has not exited arrived, as
    /// `barrier.sync` / `barrier.arrive` make each lane wait for those (`named_barrier`). By
    /// default none.
    fn warp_exited_lanes(&self) -> u32 {
        0
    }

    /// How many bytes of this block's shared memory follow `p` inside the shared array (a
    /// `shared_array!` or the dynamic region) that holds it: `Some(0)` for an address outside
    /// every one, `None` where the simulator does not know. A bulk copy's shared side is
    /// checked against it (on the GPU a box that overruns its array writes over other shared
    /// data or faults).
    fn shared_room(&self, p: *mut u8) -> Option<usize> {
        let _ = p;
        None
    }

    /// Whether the launch has already failed (a thread of another block panicked): a thread
    /// polling memory that other blocks write ([`crate::sync::poll_pause`]) then stops, as a
    /// GPU's trap ends every thread of the grid, instead of waiting for a block that stopped.
    fn launch_failed(&self) -> bool {
        false
    }
}

/// The context of one simulated thread: its indices and the hooks of its block.
///
/// Only the simulator makes one ([`ThreadContext::new`] is `unsafe`: the hooks pointer it
/// takes is dereferenced by the safe [`hooks`](Self::hooks)), and its fields are private, so
/// safe code can neither forge a context nor point one at other hooks.
#[derive(Debug)]
pub struct ThreadContext {
    thread_idx: Dim3,
    block_idx: Dim3,
    block_dim: Dim3,
    grid_dim: Dim3,
    hooks: NonNull<dyn SimHooks>,
}

impl ThreadContext {
    /// A context for the thread at `thread_idx` of block `block_idx`.
    ///
    /// # Safety
    /// Whenever [`hooks`](Self::hooks) is called on the context (by the device library's
    /// intrinsics while it is current, see [`set_current`], or by the caller itself),
    /// `hooks` (or the value [`set_hooks`](Self::set_hooks) gave since) must point to a live
    /// `SimHooks` not mutably borrowed elsewhere.
    pub unsafe fn new(
        thread_idx: Dim3,
        block_idx: Dim3,
        block_dim: Dim3,
        grid_dim: Dim3,
        hooks: NonNull<dyn SimHooks>,
    ) -> Self {
        ThreadContext {
            thread_idx,
            block_idx,
            block_dim,
            grid_dim,
            hooks,
        }
    }

    /// Points the context at other hooks.
    ///
    /// # Safety
    /// As [`ThreadContext::new`], for `hooks`.
    pub unsafe fn set_hooks(&mut self, hooks: NonNull<dyn SimHooks>) {
        self.hooks = hooks;
    }

    /// Moves the context to block `block_idx` (the simulator reuses a block's threads).
    pub fn set_block_idx(&mut self, block_idx: Dim3) {
        self.block_idx = block_idx;
    }

    /// `threadIdx`.
    pub fn thread_idx(&self) -> Dim3 {
        self.thread_idx
    }

    /// `blockIdx`.
    pub fn block_idx(&self) -> Dim3 {
        self.block_idx
    }

    /// `blockDim`.
    pub fn block_dim(&self) -> Dim3 {
        self.block_dim
    }

    /// `gridDim`.
    pub fn grid_dim(&self) -> Dim3 {
        self.grid_dim
    }

    /// The thread's linear index in its block.
    pub fn linear_thread(&self) -> u32 {
        let (t, d) = (self.thread_idx, self.block_dim);
        t.x + t.y * d.x + t.z * d.x * d.y
    }

    /// The block's linear index in the grid.
    pub fn linear_block(&self) -> u64 {
        let (b, g) = (self.block_idx, self.grid_dim);
        b.x as u64 + b.y as u64 * g.x as u64 + b.z as u64 * g.x as u64 * g.y as u64
    }

    /// The thread's linear index in the launch (what [`crate::thread::index`] returns).
    pub fn linear_global(&self) -> u64 {
        self.linear_block() * self.block_dim.volume() + self.linear_thread() as u64
    }

    /// The hooks.
    pub fn hooks(&self) -> &dyn SimHooks {
        // SAFETY: the context was made by the `unsafe` `new` (its fields are private), whose
        // caller promised that the hooks are live whenever this is called.
        unsafe { self.hooks.as_ref() }
    }
}

std::thread_local! {
    static CURRENT: Cell<*const ThreadContext> = const { Cell::new(core::ptr::null()) };
}

/// Makes `cx` the current simulated thread of this OS thread (null: none) and returns the
/// previous one.
///
/// # Safety
/// Until the context is replaced, `cx` (when not null) and its `hooks` must stay valid, and
/// the context must not be mutated.
#[inline]
pub unsafe fn set_current(cx: *const ThreadContext) -> *const ThreadContext {
    CURRENT.with(|c| c.replace(cx))
}

/// Whether a simulated thread is current on this OS thread.
#[inline]
pub fn in_launch() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// Runs `f` with the current simulated thread's context.
///
/// # Panics
/// Outside a simulated launch, naming `what` (the intrinsic that was called).
#[inline]
#[track_caller]
pub fn with_context<R>(what: &str, f: impl FnOnce(&ThreadContext) -> R) -> R {
    let cx = CURRENT.with(|c| c.get());
    if cx.is_null() {
        outside_launch(what);
    }
    // SAFETY: non-null; `set_current`'s caller keeps it valid while it is current.
    f(unsafe { &*cx })
}

#[cold]
#[inline(never)]
#[track_caller]
fn outside_launch(what: &str) -> ! {
    panic!(
        "gpukernel_device::{what} called outside a kernel launch: device intrinsics only work \
         in a kernel body run by the GPU or by the simulator"
    )
}

/// A failed foreign call recorded during a simulated launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignFailure {
    /// The foreign symbol's name.
    pub name: &'static str,
    /// The non-zero status it returned.
    pub status: i32,
    /// The linear index (as [`crate::thread::index`]) of the failing thread, or `u64::MAX`
    /// when it was called outside a launch.
    pub thread: u64,
    /// How many failed calls this stands for: this one (the first) and those after it that
    /// were counted into it (at least 1).
    pub count: u64,
}

std::thread_local! {
    /// The failed foreign call pending for this OS thread (the launching thread, for
    /// simulated launches).
    static FOREIGN_FAILURE: Cell<Option<ForeignFailure>> = const { Cell::new(None) };
}

/// Records a failed foreign call: in a simulated launch, for that launch (the first one is kept,
/// every one counted); outside a launch, for the calling OS thread. (`declare_device!` wrappers reach this through
/// `ffi::report_foreign_failure`.)
pub fn record_foreign_failure(name: &'static str, status: i32) {
    let cx = CURRENT.with(|c| c.get());
    if cx.is_null() {
        post_foreign_failure(ForeignFailure {
            name,
            status,
            thread: u64::MAX,
            count: 1,
        });
    } else {
        // SAFETY: non-null contexts are valid while current (see `set_current`).
        let cx = unsafe { &*cx };
        cx.hooks().record_foreign_failure(ForeignFailure {
            name,
            status,
            thread: cx.linear_global(),
            count: 1,
        });
    }
}

/// Makes `failure` pending for the calling OS thread, or counts it into the one already
/// pending (the first is kept until it is taken, every one counted). The simulator calls this
/// on the launching thread when a launch recorded a failure.
pub fn post_foreign_failure(failure: ForeignFailure) {
    FOREIGN_FAILURE.with(|slot| {
        let kept = match slot.take() {
            Some(first) => ForeignFailure {
                count: first.count.saturating_add(failure.count),
                ..first
            },
            None => failure,
        };
        slot.set(Some(kept));
    });
}

/// Takes (and clears) the failed foreign call pending for the calling OS thread, if any. The
/// runtime calls this when the launch's stream is synchronized.
pub fn take_foreign_failure() -> Option<ForeignFailure> {
    FOREIGN_FAILURE.with(|slot| slot.take())
}

/// The source lane a shuffle reads from, or `None` when the lane keeps its own value.
/// `mode`: 0 = index (`arg` is the source lane), 1 = up, 2 = down, 3 = xor; `width` is a
/// power of two in 1..=32 splitting the warp into independent segments (CUDA's `width`).
pub fn shuffle_source(mode: u32, lane: u32, arg: u32, width: u32) -> Option<u32> {
    let width = if width.is_power_of_two() && width <= WARP_SIZE {
        width
    } else {
        WARP_SIZE
    };
    let base = lane & !(width - 1);
    let src = match mode {
        0 => base + (arg % width),
        1 => {
            if lane - base < arg {
                return None;
            }
            lane - arg
        }
        2 => {
            let s = lane.checked_add(arg)?;
            if s >= base + width {
                return None;
            }
            s
        }
        _ => {
            let s = lane ^ arg;
            if s >= base + width {
                return None;
            }
            s
        }
    };
    Some(src)
}

/// Performs a shuffle for the current simulated thread: the value of the source lane when it
/// is a participant, else the caller's own value (CUDA leaves that case undefined).
#[track_caller]
pub(crate) fn shuffle(
    what: &'static str,
    mask: u32,
    value: u64,
    mode: u32,
    arg: u32,
    width: u32,
) -> u64 {
    check_mask(what, mask);
    with_context(what, |cx| {
        let lane = cx.linear_thread() % WARP_SIZE;
        let op = WarpOp {
            kind: WarpOpKind::Shuffle,
            name: what,
        };
        let ex = cx.hooks().warp_exchange(op, mask, value);
        match shuffle_source(mode, lane, arg, width) {
            Some(src) if ex.participants & (1 << src) != 0 => ex.values[src as usize],
            _ => value,
        }
    })
}

/// A vote for the current simulated thread: the ballot of the participants' predicates.
#[track_caller]
pub(crate) fn ballot(what: &'static str, mask: u32, predicate: bool) -> (u32, u32) {
    check_mask(what, mask);
    with_context(what, |cx| {
        let op = WarpOp {
            kind: WarpOpKind::Vote,
            name: what,
        };
        let ex = cx.hooks().warp_exchange(op, mask, predicate as u64);
        let mut bits = 0u32;
        for lane in 0..32 {
            if ex.participants & (1 << lane) != 0 && ex.values[lane] != 0 {
                bits |= 1 << lane;
            }
        }
        (bits, ex.participants)
    })
}

/// `__syncwarp(mask)` for the current simulated thread.
#[track_caller]
pub(crate) fn warp_sync(what: &'static str, mask: u32) {
    check_mask(what, mask);
    with_context(what, |cx| {
        let op = WarpOp {
            kind: WarpOpKind::Sync,
            name: what,
        };
        cx.hooks().warp_exchange(op, mask, 0);
    })
}

/// Panics, naming `what` and the lane, unless the current simulated thread's lane is in
/// `mask`: the GPU leaves that case undefined, and the safe warp operations trap on it.
#[track_caller]
pub(crate) fn check_mask(what: &'static str, mask: u32) {
    let lane = with_context(what, |cx| cx.linear_thread() % WARP_SIZE);
    if mask & (1 << lane) == 0 {
        lane_not_in_mask(what, mask, lane);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn lane_not_in_mask(what: &str, mask: u32, lane: u32) -> ! {
    panic!(
        "{what} called by lane {lane} with mask {mask:#010x}, which is not in the mask: the calling \
         lane must be in the mask of a warp operation (undefined in the PTX ISA; the safe \
         functions trap on the GPU)"
    )
}

fn dim(what: &str, d: Dim3, which: u32) -> u32 {
    match which {
        0 => d.x,
        1 => d.y,
        2 => d.z,
        _ => panic!("{what}: dimension {which} is not 0 (x), 1 (y) or 2 (z)"),
    }
}

/// Runs the body of an entry point that foreign code calls, so that no unwind leaves it.
///
/// The caller is C++ compiled for the host, called in turn through the `extern "C"` import
/// that `declare_device!` generates: a Rust panic must not unwind through either. A panic in
/// `f` (a misuse the simulator reports, such as a warp mask without the calling lane, or the
/// simulator aborting the thread because another thread of its block failed) is caught here
/// and handed to [`SimHooks::fault`], which ends the simulated thread without unwinding its
/// stack. Outside a launch there is no simulated thread to end: the panic (already printed by
/// the panic hook) aborts the process.
#[inline]
fn from_foreign<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let cx = CURRENT.with(|c| c.get());
            if cx.is_null() {
                std::eprintln!(
                    "gpukernel_device: `{what}` panicked in a call from foreign code outside a \
                     kernel launch; aborting, since the panic cannot unwind through foreign frames"
                );
                std::process::abort();
            }
            // SAFETY: non-null contexts are valid while current (see `set_current`).
            unsafe { &*cx }.hooks().fault(payload)
        }
    }
}

/// `threadIdx` component `which` (0 = x, 1 = y, 2 = z), for foreign code.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_thread_idx(which: u32) -> u32 {
    from_foreign("threadIdx", || {
        with_context("threadIdx", |cx| dim("threadIdx", cx.thread_idx, which))
    })
}

/// `blockIdx` component `which`, for foreign code.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_block_idx(which: u32) -> u32 {
    from_foreign("blockIdx", || {
        with_context("blockIdx", |cx| dim("blockIdx", cx.block_idx, which))
    })
}

/// `blockDim` component `which`, for foreign code.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_block_dim(which: u32) -> u32 {
    from_foreign("blockDim", || {
        with_context("blockDim", |cx| dim("blockDim", cx.block_dim, which))
    })
}

/// `gridDim` component `which`, for foreign code.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_grid_dim(which: u32) -> u32 {
    from_foreign("gridDim", || {
        with_context("gridDim", |cx| dim("gridDim", cx.grid_dim, which))
    })
}

/// `__syncthreads` (`kind` 0) and its reductions `__syncthreads_count` (1), `_and` (2) and
/// `_or` (3), for foreign code: the number of the block's threads that passed a non-zero
/// `predicate`.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_barrier(kind: i32, predicate: i32) -> i32 {
    from_foreign("__syncthreads", || {
        let kind = match kind {
            0 => BarrierKind::Sync,
            1 => BarrierKind::Count,
            2 => BarrierKind::And,
            3 => BarrierKind::Or,
            _ => panic!("__syncthreads: unknown barrier kind {kind}"),
        };
        let barrier = Barrier {
            kind,
            predicate: predicate != 0,
            aligned_at: None,
        };
        with_context("__syncthreads", |cx| cx.hooks().barrier(barrier)) as i32
    })
}

/// `__shfl*_sync` on 32 bits, for foreign code: `mode` 0 = index, 1 = up, 2 = down, 3 = xor.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_shfl_sync(
    mask: u32,
    value: u32,
    mode: u32,
    arg: u32,
    width: u32,
) -> u32 {
    from_foreign("__shfl_sync", || {
        shuffle("__shfl_sync", mask, value as u64, mode, arg, width) as u32
    })
}

/// `__ballot_sync(mask, predicate)`, for foreign code (`__any_sync` and `__syncwarp` derive
/// from it).
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_ballot_sync(mask: u32, predicate: i32) -> u32 {
    from_foreign("__ballot_sync", || {
        ballot("__ballot_sync", mask, predicate != 0).0
    })
}

/// `__all_sync(mask, predicate)`, for foreign code: whether every participant (the lanes of
/// `mask` that exist) passed a non-zero predicate.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_all_sync(mask: u32, predicate: i32) -> i32 {
    from_foreign("__all_sync", || {
        let (bits, participants) = ballot("__all_sync", mask, predicate != 0);
        (bits == participants) as i32
    })
}

/// `__activemask()`, for foreign code: the lanes that exist in the caller's warp (see
/// [`crate::warp::active_mask`]).
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_active_mask() -> u32 {
    from_foreign("__activemask", crate::warp::active_mask)
}

/// `%laneid`, for foreign code.
#[unsafe(no_mangle)]
pub extern "C" fn gpukernel_sim_lane_id() -> u32 {
    from_foreign("__lane_id", || {
        with_context("__lane_id", |cx| cx.linear_thread() % WARP_SIZE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_sources() {
        assert_eq!(shuffle_source(0, 5, 3, 32), Some(3));
        assert_eq!(shuffle_source(0, 5, 35, 32), Some(3));
        assert_eq!(shuffle_source(0, 20, 3, 16), Some(19));
        assert_eq!(shuffle_source(1, 5, 3, 32), Some(2));
        assert_eq!(shuffle_source(1, 2, 3, 32), None);
        assert_eq!(shuffle_source(1, 17, 2, 16), None);
        assert_eq!(shuffle_source(2, 5, 3, 32), Some(8));
        assert_eq!(shuffle_source(2, 30, 3, 32), None);
        assert_eq!(shuffle_source(2, 13, 3, 16), None);
        assert_eq!(shuffle_source(3, 5, 1, 32), Some(4));
        assert_eq!(shuffle_source(3, 5, 16, 16), None);
    }

    #[test]
    #[should_panic(expected = "thread_idx_x called outside a kernel launch")]
    fn outside_a_launch_panics() {
        let _ = crate::thread::thread_idx_x();
    }

    #[test]
    fn foreign_failure_first_wins() {
        record_foreign_failure("f", 3);
        record_foreign_failure("g", 4);
        let f = take_foreign_failure().expect("recorded");
        assert_eq!((f.name, f.status, f.thread), ("f", 3, u64::MAX));
        assert_eq!(take_foreign_failure(), None);
    }
}
