use gpukernel_device::prelude::*;

#[kernel]
pub fn scale(a: f32, x: &[f32])
where
    f32: Copy,
{
    let _ = (a, x);
}

fn main() {}
