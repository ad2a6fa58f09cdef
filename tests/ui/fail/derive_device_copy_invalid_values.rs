//! Rust types that not every byte pattern is a value of, other than `bool`, cannot cross to the
//! device, in a derived struct or as a foreign function's argument: a `char` (a surrogate or a
//! number past `char::MAX`), a `NonZeroU32` (zero), an `Option` of one. Foreign C code could
//! write such bytes where the Rust side then reads the type. (References and enums:
//! `derive_device_copy.rs`. A `bool` may cross: the foreign layout check keeps C unions off its
//! byte.)
use core::num::NonZeroU32;
use gpukernel_device::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Letter {
    pub c: char,
}

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Count {
    pub n: NonZeroU32,
    pub m: Option<NonZeroU32>,
}

declare_device! {
    unsafe extern {
        "take_char", safe fn(char) -> f32;
        "take_count", safe fn(NonZeroU32) -> f32;
        "make_char", safe fn(f32) -> char;
    }
}

fn main() {}
