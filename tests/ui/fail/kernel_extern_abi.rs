use gpukernel_device::prelude::*;

#[kernel]
pub extern "C" fn add_one(x: &[f32]) {
    let _ = x;
}

fn main() {}
