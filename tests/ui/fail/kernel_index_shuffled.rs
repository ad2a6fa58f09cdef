// An index cannot be sent to another lane through a shuffle (only numbers are
// `ShuffleValue`s) nor through an atomic (only numbers are `AtomicInt`s).
use gpukernel_device::prelude::*;
use gpukernel_device::warp::{self, FULL_MASK};
use gpukernel_device::{atomic, thread};

#[kernel]
pub fn lane_0s_index(mut out: DisjointSlice<u32>) {
    let i = warp::shfl_sync(FULL_MASK, thread::index(), 0);
    out.set(i, 1);
}

/// # Safety
/// `slot` is valid for atomic reads and writes.
pub unsafe fn swapped(slot: *mut ThreadIndex2D) -> ThreadIndex2D {
    // SAFETY: the caller's promise.
    unsafe { atomic::exchange(slot, thread::index_2d()) }
}

fn main() {}
