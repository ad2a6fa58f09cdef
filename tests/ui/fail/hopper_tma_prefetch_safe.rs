// `TensorMap::from_raw` takes any address, and `prefetch.tensormap` of one that holds no
// tensor map can fault the kernel (address 0x1 did on an H100): the prefetch is `unsafe`.
use gpukernel_device::prelude::*;
use gpukernel_device::thread;
use gpukernel_device::tma::TensorMap;

#[kernel]
pub fn prefetch_any_address(addr: u64, mut out: DisjointSlice<u32>) {
    TensorMap::from_raw(addr).prefetch();
    out.set(thread::index(), 1);
}

fn main() {}
