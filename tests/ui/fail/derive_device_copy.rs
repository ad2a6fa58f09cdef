//! `#[derive(DeviceCopy)]` takes structs whose layout is fixed (`#[repr(C)]` or
//! `#[repr(transparent)]`) and whose fields are all `DeviceCopy`.
use gpukernel_device::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
pub struct DefaultRepr {
    pub a: f32,
}

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct HostPointer {
    pub a: f32,
    pub p: &'static u32,
}

#[repr(u8)]
#[derive(Clone, Copy, DeviceCopy)]
pub enum Mode {
    A,
}

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Generic<T> {
    pub a: T,
}

fn main() {}
