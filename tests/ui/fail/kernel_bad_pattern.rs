use gpukernel_device::prelude::*;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

// SAFETY: `#[repr(C)]` struct of two `u32`s.
unsafe impl DeviceCopy for Range {}

#[kernel]
pub fn span(Range { start, end }: Range, out: DisjointSlice<u32>) {
    let _ = (start, end, out);
}

fn main() {}
