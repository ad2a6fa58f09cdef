//! The function that holds a kernel's body is no name in the user's scope: a crate-level
//! function named like it (`__gk_body`, which `#[kernel]` once generated inside the entry) is
//! what the body calls, on the host as on the device.
#![deny(warnings)]

use core::ffi::c_void;

use gpukernel_device::Kernel;
use gpukernel_device::prelude::*;

/// Writes 7 at every index (serially): what `calls_it` must reach.
pub fn __gk_body(out: DisjointSlice<u32>) {
    for i in 0..out.len() {
        // SAFETY: run on one thread.
        unsafe { out.write(i, 7) }
    }
}

/// Calls the crate's `__gk_body`, whose parameters are the kernel's own.
#[kernel]
pub fn calls_it(out: DisjointSlice<u32>) {
    __gk_body(out);
}

/// A struct named like the marker's associated function, and one like the simulator's entry.
#[allow(non_camel_case_types)]
struct __gk_sim_entry;

/// Uses both.
#[kernel]
pub fn names_types(mut out: DisjointSlice<u32>) {
    let _ = __gk_sim_entry;
    if let Some(o) = out.get_mut(gpukernel_device::thread::index()) {
        *o = 1;
    }
}

fn param<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

fn main() {
    let mut y = [0u32; 3];
    let (y_ptr, y_len) = (y.as_mut_ptr(), y.len());
    let params = [param(&y_ptr), param(&y_len)];
    // SAFETY: the array matches the kernel's ABI; the buffer outlives the call. The body never
    // reads the thread index, so no simulated thread is needed.
    unsafe { (<calls_it as Kernel>::SIM_ENTRY)(params.as_ptr()) };
    assert_eq!(y, [7, 7, 7], "the body called another `__gk_body` than the crate's");
    let _ = names_types;
}
