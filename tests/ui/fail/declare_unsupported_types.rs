use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        "sum", safe fn(&[f32]) -> f32;
        "fill", safe fn(&mut [f32], f32);
        "print", safe fn(String);
        "norm", safe fn((f32, f32)) -> f32;
        "split", safe fn(f32) -> (f32, f32);
        "first", fn(*const f32) -> &f32;
    }
}

fn main() {}
