//! The CPU simulator: runs a kernel's body (its `Kernel::SIM_ENTRY`) for every thread of a
//! grid on the host.
//!
//! * Blocks run in parallel on a pool of OS threads (one per available core, or
//!   `GPUKERNEL_SIM_THREADS`), each worker taking the next block index from a shared counter.
//! * The threads of one block run on one worker as stackful coroutines (corosensei), switched
//!   only where a thread must wait for others: at a barrier (`sync_threads*`) or a warp
//!   operation (shuffles, votes, `sync_warp`). A kernel that never waits runs each thread
//!   start to finish in one resume.
//! * Shared memory is per block: each `shared_array!` declaration and the dynamic shared
//!   memory get storage that is zeroed when a block starts.
//! * A panic in a kernel body (an out-of-bounds index, an explicit `panic!`) is caught inside
//!   its coroutine and ends the launch with a [`SimError`] naming the kernel, block and thread.
//!   So does a block that can never make progress (some threads finished while others wait at
//!   a barrier, or a warp operation whose lanes never all arrive) instead of hanging. The
//!   block's other suspended threads are then unwound, so their destructors run.
//! * No unwind crosses foreign code. A thread suspended inside a call to a foreign function
//!   (its `.cu` code compiled for the host, waiting at `__syncthreads()` or a warp operation),
//!   and a panic raised in an entry point that foreign code called, end the thread where the
//!   foreign code called in (`gpukernel_device::host`'s entry points catch the unwind and
//!   fault): its coroutine and stack are forgotten, never unwound, resumed or reused. Its
//!   frames' destructors never run, and the stack (only its touched pages are committed) stays
//!   mapped for the rest of the process: a bounded leak on a launch that already failed.
//!
//! Device memory in the simulator is host memory, so the pointers in the parameter array are
//! host addresses.
//!
//! Environment: `GPUKERNEL_SIM_THREADS` (worker threads, 1 to 4096; default: the available
//! cores) and `GPUKERNEL_SIM_STACK_KIB` (coroutine stack per simulated thread, 1 KiB to 1 GiB,
//! default 128 KiB; a kernel body that overflows it crashes the process, as a stack overflow
//! does on any thread). Any other value fails the launch with an error naming the variable.
//! Kernel crates run on the simulator need `panic = "unwind"` on the host (the default) for
//! panics to become errors.

mod block;
mod group;
#[cfg(test)]
mod tests;

use core::ffi::c_void;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use gpukernel_device::SimEntry;
use gpukernel_device::host::ForeignFailure;

/// One launch for the simulator.
#[derive(Debug)]
pub(crate) struct SimLaunch<'a> {
    /// The kernel's name (for errors).
    pub kernel: &'static str,
    /// The body of one thread.
    pub entry: SimEntry,
    /// Blocks per grid, x y z.
    pub grid: [u32; 3],
    /// Threads per block, x y z.
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub dynamic_shared_bytes: u32,
    /// The kernel's parameter array: one pointer to each ABI value, as for `cuLaunchKernel`.
    pub params: &'a [*mut c_void],
    /// Cluster dimensions in blocks (`[1, 1, 1]`: no clusters). The blocks of a cluster run at
    /// the same time, one OS thread each.
    pub cluster: [u32; 3],
    /// A cooperative launch: every block of the grid runs at the same time (one OS thread
    /// each), so `grid::sync` works.
    pub cooperative: bool,
    /// The launch named cluster dimensions (`%is_explicit_cluster`), even of 1 × 1 × 1.
    pub explicit_cluster: bool,
}

/// A simulated launch failed: a thread panicked, a block could not make progress, or the
/// launch configuration is invalid (then `block` and `thread` are zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimError {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The failing block's index.
    pub block: [u32; 3],
    /// The failing thread's index in its block.
    pub thread: [u32; 3],
    /// What happened (the panic message with its location, or the divergence found).
    pub message: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(
            f,
            "kernel `{}` failed in the simulator at block ({bx}, {by}, {bz}), thread ({tx}, {ty}, {tz}): {}",
            self.kernel, self.message
        )
    }
}

impl std::error::Error for SimError {}

/// Takes (and clears) the first foreign-call failure recorded by the launches made from the
/// calling OS thread since the last call: `(symbol, status, linear thread index, how many
/// failures it stands for)`.
///
/// Simulated launches run to completion inside [`launch`], so the record belongs to the thread
/// that called it; keeping it per thread stops concurrent launches from other threads (e.g.
/// parallel tests) from taking or shadowing each other's failures.
pub(crate) fn take_foreign_failure() -> Option<(String, i32, u64, u64)> {
    gpukernel_device::host::take_foreign_failure()
        .map(|f| (f.name.to_owned(), f.status, f.thread, f.count))
}

/// The most threads per block CUDA allows.
const MAX_THREADS_PER_BLOCK: u64 = 1024;

/// Runs every block of the launch to completion; the first failure ends the launch (blocks
/// not yet started are skipped) and is returned.
pub(crate) fn launch(l: &SimLaunch<'_>) -> Result<(), SimError> {
    let config_error = |message: String| SimError {
        kernel: l.kernel,
        block: [0; 3],
        thread: [0; 3],
        message,
    };
    let [bx, by, bz] = l.block;
    let [gx, gy, gz] = l.grid;
    if l.block.contains(&0) || l.grid.contains(&0) {
        return Err(config_error(format!(
            "invalid launch configuration: grid ({gx}, {gy}, {gz}) and block ({bx}, {by}, {bz}) must have no zero dimension"
        )));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads > MAX_THREADS_PER_BLOCK || bz > 64 {
        return Err(config_error(format!(
            "invalid launch configuration: block ({bx}, {by}, {bz}) has {threads} threads; at most {MAX_THREADS_PER_BLOCK} per block and 64 along z"
        )));
    }
    if gy > 65535 || gz > 65535 {
        return Err(config_error(format!(
            "invalid launch configuration: grid ({gx}, {gy}, {gz}) exceeds 65535 blocks along y or z"
        )));
    }
    let config = SimConfig::from_env().map_err(config_error)?;
    block::install_panic_hook();

    let blocks = gx as u64 * gy as u64 * gz as u64;
    if l.cluster != [1, 1, 1] || l.cooperative {
        return launch_grouped(l, &config, blocks).map_err(|e| *e);
    }
    let workers = (config.workers as u64).min(blocks).max(1) as usize;
    let shared = LaunchState {
        launch: l,
        params: l.params.as_ptr(),
        next_block: AtomicU64::new(0),
        blocks,
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
        foreign: Mutex::new(None),
        stack_bytes: config.stack_bytes,
    };
    if workers == 1 {
        worker(&shared);
    } else {
        std::thread::scope(|s| {
            for i in 0..workers {
                let shared = &shared;
                let spawned = std::thread::Builder::new()
                    .name(format!("gpukernel-sim-{i}"))
                    .spawn_scoped(s, move || worker(shared));
                if let Err(e) = spawned {
                    shared.fail(config_error(format!(
                        "could not start simulator worker thread: {e}"
                    )));
                    break;
                }
            }
        });
    }
    if let Some(f) = shared
        .foreign
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
    {
        gpukernel_device::host::post_foreign_failure(f);
    }
    match shared.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The launch-wide failure flag of grouped launches, whose blocks see their group's.
static NOT_FAILED: AtomicBool = AtomicBool::new(false);

/// The most blocks the simulator runs at once (one OS thread each) for a cooperative launch.
pub(crate) const MAX_COOPERATIVE_BLOCKS: u64 = 256;

/// Runs a launch whose blocks must run together: each cluster (or, for a cooperative launch,
/// the whole grid) as a group of OS threads, one per block; groups one after another.
fn launch_grouped(l: &SimLaunch<'_>, config: &SimConfig, blocks: u64) -> Result<(), Box<SimError>> {
    let config_error = |message: String| {
        Box::new(SimError {
            kernel: l.kernel,
            block: [0; 3],
            thread: [0; 3],
            message,
        })
    };
    let c = l.cluster;
    if c.contains(&0) || (0..3).any(|i| !l.grid[i].is_multiple_of(c[i])) {
        return Err(config_error(format!(
            "invalid launch configuration: grid {:?} is not a whole number of clusters of {c:?} blocks",
            l.grid
        )));
    }
    if l.cooperative && blocks > MAX_COOPERATIVE_BLOCKS {
        return Err(config_error(format!(
            "cooperative launch of {blocks} blocks: the simulator runs at most {MAX_COOPERATIVE_BLOCKS} blocks at once"
        )));
    }
    let extent = if l.cooperative { l.grid } else { c };
    let threads = l.block.iter().map(|&b| b as u64).product::<u64>();
    let foreign = Mutex::new(None);
    let mut first_error: Option<SimError> = None;
    let shared = SharedLaunch(l);
    let groups = [
        l.grid[0] / extent[0],
        l.grid[1] / extent[1],
        l.grid[2] / extent[2],
    ];
    'groups: for gz in 0..groups[2] {
        for gy in 0..groups[1] {
            for gx in 0..groups[0] {
                let origin = [gx * extent[0], gy * extent[1], gz * extent[2]];
                let mut group = group::Group::new(c, l.cooperative, origin, extent, threads);
                group.explicit_cluster = l.explicit_cluster;
                let errors: Mutex<Vec<SimError>> = Mutex::new(Vec::new());
                std::thread::scope(|s| {
                    for z in 0..extent[2] {
                        for y in 0..extent[1] {
                            for x in 0..extent[0] {
                                let b = [origin[0] + x, origin[1] + y, origin[2] + z];
                                let (group, errors, foreign) = (&group, &errors, &foreign);
                                let shared = &shared;
                                let spawned = std::thread::Builder::new()
                                    .name(format!("gpukernel-sim-block-{}-{}-{}", b[0], b[1], b[2]))
                                    .spawn_scoped(s, move || {
                                        let l = shared.0;
                                        let mut runner = block::BlockRunner::new(
                                            l,
                                            l.params.as_ptr(),
                                            foreign,
                                            // The group's own flag tells its blocks.
                                            &NOT_FAILED,
                                            config.stack_bytes,
                                        );
                                        if let Err(e) = runner.run_grouped(b, group) {
                                            errors
                                                .lock()
                                                .unwrap_or_else(|e| e.into_inner())
                                                .push(e);
                                        }
                                        runner.finish();
                                    });
                                if let Err(e) = spawned {
                                    group.failed.store(true, Ordering::SeqCst);
                                    errors.lock().unwrap_or_else(|e| e.into_inner()).push(SimError {
                                        kernel: l.kernel,
                                        block: b,
                                        thread: [0; 3],
                                        message: format!("could not start a simulator thread for the block: {e}"),
                                    });
                                    // The blocks already started wait for this one at the
                                    // group's start: count it as started and ended.
                                    group.start_missing();
                                }
                            }
                        }
                    }
                });
                let mut errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
                // The first failure, not a block that stopped because another failed.
                errors.sort_by_key(|e| e.message.contains("another block of the launch failed"));
                if let Some(e) = errors.into_iter().next() {
                    first_error = Some(e);
                    break 'groups;
                }
            }
        }
    }
    if let Some(f) = foreign.into_inner().unwrap_or_else(|e| e.into_inner()) {
        gpukernel_device::host::post_foreign_failure(f);
    }
    match first_error {
        Some(e) => Err(Box::new(e)),
        None => Ok(()),
    }
}

/// A launch shared by the OS threads of its blocks.
struct SharedLaunch<'a, 'p>(&'a SimLaunch<'p>);

// SAFETY: as for `LaunchState`: the parameter array outlives the launch and is only handed to
// the kernel entry, whose contract makes the values safe to use from any thread.
unsafe impl Sync for SharedLaunch<'_, '_> {}

/// What the workers of one launch share.
struct LaunchState<'a, 'p> {
    launch: &'a SimLaunch<'p>,
    params: *const *mut c_void,
    next_block: AtomicU64,
    blocks: u64,
    failed: AtomicBool,
    error: Mutex<Option<SimError>>,
    /// The first failed foreign call of the launch, counting every one.
    foreign: Mutex<Option<ForeignFailure>>,
    stack_bytes: usize,
}

// SAFETY: `params` points to the launch's parameter array, which outlives the launch (it is
// borrowed by `launch`); the simulator only passes it to the kernel entry, whose contract
// (the runtime's typed launch) makes the values it points to safe to use from any thread.
unsafe impl Sync for LaunchState<'_, '_> {}

impl LaunchState<'_, '_> {
    fn fail(&self, e: SimError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.failed.store(true, Ordering::Relaxed);
    }
}

fn worker(state: &LaunchState<'_, '_>) {
    let l = state.launch;
    let mut runner = block::BlockRunner::new(
        l,
        state.params,
        &state.foreign,
        &state.failed,
        state.stack_bytes,
    );
    let [gx, gy, _] = l.grid;
    while !state.failed.load(Ordering::Relaxed) {
        let b = state.next_block.fetch_add(1, Ordering::Relaxed);
        if b >= state.blocks {
            break;
        }
        let plane = gx as u64 * gy as u64;
        let block_idx = [
            (b % gx as u64) as u32,
            (b % plane / gx as u64) as u32,
            (b / plane) as u32,
        ];
        if let Err(e) = runner.run_block(block_idx) {
            state.fail(e);
        }
    }
    runner.finish();
}

/// Simulator settings read from the environment.
struct SimConfig {
    workers: usize,
    stack_bytes: usize,
}

/// The default coroutine stack size (per simulated thread; the pages are only committed when
/// touched).
const DEFAULT_STACK_KIB: usize = 128;

/// The largest coroutine stack `GPUKERNEL_SIM_STACK_KIB` may ask for: 1 GiB per simulated
/// thread (the GPU's own per-thread stack limit is far below).
const MAX_STACK_KIB: usize = 1 << 20;

/// The most worker threads `GPUKERNEL_SIM_THREADS` may ask for.
const MAX_WORKERS: usize = 4096;

impl SimConfig {
    fn from_env() -> Result<SimConfig, String> {
        let var = |name: &str| std::env::var_os(name);
        Self::from_values(
            var("GPUKERNEL_SIM_THREADS").as_deref(),
            var("GPUKERNEL_SIM_STACK_KIB").as_deref(),
        )
    }

    /// The settings from the variables' values (`None`: unset).
    fn from_values(
        threads: Option<&std::ffi::OsStr>,
        stack_kib: Option<&std::ffi::OsStr>,
    ) -> Result<SimConfig, String> {
        let workers = match env_in_range("GPUKERNEL_SIM_THREADS", threads, MAX_WORKERS)? {
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let stack_kib = env_in_range("GPUKERNEL_SIM_STACK_KIB", stack_kib, MAX_STACK_KIB)?
            .unwrap_or(DEFAULT_STACK_KIB);
        Ok(SimConfig {
            workers,
            // At most 1 GiB: no overflow.
            stack_bytes: stack_kib * 1024,
        })
    }
}

/// The value of environment variable `name` as an integer from 1 to `max` (`None` when
/// unset); anything else is an error naming the variable, its value and the range.
fn env_in_range(
    name: &str,
    value: Option<&std::ffi::OsStr>,
    max: usize,
) -> Result<Option<usize>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    match value.to_str().map(|v| v.trim().parse::<usize>()) {
        Some(Ok(n)) if (1..=max).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "invalid simulator setting: environment variable {name}={value:?} must be an integer from 1 to {max}; unset it for the default"
        )),
    }
}
