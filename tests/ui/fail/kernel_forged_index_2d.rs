// A 2D index cannot be made in safe code either (its fields are private).
use gpukernel_device::prelude::*;

#[kernel]
pub fn forged(mut b: DisjointSlice2D<f32>) {
    b.set(ThreadIndex2D { x: 0, y: 0 }, 1.0);
}

fn main() {}
