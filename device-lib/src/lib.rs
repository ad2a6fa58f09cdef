//! The device library of gpukernel: what a `#[kernel]` body calls.
//!
//! The same source compiles twice:
//! * for `nvptx64-nvidia-cuda` (by `nvptx-builder`), where every function lowers to a PTX
//!   special register read or instruction;
//! * for the host, where the same functions read the simulated thread's context, which the
//!   runtime's simulator installs.
//!
//! On the host this crate also carries what the runtime needs to launch a kernel with typed
//! arguments: the [`Kernel`] trait that `#[kernel]` implements for a marker type named after
//! the kernel, and [`DeviceCopy`] for values that may cross to the device by bit copy.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
// `link_llvm_intrinsics` / `core_intrinsics` reach NVVM intrinsics (which LLVM knows are
// convergent, unlike inline asm) and the dynamic-shared-memory intrinsic; device builds only.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub use gpukernel_macros::{DeviceCopy, declare_device, gpu_print, gpu_println, kernel};

pub mod atomic;
pub mod block;
pub mod cluster;
mod copy;
pub mod ffi;
pub mod graph;
pub mod grid;
pub mod half;
// The simulator's side of the host backend: the runtime's simulator installs each simulated
// thread's context and its hooks here, and foreign `.cu` code compiled for the host calls its
// `extern "C"` entry points through the compat header. Not a user API (kernels reach it only
// through the intrinsics of the other modules): hidden, and it may change in any release.
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;
#[cfg(not(target_arch = "nvptx64"))]
mod host_printf;
#[cfg(not(target_arch = "nvptx64"))]
mod kernel;
pub mod math;
pub mod mbarrier;
pub mod mma;
pub mod ops;
pub mod print;
pub mod shared;
pub mod signature;
pub mod slice;
pub mod sync;
pub mod thread;
pub mod time;
pub mod tma;
pub mod vector;
pub mod warp;
pub mod wgmma;

pub use copy::{AnyBitPattern, DeviceCopy};
#[cfg(not(target_arch = "nvptx64"))]
pub use kernel::{
    IntoKernel, Kernel, LaunchDims, ParamAbi, ParamList, SIGNATURE_SYMBOL_PREFIX, SafeKernel,
    SimEntry, into_kernel, signature_symbol,
};
pub use slice::{
    DisjointSlice, DisjointSlice2D, DisjointSlice3D, ThreadIndex, ThreadIndex2D, ThreadIndex3D,
};

/// Repeats `$body` with `$i` bound to each literal in turn (as `usize`): a full unroll that
/// LLVM's thresholds cannot decline. Fragment and accumulator arrays indexed by `$i` then stay
/// in registers; a rolled loop over them (or one LLVM declines to unroll) puts them in local
/// memory. nvcc's `#pragma unroll` for Rust kernels.
///
/// ```
/// use gpukernel_device::unroll;
/// let acc = [1.0f32, 2.0, 3.0, 4.0];
/// let mut sum = 0.0;
/// unroll!(i in [0, 1, 2, 3] {
///     sum += acc[i];
/// });
/// assert_eq!(sum, 10.0);
/// ```
#[macro_export]
macro_rules! unroll {
    ($i:ident in [$($n:literal),* $(,)?] $body:block) => { $( { let $i: usize = $n; $body } )* };
}

/// Everything a kernel file usually needs: `use gpukernel_device::prelude::*;`.
pub mod prelude {
    /// Method syntax for the math functions (`x.exp()`), in scope without its name.
    pub use crate::math::Float as _;
    pub use crate::{
        DeviceCopy, DisjointSlice, DisjointSlice2D, DisjointSlice3D, ThreadIndex, ThreadIndex2D,
        ThreadIndex3D, declare_device, kernel,
    };
}

/// Stops the kernel because index `i` is outside a slice of `len` elements: `trap` on the
/// GPU (the launch fails with an error at the next synchronization), a panic in the simulator
/// (which reports it as an error naming the kernel and the thread).
#[doc(hidden)]
#[cold]
#[inline(never)]
#[track_caller]
pub fn __trap_out_of_bounds(i: usize, len: usize) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (i, len);
        // SAFETY: `trap` has no preconditions; it aborts the kernel.
        unsafe { core::arch::nvptx::trap() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    panic!("index out of bounds: the len is {len} but the index is {i}")
}

/// Device builds abort the kernel on panic (the launch then fails at synchronization); host
/// builds use std's handler, which the simulator catches.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// Support code for what the macros expand to. Not a public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::DeviceCopy;
    pub use crate::ffi::{FfiErrorRecord, enter_kernel, report_foreign_failure};
    pub use crate::graph::conditional_handle_from_raw;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::kernel::{Kernel, SafeKernel, SimEntry};
    pub use crate::print::{self as printf, PrintArg};
    pub use crate::signature::{ParamSignature, TypeLayout, kernel_fingerprint, signature_words};
    pub use crate::slice::{disjoint_2d_from_raw, disjoint_3d_from_raw, disjoint_from_raw};
    /// Generated code names `core` items (`core::primitive::usize`, `core::mem::MaybeUninit`,
    /// the derives) through this re-export, never as `::core`.
    pub use core;

    /// Rebuilds a shared slice from the two ABI parameters a `&[T]` kernel parameter lowers to.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` elements for `'a`, and nothing may write them
    /// during `'a` (the runtime's typed launch guarantees this for `&DeviceBuffer` arguments).
    #[inline(always)]
    pub unsafe fn slice_from_raw<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
        if len == 0 {
            return &[];
        }
        // SAFETY: forwarded from the caller's contract.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }

    /// Rebuilds a mutable slice from its two ABI parameters (only `unsafe fn` kernels take
    /// `&mut [T]`).
    ///
    /// # Safety
    /// As [`slice_from_raw`], for writes too; the kernel's author promises that no two threads
    /// access one element unless all accesses are reads.
    #[inline(always)]
    pub unsafe fn slice_from_raw_mut<'a, T>(ptr: *mut T, len: usize) -> &'a mut [T] {
        if len == 0 {
            return &mut [];
        }
        // SAFETY: forwarded from the caller's contract.
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }

    /// Compile-time check that a by-value kernel parameter or foreign-call type is `DeviceCopy`.
    pub const fn assert_device_copy<T: crate::DeviceCopy>() {}

    /// The bytes of `s` as an array: `declare_device!` exports its declaration record (the
    /// manifest the runtime's linker checks definitions against) as such a global.
    pub const fn record_bytes<const N: usize>(s: &str) -> [u8; N] {
        let bytes = s.as_bytes();
        let mut out = [0u8; N];
        let mut i = 0;
        while i < N && i < bytes.len() {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }
}
