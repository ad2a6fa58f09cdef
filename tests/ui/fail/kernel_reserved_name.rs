//! A kernel's name is its entry's unmangled symbol: named like a function that device code
//! calls (libdevice's `__nv_expf`, PTX's `vprintf`, the C library's `memset`, the CUDA device
//! runtime's `cudaGraphSetConditional`), it would capture those calls.
use gpukernel_device::prelude::*;

#[kernel]
pub fn __nv_expf(out: DisjointSlice<f32>) {
    let _ = out;
}

#[kernel]
pub fn vprintf(out: DisjointSlice<f32>) {
    let _ = out;
}

#[kernel]
pub fn memset(out: DisjointSlice<u8>) {
    let _ = out;
}

#[kernel]
pub fn cudaGraphSetConditional() {}

#[kernel]
pub fn _Z4axpyfPKfPf() {}

fn main() {}
