//! The names the macros generate for their own locals, parameters and helpers never collide
//! with, shadow or capture the user's names: arguments named like them reach the callee and
//! the kernel body unchanged.
#![deny(warnings)]

use core::ffi::c_void;

use gpukernel_device::Kernel;
use gpukernel_device::prelude::*;

declare_device! {
    unsafe extern {
        pub "hygiene_out", fn(__gk_ret_ptr: *mut f32, v: f32) -> f32;
        pub "hygiene_named", safe fn(ret: f32, __gk_status: i32, __gk_ret: f32) -> f32;
        pub "hygiene_unnamed", safe fn(a1: f32, f32) -> f32;
    }
}

mod cuda_side {
    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_hygiene_out")]
    extern "C" fn hygiene_out(ret: *mut f32, out: *mut f32, v: f32) -> i32 {
        // SAFETY: the wrapper passes its return slot; the caller a valid `out`.
        unsafe {
            out.write(2.0 * v);
            ret.write(v + 1.0);
        }
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_hygiene_named")]
    extern "C" fn hygiene_named(ret: *mut f32, a: f32, b: i32, c: f32) -> i32 {
        // SAFETY: the wrapper passes its return slot.
        unsafe { ret.write(a + 10.0 * b as f32 + 100.0 * c) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_hygiene_unnamed")]
    extern "C" fn hygiene_unnamed(ret: *mut f32, a: f32, b: f32) -> i32 {
        // SAFETY: as above.
        unsafe { ret.write(a - b) };
        0
    }
}

/// A module item with the name the host expansion once gave the kernel's body.
#[allow(dead_code)]
fn __gk_body_copy_scaled() -> u32 {
    7
}

/// `__gk_sim_entry[i] = __gk_params * __gk_body[i]`, serially.
#[kernel]
pub fn copy_scaled(__gk_params: u32, __gk_body: &[u32], __gk_sim_entry: DisjointSlice<u32>) {
    for (i, v) in __gk_body.iter().enumerate() {
        // SAFETY: run on one thread.
        unsafe { __gk_sim_entry.write(i, __gk_params * v) }
    }
}

fn param<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

fn main() {
    let mut out = 0.0f32;
    // SAFETY: `out` is valid for writes.
    let r = unsafe { hygiene_out(&raw mut out, 1.5) };
    assert_eq!((r, out), (2.5, 3.0), "the argument `__gk_ret_ptr` was replaced");
    assert_eq!(hygiene_named(1.0, 2, 3.0), 321.0);
    assert_eq!(hygiene_unnamed(5.0, 2.0), 3.0);

    let k = 3u32;
    let x = [1u32, 2, 3];
    let mut y = [0u32; 3];
    let (x_ptr, x_len) = (x.as_ptr(), x.len());
    let (y_ptr, y_len) = (y.as_mut_ptr(), y.len());
    let params = [
        param(&k),
        param(&x_ptr),
        param(&x_len),
        param(&y_ptr),
        param(&y_len),
    ];
    // SAFETY: the array matches the kernel's ABI; the buffers outlive the call.
    unsafe { (<copy_scaled as Kernel>::SIM_ENTRY)(params.as_ptr()) };
    assert_eq!(y, [3, 6, 9]);
    assert_eq!(__gk_body_copy_scaled(), 7);
}
