use gpukernel_device::prelude::*;

#[kernel]
pub async fn fetch(x: &[f32]) {
    let _ = x;
}

fn main() {}
