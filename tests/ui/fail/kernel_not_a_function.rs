use gpukernel_device::prelude::*;

#[kernel]
pub struct Saxpy {
    pub a: f32,
}

fn main() {}
