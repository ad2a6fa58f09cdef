// Names that the PTX JIT, libdevice, the C library or the compiler's builtins define are not
// the user's foreign code: bound to `memset` with `u64` arguments, a safe kernel overwrote its
// read-only input; bound to `free`, it freed what it was given.
use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        pub fill = "memset", safe fn(dst: u64, value: u32, n: u64) -> u64;
        pub release = "free", safe extern "C" fn(p: u64);
        pub "vprintf", fn(format: u64, args: u64) -> i32;
        pub exp = "__nv_expf", safe extern "C" fn(x: f32) -> f32;
        pub "__udivti3", fn(a: u64, b: u64) -> u64;
        pub "__gpukernel_sig_saxpy", fn();
    }
}

#[kernel]
pub fn overwrite(x: &[u32]) {
    fill(x.as_ptr() as u64, 0x41, 4 * x.len() as u64);
    release(x.as_ptr() as u64);
}

fn main() {}
