use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        "log", fn(*const u8, ...);
        "add", extern "system" fn(f32, f32) -> f32;
    }
}

fn main() {}
