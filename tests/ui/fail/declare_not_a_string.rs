use gpukernel_device::prelude::*;

declare_device!(mul_f32_f32, fn(f32, f32) -> f32);

fn main() {}
