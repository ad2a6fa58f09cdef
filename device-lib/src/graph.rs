//! CUDA graph conditional nodes, from the kernel's side: a kernel node of a graph sets the
//! condition that a conditional node (`if`, `while`) of the same graph reads.
//!
//! The runtime creates a handle for a graph (`Graph::conditional_handle` in
//! gpukernel-runtime) and passes it to a kernel node as an argument of type
//! [`ConditionalHandle`]; the kernel sets the condition, and the conditional node that reads
//! it runs its body (once for `if`; again and again while the value is non-zero for `while`).
//!
//! ```
//! # use gpukernel_device::prelude::*;
//! use gpukernel_device::graph::ConditionalHandle;
//! use gpukernel_device::{sync, thread};
//!
//! #[kernel]
//! pub fn halve_until(mut x: DisjointSlice<f32>, tol: f32, again: ConditionalHandle) {
//!     let mut above = false;
//!     if let Some(xi) = x.get_mut(thread::index()) {
//!         *xi *= 0.5;
//!         above = *xi > tol;
//!     }
//!     // One block: its threads agree on the value, and the first thread sets it.
//!     again.set_by_first_thread(sync::sync_threads_or(above));
//! }
//! ```
//!
//! On the GPU, setting is `cudaGraphSetConditional`, a function of the CUDA device runtime
//! that the driver provides at module load (the PTX declares it `.extern .func`; no library
//! is linked for it). On the simulator the handle is the address of the condition's cell,
//! which the simulated graph owns.
//!
//! A handle cannot be made from an integer in safe code (it is not [`DeviceCopy`](crate::DeviceCopy),
//! so no buffer holds one): every handle a kernel sees was passed by the runtime for a node of
//! the handle's graph.

/// A conditional node's handle, as a kernel parameter. Only the runtime makes one (an
/// argument of a graph's kernel node).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::graph::ConditionalHandle;
/// use gpukernel_device::{sync, thread};
///
/// #[kernel]
/// pub fn halve_until(mut x: DisjointSlice<f32>, tol: f32, again: ConditionalHandle) {
///     let mut above = false;
///     if let Some(xi) = x.get_mut(thread::index()) {
///         *xi *= 0.5;
///         above = *xi > tol;
///     }
///     again.set_by_first_thread(sync::sync_threads_or(above)); // one block votes
/// }
/// ```
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionalHandle(u64);

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    /// The CUDA device runtime's `cudaGraphSetConditional(cudaGraphConditionalHandle,
    /// unsigned int)`, provided by the driver when the module is loaded.
    fn cudaGraphSetConditional(handle: u64, value: u32);
}

impl ConditionalHandle {
    /// Sets the condition to `value`: every thread of the launch may call it, and only the
    /// grid's first thread (thread (0,0,0) of block (0,0,0)) sets it, so that no two calls
    /// race. The value the conditional node reads is the last one set before it runs (or the
    /// handle's default, assigned at each launch of the graph).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::graph::ConditionalHandle;
    /// use gpukernel_device::{sync, thread};
    ///
    /// #[kernel]
    /// pub fn halve_until(mut x: DisjointSlice<f32>, tol: f32, again: ConditionalHandle) {
    ///     let mut above = false;
    ///     if let Some(xi) = x.get_mut(thread::index()) {
    ///         *xi *= 0.5;
    ///         above = *xi > tol;
    ///     }
    ///     again.set_by_first_thread(sync::sync_threads_or(above)); // one block votes
    /// }
    /// ```
    #[inline]
    pub fn set_by_first_thread(self, value: bool) {
        let (t, b) = (crate::thread::thread_idx(), crate::thread::block_idx());
        if t.x == 0 && t.y == 0 && t.z == 0 && b.x == 0 && b.y == 0 && b.z == 0 {
            // SAFETY: only this one thread of the launch calls it; the runtime orders the
            // graph's nodes that take one handle, so no other kernel sets it concurrently.
            unsafe { self.set(value) }
        }
    }

    /// Sets the condition to `value` from this thread.
    ///
    /// # Safety
    /// No other thread may set the same handle concurrently (CUDA leaves racing calls of
    /// `cudaGraphSetConditional` undefined): call it from one thread of the launch.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::graph::ConditionalHandle;
    /// use gpukernel_device::thread;
    ///
    /// /// Block 0's last thread decides, from the last element.
    /// #[kernel]
    /// pub fn stop_at(x: &[f32], limit: f32, again: ConditionalHandle) {
    ///     let last = thread::block_dim().x - 1;
    ///     if thread::block_idx().x == 0 && thread::thread_idx().x == last {
    ///         let v = x.last().copied().unwrap_or(0.0);
    ///         // SAFETY: only this one thread of the launch sets `again`.
    ///         unsafe { again.set(v < limit) };
    ///     }
    /// }
    /// ```
    #[inline]
    pub unsafe fn set(self, value: bool) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a handle of a graph of this context (the runtime passes only those); the
        // caller rules out racing calls.
        unsafe {
            cudaGraphSetConditional(self.0, value as u32)
        };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let cell = core::ptr::with_exposed_provenance::<core::sync::atomic::AtomicU32>(
                self.0 as usize,
            );
            // SAFETY: on the host, the runtime's simulator makes handles from the exposed
            // address of a cell its graph owns, live while any launch of the graph runs.
            unsafe { &*cell }.store(value as u32, core::sync::atomic::Ordering::Release);
        }
    }

    /// The raw handle value (`cudaGraphConditionalHandle`; an address on the simulator).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::graph::ConditionalHandle;
    ///
    /// #[kernel]
    /// pub fn record_handle(again: ConditionalHandle, mut out: DisjointSlice<u64>) {
    ///     if let Some(o) = out.get_mut(gpukernel_device::thread::index()) {
    ///         *o = again.raw(); // e.g. to compare with the host's `ConditionalHandle`
    ///     }
    /// }
    /// ```
    #[inline]
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// Makes a handle from its raw value (the runtime's typed launch).
///
/// # Safety
/// `raw` is a conditional handle of the graph whose node the kernel runs in (on the
/// simulator: the exposed address of its live `AtomicU32` cell).
#[doc(hidden)]
#[inline(always)]
pub unsafe fn conditional_handle_from_raw(raw: u64) -> ConditionalHandle {
    ConditionalHandle(raw)
}
