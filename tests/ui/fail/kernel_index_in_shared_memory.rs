// An index cannot be stored in shared memory, where another thread would read it and reach
// an output element that is not its own: `shared_array!` elements are `DeviceCopy` and
// `dynamic_shared` views `AnyBitPattern`, which the index types are not.
use gpukernel_device::prelude::*;
use gpukernel_device::shared::{dynamic_shared, shared_array};
use gpukernel_device::{sync, thread};

#[kernel]
pub fn shares_thread_0s_index(mut out: DisjointSlice<u32>) {
    let slot = shared_array!(ThreadIndex, 1);
    if thread::thread_idx_x() == 0 {
        // SAFETY: one writer; the readers come after the barrier.
        unsafe { slot.write(0, thread::index()) };
    }
    sync::sync_threads();
    // SAFETY: no writes after the barrier.
    let i = unsafe { slot.read(0) };
    if let Some(o) = out.get_mut(i) {
        *o += 1;
    }
}

#[kernel]
pub fn shares_through_dynamic(mut out: DisjointSlice2D<u32>) {
    let slots = dynamic_shared::<ThreadIndex2D>();
    // SAFETY: no writes; a read of launch-sized memory.
    let i = unsafe { slots.read(0) };
    out.set(i, 1);
}

fn main() {}
