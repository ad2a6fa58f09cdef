//! Every accepted form of `declare_device!` compiles, and the wrappers call the symbols (here
//! Rust stand-ins for the CUDA C functions).
#![deny(warnings)]

use gpukernel_device::prelude::*;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Complex {
    pub re: f32,
    pub im: f32,
}

// SAFETY: `#[repr(C)]` struct of two `f32`s.
unsafe impl DeviceCopy for Complex {}

declare_device!(unsafe extern { "mul_f32_f32", safe fn(f32, f32) -> f32 });
declare_device!(unsafe extern { pub "add_f32_f32", safe fn(f32, f32) -> f32, });

declare_device! {
    unsafe extern {
        /// Multiplies two complex numbers.
        pub cmul = "complex_mul", safe fn(a: Complex, b: Complex) -> Complex;
        pub(crate) sum = "sum_reduce", fn(data: *const f32, n: i32) -> f32;
        pub "touch", fn(*mut u32);
        "nothing", safe fn() -> ();
        "checked", unsafe fn(u64) -> u64;
        // One struct by several paths, and a built-in type by its full path.
        pub "complex_pick", fn(a: Complex, b: crate::Complex, c: *const self::Complex) -> core::primitive::f32;
        #[cfg(any())]
        "never_declared", safe fn(UndefinedType);
    }
}

mod cuda_side {
    use super::Complex;

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_mul_f32_f32")]
    extern "C" fn mul_f32_f32(ret: *mut f32, a: f32, b: f32) -> i32 {
        // SAFETY: the wrapper passes its return slot.
        unsafe { ret.write(a * b) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_add_f32_f32")]
    extern "C" fn add_f32_f32(ret: *mut f32, a: f32, b: f32) -> i32 {
        // SAFETY: as above.
        unsafe { ret.write(a + b) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_complex_mul")]
    extern "C" fn complex_mul(ret: *mut Complex, a: Complex, b: Complex) -> i32 {
        let c = Complex {
            re: a.re * b.re - a.im * b.im,
            im: a.re * b.im + a.im * b.re,
        };
        // SAFETY: as above.
        unsafe { ret.write(c) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_sum_reduce")]
    extern "C" fn sum_reduce(ret: *mut f32, data: *const f32, n: i32) -> i32 {
        // SAFETY: the caller passes `n` valid elements.
        let s: f32 = unsafe { core::slice::from_raw_parts(data, n as usize) }
            .iter()
            .sum();
        // SAFETY: as above.
        unsafe { ret.write(s) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_touch")]
    extern "C" fn touch(_ret: *mut u8, p: *mut u32) -> i32 {
        // SAFETY: the caller passes a valid pointer.
        unsafe { *p += 1 };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_nothing")]
    extern "C" fn nothing(_ret: *mut u8) -> i32 {
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_complex_pick")]
    extern "C" fn complex_pick(ret: *mut f32, a: Complex, b: Complex, c: *const Complex) -> i32 {
        // SAFETY: the caller passes a valid pointer and the return slot.
        unsafe { ret.write(a.re + b.im + (*c).re) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_checked")]
    extern "C" fn checked(ret: *mut u64, x: u64) -> i32 {
        // SAFETY: as above.
        unsafe { ret.write(x + 1) };
        0
    }
}

fn main() {
    declare_device!(unsafe extern { "mul_f32_f32", safe fn(f32, f32) -> f32 });
    assert_eq!(mul_f32_f32(2.0, 3.0), 6.0);
    assert_eq!(add_f32_f32(2.0, 3.0), 5.0);
    let i = Complex { re: 0.0, im: 1.0 };
    assert_eq!(cmul(i, i), Complex { re: -1.0, im: 0.0 });
    let data = [1.0f32, 2.0, 3.0];
    // SAFETY: `data` holds 3 elements.
    assert_eq!(unsafe { sum(data.as_ptr(), 3) }, 6.0);
    let mut n = 0u32;
    // SAFETY: `n` is valid for reads and writes.
    unsafe { touch(&raw mut n) };
    assert_eq!(n, 1);
    nothing();
    // SAFETY: `checked` has no requirements beyond the ABI.
    assert_eq!(unsafe { checked(41) }, 42);
    // SAFETY: `&i` is valid for reads.
    assert_eq!(unsafe { complex_pick(i, i, &i) }, 1.0);
}
