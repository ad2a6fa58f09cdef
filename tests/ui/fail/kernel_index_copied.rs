// An index is neither `Copy` nor `Clone`: it stays the one value its thread was given.
use gpukernel_device::prelude::*;
use gpukernel_device::thread;

#[kernel]
pub fn copies(mut out: DisjointSlice<u32>, mut grid: DisjointSlice3D<u32>) {
    let i = thread::index();
    let j = i;
    out.set(i, 1);
    out.set(j, 2);
    let k = thread::index_3d();
    grid.set(k.clone(), 3);
}

fn main() {}
