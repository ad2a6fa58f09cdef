// `safe fn` promises that any arguments are fine: a function that reads or writes through a
// pointer cannot keep that promise, so it stays `unsafe`.
use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        pub "touch", safe fn(p: *mut u32);
        pub "sum", safe extern "C" fn(data: *const f32, n: i32) -> f32;
        pub "both", safe unsafe fn(x: u32);
    }
}

fn main() {}
