// An index opens only the output of its own shape: the 2D index of a thread is not its
// one-dimensional `ThreadIndex` (in a 2D launch, two threads would share one), and the
// one-dimensional index does not open a 2D output.
use gpukernel_device::prelude::*;
use gpukernel_device::thread;

#[kernel]
pub fn flat(mut out: DisjointSlice<f32>) {
    let i = thread::index_2d();
    out.set(i, 1.0);
}

#[kernel]
pub fn plane(mut out: DisjointSlice2D<f32>) {
    let i = thread::index();
    out.set(i, 1.0);
}

fn main() {}
