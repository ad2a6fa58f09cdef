use gpukernel_device::prelude::*;

declare_device! {
    mul = "mul-f32", fn(f32, f32) -> f32;
    add = "ns::add", fn(f32, f32) -> f32;
    "type", fn(u32) -> u32;
}

fn main() {}
