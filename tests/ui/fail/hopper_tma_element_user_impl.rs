// `TmaElement` is sealed: a user type claiming a wider `CUtensorMapDataType` than its own size
// would let a TMA copy through a checked map reach past the memory the map borrows.
use gpukernel_runtime::{DeviceCopy, TmaElement};

#[derive(Clone, Copy, DeviceCopy)]
#[repr(transparent)]
struct Byte(u8);

impl TmaElement for Byte {
    const DATA_TYPE: u32 = 8; // FLOAT64: 8 bytes per element, against 1
}

fn main() {}
