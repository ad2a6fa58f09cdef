use gpukernel_device::prelude::*;

pub struct Model;

impl Model {
    #[kernel]
    pub fn step(&self, out: DisjointSlice<f32>) {
        let _ = out;
    }
}

fn main() {}
