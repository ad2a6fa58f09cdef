use gpukernel_device::prelude::*;

#[kernel]
pub const fn nothing(n: u32) {
    let _ = n;
}

fn main() {}
