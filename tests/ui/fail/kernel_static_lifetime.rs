//! A named lifetime in a kernel parameter would let the body keep the launch's data: the host
//! simulator's body could store `x` in a static and read it after the buffer is freed.
use gpukernel_device::prelude::*;

#[kernel]
pub fn keeps(x: &'static [u32], out: DisjointSlice<'static, u32>, p: *const &'static u8) {
    let _ = (x, out, p);
}

#[kernel]
pub fn elided_is_fine(x: &[u32], out: DisjointSlice<'_, u32>) {
    let _ = (x, out);
}

fn main() {}
