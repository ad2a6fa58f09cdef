use gpukernel_device::prelude::*;

#[kernel]
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

fn main() {}
