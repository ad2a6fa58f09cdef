use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        mul = "mul-f32", safe fn(f32, f32) -> f32;
        add = "ns::add", safe fn(f32, f32) -> f32;
        "type", safe fn(u32) -> u32;
    }
}

fn main() {}
