use gpukernel_device::prelude::*;

#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
}

#[kernel]
pub fn apply(p: Params, out: DisjointSlice<f32>) {
    let _ = (p.scale, out);
}

fn main() {}
