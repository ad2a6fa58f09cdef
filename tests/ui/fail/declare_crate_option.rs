use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        "first", safe fn(f32) -> f32;
        crate = "gpukernel_device";
    }
}

declare_device!(crate = gpukernel_device; unsafe extern { "second", safe fn(f32) -> f32 });

declare_device!(crate = "not a path"; unsafe extern { "third", safe fn(f32) -> f32 });

fn main() {}
