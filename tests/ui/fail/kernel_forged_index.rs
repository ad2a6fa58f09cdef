// Index types cannot be made in safe code: only `thread::index*` and the grid-stride
// iterators hand them out, one thread's own.
use gpukernel_device::prelude::*;

#[kernel]
pub fn forged(mut a: DisjointSlice<f32>, mut b: DisjointSlice2D<f32>) {
    a.set(ThreadIndex(0), 1.0);
    b.set(ThreadIndex2D { x: 0, y: 0 }, 1.0);
}

fn main() {}
