use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        "mul", fn<T>(T, T) -> T;
        "scale", for<'a> fn(&'a f32);
    }
}

fn main() {}
