//! One worker's block scheduler: the threads of a block as coroutines, the barrier and warp
//! exchanges between them, and the block's shared memory.

use core::any::Any;
use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::alloc::Layout;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, Once};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use gpukernel_device::SimEntry;
use gpukernel_device::host::{
    self, Barrier, ForeignFailure, SimHooks, ThreadContext, WarpExchange, WarpOp,
};
use gpukernel_device::thread::Dim3;

use super::group::Group;
use super::{SimError, SimLaunch};

/// Why a simulated thread suspended.
enum Suspend {
    Barrier(Barrier),
    Warp {
        op: WarpOp,
        mask: u32,
        value: u64,
    },
    /// A wait that cannot complete yet (`SimHooks::wait_until`): run the others, then retry.
    Yield(&'static str),
    /// The thread ended in a call from foreign code (see [`SimHooks::fault`]): never resume
    /// it; discard its stack without unwinding.
    Fault(Box<dyn Any + Send>),
}

/// What a suspended simulated thread is resumed with.
enum Resume {
    Start,
    Barrier(u32),
    /// The completed exchange, in the runner's slot for the lane group (valid until the lane
    /// suspends again).
    Warp(*const WarpExchange),
    /// Retry a wait.
    Retry,
    /// The launch failed: unwind out of the kernel body.
    Abort,
}

/// How a simulated thread's body ended.
enum Ended {
    Finished,
    Panicked(String),
    Aborted,
}

/// The panic payload that unwinds an aborted thread (never reaches the panic hook).
struct Aborted;

type Coro = Coroutine<Resume, Suspend, Ended, DefaultStack>;

/// Where a simulated thread stands in the block's schedule.
#[derive(Clone, Copy)]
enum State {
    NotStarted,
    Ready,
    AtBarrier(Barrier),
    AtWarp {
        op: WarpOp,
        mask: u32,
        value: u64,
    },
    /// Waiting in `SimHooks::wait_until` (what it waits for).
    Yielded(&'static str),
    Done,
}

/// One simulated thread: its context (whose hooks point back here) and the yielder of its
/// running coroutine. Lives at a stable address (a boxed slice) for the runner's lifetime.
struct SimThread {
    ctx: ThreadContext,
    lane: u32,
    /// The lanes that exist in this thread's warp.
    warp_lanes: u32,
    yielder: Cell<*const Yielder<Resume, Suspend>>,
    mem: *const BlockMem,
    /// The launch's foreign-failure record (in the launch state, which outlives the runner).
    foreign: *const Mutex<Option<ForeignFailure>>,
    /// Whether a block of the launch failed (in the launch state, which outlives the runner).
    launch_failed: *const AtomicBool,
    /// The group the block runs in (set by the runner before each block; outlives the run).
    group: Cell<*const Group>,
    /// The cluster barrier phase this thread arrived at and has not waited for yet.
    cluster_arrival: Cell<Option<u64>>,
}

impl SimThread {
    fn group(&self) -> &Group {
        // SAFETY: the runner points every thread at the block's group before resuming any of
        // them, and the group outlives the block's run.
        unsafe { &*self.group.get() }
    }

    fn block(&self) -> [u32; 3] {
        let b = self.ctx.block_idx();
        [b.x, b.y, b.z]
    }
}

impl SimThread {
    fn suspend(&self, why: Suspend) -> Resume {
        let y = self.yielder.get();
        // SAFETY: hooks are only reached through the current context, which is current only
        // while this thread's coroutine runs; the coroutine stored its yielder before calling
        // the kernel body, and the yielder lives as long as the coroutine.
        match unsafe { &*y }.suspend(why) {
            Resume::Abort => std::panic::resume_unwind(Box::new(Aborted)),
            r => r,
        }
    }
}

impl SimHooks for SimThread {
    fn launch_failed(&self) -> bool {
        // SAFETY: the launch state outlives the runner and its threads.
        self.group().failed.load(Ordering::SeqCst)
            || unsafe { &*self.launch_failed }.load(Ordering::Relaxed)
    }

    fn barrier(&self, barrier: Barrier) -> u32 {
        if std::thread::panicking() {
            // A destructor running while this thread unwinds: the launch has already failed,
            // and suspending mid-unwind could start a second panic on this OS thread.
            return 0;
        }
        match self.suspend(Suspend::Barrier(barrier)) {
            Resume::Barrier(count) => count,
            _ => unreachable!("a barrier is resumed with its count"),
        }
    }

    fn warp_exchange(&self, op: WarpOp, mask: u32, value: u64) -> WarpExchange {
        let own = 1u32 << self.lane;
        if mask & own == 0 {
            panic!(
                "warp operation with mask {mask:#010x} called by lane {}, which is not in the mask",
                self.lane
            );
        }
        let participants = mask & self.warp_lanes;
        if participants == own || std::thread::panicking() {
            let mut values = [0u64; 32];
            values[self.lane as usize] = value;
            return WarpExchange {
                values,
                participants,
            };
        }
        match self.suspend(Suspend::Warp { op, mask, value }) {
            // SAFETY: the runner keeps the exchange in place until every lane of the group has
            // been resumed (it reuses the slot only in a later release, after a full pass).
            Resume::Warp(ex) => unsafe { *ex },
            _ => unreachable!("a warp exchange is resumed with the lanes' values"),
        }
    }

    fn static_shared(&self, key: usize, size: usize, align: usize) -> *mut u8 {
        // SAFETY: the block memory outlives every thread record that points to it.
        unsafe { &*self.mem }.static_shared(key, size, align)
    }

    fn dynamic_shared(&self) -> (*mut u8, usize) {
        // SAFETY: as above.
        let mem = unsafe { &*self.mem };
        (mem.dynamic.load(Ordering::Relaxed), mem.dynamic_len)
    }

    fn record_foreign_failure(&self, failure: ForeignFailure) {
        // SAFETY: the launch state outlives every runner of the launch.
        let slot = unsafe { &*self.foreign };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        // The first failure of the launch is kept, every one counted.
        match slot.as_mut() {
            Some(first) => first.count = first.count.saturating_add(failure.count),
            None => *slot = Some(failure),
        }
    }

    fn cluster_dim(&self) -> Dim3 {
        let [x, y, z] = self.group().cluster;
        Dim3::new(x, y, z)
    }

    fn cluster_is_explicit(&self) -> bool {
        self.group().explicit_cluster
    }

    fn cluster_arrive(&self) {
        if self.cluster_arrival.get().is_some() {
            panic!(
                "cluster::arrive called twice without cluster::wait between; each thread alternates arrive and wait (undefined on the GPU)"
            );
        }
        let g = self.group();
        let c = g.cluster_slot(self.block());
        let phase = g.clusters[c]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .arrive();
        self.cluster_arrival.set(Some(phase));
        g.progress();
    }

    fn cluster_wait(&self) {
        let Some(phase) = self.cluster_arrival.take() else {
            panic!(
                "cluster::wait called without a preceding cluster::arrive; each thread arrives before it waits (undefined on the GPU)"
            );
        };
        let g = self.group();
        let c = g.cluster_slot(self.block());
        self.wait_until("the cluster barrier (barrier.cluster)", &mut || {
            g.clusters[c]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .phase
                > phase
        });
    }

    fn map_shared_rank(&self, p: *mut u8, rank: u32) -> *mut u8 {
        let g = self.group();
        let [cx, cy, cz] = g.cluster;
        let size = cx * cy * cz;
        if rank >= size {
            panic!("cluster::map_shared_rank: rank {rank} is outside the cluster of {size} blocks");
        }
        // SAFETY: the block memory outlives every thread record that points to it.
        let own = unsafe { &*self.mem };
        let Some(place) = own.locate(p) else {
            panic!(
                "cluster::map_shared_rank: {p:p} is not an address in this block's shared memory (a shared_array! or dynamic_shared element)"
            );
        };
        let peer_block = g.peer(self.block(), rank);
        if g.block_exited(g.slot(peer_block)) {
            panic!(
                "cluster::map_shared_rank: block {peer_block:?} (rank {rank} of the cluster) has exited; its shared memory is no longer its own on the GPU (end with cluster::sync before a peer may exit)"
            );
        }
        let peer = g.mem(g.slot(peer_block));
        assert!(
            !peer.is_null(),
            "the peer block's shared memory is registered before any thread runs"
        );
        // SAFETY: registered blocks' memory lives until every block of the group ended.
        unsafe { &*peer }.resolve(place)
    }

    fn grid_sync(&self) {
        let g = self.group();
        if !g.cooperative {
            panic!(
                "grid::sync in a launch that is not cooperative: only a cooperative launch (LaunchConfig::cooperative) keeps every block resident, so on the GPU this grid could wait forever"
            );
        }
        let phase = g.grid.lock().unwrap_or_else(|e| e.into_inner()).arrive();
        g.progress();
        self.wait_until("the grid barrier (grid::sync)", &mut || {
            g.grid.lock().unwrap_or_else(|e| e.into_inner()).phase > phase
        });
    }

    fn wait_until(&self, what: &'static str, ready: &mut dyn FnMut() -> bool) {
        while !ready() {
            if std::thread::panicking() {
                return;
            }
            match self.suspend(Suspend::Yield(what)) {
                Resume::Retry | Resume::Start => {}
                _ => unreachable!("a waiting thread is resumed to retry"),
            }
        }
    }

    fn progress(&self) {
        self.group().progress();
    }

    fn shared_room(&self, p: *mut u8) -> Option<usize> {
        // SAFETY: the block memory outlives every thread record that points to it.
        let mem = unsafe { &*self.mem };
        Some(match mem.locate(p) {
            Some(SharedPlace::Dynamic(offset)) => mem.dynamic_len - offset,
            Some(SharedPlace::Static { size, offset, .. }) => size - offset,
            None => 0,
        })
    }

    fn warp_exited_lanes(&self) -> u32 {
        // SAFETY: the block memory outlives every thread record that points to it.
        let mem = unsafe { &*self.mem };
        let warp = self.ctx.linear_thread() as usize / 32;
        mem.warp_exited[warp].load(Ordering::Relaxed)
    }

    fn fault(&self, payload: Box<dyn Any + Send>) -> ! {
        let y = self.yielder.get();
        // SAFETY: as in `suspend`.
        let _ = unsafe { &*y }.suspend(Suspend::Fault(payload));
        // The runner never resumes a faulted thread; if it did, nothing here may unwind.
        std::process::abort()
    }
}

/// One `shared_array!` declaration's storage on this worker.
struct StaticAlloc {
    key: usize,
    layout: Layout,
    ptr: NonNull<u8>,
    /// The block (by `BlockMem::epoch`) that last zeroed it.
    epoch: u64,
}

/// A worker's shared memory, reused (and re-zeroed) from block to block.
pub(super) struct BlockMem {
    epoch: AtomicU64,
    /// Locked: a peer block of the cluster resolves addresses here (`mapa`).
    statics: Mutex<Vec<StaticAlloc>>,
    /// The start of the dynamic shared memory: [`DYNAMIC_ALIGN`]-aligned inside
    /// `dynamic_buf`.
    dynamic: AtomicPtr<u8>,
    dynamic_len: usize,
    dynamic_buf: Mutex<Vec<u128>>,
    /// Per warp of the block, the lanes that have exited (`SimHooks::warp_exited_lanes`).
    warp_exited: Box<[AtomicU32]>,
}

/// The alignment of every block's dynamic shared memory. On the GPU it starts at the same
/// offset in every block of a launch, so an address a kernel derives from it (aligned up for
/// a swizzled TMA or `wgmma` tile, say) has the same offset in every block, and a peer's copy
/// of it (`mapa`, a TMA multicast, a remote `mbarrier` arrival) lands where the peer's own code
/// put the same thing. A heap buffer starts at whatever address the allocator gives, different
/// from block to block modulo 1024: the simulator aligns each to this (the largest alignment a
/// shared operand needs, a 128-byte-swizzled tile's span), so the offsets agree as on the GPU.
const DYNAMIC_ALIGN: usize = 1024;

/// The first [`DYNAMIC_ALIGN`]-aligned address in `buf`.
fn dynamic_start(buf: &mut [u128]) -> *mut u8 {
    let p = buf.as_mut_ptr().cast::<u8>();
    p.wrapping_add(p.align_offset(DYNAMIC_ALIGN))
}

/// Where an address lies in a block's shared memory, in terms every block of the launch shares.
#[derive(Clone, Copy)]
pub(super) enum SharedPlace {
    Static {
        key: usize,
        size: usize,
        align: usize,
        offset: usize,
    },
    Dynamic(usize),
}

// SAFETY: the raw pointers are the block's own allocations; the mutable state is atomic or
// behind mutexes, and the shared memory itself is accessed by the kernel's threads as on a GPU.
unsafe impl Sync for BlockMem {}
// SAFETY: as above.
unsafe impl Send for BlockMem {}

impl BlockMem {
    fn new(dynamic_len: usize, threads: u32) -> Self {
        // Room to start the region at its alignment.
        let mut buf = vec![0u128; (dynamic_len + DYNAMIC_ALIGN).div_ceil(16)];
        let dynamic = AtomicPtr::new(dynamic_start(&mut buf));
        BlockMem {
            epoch: AtomicU64::new(0),
            statics: Mutex::new(Vec::new()),
            dynamic,
            dynamic_len,
            dynamic_buf: Mutex::new(buf),
            warp_exited: (0..threads.div_ceil(32))
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    /// Where `p` lies in this block's shared memory.
    pub(super) fn locate(&self, p: *mut u8) -> Option<SharedPlace> {
        let a = p as usize;
        let d = self.dynamic.load(Ordering::Relaxed) as usize;
        if self.dynamic_len > 0 && a >= d && a < d + self.dynamic_len {
            return Some(SharedPlace::Dynamic(a - d));
        }
        let statics = self.statics.lock().unwrap_or_else(|e| e.into_inner());
        statics.iter().find_map(|s| {
            let base = s.ptr.as_ptr() as usize;
            // `then`, not `then_some`: the offset exists only for an address inside.
            (a >= base && a < base + s.layout.size()).then(|| SharedPlace::Static {
                key: s.key,
                size: s.layout.size(),
                align: s.layout.align(),
                offset: a - base,
            })
        })
    }

    /// The address of `place` in this block's shared memory.
    pub(super) fn resolve(&self, place: SharedPlace) -> *mut u8 {
        match place {
            SharedPlace::Dynamic(off) => self.dynamic.load(Ordering::Relaxed).wrapping_add(off),
            SharedPlace::Static {
                key,
                size,
                align,
                offset,
            } => self.static_shared(key, size, align).wrapping_add(offset),
        }
    }

    /// Starts a new block: static arrays are zeroed on their first use, dynamic memory now.
    fn next_block(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
        for w in self.warp_exited.iter() {
            w.store(0, Ordering::Relaxed);
        }
        if self.dynamic_len > 0 {
            let mut buf = self.dynamic_buf.lock().unwrap_or_else(|e| e.into_inner());
            buf.fill(0);
            self.dynamic
                .store(dynamic_start(&mut buf), Ordering::Relaxed);
        }
    }

    fn static_shared(&self, key: usize, size: usize, align: usize) -> *mut u8 {
        let epoch = self.epoch.load(Ordering::Relaxed);
        let mut statics = self.statics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = statics
            .iter_mut()
            .find(|a| a.key == key && a.layout.size() == size.max(1) && a.layout.align() == align)
        {
            if a.epoch != epoch {
                // SAFETY: `ptr` is a live allocation of `layout.size()` bytes; no thread of the
                // new block has been handed it yet.
                unsafe { a.ptr.as_ptr().write_bytes(0, a.layout.size()) };
                a.epoch = epoch;
            }
            return a.ptr.as_ptr();
        }
        let layout = match Layout::from_size_align(size.max(1), align) {
            Ok(l) => l,
            Err(e) => panic!("shared_array! of {size} bytes aligned to {align}: {e}"),
        };
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(layout)
        };
        statics.push(StaticAlloc {
            key,
            layout,
            ptr,
            epoch,
        });
        ptr.as_ptr()
    }
}

impl Drop for BlockMem {
    fn drop(&mut self) {
        for a in self
            .statics
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            // SAFETY: allocated in `static_shared` with this layout, freed once.
            unsafe { std::alloc::dealloc(a.ptr.as_ptr(), a.layout) };
        }
    }
}

/// Coroutine stacks kept between launches, so that a launch does not map fresh stacks.
static STACK_POOL: Mutex<Vec<(usize, DefaultStack)>> = Mutex::new(Vec::new());
/// At most this many stacks stay pooled (the memory of one is only committed where touched).
const MAX_POOLED_STACKS: usize = 4096;

/// Runs blocks of one launch, one after another, on the calling OS thread.
pub(super) struct BlockRunner {
    kernel: &'static str,
    entry: SimEntry,
    params: *const *mut c_void,
    threads: Box<[SimThread]>,
    coros: Vec<Option<Coro>>,
    states: Vec<State>,
    /// Completed warp exchanges, one slot per lane group, indexed by the group's first thread.
    exchanges: Box<[WarpExchange]>,
    stacks: Vec<DefaultStack>,
    stack_bytes: usize,
    /// The group of one block that launches without clusters or cooperation run in.
    single: Box<Group>,
    /// The group of the current block.
    group: *const Group,
    // Last: the thread records point into it.
    mem: Box<BlockMem>,
}

impl BlockRunner {
    pub(super) fn new(
        l: &SimLaunch<'_>,
        params: *const *mut c_void,
        foreign: &Mutex<Option<ForeignFailure>>,
        launch_failed: &AtomicBool,
        stack_bytes: usize,
    ) -> Self {
        let block_dim = Dim3::new(l.block[0], l.block[1], l.block[2]);
        let grid_dim = Dim3::new(l.grid[0], l.grid[1], l.grid[2]);
        let n = block_dim.volume() as u32;
        let mem = Box::new(BlockMem::new(l.dynamic_shared_bytes as usize, n));
        let mem_ptr: *const BlockMem = &*mem;
        let dangling: NonNull<dyn SimHooks> = NonNull::<SimThread>::dangling();
        let mut threads: Box<[SimThread]> = (0..n)
            .map(|t| {
                let warp_start = t / 32 * 32;
                let lanes = (n - warp_start).min(32);
                SimThread {
                    // SAFETY: the dangling hooks are replaced by the thread record's below,
                    // before the context is ever made current or asked for its hooks.
                    ctx: unsafe {
                        ThreadContext::new(
                            Dim3::new(
                                t % block_dim.x,
                                t / block_dim.x % block_dim.y,
                                t / (block_dim.x * block_dim.y),
                            ),
                            Dim3::default(),
                            block_dim,
                            grid_dim,
                            dangling,
                        )
                    },
                    lane: t % 32,
                    warp_lanes: if lanes == 32 {
                        u32::MAX
                    } else {
                        (1u32 << lanes) - 1
                    },
                    yielder: Cell::new(core::ptr::null()),
                    mem: mem_ptr,
                    foreign,
                    launch_failed,
                    group: Cell::new(core::ptr::null()),
                    cluster_arrival: Cell::new(None),
                }
            })
            .collect();
        for t in threads.iter_mut() {
            let hooks: NonNull<dyn SimHooks> = NonNull::from(&*t);
            // SAFETY: the thread record lives at a stable address (a boxed slice) for the
            // runner's lifetime, longer than any time its context is current.
            unsafe { t.ctx.set_hooks(hooks) };
        }
        let mut stacks = Vec::new();
        {
            let mut pool = STACK_POOL.lock().unwrap_or_else(|e| e.into_inner());
            let mut i = 0;
            while i < pool.len() && stacks.len() < n as usize {
                if pool[i].0 == stack_bytes {
                    stacks.push(pool.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
        }
        BlockRunner {
            kernel: l.kernel,
            entry: l.entry,
            params,
            threads,
            coros: (0..n).map(|_| None).collect(),
            states: vec![State::NotStarted; n as usize],
            exchanges: vec![
                WarpExchange {
                    values: [0; 32],
                    participants: 0
                };
                n as usize
            ]
            .into_boxed_slice(),
            stacks,
            stack_bytes,
            single: Box::new({
                let mut g = Group::new([1, 1, 1], false, [0, 0, 0], [1, 1, 1], n as u64);
                g.explicit_cluster = l.explicit_cluster;
                g
            }),
            group: core::ptr::null(),
            mem,
        }
    }

    /// Gives the stacks back to the pool.
    pub(super) fn finish(mut self) {
        let mut pool = STACK_POOL.lock().unwrap_or_else(|e| e.into_inner());
        for s in self.stacks.drain(..) {
            if pool.len() >= MAX_POOLED_STACKS {
                break;
            }
            pool.push((self.stack_bytes, s));
        }
    }

    fn error(&self, t: usize, message: String) -> SimError {
        let cx = &self.threads[t].ctx;
        SimError {
            kernel: self.kernel,
            block: [cx.block_idx().x, cx.block_idx().y, cx.block_idx().z],
            thread: [cx.thread_idx().x, cx.thread_idx().y, cx.thread_idx().z],
            message,
        }
    }

    fn thread_name(&self, t: usize) -> String {
        let i = self.threads[t].ctx.thread_idx();
        format!("({}, {}, {})", i.x, i.y, i.z)
    }

    /// Runs every thread of block `block_idx` to completion (a block of a launch without
    /// clusters or cooperation: a group of its own).
    pub(super) fn run_block(&mut self, block_idx: [u32; 3]) -> Result<(), SimError> {
        let threads = self.threads.len() as u64;
        self.single.reset_single(block_idx, threads);
        let group: *const Group = &*self.single;
        self.group = group;
        self.mem.next_block();
        self.single.set_mem(0, &*self.mem);
        self.run_current(block_idx)
    }

    /// Runs block `block_idx` of `group`, whose other blocks run on other OS threads at the
    /// same time: registers the block's shared memory, waits until every block did, runs the
    /// threads, then waits until every block of the group ended.
    pub(super) fn run_grouped(
        &mut self,
        block_idx: [u32; 3],
        group: &Group,
    ) -> Result<(), SimError> {
        self.group = group;
        self.mem.next_block();
        let slot = group.slot(block_idx);
        group.set_mem(slot, &*self.mem);
        group.start();
        let result = if group.failed.load(Ordering::SeqCst) {
            Ok(())
        } else {
            self.run_current(block_idx)
        };
        if result.is_err() {
            group.failed.store(true, Ordering::SeqCst);
        }
        group.end(slot);
        result
    }

    fn run_current(&mut self, block_idx: [u32; 3]) -> Result<(), SimError> {
        let b = Dim3::new(block_idx[0], block_idx[1], block_idx[2]);
        for t in self.threads.iter_mut() {
            t.ctx.set_block_idx(b);
            t.group.set(self.group);
            t.cluster_arrival.set(None);
        }
        self.states.fill(State::NotStarted);
        let result = self.schedule();
        if result.is_err() {
            self.abort_all();
        }
        result
    }

    fn cur_group(&self) -> &Group {
        // SAFETY: set before the block runs; the group outlives the run.
        unsafe { &*self.group }
    }

    /// Thread `t` exited: the cluster barrier no longer waits for it (`exit` releases
    /// `barrier.cluster`), nor does the grid barrier, unless `t` is the block's thread
    /// (0, 0, 0): `grid::sync` counts blocks, and that thread arrives for its block, so a
    /// later `grid::sync` of the other blocks waits forever on the GPU, and here the wait is
    /// reported as one that can never complete.
    fn exited(&self, t: usize) {
        let g = self.cur_group();
        let b = self.threads[t].block();
        g.clusters[g.cluster_slot(b)]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .exited();
        g.thread_exited(g.slot(b));
        let th = &self.threads[t];
        self.mem.warp_exited[th.ctx.linear_thread() as usize / 32]
            .fetch_or(1 << th.lane, Ordering::Relaxed);
        let tid = self.threads[t].ctx.thread_idx();
        if (tid.x, tid.y, tid.z) != (0, 0, 0) {
            g.grid.lock().unwrap_or_else(|e| e.into_inner()).exited();
        }
        g.progress();
    }

    /// Resumes thread `t` with `input`; records where it stopped. A panic ends the block.
    fn resume(&mut self, t: usize, input: Resume) -> Result<(), SimError> {
        if self.coros[t].is_none() {
            let stack = match self.stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(self.stack_bytes).map_err(|e| {
                    self.error(
                        t,
                        format!(
                            "could not allocate a {} KiB coroutine stack: {e}",
                            self.stack_bytes / 1024
                        ),
                    )
                })?,
            };
            let thread: *const SimThread = &self.threads[t];
            let (entry, params) = (self.entry, self.params);
            self.coros[t] = Some(Coroutine::with_stack(
                stack,
                move |y: &Yielder<Resume, Suspend>, _: Resume| {
                    // SAFETY: the runner keeps the thread record alive and in place until this
                    // coroutine has completed or been forgotten after a fault, never to run
                    // again (it never drops a suspended coroutine).
                    unsafe { (*thread).yielder.set(y) };
                    // SAFETY: the launch's parameter array matches the entry's ABI (the runtime's
                    // typed launch, or the caller of an untyped launch, guarantees it).
                    match catch_unwind(AssertUnwindSafe(|| unsafe { entry(params) })) {
                        Ok(()) => Ended::Finished,
                        Err(payload) if payload.is::<Aborted>() => Ended::Aborted,
                        Err(payload) => Ended::Panicked(panic_message(payload)),
                    }
                },
            ));
        }
        let coro = self.coros[t].as_mut().expect("created above");
        // SAFETY: the context lives in `self.threads`, which outlives the resume; it is not
        // modified while current; it is replaced right after.
        unsafe { host::set_current(&self.threads[t].ctx) };
        let r = coro.resume(input);
        // SAFETY: clearing the current context.
        unsafe { host::set_current(core::ptr::null()) };
        match r {
            CoroutineResult::Yield(Suspend::Barrier(b)) => self.states[t] = State::AtBarrier(b),
            CoroutineResult::Yield(Suspend::Warp { op, mask, value }) => {
                self.states[t] = State::AtWarp { op, mask, value }
            }
            CoroutineResult::Yield(Suspend::Yield(what)) => self.states[t] = State::Yielded(what),
            CoroutineResult::Yield(Suspend::Fault(payload)) => {
                self.states[t] = State::Done;
                // The thread stopped in an entry point that foreign code called: its stack
                // holds foreign frames, which a Rust unwind must not cross. Forget the
                // coroutine and its stack instead. The frames' destructors never run (a leak,
                // as `mem::forget`), and the stack is never unmapped or reused, so memory that
                // a frame pinned or lent out stays valid for the rest of the process.
                std::mem::forget(self.coros[t].take());
                if !payload.is::<Aborted>() {
                    return Err(self.error(t, format!("panicked: {}", panic_message(payload))));
                }
            }
            CoroutineResult::Return(end) => {
                self.states[t] = State::Done;
                if !matches!(end, Ended::Aborted) {
                    self.exited(t);
                }
                if let Some(c) = self.coros[t].take() {
                    self.stacks.push(c.into_stack());
                }
                if let Ended::Panicked(msg) = end {
                    return Err(self.error(t, format!("panicked: {msg}")));
                }
            }
        }
        Ok(())
    }

    fn schedule(&mut self) -> Result<(), SimError> {
        let n = self.threads.len();
        let mut inputs: Vec<Option<Resume>> = (0..n).map(|_| None).collect();
        loop {
            let epoch = self.cur_group().epoch.load(Ordering::SeqCst);
            let mut progressed = false;
            for (t, slot) in inputs.iter_mut().enumerate() {
                let (input, retry) = match self.states[t] {
                    State::NotStarted => (Resume::Start, false),
                    State::Ready => (slot.take().unwrap_or(Resume::Start), false),
                    State::Yielded(_) => (Resume::Retry, true),
                    _ => continue,
                };
                self.resume(t, input)?;
                progressed |= !retry || !matches!(self.states[t], State::Yielded(_));
            }
            // Every thread now waits or is done.
            if self.release_warps(&mut inputs)? {
                continue;
            }
            let mut done = 0;
            let mut at_barrier = 0;
            let mut yielded = None;
            for (t, s) in self.states.iter().enumerate() {
                match s {
                    State::Done => done += 1,
                    State::AtBarrier(_) => at_barrier += 1,
                    State::Yielded(what) => yielded = yielded.or(Some((t, *what))),
                    _ => {}
                }
            }
            if done == n {
                return Ok(());
            }
            if let Some((t, what)) = yielded {
                let g = self.cur_group();
                if progressed || g.epoch.load(Ordering::SeqCst) != epoch {
                    continue;
                }
                self.wait_for_group(t, what, epoch)?;
                continue;
            }
            if at_barrier != n {
                return Err(self.stuck());
            }
            let count = self.release_barrier()?;
            self.states.fill(State::Ready);
            for slot in inputs.iter_mut() {
                *slot = Some(Resume::Barrier(count));
            }
        }
    }

    /// No thread of this block can progress at `epoch` (thread `t` waits for `what`): returns
    /// once another block of the group changed something, or an error when none can (or one
    /// failed).
    fn wait_for_group(&self, t: usize, what: &'static str, epoch: u64) -> Result<(), SimError> {
        let g = self.cur_group();
        let slot = g.slot(self.threads[t].block());
        loop {
            if g.failed.load(Ordering::SeqCst) {
                return Err(self.error(
                    t,
                    format!("stopped waiting for {what}: another block of the launch failed"),
                ));
            }
            if g.epoch.load(Ordering::SeqCst) != epoch {
                return Ok(());
            }
            if g.idle(slot, epoch) {
                // Seen twice, a moment apart, so that a block between two passes is not
                // taken for a stuck one.
                std::thread::sleep(std::time::Duration::from_millis(2));
                if g.epoch.load(Ordering::SeqCst) == epoch && g.idle(slot, epoch) {
                    return Err(self.deadlock(t, what));
                }
            }
            std::thread::yield_now();
        }
    }

    fn deadlock(&self, t: usize, what: &'static str) -> SimError {
        let g = self.cur_group();
        let finished = self
            .states
            .iter()
            .filter(|s| matches!(s, State::Done))
            .count();
        let at_barrier = (0..self.threads.len()).find_map(|u| match self.states[u] {
            State::AtBarrier(b) => Some(format!(
                "; thread {} waits at {}",
                self.thread_name(u),
                b.kind.name()
            )),
            _ => None,
        });
        let scope = if g.blocks() > 1 {
            format!(
                "no thread of the {} blocks running together (a cluster or a cooperative grid) can make progress",
                g.blocks()
            )
        } else {
            "no thread of the block can make progress".to_owned()
        };
        self.error(
            t,
            format!(
                "this thread waits for {what}, which can never complete: {scope} ({finished} thread(s) of this block finished{}); on the GPU this launch would hang",
                at_barrier.unwrap_or_default()
            ),
        )
    }

    /// Completes every warp exchange whose lanes have all arrived; returns whether any did.
    /// Lanes of one mask that wait at operations that do not meet (a shuffle and a vote) are
    /// an error: on the GPU that warp never completes.
    fn release_warps(&mut self, inputs: &mut [Option<Resume>]) -> Result<bool, SimError> {
        let n = self.threads.len();
        let mut any = false;
        for base in (0..n).step_by(32) {
            for lane in 0..(n - base).min(32) {
                let State::AtWarp { op, mask, .. } = self.states[base + lane] else {
                    continue;
                };
                let participants = mask & self.threads[base + lane].warp_lanes;
                let ready = (0..32).filter(|l| participants & (1 << l) != 0).all(
                    |l| matches!(self.states[base + l], State::AtWarp { mask: m, .. } if m == mask),
                );
                if !ready {
                    continue;
                }
                let other =
                    (0..32)
                        .filter(|l| participants & (1 << l) != 0)
                        .find_map(|l| match self.states[base + l] {
                            State::AtWarp { op: o, .. } if !o.meets(&op) => Some((l, o)),
                            _ => None,
                        });
                if let Some((l, o)) = other {
                    return Err(self.error(
                        base + lane,
                        format!(
                            "mixed warp operations under mask {mask:#010x}: lane {lane} (thread {}) calls {} ({:?}) while lane {l} (thread {}) calls {} ({:?}); every lane of a mask must execute the same kind of warp operation (on the GPU this warp never completes)",
                            self.thread_name(base + lane),
                            op.name,
                            op.kind,
                            self.thread_name(base + l),
                            o.name,
                            o.kind,
                        ),
                    ));
                }
                let mut values = [0u64; 32];
                for (l, v) in values.iter_mut().enumerate() {
                    if participants & (1 << l) != 0
                        && let State::AtWarp { value, .. } = self.states[base + l]
                    {
                        *v = value;
                    }
                }
                let slot = base + participants.trailing_zeros() as usize;
                self.exchanges[slot] = WarpExchange {
                    values,
                    participants,
                };
                let ex: *const WarpExchange = &self.exchanges[slot];
                for l in 0..32 {
                    if participants & (1 << l) != 0 {
                        self.states[base + l] = State::Ready;
                        inputs[base + l] = Some(Resume::Warp(ex));
                    }
                }
                any = true;
            }
        }
        Ok(any)
    }

    /// Checks the barrier that every thread of the block waits at, and returns how many
    /// threads passed `true`: the threads must wait at barriers of one kind, and when one waits
    /// at an aligned barrier, all must wait at that same call.
    fn release_barrier(&self) -> Result<u32, SimError> {
        let at = |t: usize| match self.states[t] {
            State::AtBarrier(b) => b,
            _ => unreachable!("every thread waits at a barrier"),
        };
        let first = at(0);
        let aligned = (0..self.threads.len()).find_map(|t| at(t).aligned_at.map(|loc| (t, loc)));
        let mut count = 0;
        for t in 0..self.threads.len() {
            let b = at(t);
            count += b.predicate as u32;
            if let Some((a, loc)) = aligned
                && b.aligned_at != Some(loc)
            {
                let here = match b.aligned_at {
                    Some(other) => format!("sync_threads_aligned at {other}"),
                    None => b.kind.name().to_owned(),
                };
                return Err(self.error(
                    t,
                    format!(
                        "aligned barrier divergence: thread {} waits at sync_threads_aligned at {loc}, but this thread waits at {here}; every thread of the block must execute the same sync_threads_aligned call (undefined behaviour on the GPU; sync_threads is the safe form)",
                        self.thread_name(a)
                    ),
                ));
            }
            if b.kind != first.kind {
                return Err(self.error(
                    t,
                    format!(
                        "barrier divergence: this thread waits at {}, but thread {} waits at {}; the threads of a block must reach the same barriers in the same order (mixing a barrier's reductions with the plain barrier gives unpredictable results on the GPU)",
                        b.kind.name(),
                        self.thread_name(0),
                        first.kind.name()
                    ),
                ));
            }
        }
        Ok(count)
    }

    /// Describes why no thread of the block can make progress.
    fn stuck(&self) -> SimError {
        let n = self.threads.len();
        let first_done = (0..n).find(|&t| matches!(self.states[t], State::Done));
        // A warp operation that cannot complete.
        for t in 0..n {
            let State::AtWarp { mask, .. } = self.states[t] else {
                continue;
            };
            let base = t / 32 * 32;
            let participants = mask & self.threads[t].warp_lanes;
            for l in 0..32 {
                if participants & (1 << l) == 0 {
                    continue;
                }
                let why = match self.states[base + l] {
                    State::AtWarp { mask: m, .. } if m == mask => continue,
                    State::AtWarp { mask: m, .. } => {
                        format!("waits in a warp operation with mask {m:#010x}")
                    }
                    State::AtBarrier(b) => format!("waits at {}", b.kind.name()),
                    State::Done => "has finished".to_owned(),
                    State::NotStarted | State::Ready | State::Yielded(_) => continue,
                };
                return self.error(
                    t,
                    format!(
                        "warp divergence: lane {} waits in a warp operation with mask {mask:#010x}, but lane {l} (thread {}) of the mask {why}",
                        t - base,
                        self.thread_name(base + l),
                    ),
                );
            }
        }
        let waiting = (0..n).find_map(|t| match self.states[t] {
            State::AtBarrier(b) => Some((t, b)),
            _ => None,
        });
        match (waiting, first_done) {
            (Some((w, b)), Some(d)) => {
                let finished = self
                    .states
                    .iter()
                    .filter(|s| matches!(s, State::Done))
                    .count();
                self.error(
                    w,
                    format!(
                        "barrier divergence: this thread waits at {}, but {finished} thread(s) of the block finished without reaching it (e.g. thread {}); every thread of a block must reach each barrier",
                        b.kind.name(),
                        self.thread_name(d)
                    ),
                )
            }
            _ => self.error(0, "the block's threads cannot make progress".to_owned()),
        }
    }

    /// Unwinds every suspended thread (after a failure), so that no coroutine is dropped
    /// while suspended. A thread suspended in a call from foreign code catches the unwind at
    /// the foreign boundary and faults instead (see `resume`), which discards its stack.
    fn abort_all(&mut self) {
        for t in 0..self.threads.len() {
            while self.coros[t].is_some() {
                // Ignore further failures: the launch has already failed.
                let _ = self.resume(t, Resume::Abort);
            }
            self.states[t] = State::Done;
        }
    }
}

impl Drop for BlockRunner {
    fn drop(&mut self) {
        self.abort_all();
    }
}

std::thread_local! {
    /// The message and location of the last panic of a simulated thread on this OS thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once per process) a panic hook that, for panics in simulated threads, records
/// the message and location for the `SimError` instead of printing them; other panics go to
/// the previous hook.
pub(super) fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if host::in_launch() {
                let msg = info
                    .payload_as_str()
                    .unwrap_or("(a non-string panic payload)");
                let text = match info.location() {
                    Some(loc) => {
                        format!("{msg} (at {}:{}:{})", loc.file(), loc.line(), loc.column())
                    }
                    None => msg.to_owned(),
                };
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = LAST_PANIC.with(|p| p.borrow_mut().take()) {
        return text;
    }
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a non-string panic payload)".to_owned()
    }
}
