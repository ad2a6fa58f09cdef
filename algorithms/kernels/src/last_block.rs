//! A device-wide reduce in one launch: every block publishes its partial and takes a ticket;
//! the block that takes the last ticket reduces the partials, in block order, into the output
//! and resets the ticket for the next launch (the pattern of CUDA's `threadFenceReduction`
//! sample, with a release/acquire ticket instead of a fence).
//!
//! The scratch is a `DisjointSlice<u64>` of at least [`scratch_words`] words: word 0 the ticket
//! (zero when a launch starts, zero again when it ends), word `1 + b` the bits of block `b`'s
//! partial ([`Item::to_bits64`]). Every access to it is atomic at device scope: thread 0 of a
//! block stores its partial (relaxed), then adds one to the ticket with acquire-release
//! semantics, so the block that reads `grid - 1` back has seen every partial stored before
//! every other block's ticket; its barrier hands that on to its other threads, which load the
//! partials (relaxed, from the L2, where every block's stores meet).
//!
//! A ticket that is not zero when a launch starts (a launch that failed part way, or scratch
//! used by something else) gives a wrong result or none, never undefined behaviour and never a
//! hang: nothing waits for another block, and the output is written by at most one thread (the
//! tickets of one launch are distinct values, so one block at most reads `grid - 1`). The
//! kernels are therefore safe to launch; `gpukernel-algorithms` keeps the scratch private,
//! zeroed when allocated, and replaces it after a failed launch.

use gpukernel_device::ops::Identity;
use gpukernel_device::prelude::*;
use gpukernel_device::{block, sync, thread};

use crate::Item;
use crate::scan::{status_load, status_store};

/// Scratch words a one-launch reduce of `blocks` blocks needs: the ticket and one partial per
/// block.
pub const fn scratch_words(blocks: usize) -> usize {
    blocks + 1
}

/// Partials each thread of the last block loads before combining them (loads in flight).
const LOADS: usize = 4;

/// The checks every one-launch reduce makes first, uniform over the grid (before any
/// barrier): a one-dimensional block, room for every block's partial, an output element.
#[inline(always)]
pub fn check_launch<T: Item>(scratch: &DisjointSlice<'_, u64>, out: &DisjointSlice<'_, T>) {
    assert!(
        thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && thread::grid_dim_y() == 1
            && thread::grid_dim_z() == 1
            && scratch.len() >= scratch_words(thread::grid_dim_x() as usize)
            && !out.is_empty()
    );
}

/// Adds one to the ticket (scratch word 0) at device scope with acquire-release semantics;
/// returns the ticket before.
#[inline(always)]
fn take_ticket(scratch: &DisjointSlice<'_, u64>) -> u64 {
    assert!(!scratch.is_empty());
    let p = scratch.as_mut_ptr();
    #[cfg(target_arch = "nvptx64")]
    {
        let old: u64;
        // SAFETY: `p` is the scratch's first word, an aligned u64 of global memory; every
        // access of the scratch during the launch is atomic.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {1}; atom.acq_rel.gpu.global.add.u64 {0}, [g], {2}; }}",
                out(reg64) old, in(reg64) p, in(reg64) 1u64, options(nostack),
            );
        }
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: as above; the simulator's blocks are host threads.
        unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }
            .fetch_add(1, core::sync::atomic::Ordering::AcqRel)
    }
}

/// The end of a one-launch reduce, called by every thread of every block with the block's
/// total (`total`, needed in thread 0): publishes it, and in the block that takes the last
/// ticket reduces every block's partial in block order (contiguous runs per thread, then the
/// block's reduction in thread order: an operator need not be commutative) into `out[0]`.
#[inline(always)]
pub fn finish<T: Item, Op: Identity<T>>(
    total: T,
    scratch: &DisjointSlice<'_, u64>,
    out: &DisjointSlice<'_, T>,
    op: Op,
) {
    let (t, b, g) = (
        thread::thread_idx_x() as usize,
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let mut last = false;
    if t == 0 {
        status_store::<false>(scratch, 1 + b, total.to_bits64());
        // Release: the partial above is visible to whoever acquires a later ticket value.
        last = take_ticket(scratch) == g as u64 - 1;
    }
    // One barrier for the whole block: whether it is the last one (thread 0's acquire, handed
    // on to the block's threads).
    if !sync::sync_threads_or(last) {
        return;
    }
    let nt = thread::block_dim_x() as usize;
    let per = g.div_ceil(nt);
    let (lo, hi) = ((t * per).min(g), ((t + 1) * per).min(g));
    let mut acc = op.identity();
    let mut i = lo;
    while i < hi {
        let mut w = [0u64; LOADS];
        for (j, wj) in w.iter_mut().enumerate() {
            if i + j < hi {
                *wj = status_load::<false>(scratch, 1 + i + j);
            }
        }
        for (j, wj) in w.iter().enumerate() {
            if i + j < hi {
                acc = op.combine(acc, T::from_bits64(*wj));
            }
        }
        i += LOADS;
    }
    let v = block::reduce(acc, op);
    if t == 0 {
        // Every block took its ticket: the next launch starts from zero.
        status_store::<false>(scratch, 0, 0);
        // SAFETY: at most one thread of the launch gets here (thread 0 of the one block whose
        // ticket was `g - 1`: a launch's tickets are distinct values), and `out` is not empty
        // (`check_launch`).
        unsafe { out.write(0, v) };
    }
}
