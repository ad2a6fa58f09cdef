use gpukernel_device::prelude::*;

// A `Slice2D` is read-only: nothing writes an input during its launch.
#[kernel]
pub fn scale(m: Slice2D<f32>, a: f32) {
    m[(0, 0)] = a * m[(0, 0)];
}

fn main() {}
