//! Kernels and foreign-function declarations in a crate that depends on `gpukernel-device`
//! under another name (`gkd`): `#[kernel(crate = "gkd")]` and `declare_device!(crate = "gkd";
//! ...)` must expand to code that names only `gkd::__private`, since `::gpukernel_device` does
//! not resolve here. The tests run the host expansions (simulator entries and wrappers).

use gkd::prelude::*;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub a: f32,
    pub b: f32,
}

// SAFETY: `#[repr(C)]` struct of two `f32`s.
unsafe impl DeviceCopy for Pair {}

/// `out[i] = p.a * x[i] + p.b` for every `i`, in one thread (the tests run it serially).
#[kernel(crate = "gkd")]
pub fn affine_serial(p: Pair, x: &[f32], out: DisjointSlice<f32>) {
    for (i, xi) in x.iter().enumerate() {
        // SAFETY: the tests run the body on one thread.
        unsafe { out.write(i, p.a * xi + p.b) }
    }
}

/// Adds `k` to every element.
///
/// # Safety
/// No other thread may access `data` during the launch.
#[kernel(crate = "gkd")]
pub unsafe fn add_in_place(k: u32, data: &mut [u32], last: *mut u32) {
    for v in data.iter_mut() {
        *v += k;
    }
    // SAFETY: the caller passes a valid pointer.
    unsafe { *last = data.last().copied().unwrap_or(0) };
}

declare_device! {
    crate = "gkd";
    unsafe extern {
        /// Adds two floats (a Rust stand-in below plays the CUDA C function).
        pub "renamed_add", safe fn(f32, f32) -> f32;
        pub "renamed_touch", fn(*mut u32);
    }
}

mod cuda_side {
    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_renamed_add")]
    extern "C" fn renamed_add(ret: *mut f32, a: f32, b: f32) -> i32 {
        // SAFETY: the wrapper passes its return slot.
        unsafe { ret.write(a + b) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_renamed_touch")]
    extern "C" fn renamed_touch(_ret: *mut u8, p: *mut u32) -> i32 {
        // SAFETY: the caller passes a valid pointer.
        unsafe { *p += 1 };
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ffi::c_void;
    use gkd::Kernel;

    fn param<T>(value: &T) -> *mut c_void {
        (value as *const T).cast_mut().cast()
    }

    #[test]
    fn kernels_run_through_their_simulator_entries() {
        assert_eq!(<affine_serial as Kernel>::NAME, "affine_serial");
        let p = Pair { a: 2.0, b: 1.0 };
        let x = [1.0f32, 2.0, 3.0];
        let mut out = [0.0f32; 3];
        let (x_ptr, x_len) = (x.as_ptr(), x.len());
        let (out_ptr, out_len) = (out.as_mut_ptr(), out.len());
        let params = [
            param(&p),
            param(&x_ptr),
            param(&x_len),
            param(&out_ptr),
            param(&out_len),
        ];
        // SAFETY: the array matches the kernel's ABI; the buffers outlive the call.
        unsafe { (<affine_serial as Kernel>::SIM_ENTRY)(params.as_ptr()) };
        assert_eq!(out, [3.0, 5.0, 7.0]);

        let k = 5u32;
        let mut data = [1u32, 2, 3];
        let mut last = 0u32;
        let (ptr, len, last_ptr) = (data.as_mut_ptr(), data.len(), &raw mut last);
        let params = [param(&k), param(&ptr), param(&len), param(&last_ptr)];
        // SAFETY: as above.
        unsafe { (<add_in_place as Kernel>::SIM_ENTRY)(params.as_ptr()) };
        assert_eq!((data, last), ([6, 7, 8], 8));
    }

    #[test]
    fn foreign_wrappers_call_the_symbols() {
        assert_eq!(renamed_add(1.5, 2.0), 3.5);
        let mut n = 41u32;
        // SAFETY: `n` is valid for reads and writes.
        unsafe { renamed_touch(&raw mut n) };
        assert_eq!(n, 42);
    }
}
