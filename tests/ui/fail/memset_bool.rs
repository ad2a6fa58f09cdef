// A byte fill of a `bool` buffer with a non-zero value would make invalid `bool`s that the
// host then reads: `memset_d8` needs `AnyBitPattern`, which `bool` is not.
use gpukernel_runtime::Device;

fn main() {
    let ctx = Device::simulator().primary_context().unwrap();
    let mut flags = ctx.alloc_zeros::<bool>(8).unwrap();
    flags.memset_d8(2).unwrap();
    flags.memset_zeros().unwrap(); // fine: all-zero is a valid bool
}
