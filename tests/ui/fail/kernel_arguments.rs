use gpukernel_device::prelude::*;

#[kernel(block_size = 256)]
pub fn scale(a: f32, y: DisjointSlice<f32>) {
    let _ = (a, y);
}

fn main() {}
