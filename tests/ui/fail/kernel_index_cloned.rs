// An index is not `Clone` either.
use gpukernel_device::prelude::*;
use gpukernel_device::thread;

#[kernel]
pub fn clones(mut grid: DisjointSlice3D<u32>) {
    let k = thread::index_3d();
    grid.set(k.clone(), 3);
}

fn main() {}
