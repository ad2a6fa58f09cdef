// Imported memory holds another API's bytes, which nothing checks: it maps only as element
// types valid for every bit pattern (`AnyBitPattern`), so not as `bool` (a byte 105 there
// would be an invalid `bool` in the host's hands) nor as a struct with a `bool` field.
use gpukernel_runtime::external::ExternalMemory;
use gpukernel_runtime::DeviceCopy;

#[repr(C)]
#[derive(Clone, Copy)]
struct Flagged {
    on: bool,
    value: [u8; 3],
}

// SAFETY: `#[repr(C)]`, no padding, all-zero valid; not every byte pattern is one (the `bool`).
unsafe impl DeviceCopy for Flagged {}

fn map_them(mem: &ExternalMemory) {
    let _ = mem.map::<bool>(0, 16);
    let _ = mem.map::<Flagged>(0, 16);
    let _ = mem.map::<u8>(0, 16); // any byte is a `u8`: accepted
}

fn main() {}
