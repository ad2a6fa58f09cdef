//! Shared by the runtime's integration tests: hand-written PTX kernels (`data/test_kernels.ptx`,
//! also compiled to `data/test_kernels.sm_90.cubin` and `data/test_kernels.fatbin`) and the
//! marker types a `#[kernel]` would generate for them.
#![allow(dead_code, non_camel_case_types)]

use core::ffi::c_void;

use gpukernel_device::ParamList;
use gpukernel_device::{__private, DisjointSlice, Kernel, SafeKernel, SimEntry, thread};
use gpukernel_runtime::{Context, Device, Module, TypedKernel};

pub const PTX: &str = include_str!("../data/test_kernels.ptx");
pub const CUBIN: &[u8] = include_bytes!("../data/test_kernels.sm_90.cubin");
pub const FATBIN: &[u8] = include_bytes!("../data/test_kernels.fatbin");
pub const KERNELS: [&str; 4] = ["empty", "fails_foreign", "saxpy", "write_null"];

/// The typed kernel `K` of a module of the hand-written `data/test_kernels.*`: like a CUDA C
/// `__global__`, those entries carry no signature fingerprint, so they are looked up the
/// unverified way.
pub fn kernel<K: Kernel>(m: &Module, k: K) -> gpukernel_runtime::Result<TypedKernel<K>>
where
    K::Params: ParamList,
{
    // SAFETY: each marker type below states its entry's parameter types exactly, as the PTX
    // declares and uses them.
    unsafe { m.kernel_unverified(k) }
}

/// The primary context of CUDA device 0; fails (never skips) without a GPU.
pub fn gpu() -> Context {
    let device = Device::get(0).expect("these tests need a CUDA device (feature `gpu`)");
    device
        .primary_context()
        .expect("primary context of device 0")
}

/// Reads ABI parameter `i` as a `T`.
///
/// # Safety
/// Parameter `i` must exist and hold a `T`.
unsafe fn arg<T: Copy>(p: *const *mut c_void, i: usize) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { (*p.add(i)).cast::<T>().read() }
}

#[derive(Clone, Copy)]
pub struct saxpy;
// SAFETY: the PTX entry `saxpy` takes (f32, u64, u64, u64, u64), the lowering of these Params;
// the simulator entry reads the same array.
unsafe impl Kernel for saxpy {
    const NAME: &'static str = "saxpy";
    type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
    const SIM_ENTRY: SimEntry = saxpy_entry;
    const SIGNATURE: u64 = 0; // hand-written PTX: no fingerprint
}
// SAFETY: a safe kernel: sound for any arguments of its parameter types.
unsafe impl SafeKernel for saxpy {}
unsafe fn saxpy_entry(p: *const *mut c_void) {
    // SAFETY: the typed launch passes (f32, ptr, len, ptr, len) for live buffers.
    unsafe {
        let a: f32 = arg(p, 0);
        let x =
            __private::slice_from_raw(arg::<u64>(p, 1) as *const f32, arg::<u64>(p, 2) as usize);
        let mut y = __private::disjoint_from_raw::<f32>(
            arg::<u64>(p, 3) as *mut f32,
            arg::<u64>(p, 4) as usize,
        );
        let i = thread::index();
        if let Some(yi) = y.get_mut(&i) {
            *yi += a * x[i.get()];
        }
    }
}

#[derive(Clone, Copy)]
pub struct empty;
// SAFETY: the PTX entry `empty` takes no parameters.
unsafe impl Kernel for empty {
    const NAME: &'static str = "empty";
    type Params = ();
    const SIM_ENTRY: SimEntry = empty_entry;
    const SIGNATURE: u64 = 0; // hand-written PTX: no fingerprint
}
// SAFETY: no parameters, nothing done.
unsafe impl SafeKernel for empty {}
unsafe fn empty_entry(_: *const *mut c_void) {}

#[derive(Clone, Copy)]
pub struct write_null;
// SAFETY: the PTX entry `write_null` takes no parameters.
unsafe impl Kernel for write_null {
    const NAME: &'static str = "write_null";
    type Params = ();
    const SIM_ENTRY: SimEntry = write_null_entry;
    const SIGNATURE: u64 = 0; // hand-written PTX: no fingerprint
}
// SAFETY: no parameters; its deliberate fault stays on the device (an error, on the simulator a panic caught as one).
unsafe impl SafeKernel for write_null {}
unsafe fn write_null_entry(_: *const *mut c_void) {
    panic!("write_null: store to address 0");
}

#[derive(Clone, Copy)]
pub struct fails_foreign;
// SAFETY: the PTX entry `fails_foreign` takes one u32.
unsafe impl Kernel for fails_foreign {
    const NAME: &'static str = "fails_foreign";
    type Params = (i32,);
    const SIM_ENTRY: SimEntry = fails_foreign_entry;
    const SIGNATURE: u64 = 0; // hand-written PTX: no fingerprint
}
// SAFETY: reads its scalar only.
unsafe impl SafeKernel for fails_foreign {}
unsafe fn fails_foreign_entry(p: *const *mut c_void) {
    // SAFETY: one i32 parameter.
    let status: i32 = unsafe { arg(p, 0) };
    if thread::thread_idx().x == 3 {
        gpukernel_device::ffi::report_foreign_failure("mul_f32_f32", status);
    }
}
