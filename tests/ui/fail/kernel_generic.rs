use gpukernel_device::prelude::*;

#[kernel]
pub fn fill<T: Copy + DeviceCopy>(value: T, out: DisjointSlice<T>) {
    let _ = (value, out);
}

fn main() {}
