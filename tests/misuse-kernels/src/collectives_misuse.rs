//! Block collectives reached by part of the block, and over 3-D blocks: what the GPU does
//! with them (`gpukernel-tests`' `misuse_block_collectives_gpu` tests).

use gpukernel_device::ops::Sum;
use gpukernel_device::{DisjointSlice, block, kernel, shared::shared_array, sync, thread};

/// Fills 12 KiB of the block's static shared memory with `v` (every thread a share), so that a
/// later launch on the same SM finds `v` in memory it never wrote.
#[kernel]
pub fn fill_shared(v: u32, mut out: DisjointSlice<u32>) {
    let s = shared_array!(u32, 3072);
    let (t, n) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    let mut i = t;
    while i < 3072 {
        // SAFETY: slot `i` is this thread's alone (stride of the block size).
        unsafe { s.write(i, v) };
        i += n;
    }
    sync::sync_threads();
    // SAFETY: no writes after the barrier.
    let r = unsafe { s.read((t * 7) % 3072) };
    out.set(thread::index(), r);
}

/// The first `warps` warps of each block sum their values with `block::reduce`; the others
/// return at once (whole warps, so the warp shuffles inside the collective match).
#[kernel]
pub fn partial_block_sum(warps: u32, x: &[u32], mut out: DisjointSlice<u32>) {
    if thread::warp_id() >= warps {
        return;
    }
    let i = thread::index();
    let v = block::reduce(x.get(i.get()).copied().unwrap_or(0), Sum);
    out.set(&i, v);
}

/// Over a 3-D block: per thread (at its linear index in the grid), the block's sum of
/// `linear thread index + 1`, its inclusive scan, its exclusive scan from 5, and the value of
/// thread `src` broadcast.
///
/// # Safety
/// Each pointer holds `threads per block × blocks` elements (a grid of `(n, 1, 1)`).
#[kernel]
pub unsafe fn block_collectives_3d(
    src: u32,
    sums: *mut u32,
    incl: *mut u32,
    excl: *mut u32,
    bcast: *mut u32,
) {
    let t = thread::linear_thread_idx();
    let v = t + 1;
    let s = block::reduce(v, Sum);
    let (inc, _) = block::inclusive_scan(v, Sum);
    let (exc, _) = block::exclusive_scan(v, 5, Sum);
    let b = block::broadcast(v * 3, src);
    let g = thread::linear_block_idx() as usize * thread::threads_per_block() as usize + t as usize;
    // SAFETY: `g` is the thread's linear index in the grid, inside each buffer (the caller's
    // promise); no other thread writes it.
    unsafe {
        *sums.add(g) = s;
        *incl.add(g) = inc;
        *excl.add(g) = exc;
        *bcast.add(g) = b;
    }
}

/// The first `warps` warps of each block count the threads that reach a counting barrier
/// (`sync_threads_count(true)`); the others return at once.
#[kernel]
pub fn partial_barrier_count(warps: u32, mut out: DisjointSlice<u32>) {
    if thread::warp_id() >= warps {
        return;
    }
    let n = sync::sync_threads_count(true);
    out.set(thread::index(), n);
}

/// Lanes `lanes..32` of each warp return at once; the others sum `x` with `warp::reduce`
/// (whose mask names every lane of the warp).
#[kernel]
pub fn partial_warp_sum(lanes: u32, x: &[u32], mut out: DisjointSlice<u32>) {
    if thread::lane_id() >= lanes {
        return;
    }
    let i = thread::index();
    let v = gpukernel_device::warp::reduce(x.get(i.get()).copied().unwrap_or(0), Sum);
    out.set(&i, v);
}

/// Warps `warps..` of the block return at once; the others rank their threads' digits (the
/// low byte of `digits`) with `block::radix_rank`.
#[kernel]
pub fn partial_radix_rank(warps: u32, digits: &[u32], mut out: DisjointSlice<u32>) {
    if thread::warp_id() >= warps {
        return;
    }
    let i = thread::index();
    let d = digits.get(i.get()).copied().unwrap_or(0) & 0xff;
    let r = gpukernel_device::block::radix_rank::<8, 1>([d]);
    out.set(&i, r.ranks[0]);
}

/// Lanes `lanes..32` of each warp return at once; the others move their value to the
/// reversed place of the block with `block::scatter_to_striped` and keep what lands on their
/// own place (written by the thread at the mirror place, which may have returned).
#[kernel]
pub fn partial_scatter(lanes: u32, x: &[u32], mut out: DisjointSlice<u32>) {
    if thread::lane_id() >= lanes {
        return;
    }
    let i = thread::index();
    let (t, n) = (thread::thread_idx_x(), thread::block_dim_x());
    let v = x.get(i.get()).copied().unwrap_or(0);
    let got = gpukernel_device::block::scatter_to_striped([v], [n - 1 - t]);
    out.set(&i, got[0]);
}
