use gpukernel_device::prelude::*;

declare_device! {
    "sum", fn(&[f32]) -> f32;
    "fill", fn(&mut [f32], f32);
    "print", fn(String);
    "norm", fn((f32, f32)) -> f32;
    "split", fn(f32) -> (f32, f32);
    "first", fn(*const f32) -> &f32;
}

fn main() {}
