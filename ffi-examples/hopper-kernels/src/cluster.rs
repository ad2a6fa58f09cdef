//! A histogram with more bins than one block's shared memory holds, in two forms: the bins
//! spread over the shared memory of a cluster's blocks (distributed shared memory: every
//! block adds into the block that owns the bin), and the plain form that adds into global
//! memory.

use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::{atomic, cluster, thread};

/// Bins one block of [`histogram_cluster`] owns (32 KiB of shared memory).
pub const BINS_PER_BLOCK: usize = 8192;
/// Threads per block of both histograms.
pub const HIST_BLOCK: u32 = 512;

/// Counts `data[i] % bins` into `hist` (zeroed by the caller). The `bins` counters are spread
/// over the cluster: block rank `r` holds bins `r * per .. (r + 1) * per` in shared memory
/// (`per = ceil(bins / cluster::size())`, at most [`BINS_PER_BLOCK`]). Each thread adds its
/// values into the owning block's shared memory (`cluster::map_shared_rank`, atomics on
/// distributed shared memory); after the cluster barrier each block adds its bins to `hist`.
///
/// Launch with clusters (`LaunchConfig::with_cluster`), one-dimensional blocks of
/// [`HIST_BLOCK`] threads, any one-dimensional grid of whole clusters; `bins` at most
/// `BINS_PER_BLOCK × cluster size` and `hist.len() >= bins` (else every thread traps).
#[kernel]
pub fn histogram_cluster(data: &[u32], bins: u32, hist: DisjointSlice<u32>) {
    let csize = cluster::size() as usize;
    let bins = bins as usize;
    let per = bins.div_ceil(csize);
    assert!(
        bins > 0
            && per <= BINS_PER_BLOCK
            && hist.len() >= bins
            && thread::block_dim_x() == HIST_BLOCK
    );
    let local = shared_array!(u32, BINS_PER_BLOCK);
    let t = thread::thread_idx_x() as usize;
    let mut j = t;
    while j < per {
        // SAFETY: one writer per slot before the cluster barrier; zeroed for this block.
        unsafe { local.write(j, 0) };
        j += HIST_BLOCK as usize;
    }
    // Every block's bins are zeroed (and every block is running) before anyone adds.
    cluster::sync();
    let base = local.as_mut_ptr();
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    while i < data.len() {
        let bin = data[i] as usize % bins;
        let owner = (bin / per) as u32;
        let slot = cluster::map_shared_rank(base, owner);
        // SAFETY: `bin % per < per ≤ BINS_PER_BLOCK` is inside the owner's array, which lives
        // until the last cluster barrier; every access during the counting is atomic.
        unsafe { atomic::add(slot.add(bin % per), 1) };
        i += stride;
    }
    // Every block's additions into this block's bins are done.
    cluster::sync();
    let first = cluster::block_rank() as usize * per;
    let mut j = t;
    while j < per && first + j < bins {
        // SAFETY: no thread adds after the barrier.
        let c = unsafe { local.read(j) };
        if c != 0 {
            // SAFETY: `first + j < bins <= hist.len()`; `hist` is this launch's exclusive
            // buffer, updated only atomically.
            unsafe { atomic::add(hist.as_mut_ptr().add(first + j), c) };
        }
        j += HIST_BLOCK as usize;
    }
}

/// The same histogram without clusters: every value is one atomic addition in global memory
/// (the bins do not fit one block's shared memory). Blocks of [`HIST_BLOCK`] threads, any
/// one-dimensional grid; `hist.len() >= bins > 0`.
#[kernel]
pub fn histogram_global(data: &[u32], bins: u32, hist: DisjointSlice<u32>) {
    let bins = bins as usize;
    assert!(bins > 0 && hist.len() >= bins);
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    while i < data.len() {
        // SAFETY: `data[i] % bins < hist.len()`; `hist` is updated only atomically.
        unsafe { atomic::add(hist.as_mut_ptr().add(data[i] as usize % bins), 1) };
        i += stride;
    }
}

/// Thread 0 of each block writes what the cluster registers say to `out[linear block]`:
/// `[rank, size, dim, cluster_idx, block_idx in cluster, grid in clusters, explicit, 0]`,
/// each three-component value packed as `x | y << 8 | z << 16`.
///
/// # Safety
/// `out` holds one `[u32; 8]` per block, and nothing else accesses it during the launch.
#[kernel]
pub unsafe fn cluster_registers(out: *mut [u32; 8]) {
    let pack = |d: gpukernel_device::thread::Dim3| d.x | d.y << 8 | d.z << 16;
    let v = [
        cluster::block_rank(),
        cluster::size(),
        pack(cluster::dim()),
        pack(cluster::cluster_idx()),
        pack(cluster::block_idx()),
        pack(cluster::grid_dim()),
        cluster::is_explicit() as u32,
        0,
    ];
    if thread::thread_idx_x() == 0 {
        let (b, g) = (thread::block_idx(), thread::grid_dim());
        let linear = (b.x + b.y * g.x + b.z * g.x * g.y) as usize;
        // SAFETY: one writer per block's slot (the caller sized `out`).
        unsafe { out.add(linear).write(v) };
    }
}
