use gpukernel_device::prelude::*;

declare_device! {
    "first", fn(f32) -> f32;
    crate = "gpukernel_device";
}

declare_device!(crate = gpukernel_device; "second", fn(f32) -> f32);

declare_device!(crate = "not a path"; "third", fn(f32) -> f32);

fn main() {}
