//! Clocks: `clock()`, `clock64()` and `%globaltimer`.
//!
//! On the GPU the cycle counters are per multiprocessor and only meaningful as differences
//! within one thread. In the simulator they count nanoseconds of a monotonic host clock.

#[cfg(not(target_arch = "nvptx64"))]
fn host_nanos() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// `clock64()`: a 64-bit per-multiprocessor cycle counter (`%clock64`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, time};
///
/// /// Cycles one thread spends in a loop (CUDA's `clock64()` around the code).
/// #[kernel]
/// pub fn timed(x: &[f32], mut sums: DisjointSlice<f32>, mut cycles: DisjointSlice<u64>) {
///     let i = thread::index();
///     let start = time::clock64();
///     sums.set(&i, x.iter().sum());
///     cycles.set(&i, time::clock64() - start);
/// }
/// ```
#[inline(always)]
pub fn clock64() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let t: u64;
        // SAFETY: reads a special register; `volatile` (no `pure`) so reads are not merged.
        unsafe {
            core::arch::asm!("mov.u64 {0}, %clock64;", out(reg64) t, options(nomem, nostack))
        };
        t
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_nanos()
    }
}

/// `clock()`: the low 32 bits of the cycle counter (`%clock`); wraps.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, time};
///
/// #[kernel]
/// pub fn short_timing(mut cycles: DisjointSlice<u32>) {
///     let start = time::clock();
///     let end = time::clock();
///     cycles.set(thread::index(), end.wrapping_sub(start)); // wraps: subtract with wrapping
/// }
/// ```
#[inline(always)]
pub fn clock() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let t: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {0}, %clock;", out(reg32) t, options(nomem, nostack)) };
        t
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_nanos() as u32
    }
}

/// `%globaltimer`: a device-wide nanosecond timer (its resolution is about a microsecond on
/// current GPUs).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, time};
///
/// /// When each block started, in nanoseconds, comparable across multiprocessors.
/// #[kernel]
/// pub fn block_starts(out: DisjointSlice<u64>) {
///     let now = time::global_timer();
///     // SAFETY: thread 0 of each block writes its block's slot.
///     if thread::thread_idx_x() == 0 { unsafe { out.write(thread::block_idx_x() as usize, now) } }
/// }
/// ```
#[inline(always)]
pub fn global_timer() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let t: u64;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nomem, nostack))
        };
        t
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_nanos()
    }
}
