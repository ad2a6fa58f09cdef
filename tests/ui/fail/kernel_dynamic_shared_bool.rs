// Every `dynamic_shared` view of a block sees the same bytes, so what a `u8` view wrote a
// `bool` view would read: views are `AnyBitPattern` types only.
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::{sync, thread};

#[kernel]
pub fn bytes_as_bools(mut out: DisjointSlice<bool>) {
    let t = thread::thread_idx_x() as usize;
    let bytes = dynamic_shared::<u8>();
    // SAFETY: each thread writes its own byte; reads come after the barrier.
    unsafe { bytes.write(t, 2) };
    sync::sync_threads();
    let flags = dynamic_shared::<[bool; 4]>();
    // SAFETY: no writes after the barrier.
    let f = unsafe { flags.read(0) };
    out.set(thread::index(), f[0] && dynamic_shared::<bool>().is_empty());
}

fn main() {}
