use gpukernel_device::prelude::*;

// A scalar has no length.
#[kernel(same_len(x, a))]
pub fn scalar(a: f32, x: &[f32], y: DisjointSlice<f32>) {
    let _ = (a, x, y);
}

// Not a parameter.
#[kernel(same_len(x, z))]
pub fn unknown(x: &[f32], y: DisjointSlice<f32>) {
    let _ = (x, y);
}

// One name is no group.
#[kernel(same_len(x))]
pub fn alone(x: &[f32], y: DisjointSlice<f32>) {
    let _ = (x, y);
}

// A name in two groups.
#[kernel(same_len(x, y), same_len(y, x2))]
pub fn twice(x: &[f32], x2: &[f32], y: DisjointSlice<f32>) {
    let _ = (x, x2, y);
}

// A 2D output has a shape, not a length.
#[kernel(same_len(x, img))]
pub fn two_d(x: &[f32], img: DisjointSlice2D<f32>) {
    let _ = (x, img);
}

// Not a name.
#[kernel(same_len(x, y = 3))]
pub fn not_a_name(x: &[f32], y: DisjointSlice<f32>) {
    let _ = (x, y);
}

fn main() {}
