//! Host-side behaviour of `#[kernel]` and `declare_device!`: the `Kernel` impl's name and
//! parameter types, the simulator entry reading a hand-built parameter array (the same array
//! `cuLaunchKernel` takes), and foreign-call wrappers against Rust stand-ins for the CUDA C
//! functions.

use core::ffi::c_void;

use gpukernel_device::prelude::*;
use gpukernel_device::{Kernel, SimEntry};

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub a: f32,
    pub b: f32,
}

// SAFETY: `#[repr(C)]` struct of two `f32`s.
unsafe impl DeviceCopy for Pair {}

/// `y[i] = a * x[i] + y[i]` for every `i`, in one thread (no thread index needed).
#[kernel]
pub fn saxpy_serial(a: f32, x: &[f32], y: DisjointSlice<f32>) {
    for (i, xi) in x.iter().enumerate() {
        // SAFETY: these tests run the body on one thread.
        unsafe { y.write(i, a * xi + y.read(i)) }
    }
}

/// Multiplies every element by `k`.
///
/// # Safety
/// No other thread may access `data` during the launch.
#[kernel]
pub unsafe fn scale_in_place(k: u32, data: &mut [u32]) {
    for v in data.iter_mut() {
        *v *= k;
    }
}

/// Writes `p.a * p.b` and the number of elements of `x` through raw pointers.
///
/// # Safety
/// `out` and `count` must be valid for writes.
#[kernel]
pub unsafe fn pair_product(p: Pair, x: &[f32], out: *mut f32, count: *mut usize) {
    // SAFETY: the caller passes valid pointers.
    unsafe {
        *out = p.a * p.b;
        *count = x.len();
    }
}

/// Writes at `index` (out of bounds on purpose in one test).
#[kernel]
pub fn write_at(index: usize, y: DisjointSlice<u8>) {
    // SAFETY: one thread.
    unsafe { y.write(index, 1) }
}

#[kernel]
fn no_params() {}

/// Compile-time check that `K::Params` is exactly `P`.
fn assert_params<K: Kernel<Params = P>, P>() {}

/// Pointers to each ABI value, as the runtime passes them.
fn param<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

#[test]
fn names_are_the_function_names() {
    assert_eq!(<saxpy_serial as Kernel>::NAME, "saxpy_serial");
    assert_eq!(<scale_in_place as Kernel>::NAME, "scale_in_place");
    assert_eq!(<no_params as Kernel>::NAME, "no_params");
}

#[test]
fn params_are_the_parameter_types_with_static_lifetimes() {
    assert_params::<saxpy_serial, (f32, &'static [f32], DisjointSlice<'static, f32>)>();
    assert_params::<scale_in_place, (u32, &'static mut [u32])>();
    assert_params::<pair_product, (Pair, &'static [f32], *mut f32, *mut usize)>();
    assert_params::<no_params, ()>();
    // Safe kernels may be launched by the safe `Stream::launch` (unsafe ones may not:
    // `ui/fail/launch_unsafe_fn_kernel.rs`).
    fn assert_safe<K: gpukernel_device::SafeKernel>() {}
    assert_safe::<saxpy_serial>();
    assert_safe::<write_at>();
    assert_safe::<no_params>();
    // The marker is a plain value the runtime can copy around.
    let k: saxpy_serial = saxpy_serial();
    let _copy = k;
    assert_eq!(format!("{k:?}"), "saxpy_serial");
}

#[test]
fn sim_entry_reads_scalars_and_slices_in_abi_order() {
    let a = 2.0f32;
    let x = [1.0f32, 2.0, 3.0];
    let mut y = [10.0f32, 20.0, 30.0];
    let (x_ptr, x_len) = (x.as_ptr(), x.len());
    let (y_ptr, y_len) = (y.as_mut_ptr(), y.len());
    let params = [
        param(&a),
        param(&x_ptr),
        param(&x_len),
        param(&y_ptr),
        param(&y_len),
    ];
    let entry: SimEntry = saxpy_serial::SIM_ENTRY;
    // SAFETY: the array matches the kernel's ABI; the buffers outlive the call.
    unsafe { entry(params.as_ptr()) };
    assert_eq!(y, [12.0, 24.0, 36.0]);
}

#[test]
fn sim_entry_of_an_unsafe_kernel_with_a_mutable_slice() {
    let k = 3u32;
    let mut data = [1u32, 2, 3, 4];
    let (ptr, len) = (data.as_mut_ptr(), data.len());
    let params = [param(&k), param(&ptr), param(&len)];
    // SAFETY: as above.
    unsafe { (scale_in_place::SIM_ENTRY)(params.as_ptr()) };
    assert_eq!(data, [3, 6, 9, 12]);
}

#[test]
fn sim_entry_passes_structs_by_value_and_raw_pointers() {
    let p = Pair { a: 1.5, b: 4.0 };
    // An empty slice: the ABI never passes a null pointer (the typed launch passes an aligned
    // dangling address for memory at address 0).
    let x_ptr: *const f32 = core::ptr::dangling();
    let x_len = 0usize;
    let mut out = 0.0f32;
    let mut count = usize::MAX;
    let (out_ptr, count_ptr) = (&raw mut out, &raw mut count);
    let params = [
        param(&p),
        param(&x_ptr),
        param(&x_len),
        param(&out_ptr),
        param(&count_ptr),
    ];
    // SAFETY: as above.
    unsafe { (pair_product::SIM_ENTRY)(params.as_ptr()) };
    assert_eq!(out, 6.0);
    assert_eq!(count, 0);
}

#[test]
fn sim_entry_keeps_the_length_bound() {
    let mut y = [0u8; 4];
    let (ptr, len) = (y.as_mut_ptr(), y.len());
    let run = |index: usize| {
        let params = [param(&index), param(&ptr), param(&len)];
        // SAFETY: as above.
        std::panic::catch_unwind(|| unsafe { (write_at::SIM_ENTRY)(params.as_ptr()) })
    };
    assert!(run(3).is_ok());
    let panic = run(4).expect_err("index 4 of 4 elements must not be written");
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(
        message.contains("the len is 4 but the index is 4"),
        "{message}"
    );
    assert_eq!(y, [0, 0, 0, 1]);
}

#[test]
fn sim_entry_without_parameters() {
    // SAFETY: a kernel without parameters reads nothing from the array.
    unsafe { (no_params::SIM_ENTRY)(core::ptr::null()) };
}

declare_device! {
    unsafe extern {
        /// Multiplies.
        mul = "gk_test_mul_f32_f32", safe fn(f32, f32) -> f32;
        "gk_test_fails", safe fn(code: i32) -> i32;
        pub(crate) "gk_test_swap", safe fn(Pair) -> Pair;
        "gk_test_touch", fn(p: *mut u32);
    }
}

/// Rust stand-ins for the CUDA C side (on the host, the symbols come from the `.cu` file
/// compiled for the host): same ABI, `int f(T* ret, args...)`.
mod cuda_side {
    use super::Pair;

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_gk_test_mul_f32_f32")]
    extern "C" fn gk_test_mul_f32_f32(ret: *mut f32, a: f32, b: f32) -> i32 {
        // SAFETY: the wrapper passes its return slot.
        unsafe { ret.write(a * b) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_gk_test_fails")]
    extern "C" fn gk_test_fails(ret: *mut i32, code: i32) -> i32 {
        // SAFETY: as above. A failing callee may leave anything in the slot.
        unsafe { ret.write(99) };
        code
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_gk_test_swap")]
    extern "C" fn gk_test_swap(ret: *mut Pair, p: Pair) -> i32 {
        // SAFETY: as above.
        unsafe { ret.write(Pair { a: p.b, b: p.a }) };
        0
    }

    // The host name of a foreign definition (as the simulator's foreign library has it).
    #[unsafe(export_name = "__gpukernel_host_gk_test_touch")]
    extern "C" fn gk_test_touch(ret: *mut u8, p: *mut u32) -> i32 {
        // The `()` return slot is a valid byte the callee may ignore or write.
        // SAFETY: the wrapper passes its return slot; the test passes a valid `p`.
        unsafe {
            ret.write(0xff);
            *p += 1;
        }
        0
    }
}

/// Calls a foreign function from a kernel body, as the simulator runs it.
///
/// # Safety
/// `out` must be valid for writes.
#[kernel]
pub unsafe fn square_through_foreign(a: f32, out: *mut f32) {
    // SAFETY: the caller's promise.
    unsafe { out.write(mul(a, a)) };
}

#[test]
fn a_kernel_body_calls_a_foreign_function() {
    let a = 1.5f32;
    let mut out = 0.0f32;
    let out_ptr = &raw mut out;
    let params = [param(&a), param(&out_ptr)];
    // SAFETY: as above.
    unsafe { (square_through_foreign::SIM_ENTRY)(params.as_ptr()) };
    assert_eq!(out, 2.25);
}

#[test]
fn foreign_wrappers_call_the_symbol() {
    assert_eq!(mul(3.0, 4.0), 12.0);
    assert_eq!(
        gk_test_swap(Pair { a: 1.0, b: 2.0 }),
        Pair { a: 2.0, b: 1.0 }
    );
    let mut n = 41u32;
    // SAFETY: `n` is valid for reads and writes.
    unsafe { gk_test_touch(&raw mut n) };
    assert_eq!(n, 42);
}

#[test]
fn a_failed_foreign_call_returns_zero_and_is_recorded() {
    assert_eq!(
        gk_test_fails(0),
        99,
        "a successful call returns what the callee wrote"
    );
    assert_eq!(gk_test_fails(7), 0, "a failed call returns zero");
    let failure = gpukernel_device::host::take_foreign_failure().expect("the failure is recorded");
    assert_eq!((failure.name, failure.status), ("gk_test_fails", 7));
}
