// Without `safe fn` a wrapper is `unsafe`, whatever its argument types: plain integers can
// be addresses or sizes to the foreign code, which only its author can judge.
use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        pub "fill_words", fn(dst: u64, value: u32, n: u64);
        pub "c_fill", extern "C" fn(dst: u64, n: u64);
    }
}

#[kernel]
pub fn calls_without_unsafe(x: &[u32]) {
    fill_words(x.as_ptr() as u64, 0x41, x.len() as u64);
    c_fill(x.as_ptr() as u64, x.len() as u64);
}

fn main() {}
