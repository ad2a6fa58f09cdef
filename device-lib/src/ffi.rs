//! How a failed foreign call is reported.
//!
//! `declare_device!` wrappers check the status a foreign function returns (the ABI is
//! `extern "C" __device__ int f(T* ret, ...)`, 0 meaning success). A non-zero status is never
//! ignored: every failure is counted in `__gpukernel_ffi_error`, a global of the module, whose
//! first failure since the runtime last read it is recorded there in full (with the name of
//! the kernel that made it), and the context's failure word (page-locked host memory whose
//! device address the runtime writes into the record when it loads the module) is set; the
//! wrapper returns the zero-initialised return slot so the kernel can finish. Wherever
//! the host observes results it reads that word with one load and, only when it is set, the
//! records, returning `Error::ForeignCallFailed { function, status, kernel, .. }`.

/// The record of a module's failed foreign calls: how many there were (all of them, counted
/// by every failing thread) and the first one since the runtime last read it, in full.
///
/// Hidden: the layout the runtime reads back (it reports `Error::ForeignCallFailed`, never the
/// record itself); not a user API, and it may change in any release.
///
/// Layout shared with the runtime (which finds it with `cuModuleGetGlobal("__gpukernel_ffi_error")`
/// on the GPU; the simulator keeps a host slot per module instead): 64 bytes, `#[repr(C)]`.
///
/// The runtime never resets [`failures`](Self::failures): it remembers how many it has
/// reported and reads the difference. It re-arms the record by writing [`FREE`] to
/// [`claimed`](Self::claimed) alone (one aligned 4-byte store), after reading the count and
/// then the claim: a failure counted while the claim was [`FREE`] is one whose claim failed
/// because an earlier failure held the record (reported as a count without details), never
/// a claimant still writing (a claimant counts itself only after its claim).
#[doc(hidden)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiErrorRecord {
    /// [`FREE`] while no failure is recorded, [`WRITING`] while the thread that claimed it
    /// (compare-and-swap) writes the other fields, [`PUBLISHED`] once they are complete.
    pub claimed: u32,
    /// The status the foreign function returned.
    pub status: i32,
    /// How many foreign calls of the module's kernels failed since it was loaded (every
    /// failing thread adds one, the claimant before it publishes); never reset.
    pub failures: u64,
    /// Address of the foreign symbol's name (UTF-8, not NUL-terminated) in the module's
    /// global memory.
    pub name_ptr: u64,
    /// Length of that name in bytes.
    pub name_len: u64,
    /// The linear index of the first failing thread in its launch.
    pub thread: u64,
    /// Address of the name of the kernel the failing thread ran (its entry point, as
    /// `#[kernel]` stated it when the thread started), 0 when not known.
    pub kernel_ptr: u64,
    /// Length of that name in bytes.
    pub kernel_len: u64,
    /// Device address of the context's failure word (a `u32` in page-locked host memory
    /// mapped into the device's address space), written by the runtime at load; 0 before.
    pub sink: u64,
}

/// [`FfiErrorRecord::claimed`]: no failure recorded.
#[doc(hidden)]
pub const FREE: u32 = 0;
/// [`FfiErrorRecord::claimed`]: a thread claimed the record and is writing it.
#[doc(hidden)]
pub const WRITING: u32 = 1;
/// [`FfiErrorRecord::claimed`]: the record is complete; the host may read and clear it.
#[doc(hidden)]
pub const PUBLISHED: u32 = 2;

/// The byte offset of [`FfiErrorRecord::sink`], where the runtime writes the failure word's
/// device address.
#[doc(hidden)]
pub const SINK_OFFSET: usize = core::mem::offset_of!(FfiErrorRecord, sink);

/// The name of the module global that holds the [`FfiErrorRecord`].
pub const FFI_ERROR_SYMBOL: &str = "__gpukernel_ffi_error";

#[cfg(target_arch = "nvptx64")]
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
/// The module-global failure record (device build). Written only through atomics here.
pub static mut __gpukernel_ffi_error: FfiErrorRecord = FfiErrorRecord {
    claimed: FREE,
    status: 0,
    failures: 0,
    name_ptr: 0,
    name_len: 0,
    thread: 0,
    kernel_ptr: 0,
    kernel_len: 0,
    sink: 0,
};

/// The running kernel's name (address, length), one per block in shared memory, for a failing
/// foreign call to name its kernel. Written only by the entries that can reach a foreign-call
/// failure (see [`enter_kernel`]); read only by [`report_foreign_failure`].
#[cfg(target_arch = "nvptx64")]
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
#[unsafe(link_section = ".gpukernel.shared")]
static mut __gpukernel_current_kernel: core::mem::MaybeUninit<[u64; 2]> =
    core::mem::MaybeUninit::uninit();

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    /// Stores `name` in [`__gpukernel_current_kernel`] (`slot`) for the calling thread's
    /// block. Never defined by Rust: nvptx-builder's kernel-name pass defines it (two
    /// block-scope relaxed stores to the shared slot) where the calling entry can reach
    /// [`report_foreign_failure`] once optimized, and deletes the call from every other entry,
    /// so a kernel that cannot fail a foreign call pays nothing. `slot` is passed so that the
    /// optimizer, which sees the call as opaque, keeps the slot as written.
    fn __gpukernel_enter_kernel(slot: *mut u64, name: *const u8, len: usize);
}

/// Notes the kernel the calling thread runs, for [`report_foreign_failure`]. Called by the
/// entry point `#[kernel]` generates, before the body; it costs nothing in a kernel that
/// cannot reach a foreign-call failure (see `__gpukernel_enter_kernel`). A no-op on the host
/// (the simulator knows the launch).
#[doc(hidden)]
#[inline(always)]
pub fn enter_kernel(name: &'static str) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the definition nvptx-builder gives it stores the two words of the block's own
    // slot (every thread of the block the same values: the block runs one kernel).
    unsafe {
        __gpukernel_enter_kernel(
            (&raw mut __gpukernel_current_kernel).cast::<u64>(),
            name.as_ptr(),
            name.len(),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = name;
}

/// Records a failed foreign call: every one is counted, the first since the runtime last read
/// the record is kept in full. Called by `declare_device!` wrappers.
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
        use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
        let rec = &raw mut __gpukernel_ffi_error;
        // SAFETY: `claimed` and `failures` are in a static that lives for the whole program
        // and are only accessed atomically; the other fields only by the thread that won the
        // claim (until it publishes; the host reads them after that). `sink`, when set, is the
        // device address of the context's mapped failure word, live while the module is.
        unsafe {
            let claimed = AtomicU32::from_ptr(&raw mut (*rec).claimed);
            let won = claimed
                .compare_exchange(FREE, WRITING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok();
            if won {
                let current = (&raw mut __gpukernel_current_kernel).cast::<u64>();
                (*rec).status = status;
                (*rec).name_ptr = name.as_ptr() as u64;
                (*rec).name_len = name.len() as u64;
                (*rec).thread = crate::thread::index().get() as u64;
                (*rec).kernel_ptr = AtomicU64::from_ptr(current).load(Ordering::Relaxed);
                (*rec).kernel_len = AtomicU64::from_ptr(current.add(1)).load(Ordering::Relaxed);
            }
            // Every failure counts, the claimant's after its claim (see `FfiErrorRecord`).
            AtomicU64::from_ptr(&raw mut (*rec).failures).fetch_add(1, Ordering::Relaxed);
            // System scope: the host reads the record after it sees the word.
            fence(Ordering::SeqCst);
            if won {
                claimed.store(PUBLISHED, Ordering::Relaxed);
            }
            // Every failing thread sets the word: a failure counted after a check read the
            // count must be seen by a later check.
            let sink = AtomicU64::from_ptr(&raw mut (*rec).sink).load(Ordering::Relaxed);
            if sink != 0 {
                fence(Ordering::SeqCst);
                AtomicU32::from_ptr(sink as *mut u32).store(1, Ordering::Relaxed);
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::record_foreign_failure(name, status);
}
