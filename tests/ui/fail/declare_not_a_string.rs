use gpukernel_device::prelude::*;

declare_device!(unsafe extern { mul_f32_f32, safe fn(f32, f32) -> f32 });

fn main() {}
