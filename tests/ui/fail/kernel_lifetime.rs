use gpukernel_device::prelude::*;

#[kernel]
pub fn copy<'a>(x: &'a [f32], out: DisjointSlice<'a, f32>) {
    let _ = (x, out);
}

fn main() {}
