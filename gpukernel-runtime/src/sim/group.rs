//! Blocks that run at the same time: a cluster (a launch with cluster dimensions) or the whole
//! grid (a cooperative launch). Each block of a group runs on its own OS thread; the group
//! holds what they share: the cluster barriers, the grid barrier, each block's shared memory
//! (for `mapa`), and the progress count that tells a wait that can still complete from one
//! that never will.
//!
//! A launch without either runs each block alone, as a group of one block whose cluster is
//! the block itself (as on the GPU, where every block is then a cluster of one).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::block::BlockMem;

/// One barrier shared by threads of several blocks: `barrier.cluster` or the grid barrier.
/// A phase completes when every thread that has not exited arrived.
#[derive(Debug)]
pub(super) struct GroupBarrier {
    /// Completed phases.
    pub phase: u64,
    /// Arrivals in the current phase.
    pub arrived: u64,
    /// Threads that have not exited.
    pub live: u64,
}

impl GroupBarrier {
    fn new(threads: u64) -> Self {
        GroupBarrier {
            phase: 0,
            arrived: 0,
            live: threads,
        }
    }

    /// One arrival; returns the phase it belongs to.
    pub fn arrive(&mut self) -> u64 {
        let p = self.phase;
        self.arrived += 1;
        self.complete_if_full();
        p
    }

    /// A thread exited: the phase may complete without it.
    pub fn exited(&mut self) {
        self.live = self.live.saturating_sub(1);
        self.complete_if_full();
    }

    fn complete_if_full(&mut self) {
        if self.arrived > 0 && self.arrived >= self.live {
            self.phase += 1;
            self.arrived = 0;
        }
    }
}

/// What the blocks of one group share.
pub(super) struct Group {
    /// Cluster dimensions, in blocks.
    pub cluster: [u32; 3],
    /// Whether the launch is cooperative (grid barriers allowed).
    pub cooperative: bool,
    /// Whether the launch named cluster dimensions (even 1 × 1 × 1).
    pub explicit_cluster: bool,
    /// The grid index of the group's first block, and its extent in blocks.
    pub origin: [u32; 3],
    pub extent: [u32; 3],
    /// Each block's shared memory, by slot (set before any thread of the group runs).
    mems: Vec<AtomicPtr<BlockMem>>,
    /// The cluster barriers, by cluster slot within the group.
    pub clusters: Vec<Mutex<GroupBarrier>>,
    /// The grid barrier (cooperative launches).
    pub grid: Mutex<GroupBarrier>,
    /// Counts every change a waiting thread may be waiting for.
    pub epoch: AtomicU64,
    /// Per block slot: the epoch + 1 at which the block found none of its threads able to
    /// progress (0: it can).
    idle: Vec<AtomicU64>,
    finished: Vec<AtomicBool>,
    /// Per block slot: its threads that have not exited.
    running: Vec<AtomicU64>,
    /// A block of the group failed.
    pub failed: AtomicBool,
    started: AtomicUsize,
    ended: AtomicUsize,
}

impl Group {
    /// A group of `extent` blocks from `origin`, blocks of `threads` threads.
    pub fn new(
        cluster: [u32; 3],
        cooperative: bool,
        origin: [u32; 3],
        extent: [u32; 3],
        threads: u64,
    ) -> Group {
        let blocks = extent.iter().map(|&e| e as usize).product::<usize>();
        let cluster_blocks = cluster.iter().map(|&c| c as u64).product::<u64>();
        let clusters = blocks / cluster_blocks as usize;
        Group {
            cluster,
            cooperative,
            explicit_cluster: cluster != [1, 1, 1],
            origin,
            extent,
            mems: (0..blocks)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
            clusters: (0..clusters)
                .map(|_| Mutex::new(GroupBarrier::new(cluster_blocks * threads)))
                .collect(),
            grid: Mutex::new(GroupBarrier::new(blocks as u64 * threads)),
            epoch: AtomicU64::new(0),
            idle: (0..blocks).map(|_| AtomicU64::new(0)).collect(),
            finished: (0..blocks).map(|_| AtomicBool::new(false)).collect(),
            running: (0..blocks).map(|_| AtomicU64::new(threads)).collect(),
            failed: AtomicBool::new(false),
            started: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
        }
    }

    /// Resets a one-block group for the next block `origin` (launches without clusters or
    /// cooperation reuse one group per worker).
    pub fn reset_single(&mut self, origin: [u32; 3], threads: u64) {
        debug_assert_eq!(self.mems.len(), 1);
        self.origin = origin;
        *self.clusters[0]
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = GroupBarrier::new(threads);
        *self.grid.get_mut().unwrap_or_else(|e| e.into_inner()) = GroupBarrier::new(threads);
        self.idle[0].store(0, Ordering::Relaxed);
        self.finished[0].store(false, Ordering::Relaxed);
        self.running[0].store(threads, Ordering::Relaxed);
    }

    /// The number of blocks.
    pub fn blocks(&self) -> usize {
        self.mems.len()
    }

    /// The slot of the block at grid index `b` (which must belong to the group).
    pub fn slot(&self, b: [u32; 3]) -> usize {
        let [ox, oy, oz] = self.origin;
        let [ex, ey, _] = self.extent;
        let (x, y, z) = (b[0] - ox, b[1] - oy, b[2] - oz);
        (x + y * ex + z * ex * ey) as usize
    }

    /// The slot of the cluster of the block at grid index `b`.
    pub fn cluster_slot(&self, b: [u32; 3]) -> usize {
        let [ox, oy, oz] = self.origin;
        let [cx, cy, cz] = self.cluster;
        let (nx, ny) = (self.extent[0] / cx, self.extent[1] / cy);
        let (x, y, z) = ((b[0] - ox) / cx, (b[1] - oy) / cy, (b[2] - oz) / cz);
        (x + y * nx + z * nx * ny) as usize
    }

    /// The grid index of the block of rank `rank` in the cluster of block `b`.
    pub fn peer(&self, b: [u32; 3], rank: u32) -> [u32; 3] {
        let [cx, cy, _] = self.cluster;
        let first = [
            b[0] / cx * cx,
            b[1] / cy * cy,
            b[2] / self.cluster[2] * self.cluster[2],
        ];
        [
            first[0] + rank % cx,
            first[1] + rank / cx % cy,
            first[2] + rank / (cx * cy),
        ]
    }

    /// Registers block `slot`'s shared memory.
    pub fn set_mem(&self, slot: usize, mem: *const BlockMem) {
        self.mems[slot].store(mem.cast_mut(), Ordering::Release);
    }

    /// Block `slot`'s shared memory (null before it registered).
    pub fn mem(&self, slot: usize) -> *const BlockMem {
        self.mems[slot].load(Ordering::Acquire)
    }

    /// A thread of block `slot` exited.
    pub fn thread_exited(&self, slot: usize) {
        self.running[slot].fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether every thread of block `slot` exited (its shared memory is then no longer its
    /// own on the GPU).
    pub fn block_exited(&self, slot: usize) -> bool {
        self.finished[slot].load(Ordering::SeqCst) || self.running[slot].load(Ordering::SeqCst) == 0
    }

    /// Notes a change a waiter may be waiting for.
    pub fn progress(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits until every block of the group registered its memory (or one failed).
    pub fn start(&self) {
        self.started.fetch_add(1, Ordering::SeqCst);
        while self.started.load(Ordering::SeqCst) < self.blocks()
            && !self.failed.load(Ordering::SeqCst)
        {
            std::thread::yield_now();
        }
    }

    /// Block `slot` ran to its end: waits until every block did, so that no block's shared
    /// memory goes while a peer may still read it.
    pub fn end(&self, slot: usize) {
        self.finished[slot].store(true, Ordering::SeqCst);
        self.progress();
        self.ended.fetch_add(1, Ordering::SeqCst);
        while self.ended.load(Ordering::SeqCst) < self.blocks() {
            std::thread::yield_now();
        }
    }

    /// Block `slot` can make no progress at `epoch`. Returns true when no block of the group
    /// can (a deadlock: every block that has not finished is idle at the same epoch).
    pub fn idle(&self, slot: usize, epoch: u64) -> bool {
        self.idle[slot].store(epoch + 1, Ordering::SeqCst);
        let all = (0..self.blocks()).all(|s| {
            self.finished[s].load(Ordering::SeqCst)
                || self.idle[s].load(Ordering::SeqCst) == epoch + 1
        });
        all && self.epoch.load(Ordering::SeqCst) == epoch
    }
}

impl Group {
    /// A block of the group could not be started: counts it as started and ended, so the
    /// others do not wait for it (they see `failed`).
    pub fn start_missing(&self) {
        self.failed.store(true, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
}
