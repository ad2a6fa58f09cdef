use gpukernel_device::prelude::*;

#[kernel]
pub fn scale(a: f32, y: &mut [f32]) {
    for v in y {
        *v *= a;
    }
}

fn main() {}
