// A foreign function is trusted code: its declarations go in an `unsafe extern` block, where
// the author's `unsafe` vouches for them (as for Rust's own `unsafe extern` blocks).
use gpukernel_device::prelude::*;

declare_device!(pub "mul_f32_f32", fn(f32, f32) -> f32);

declare_device! {
    extern {
        pub "add_f32_f32", safe fn(f32, f32) -> f32;
    }
}

fn main() {}
