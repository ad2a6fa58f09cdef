//! Grid-wide work: a sum in one cooperative launch (`grid::sync`) against the same sum in two
//! launches, and a pair of kernels joined by programmatic dependent launch.

use gpukernel_device::grid::{self, GridBarrier};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::vector::{f32x4, split_aligned};
use gpukernel_device::{sync, thread, warp};

/// Threads per block of the reductions.
pub const REDUCE_BLOCK: u32 = 256;

#[inline(always)]
fn warp_sum(mut v: f32) -> f32 {
    for d in [16, 8, 4, 2, 1] {
        v += warp::shfl_down_sync(warp::FULL_MASK, v, d);
    }
    v
}

/// The block's sum of `v` (valid in thread 0). Blocks of [`REDUCE_BLOCK`] threads.
#[inline(always)]
fn block_sum(v: f32) -> f32 {
    let partial = shared_array!(f32, (REDUCE_BLOCK / 32) as usize);
    let v = warp_sum(v);
    let (lane, w) = (thread::lane_id() as usize, thread::warp_id() as usize);
    if lane == 0 {
        // SAFETY: lane 0 of warp `w` alone writes slot `w`; read after the barrier.
        unsafe { partial.write(w, v) };
    }
    sync::sync_threads();
    let mut total = 0.0;
    if w == 0 {
        total = warp_sum(if lane < partial.len() {
            // SAFETY: written before the barrier, not written again in this call.
            unsafe { partial.read(lane) }
        } else {
            0.0
        });
    }
    // The slots may be written by the next call only after every warp read them.
    sync::sync_threads();
    total
}

/// This thread's grid-stride share of `x`, four floats per load where aligned.
#[inline(always)]
fn thread_share(x: &[f32]) -> f32 {
    let (head, body, tail) = split_aligned::<f32x4>(x);
    let stride = thread::grid_stride_x();
    let i = thread::global_index_x();
    let mut v = 0.0f32;
    let mut j = i;
    while j < body.len() {
        let q = body[j].0;
        v += (q[0] + q[1]) + (q[2] + q[3]);
        j += stride;
    }
    if i < head.len() {
        v += head[i];
    }
    if i < tail.len() {
        v += tail[i];
    }
    v
}

/// The sum of `x` in one cooperative launch: each block reduces its grid-stride share and
/// writes it to `partials[block]`; after `grid::sync`, block 0 reduces the partials and the
/// grid's first thread writes `out[0]`.
///
/// # Safety
/// Launch cooperatively (`LaunchConfig::cooperative`, blocks of [`REDUCE_BLOCK`] threads, a
/// one-dimensional grid) with `bar` from the runtime; `partials` holds at least one `f32` per
/// block and nothing else touches it during the launch; `out` has one element.
#[kernel]
pub unsafe fn sum_cooperative(
    x: &[f32],
    partials: *mut f32,
    bar: GridBarrier,
    mut out: DisjointSlice<f32>,
) {
    assert!(thread::block_dim_x() == REDUCE_BLOCK);
    let s = block_sum(thread_share(x));
    let b = thread::block_idx_x() as usize;
    if thread::thread_idx_x() == 0 {
        // SAFETY: one writer per slot (the caller sized `partials`); read after the grid sync.
        unsafe { partials.add(b).write_volatile(s) };
    }
    // SAFETY: the caller's contract (cooperative launch, every thread calls it once).
    unsafe { grid::sync(bar) };
    if b == 0 {
        let blocks = thread::grid_dim_x() as usize;
        let mut v = 0.0f32;
        let mut j = thread::thread_idx_x() as usize;
        while j < blocks {
            // SAFETY: every block wrote its slot before the grid sync.
            v += unsafe { partials.add(j).read_volatile() };
            j += REDUCE_BLOCK as usize;
        }
        let total = block_sum(v);
        if let Some(o) = out.get_mut(thread::index()) {
            *o = total;
        }
    }
}

/// First launch of the two-launch sum: each block writes its share's sum to
/// `partials[block]`.
///
/// # Safety
/// Blocks of [`REDUCE_BLOCK`] threads, a one-dimensional grid; `partials` holds at least one
/// `f32` per block and only this launch writes it.
#[kernel]
pub unsafe fn sum_partials(x: &[f32], partials: *mut f32) {
    assert!(thread::block_dim_x() == REDUCE_BLOCK);
    let s = block_sum(thread_share(x));
    if thread::thread_idx_x() == 0 {
        // SAFETY: one writer per slot (the caller's contract).
        unsafe { partials.add(thread::block_idx_x() as usize).write(s) };
    }
}

/// Second launch of the two-launch sum: one block of [`REDUCE_BLOCK`] threads adds
/// `partials` into `out[0]`.
#[kernel]
pub fn sum_final(partials: &[f32], mut out: DisjointSlice<f32>) {
    assert!(thread::block_dim_x() == REDUCE_BLOCK && thread::grid_dim_x() == 1);
    let mut v = 0.0f32;
    let mut j = thread::thread_idx_x() as usize;
    while j < partials.len() {
        v += partials[j];
        j += REDUCE_BLOCK as usize;
    }
    let total = block_sum(v);
    if let Some(o) = out.get_mut(thread::index()) {
        *o = total;
    }
}

/// `out[i] = a * x[i] + 1`, letting the next kernel on the stream start early
/// (`grid::launch_dependents`) once this block has issued its work.
#[kernel]
pub fn pdl_first(a: f32, x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = a * x[i.get()] + 1.0;
    }
    grid::launch_dependents();
}

/// `out[i] = 2 * y[i]`, where `y` is what the previous kernel on the stream wrote: its
/// prologue may overlap that kernel (programmatic dependent launch), and
/// `grid::wait_dependencies` waits for its results before reading them.
#[kernel]
pub fn pdl_second(y: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index();
    grid::wait_dependencies();
    if let Some(o) = out.get_mut(&i) {
        *o = 2.0 * y[i.get()];
    }
    grid::launch_dependents();
}
