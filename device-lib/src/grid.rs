//! Grid-wide synchronisation and programmatic dependent launch.
//!
//! * [`sync`]: a barrier across every thread of the grid (CUDA's `grid.sync()` of cooperative
//!   groups), for kernels launched cooperatively (`LaunchConfig::cooperative` in
//!   gpukernel-runtime, which refuses a grid larger than the blocks that can be resident at
//!   once). It counts arrivals in a [`GridBarrier`] word in global memory that the runtime
//!   provides (`Context::grid_barrier`).
//! * [`wait_dependencies`] / [`launch_dependents`]: `griddepcontrol.wait` and
//!   `griddepcontrol.launch_dependents` (sm_90). A kernel launched with programmatic stream
//!   serialization (`LaunchConfig::programmatic_dependent`) may start before the kernel it
//!   follows on the stream has finished: it does its independent prologue, then
//!   [`wait_dependencies`] waits for that kernel to complete and its memory to be visible. The
//!   kernel before it calls [`launch_dependents`] once its dependents may start. When that
//!   kernel was itself launched with the attribute, the kernels before it may still run too
//!   (it may exit or call [`launch_dependents`] before it waits): [`wait_dependencies`] waits
//!   for every one of them, back to the last kernel launched without it. Without the
//!   attribute both are no-ops.
//!
//! In the simulator launches run one after another (so [`wait_dependencies`] and
//! [`launch_dependents`] have nothing to do), and a cooperative launch runs every block at
//! once, so [`sync`] is a real barrier; in a launch that is not cooperative it is an error.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::grid::{self, GridBarrier};
//! use gpukernel_device::thread;
//!
//! /// Writes each thread's index, waits for the whole grid, then reads its mirror's value.
//! ///
//! /// # Safety
//! /// Launch cooperatively with `bar` from the runtime (one launch at a time per barrier);
//! /// `scratch` has one element per thread and nothing else uses it during the launch.
//! #[kernel]
//! pub unsafe fn mirror(scratch: *mut u32, bar: GridBarrier, mut out: DisjointSlice<u32>) {
//!     let i = thread::index();
//!     let n = out.len();
//!     unsafe { scratch.add(i.get()).write_volatile(i.get() as u32) };
//!     unsafe { grid::sync(bar) }; // every thread's write is visible after this
//!     let v = unsafe { scratch.add(n - 1 - i.get()).read_volatile() };
//!     out.set(i, v);
//! }
//! ```

/// The global-memory word a grid barrier counts in, as a kernel parameter (its device address).
/// The runtime hands out zeroed ones (`Context::grid_barrier`); one barrier serves one launch
/// at a time, any number of [`sync`] calls in it.
///
/// ```
/// use gpukernel_device::grid::GridBarrier;
/// assert_eq!(GridBarrier::from_raw(256).raw(), 256);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridBarrier(u64);

// SAFETY: one `u64`; `sync`, which uses it, is `unsafe`.
unsafe impl crate::DeviceCopy for GridBarrier {}

impl GridBarrier {
    /// The barrier whose 4-byte-aligned `u32` word (zero before the launch's first [`sync`]) is
    /// at device address `addr`.
    ///
    /// ```
    /// use gpukernel_device::grid::GridBarrier;
    /// let b = GridBarrier::from_raw(0x100);
    /// assert_eq!(b.raw(), 0x100);
    /// ```
    #[inline(always)]
    pub const fn from_raw(addr: u64) -> GridBarrier {
        GridBarrier(addr)
    }

    /// The word's device address.
    ///
    /// ```
    /// use gpukernel_device::grid::GridBarrier;
    /// assert_eq!(GridBarrier::from_raw(8).raw(), 8);
    /// ```
    #[inline(always)]
    pub const fn raw(self) -> u64 {
        self.0
    }
}

/// A barrier across the whole grid: returns once every thread of every block called it, with
/// the global-memory writes of every thread before it visible to every thread after it (CUDA's
/// `cooperative_groups::this_grid().sync()`).
///
/// The algorithm is cooperative groups': after a block barrier, one thread per block adds to
/// the word (the first block `2³¹ − (blocks − 1)`, the others 1, with release semantics) and
/// spins (acquire) until the word's top bit flips, then a block barrier releases the block.
///
/// # Safety
/// The launch is cooperative (every block resident at once; otherwise the grid can wait
/// forever); every thread of the grid calls `sync` the same number of times; `bar` is a zeroed
/// barrier from the runtime that no other running launch uses.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::grid::{self, GridBarrier};
/// use gpukernel_device::{atomic, thread};
/// /// Counts the grid's threads, then every thread reads the total.
/// ///
/// /// # Safety
/// /// Cooperative launch; `count` starts at 0; `bar` from the runtime.
/// #[kernel]
/// pub unsafe fn count_all(count: *mut u32, bar: GridBarrier, mut out: DisjointSlice<u32>) {
///     unsafe { atomic::add(count, 1) };
///     unsafe { grid::sync(bar) };
///     out.set(thread::index(), unsafe { count.read_volatile() });
/// }
/// ```
#[inline(always)]
pub unsafe fn sync(bar: GridBarrier) {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::sync::sync_threads();
        let t = crate::thread::thread_idx();
        if t.x == 0 && t.y == 0 && t.z == 0 {
            let b = crate::thread::block_idx();
            let g = crate::thread::grid_dim();
            let blocks = g.x.wrapping_mul(g.y).wrapping_mul(g.z);
            let first = b.x == 0 && b.y == 0 && b.z == 0;
            let inc = if first {
                0x8000_0000u32.wrapping_sub(blocks.wrapping_sub(1))
            } else {
                1
            };
            let old: u32;
            // SAFETY: the caller's contract: `bar` is a live, 4-byte-aligned word.
            unsafe {
                core::arch::asm!("atom.add.release.gpu.global.u32 {0}, [{1}], {2};",
                    out(reg32) old, in(reg64) bar.0, in(reg32) inc, options(nostack));
            }
            loop {
                let cur: u32;
                // SAFETY: as above.
                unsafe {
                    core::arch::asm!("ld.acquire.gpu.global.u32 {0}, [{1}];",
                        out(reg32) cur, in(reg64) bar.0, options(nostack));
                }
                if (old ^ cur) & 0x8000_0000 != 0 {
                    break;
                }
                // SAFETY: a sleep hint.
                unsafe { core::arch::asm!("nanosleep.u32 32;", options(nostack)) };
            }
        }
        crate::sync::sync_threads();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = bar;
        crate::host::with_context("grid::sync", |cx| cx.hooks().grid_sync());
    }
}

/// `griddepcontrol.wait`: waits until the kernels this launch depends on programmatically
/// (the previous kernel on the stream, when this one was launched with programmatic stream
/// serialization) have completed and their memory writes are visible. A no-op otherwise.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{grid, thread};
/// /// Scales what the previous kernel on the stream wrote.
/// #[kernel]
/// pub fn consume(x: &[f32], mut out: DisjointSlice<f32>) {
///     let i = thread::index(); // the prologue may overlap the previous kernel
///     grid::wait_dependencies();
///     if let Some(o) = out.get_mut(&i) {
///         *o = 2.0 * x[i.get()];
///     }
/// }
/// ```
#[inline(always)]
pub fn wait_dependencies() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: waits for earlier grids; no memory is named.
    unsafe {
        core::arch::asm!("griddepcontrol.wait;", options(nostack));
    }
}

/// `griddepcontrol.launch_dependents`: lets the kernel launched after this one with
/// programmatic stream serialization start (once every block of this grid called it or
/// exited). Its [`wait_dependencies`] still waits for this grid to complete. A no-op
/// otherwise.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{grid, thread};
/// #[kernel]
/// pub fn produce(mut out: DisjointSlice<f32>) {
///     grid::launch_dependents(); // the next kernel's prologue may start now
///     let i = thread::index();
///     out.set(i, 1.0);
/// }
/// ```
#[inline(always)]
pub fn launch_dependents() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a scheduling hint.
    unsafe {
        core::arch::asm!("griddepcontrol.launch_dependents;", options(nostack));
    }
}
