use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        pub mul = "mul_f32_f32", safe fn(f32, f32) -> f32;
        pub mul = "mul_f64_f64", safe fn(f64, f64) -> f64;
    }
}

fn main() {
    let _ = mul(1.0, 2.0);
}
