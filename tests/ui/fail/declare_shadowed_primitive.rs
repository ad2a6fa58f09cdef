// A local type named like a built-in one: the record would say `float` while the call passes
// an `i32`, so the definition would be checked against the wrong C type.
use gpukernel_device::prelude::*;

mod units {
    #[allow(non_camel_case_types)]
    pub type f32 = i32;
}

declare_device!(unsafe extern { pub "scale", safe fn(x: units::f32) -> f32 });

fn main() {}
