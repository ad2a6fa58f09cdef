use gpukernel_device::prelude::*;

#[kernel]
pub unsafe extern "C" fn sum(n: u32, _: ...) {
    let _ = n;
}

fn main() {}
