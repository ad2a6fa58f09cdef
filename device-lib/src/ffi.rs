//! How a failed foreign call is reported.
//!
//! `declare_device!` wrappers check the status a foreign function returns (the ABI is
//! `extern "C" __device__ int f(T* ret, ...)`, 0 meaning success). A non-zero status is never
//! ignored: the first failure of a launch is recorded in `__gpukernel_ffi_error`, a
//! global of the module, and the wrapper returns the zero-initialised return slot so the kernel
//! can finish. The runtime reads the record when the stream or context is synchronized and
//! returns `Error::ForeignCallFailed { function, status, .. }`, then clears it.

/// The record of the first failed foreign call since the runtime last cleared it.
///
/// Hidden: the layout the runtime reads back (it reports `Error::ForeignCallFailed`, never the
/// record itself); not a user API, and it may change in any release.
///
/// Layout shared with the runtime (which reads it with `cuModuleGetGlobal("__gpukernel_ffi_error")`
/// on the GPU and through [`host_record`] in the simulator): 32 bytes, `#[repr(C)]`.
#[doc(hidden)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiErrorRecord {
    /// 0 while no failure has been recorded, 1 once one has (claimed with compare-and-swap).
    pub claimed: u32,
    /// The status the foreign function returned.
    pub status: i32,
    /// Address of the foreign symbol's name (UTF-8, not NUL-terminated) in the module's
    /// global memory (on the GPU) or in the host binary (in the simulator).
    pub name_ptr: u64,
    /// Length of that name in bytes.
    pub name_len: u64,
    /// The linear index of the first failing thread in its launch.
    pub thread: u64,
}

/// The name of the module global that holds the [`FfiErrorRecord`].
pub const FFI_ERROR_SYMBOL: &str = "__gpukernel_ffi_error";

#[cfg(target_arch = "nvptx64")]
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
/// The module-global failure record (device build). Written only through atomics here.
pub static mut __gpukernel_ffi_error: FfiErrorRecord = FfiErrorRecord {
    claimed: 0,
    status: 0,
    name_ptr: 0,
    name_len: 0,
    thread: 0,
};

/// Records a failed foreign call (first one wins). Called by `declare_device!` wrappers.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{ffi, thread};
/// /// A hand-written check of a status, reported as `declare_device!` wrappers report one:
/// /// the runtime returns `Error::ForeignCallFailed { function: "decode", status, .. }`.
/// #[kernel]
/// pub fn decode(codes: &[i32], mut out: DisjointSlice<i32>) {
///     let i = thread::index();
///     let status = if codes[i.get()] < 0 { 22 } else { 0 };
///     if status != 0 { ffi::report_foreign_failure("decode", status); }
///     out.set(&i, codes[i.get()].max(0));
/// }
/// ```
#[inline(never)]
#[cold]
pub fn report_foreign_failure(name: &'static str, status: i32) {
    #[cfg(target_arch = "nvptx64")]
    {
        use core::sync::atomic::{AtomicU32, Ordering};
        let rec = &raw mut __gpukernel_ffi_error;
        // SAFETY: `claimed` is a u32 in a static that lives for the whole program; it is only
        // accessed atomically, and the other fields only by the thread that won the claim.
        unsafe {
            let claimed = AtomicU32::from_ptr(&raw mut (*rec).claimed);
            if claimed
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                (*rec).status = status;
                (*rec).name_ptr = name.as_ptr() as u64;
                (*rec).name_len = name.len() as u64;
                (*rec).thread = crate::thread::index().get() as u64;
                core::sync::atomic::fence(Ordering::SeqCst);
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::record_foreign_failure(name, status);
}
