//! The general histogram of evenly spaced bins (CUB's `DeviceHistogram::HistogramEven`).
//!
//! `num_levels` levels from `lower` to `upper` bound `num_levels - 1` bins of equal width; a
//! sample `s` with `lower <= s < upper` counts in bin `(s - lower) × bins / (upper - lower)`,
//! computed as CUB does: for floats `(s - lower) × r` with `r = bins / (upper - lower)` in the
//! sample's precision, for integers exactly in 64-bit arithmetic. Other samples (and NaNs)
//! count nowhere.
//!
//! Each block counts into its own shared-memory bins (up to [`SHARED_BINS`]; more bins are
//! counted with global atomics directly), reading 16-byte vectors grid-stride, then adds its
//! non-zero bins to the output with one global atomic each.

use gpukernel_device::prelude::*;
use gpukernel_device::{atomic, sync, thread};

use crate::{BLOCK, Item, ld16};

/// Bins counted in shared memory per block; a histogram of more bins counts in global memory.
pub const SHARED_BINS: usize = 2048;

/// A sample type of [`histogram_even`]: `f32`, `f64`, `i32`, `u32`.
pub trait Sample: Item {
    /// The bin of `self` among `bins` even bins from `lower` (inclusive) to `upper`
    /// (exclusive), `None` outside.
    fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32>;
}

macro_rules! float_sample {
    ($($t:ty),*) => { $(
        impl Sample for $t {
            #[inline(always)]
            fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32> {
                if self >= lower && self < upper {
                    let r = bins as $t / (upper - lower);
                    Some((((self - lower) * r) as u32).min(bins - 1))
                } else {
                    None
                }
            }
        }
    )* };
}
float_sample!(f32, f64);

macro_rules! int_sample {
    ($($t:ty),*) => { $(
        impl Sample for $t {
            #[inline(always)]
            fn bin_even(self, lower: Self, upper: Self, bins: u32) -> Option<u32> {
                if self >= lower && self < upper {
                    // Both differences are below 2^32 and non-negative: the product with a
                    // 32-bit bin count fits 64 bits (CUB's integer arithmetic).
                    let d = (self as i64 - lower as i64) as u64;
                    let range = (upper as i64 - lower as i64) as u64;
                    Some(((d * bins as u64 / range) as u32).min(bins - 1))
                } else {
                    None
                }
            }
        }
    )* };
}
int_sample!(i32, u32);

/// Adds the histogram of `samples` (at most `u32::MAX`: a longer input stops the kernel) to
/// `bins` (`bins.len()` = `num_levels - 1` bins, zeroed by the host). Blocks of [`BLOCK`]
/// threads, any grid.
#[inline(always)]
pub fn histogram_even<T: Sample>(samples: &[T], lower: T, upper: T, bins: DisjointSlice<'_, u32>) {
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && !bins.is_empty()
            && bins.len() <= u32::MAX as usize
            // A bin counts to `u32::MAX`: a longer input could wrap one.
            && samples.len() <= u32::MAX as usize
    );
    let nb = bins.len();
    let local = gpukernel_device::shared::shared_array!(u32, SHARED_BINS);
    let shared = nb <= SHARED_BINS;
    let t = thread::thread_idx_x() as usize;
    if shared {
        let mut i = t;
        while i < nb {
            // SAFETY: thread `t` alone writes slots `t, t + BLOCK, …`; the barrier orders it
            // before the atomics.
            unsafe { local.write(i, 0) };
            i += BLOCK as usize;
        }
    }
    sync::sync_threads();
    let count = |s: T| {
        if let Some(b) = s.bin_even(lower, upper, nb as u32) {
            let b = b as usize;
            // SAFETY: `b < nb`: a slot of the block's shared bins (updated only atomically
            // between the two barriers) or of `bins` (updated only atomically in the launch).
            unsafe {
                if shared {
                    atomic::add(local.as_mut_ptr().add(b), 1u32);
                } else {
                    atomic::add(bins.as_mut_ptr().add(b), 1u32);
                }
            }
        }
    };
    let size = core::mem::size_of::<T>();
    let per = T::PER;
    let n = samples.len();
    let base = samples.as_ptr();
    let mis = base as usize % 16;
    let head = if mis == 0 {
        0
    } else {
        ((16 - mis) / size).min(n)
    };
    let nvec = (n - head) / per;
    let gid = thread::global_index_x();
    let stride = thread::grid_stride_x();
    // SAFETY: `head <= n` elements bring the pointer to a 16-byte boundary.
    let vp = unsafe { base.add(head) }.cast::<[u32; 4]>();
    let mut v = gid;
    while v + stride < nvec {
        // Two vectors in flight.
        // SAFETY: vectors `v` and `v + stride` (< nvec) lie inside `samples` (a `&[T]`),
        // 16-byte aligned.
        let (w0, w1) = unsafe { (ld16(vp.add(v)), ld16(vp.add(v + stride))) };
        for e in 0..per {
            count(T::lane16(w0, e));
        }
        for e in 0..per {
            count(T::lane16(w1, e));
        }
        v += 2 * stride;
    }
    if v < nvec {
        // SAFETY: as above.
        let w0 = unsafe { ld16(vp.add(v)) };
        for e in 0..per {
            count(T::lane16(w0, e));
        }
    }
    if gid < head {
        count(samples[gid]);
    }
    let tail = head + nvec * per + gid;
    if tail < n {
        count(samples[tail]);
    }
    sync::sync_threads();
    if shared {
        let mut i = t;
        while i < nb {
            // SAFETY: no atomic on the shared bins runs after the barrier.
            let c = unsafe { local.read(i) };
            if c != 0 {
                // SAFETY: `i < nb == bins.len()`; `bins` is updated only atomically.
                unsafe { atomic::add(bins.as_mut_ptr().add(i), c) };
            }
            i += BLOCK as usize;
        }
    }
}
