// An index is not `Copy`: it stays the one value its thread was given (copied, thread 0's
// index stored for 64 threads gave each `&mut out[0]`).
use gpukernel_device::prelude::*;
use gpukernel_device::thread;

#[kernel]
pub fn copies(mut out: DisjointSlice<u32>) {
    let i = thread::index();
    let j = i;
    out.set(i, 1);
    out.set(j, 2);
}

fn main() {}
