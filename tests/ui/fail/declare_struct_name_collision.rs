// Two structs of one name (the record names a struct by its last path segment): the record
// would hold `a::Pair`'s layout for both, and the definition's second struct would be checked
// against it.
use gpukernel_device::prelude::*;

mod a {
    #[repr(C)]
    #[derive(Clone, Copy, gpukernel_device::DeviceCopy)]
    pub struct Pair {
        pub x: f32,
        pub y: f32,
    }
}

mod b {
    #[repr(C)]
    #[derive(Clone, Copy, gpukernel_device::DeviceCopy)]
    pub struct Pair {
        pub x: i32,
        pub y: i32,
    }
}

declare_device!(unsafe extern { pub "mix", safe fn(a::Pair, b::Pair) -> f32 });

fn main() {}
