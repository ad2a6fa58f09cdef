use gpukernel_device::prelude::*;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Complex {
    pub re: f32,
    pub im: f32,
}

declare_device!(unsafe extern { pub "cmul", safe fn(Complex, Complex) -> Complex });

fn main() {}
