use gpukernel_device::prelude::*;

#[kernel]
pub fn shape(out: DisjointSlice2D<f32, u32>) {}

fn main() {}
