// A thread holds at most one `&mut` into its output at a time, even to its own element.
use gpukernel_device::prelude::*;
use gpukernel_device::thread;

#[kernel]
pub fn twice(mut out: DisjointSlice2D<f32>) {
    let i = thread::index_2d();
    let first = out.get_mut(&i);
    let second = out.get_mut(&i);
    if let (Some(a), Some(b)) = (first, second) {
        *a = *b;
    }
}

fn main() {}
