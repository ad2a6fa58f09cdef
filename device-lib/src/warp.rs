//! Warp-level operations: shuffles (`__shfl*_sync`) and votes (`__all_sync`, `__any_sync`,
//! `__ballot_sync`, `__activemask`).
//!
//! Every lane named in `mask` must call the same operation with the same mask (CUDA's rule).
//! Lanes are numbered by the thread's linear index in its block modulo 32; the last warp of a
//! block whose size is not a multiple of 32 has fewer lanes, and lanes of `mask` that do not
//! exist are ignored. A shuffle whose source lane is outside the warp's width segment (for
//! `up`/`down`/`xor`) returns the caller's own value, as in CUDA; a source lane that is not a
//! participant gives an unspecified value on the GPU and the caller's own value in the
//! simulator.
//!
//! # The calling lane must be in `mask`
//!
//! The PTX ISA leaves `shfl.sync`, `vote.sync` and `bar.warp.sync` undefined when the
//! executing thread is not in `membermask`. The safe functions here therefore check
//! `mask & (1 << lane_id()) != 0` and trap the kernel when it fails (a defined, reported
//! fault: the launch fails with an error at the next synchronization); the simulator reports
//! the same misuse as an error naming the kernel, block and thread. Adding the caller's lane
//! to the mask instead would give the lanes of one call different masks, which is its own
//! error. The check costs nothing with a constant [`FULL_MASK`], which contains every lane:
//! it folds away at compile time. With a mask computed at run time it is a `%laneid` read, a
//! shift, a test and a branch, once per mask where the compiler can hoist it; since that
//! branch is per lane, `ptxas` can no longer prove the warp converged at the following
//! operations and adds a divergence test (`BRA.DIV`) with a slow path beside each. The
//! `_unchecked` forms skip the check, for callers who know the lane is in the mask (a mask
//! from [`active_mask`] always contains the caller).
//!
//! What remains is not undefined behaviour: lanes of `mask` that never arrive, or arrive with
//! another mask, make the warp wait (a hang on the GPU, an error in the simulator), and a
//! shuffle reading a lane that does not take part gets an unspecified value (any bit pattern
//! is a valid value of the shuffled types). The nvptx64 target's floor, sm_70, is the first
//! architecture where lanes need not be converged at a `*.sync` operation.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{thread, warp};
//!
//! /// The sum of each warp's 32 values, in its lane 0 (`__shfl_down_sync` halving).
//! /// Launch with blocks of a multiple of 32 threads and `x.len()` threads in all.
//! #[kernel]
//! pub fn warp_sums(x: &[f32], mut out: DisjointSlice<f32>) {
//!     let i = thread::index();
//!     let mut v = x[i.get()];
//!     let mut delta = 16;
//!     while delta > 0 {
//!         v += warp::shfl_down_sync(0xffff_ffff, v, delta);
//!         delta /= 2;
//!     }
//!     let lane0 = thread::lane_id() == 0;
//!     let count = warp::ballot_sync(0xffff_ffff, v > 0.0).count_ones();
//!     if let Some(o) = out.get_mut(&i) {
//!         *o = if lane0 { v } else { count as f32 };
//!     }
//! }
//! ```

/// The mask naming all 32 lanes of a warp.
pub const FULL_MASK: u32 = 0xffff_ffff;

#[cfg(target_arch = "nvptx64")]
mod nv {
    unsafe extern "C" {
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        pub fn shfl_idx(mask: u32, v: u32, lane: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        pub fn shfl_up(mask: u32, v: u32, delta: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        pub fn shfl_down(mask: u32, v: u32, delta: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
        pub fn shfl_bfly(mask: u32, v: u32, lanemask: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.vote.all.sync"]
        pub fn vote_all(mask: u32, pred: bool) -> bool;
        #[link_name = "llvm.nvvm.vote.any.sync"]
        pub fn vote_any(mask: u32, pred: bool) -> bool;
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        pub fn vote_ballot(mask: u32, pred: bool) -> u32;
        #[link_name = "llvm.nvvm.activemask"]
        pub fn activemask() -> u32;
    }
}

/// How a shuffle picks its source lane.
#[derive(Clone, Copy)]
enum Mode {
    Idx = 0,
    Up = 1,
    Down = 2,
    Xor = 3,
}

/// Stops the kernel unless the calling lane is in `mask`: `trap` on the GPU; in the
/// simulator, a panic naming `what` and the lane (an error naming the kernel, block and
/// thread).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn check_mask(what: &'static str, mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = what;
        let lane = crate::thread::lane_id();
        // SAFETY: `%laneid` is below 32, so the shift does not overflow.
        if unsafe { mask.unchecked_shr(lane) } & 1 == 0 {
            // SAFETY: `trap` has no preconditions; it aborts the kernel.
            unsafe { core::arch::nvptx::trap() }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::check_mask(what, mask);
}

/// One `shfl.sync` of 32 bits.
///
/// # Safety
/// The calling lane must be in `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn shfl32(mode: Mode, mask: u32, v: u32, arg: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `shfl.sync`; the caller promises that the calling lane is in `mask`; the rest is
    // defined (see the module documentation).
    unsafe {
        // The `c` operand: segment mask in bits 8..12 (0 = whole warp) and the clamp in
        // bits 0..4 (31 for idx/down/xor, 0 for up).
        match mode {
            Mode::Idx => nv::shfl_idx(mask, v, arg, 0x1f),
            Mode::Up => nv::shfl_up(mask, v, arg, 0),
            Mode::Down => nv::shfl_down(mask, v, arg, 0x1f),
            Mode::Xor => nv::shfl_bfly(mask, v, arg, 0x1f),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::shuffle("warp::shfl_sync", mask, v as u64, mode as u32, arg, 32) as u32
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A value a shuffle can move between lanes: 32-bit values in one `shfl.sync`, 64-bit values
/// in two.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// use gpukernel_device::warp::ShuffleValue;
/// /// Broadcast lane 0's value of any shuffleable type (`u32`, `f32`, `u64`, `f64`, …).
/// fn from_lane0<T: ShuffleValue>(v: T) -> T {
///     warp::shfl_sync(FULL_MASK, v, 0)
/// }
/// #[kernel]
/// pub fn broadcast(x: &[f64], mut out: DisjointSlice<f64>) {
///     let i = thread::index();
///     out.set(&i, from_lane0(x.get(i.get()).copied().unwrap_or_default()));
/// }
/// ```
pub trait ShuffleValue: Copy + sealed::Sealed {
    /// The shuffle itself, without the mask check.
    ///
    /// # Safety
    /// The calling lane must be in the mask (the second element of `mode_and_args`).
    #[doc(hidden)]
    unsafe fn __shfl(self, mode_and_args: (u8, u32, u32)) -> Self;
    /// The value's bits, zero-extended to 64 (the block collectives' shared slots).
    #[doc(hidden)]
    fn __to_bits(self) -> u64;
    /// The value whose bits are the low `8 * size_of::<Self>()` bits of `bits`.
    #[doc(hidden)]
    fn __from_bits(bits: u64) -> Self;
}

macro_rules! shuffle32 {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl ShuffleValue for $t {
            #[inline(always)]
            unsafe fn __shfl(self, (mode, mask, arg): (u8, u32, u32)) -> Self {
                let bits = u32::from_ne_bytes(self.to_ne_bytes());
                // SAFETY: forwarded from the caller's contract.
                <$t>::from_ne_bytes(unsafe { shfl32(mode_of(mode), mask, bits, arg) }.to_ne_bytes())
            }
            #[inline(always)]
            fn __to_bits(self) -> u64 {
                u32::from_ne_bytes(self.to_ne_bytes()) as u64
            }
            #[inline(always)]
            fn __from_bits(bits: u64) -> Self {
                <$t>::from_ne_bytes((bits as u32).to_ne_bytes())
            }
        }
    )* };
}
shuffle32!(u32, i32, f32);

macro_rules! shuffle64 {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl ShuffleValue for $t {
            #[inline(always)]
            unsafe fn __shfl(self, (mode, mask, arg): (u8, u32, u32)) -> Self {
                let bits = u64::from_ne_bytes(self.to_ne_bytes());
                let m = mode_of(mode);
                // SAFETY: forwarded from the caller's contract.
                let lo = unsafe { shfl32(m, mask, bits as u32, arg) } as u64;
                // SAFETY: as above.
                let hi = unsafe { shfl32(m, mask, (bits >> 32) as u32, arg) } as u64;
                <$t>::from_ne_bytes((lo | (hi << 32)).to_ne_bytes())
            }
            #[inline(always)]
            fn __to_bits(self) -> u64 {
                u64::from_ne_bytes(self.to_ne_bytes())
            }
            #[inline(always)]
            fn __from_bits(bits: u64) -> Self {
                <$t>::from_ne_bytes(bits.to_ne_bytes())
            }
        }
    )* };
}
shuffle64!(u64, i64, f64);

#[inline(always)]
fn mode_of(m: u8) -> Mode {
    match m {
        0 => Mode::Idx,
        1 => Mode::Up,
        2 => Mode::Down,
        _ => Mode::Xor,
    }
}

/// `__shfl_sync(mask, value, src_lane)`: `value` as passed by lane `src_lane % 32`.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// /// Every lane gets lane 0's value: CUDA's `__shfl_sync(0xffffffff, v, 0)`.
/// #[kernel]
/// pub fn warp_broadcast(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     out.set(&i, warp::shfl_sync(FULL_MASK, x.get(i.get()).copied().unwrap_or_default(), 0));
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_sync<T: ShuffleValue>(mask: u32, value: T, src_lane: u32) -> T {
    check_mask("warp::shfl_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { value.__shfl((Mode::Idx as u8, mask, src_lane)) }
}

/// `__shfl_up_sync(mask, value, delta)`: `value` as passed by lane `lane_id() - delta`; lanes
/// below `delta` keep their own value.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// /// Inclusive prefix sum within each warp (Hillis–Steele with `__shfl_up_sync`).
/// #[kernel]
/// pub fn warp_scan(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let mut v = x.get(i.get()).copied().unwrap_or_default();
///     for d in [1, 2, 4, 8, 16] {
///         let up = warp::shfl_up_sync(FULL_MASK, v, d);
///         if thread::lane_id() >= d { v += up; }
///     }
///     out.set(&i, v);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_up_sync<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    check_mask("warp::shfl_up_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { value.__shfl((Mode::Up as u8, mask, delta)) }
}

/// `__shfl_down_sync(mask, value, delta)`: `value` as passed by lane `lane_id() + delta`;
/// lanes whose source would be past lane 31 keep their own value.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// /// Each warp's sum ends up in its lane 0.
/// #[kernel]
/// pub fn warp_sum(x: &[f32], out: DisjointSlice<f32>) {
///     let i = thread::index().get();
///     let mut v = x.get(i).copied().unwrap_or_default();
///     for d in [16, 8, 4, 2, 1] { v += warp::shfl_down_sync(FULL_MASK, v, d); }
///     // SAFETY: lane 0 of each warp writes its warp's slot.
///     if thread::lane_id() == 0 { unsafe { out.write(i / 32, v) } }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_down_sync<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    check_mask("warp::shfl_down_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { value.__shfl((Mode::Down as u8, mask, delta)) }
}

/// `__shfl_xor_sync(mask, value, lane_mask)`: `value` as passed by lane `lane_id() ^ lane_mask`.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// /// Butterfly reduction: every lane ends with the warp's maximum.
/// #[kernel]
/// pub fn warp_max(x: &[f32], mut out: DisjointSlice<f32>) {
///     let i = thread::index();
///     let mut m = x.get(i.get()).copied().unwrap_or_default();
///     for d in [16, 8, 4, 2, 1] { m = m.max(warp::shfl_xor_sync(FULL_MASK, m, d)); }
///     out.set(&i, m);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_xor_sync<T: ShuffleValue>(mask: u32, value: T, lane_mask: u32) -> T {
    check_mask("warp::shfl_xor_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { value.__shfl((Mode::Xor as u8, mask, lane_mask)) }
}

/// [`shfl_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// The calling lane must be in `mask` (`mask & (1 << lane_id()) != 0`); the PTX ISA leaves
/// `shfl.sync` undefined otherwise. The simulator still checks it and reports a violation as
/// an error.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn from_first_active(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     if i.get() < x.len() { // only some lanes of the last warp get here
///         let mask = warp::active_mask();
///         // SAFETY: `active_mask` contains the calling lane.
///         let v = unsafe { warp::shfl_sync_unchecked(mask, x[i.get()], mask.trailing_zeros()) };
///         out.set(&i, v);
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_sync_unchecked<T: ShuffleValue>(mask: u32, value: T, src_lane: u32) -> T {
    // SAFETY: forwarded from the caller's contract.
    unsafe { value.__shfl((Mode::Idx as u8, mask, src_lane)) }
}

/// [`shfl_up_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// As for [`shfl_sync_unchecked`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn previous_lane(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     // SAFETY: FULL_MASK contains every lane (blocks of a multiple of 32 threads).
///     let v = x.get(i.get()).copied().unwrap_or_default(); // 0 past the end: every lane takes part
///     out.set(&i, unsafe { warp::shfl_up_sync_unchecked(FULL_MASK, v, 1) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_up_sync_unchecked<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    // SAFETY: forwarded from the caller's contract.
    unsafe { value.__shfl((Mode::Up as u8, mask, delta)) }
}

/// [`shfl_down_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// As for [`shfl_sync_unchecked`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn next_lane(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     // SAFETY: FULL_MASK contains every lane (blocks of a multiple of 32 threads).
///     let v = x.get(i.get()).copied().unwrap_or_default(); // 0 past the end: every lane takes part
///     out.set(&i, unsafe { warp::shfl_down_sync_unchecked(FULL_MASK, v, 1) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_down_sync_unchecked<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    // SAFETY: forwarded from the caller's contract.
    unsafe { value.__shfl((Mode::Down as u8, mask, delta)) }
}

/// [`shfl_xor_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// As for [`shfl_sync_unchecked`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn pair_swap(x: &[f32], mut out: DisjointSlice<f32>) {
///     let i = thread::index();
///     // SAFETY: FULL_MASK contains every lane (blocks of a multiple of 32 threads).
///     let v = x.get(i.get()).copied().unwrap_or_default(); // 0 past the end: every lane takes part
///     out.set(&i, unsafe { warp::shfl_xor_sync_unchecked(FULL_MASK, v, 1) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_xor_sync_unchecked<T: ShuffleValue>(mask: u32, value: T, lane_mask: u32) -> T {
    // SAFETY: forwarded from the caller's contract.
    unsafe { value.__shfl((Mode::Xor as u8, mask, lane_mask)) }
}

/// `__all_sync(mask, predicate)`: whether every participating lane passed `true`.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn warp_all_positive(x: &[i32], mut out: DisjointSlice<bool>) {
///     let i = thread::index();
///     let positive = x.get(i.get()).is_none_or(|&v| v > 0); // lanes past the end agree
///     out.set(&i, warp::all_sync(FULL_MASK, positive)); // CUDA's __all_sync
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn all_sync(mask: u32, predicate: bool) -> bool {
    check_mask("warp::all_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { all_sync_unchecked(mask, predicate) }
}

/// `__any_sync(mask, predicate)`: whether any participating lane passed `true`.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn warp_any_zero(x: &[i32], mut out: DisjointSlice<bool>) {
///     let i = thread::index();
///     let zero = x.get(i.get()).is_some_and(|&v| v == 0); // lanes past the end say no
///     out.set(&i, warp::any_sync(FULL_MASK, zero)); // CUDA's __any_sync
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn any_sync(mask: u32, predicate: bool) -> bool {
    check_mask("warp::any_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { any_sync_unchecked(mask, predicate) }
}

/// `__ballot_sync(mask, predicate)`: bit `l` is set when lane `l` participates and passed
/// `true`.
///
/// Traps when the calling lane is not in `mask` (see the [module documentation](self)).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// /// Stream compaction within a warp: each kept element's rank among its warp's kept ones.
/// #[kernel]
/// pub fn ranks(x: &[f32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let keep = warp::ballot_sync(FULL_MASK, x.get(i.get()).is_some_and(|&v| v > 0.0));
///     let below = keep & ((1u32 << thread::lane_id()) - 1);
///     out.set(&i, below.count_ones());
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    check_mask("warp::ballot_sync", mask);
    // SAFETY: the calling lane is in `mask` (checked above).
    unsafe { ballot_sync_unchecked(mask, predicate) }
}

/// [`all_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// The calling lane must be in `mask` (`mask & (1 << lane_id()) != 0`); the PTX ISA leaves
/// `vote.sync` undefined otherwise. The simulator still checks it and reports a violation as
/// an error.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn tail_all(x: &[i32], mut out: DisjointSlice<bool>) {
///     let i = thread::index();
///     if i.get() < x.len() {
///         // SAFETY: `active_mask` contains the calling lane.
///         out.set(&i, unsafe { warp::all_sync_unchecked(warp::active_mask(), x[i.get()] > 0) });
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn all_sync_unchecked(mask: u32, predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.all`; the caller promises the calling lane is in `mask`.
    unsafe {
        nv::vote_all(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (bits, participants) = crate::host::ballot("warp::all_sync", mask, predicate);
        bits == participants
    }
}

/// [`any_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// As for [`all_sync_unchecked`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn tail_any(x: &[i32], mut out: DisjointSlice<bool>) {
///     let i = thread::index();
///     if i.get() < x.len() {
///         // SAFETY: `active_mask` contains the calling lane.
///         out.set(&i, unsafe { warp::any_sync_unchecked(warp::active_mask(), x[i.get()] < 0) });
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn any_sync_unchecked(mask: u32, predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.any`; the caller promises the calling lane is in `mask`.
    unsafe {
        nv::vote_any(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::ballot("warp::any_sync", mask, predicate).0 != 0
    }
}

/// [`ballot_sync`] without the check that the calling lane is in `mask`.
///
/// # Safety
///
/// As for [`all_sync_unchecked`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn tail_ballot(x: &[i32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     if i.get() < x.len() {
///         // SAFETY: `active_mask` contains the calling lane.
///         out.set(&i, unsafe { warp::ballot_sync_unchecked(warp::active_mask(), x[i.get()] != 0) });
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ballot_sync_unchecked(mask: u32, predicate: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.ballot`; the caller promises the calling lane is in `mask`.
    unsafe {
        nv::vote_ballot(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::ballot("warp::ballot_sync", mask, predicate).0
    }
}

/// `__activemask()`: the lanes of the caller's warp that are executing it together. It always
/// contains the calling lane, so it is a valid mask for the `_unchecked` forms.
///
/// In the simulator, which runs a warp's lanes one after another, this is the set of lanes
/// that exist in the caller's warp (all 32 except in a partial last warp): kernels should use
/// it, as in CUDA, only to form a mask for a following `*_sync` call.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp::{self, FULL_MASK}};
///
/// #[kernel]
/// pub fn lanes_here(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     if i.get() < x.len() {
///         let mask = warp::active_mask(); // the lanes that took this branch
///         out.set(&i, warp::ballot_sync(mask, true).count_ones());
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn active_mask() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `activemask` has no preconditions.
    unsafe {
        nv::activemask()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::with_context("warp::active_mask", |cx| {
        let threads = cx.block_dim().volume() as u32;
        let warp_start = cx.linear_thread() / 32 * 32;
        let lanes = (threads - warp_start).min(32);
        if lanes == 32 {
            u32::MAX
        } else {
            (1u32 << lanes) - 1
        }
    })
}

// --- warp collectives ---------------------------------------------------------------------

/// The lanes that exist in the caller's warp: all 32, except in the last warp of a block whose
/// size is not a multiple of 32. Always contains the calling lane.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp};
///
/// /// With blocks of 40 threads: `u32::MAX` for the first warp, `0xff` for the second.
/// #[kernel]
/// pub fn lanes(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), warp::warp_lanes());
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_lanes() -> u32 {
    let threads = crate::thread::threads_per_block();
    let warp_start = crate::thread::linear_thread_idx() & !31;
    let lanes = threads - warp_start;
    if lanes >= 32 {
        FULL_MASK
    } else {
        (1u32 << lanes) - 1
    }
}

/// Traps unless every lane of `mask` (the warp's existing lanes, which contain the caller)
/// takes part: a GPU does not wait at a `*.sync` operation for lanes that have exited, and a
/// shuffle from such a lane reads an undefined value, so a collective that some lanes returned
/// before would combine values no lane passed. One `vote.sync.ballot`, whose result every
/// taking part lane shares. (The simulator reports a lane of the mask that finished at the
/// shuffle itself.)
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn all_lanes_take_part(mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `mask` contains the calling lane; `trap` has no preconditions.
    unsafe {
        if ballot_sync_unchecked(mask, true) != mask {
            core::arch::nvptx::trap()
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = mask;
}

/// The reduction of `value` over every lane of the caller's warp (CUB's `WarpReduce::Reduce`),
/// returned to every lane: `op(op(v_0, v_1), …)` in lane order, grouped as a butterfly.
///
/// Every lane that exists in the warp ([`warp_lanes`]: all 32 except in a partial last warp
/// of the block) must call it, from the same call site or not; a lane that never does makes
/// the warp wait (a hang on the GPU, an error in the simulator), and when some lanes have
/// returned before it (which a GPU does not wait for) the collective traps (a launch failure
/// at the next synchronization). The shuffles use the mask of existing lanes, which always
/// contains the caller, so nothing here is undefined. The simulator runs the same shuffles.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{ops::{Max, Sum}, thread, warp};
///
/// /// Each lane gets its warp's sum and maximum (blocks of any size).
/// #[kernel]
/// pub fn warp_stats(x: &[i32], mut sums: DisjointSlice<i32>, mut maxes: DisjointSlice<i32>) {
///     let i = thread::index();
///     let v = x.get(i.get()).copied().unwrap_or(0);
///     let (s, m) = (warp::reduce(v, Sum), warp::reduce(v, Max));
///     sums.set(&i, s);
///     maxes.set(&i, m);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn reduce<T: ShuffleValue, Op: crate::ops::ReduceOp<T>>(value: T, op: Op) -> T {
    let mask = warp_lanes();
    all_lanes_take_part(mask);
    if mask == FULL_MASK {
        let lane = crate::thread::lane_id();
        let mut v = value;
        // A `while` over the offsets, not a loop over an array: LLVM unrolls it into
        // registers (an array iterator is kept in local memory).
        let mut offset = 1u32;
        while offset < 32 {
            // SAFETY: the calling lane exists in its warp, so it is in `mask`.
            let other = unsafe { v.__shfl((Mode::Xor as u8, mask, offset)) };
            // The lane with the bit set holds the later half: keep lane order.
            v = if lane & offset == 0 {
                op.combine(v, other)
            } else {
                op.combine(other, v)
            };
            offset *= 2;
        }
        v
    } else {
        let last = 31 - mask.leading_zeros();
        let total = inclusive_scan_masked(mask, value, op);
        // SAFETY: as above.
        unsafe { total.__shfl((Mode::Idx as u8, mask, last)) }
    }
}

/// Hillis–Steele inclusive scan over the lanes of `mask` (the warp's existing lanes).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn inclusive_scan_masked<T: ShuffleValue, Op: crate::ops::ReduceOp<T>>(
    mask: u32,
    value: T,
    op: Op,
) -> T {
    let lane = crate::thread::lane_id();
    let mut v = value;
    let mut delta = 1u32;
    while delta < 32 {
        // SAFETY: `mask` is the warp's existing lanes, which contain the caller.
        let up = unsafe { v.__shfl((Mode::Up as u8, mask, delta)) };
        if lane >= delta {
            v = op.combine(up, v);
        }
        delta *= 2;
    }
    v
}

/// The inclusive scan of `value` over the caller's warp (CUB's `WarpScan::InclusiveScan`):
/// lane `i` gets `v_0 ⊕ v_1 ⊕ … ⊕ v_i`. Every lane that exists in the warp must call it (see
/// [`reduce`]).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{ops::Sum, thread, warp};
///
/// /// Running totals within each warp.
/// #[kernel]
/// pub fn warp_running(x: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let v = warp::inclusive_scan(x.get(i.get()).copied().unwrap_or(0), Sum);
///     out.set(&i, v);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn inclusive_scan<T: ShuffleValue, Op: crate::ops::ReduceOp<T>>(value: T, op: Op) -> T {
    let mask = warp_lanes();
    all_lanes_take_part(mask);
    inclusive_scan_masked(mask, value, op)
}

/// The exclusive scan of `value` over the caller's warp, seeded with `initial` (CUB's
/// `WarpScan::ExclusiveScan`): lane 0 gets `initial`, lane `i` gets
/// `initial ⊕ v_0 ⊕ … ⊕ v_{i-1}`. Every lane that exists in the warp must call it (see
/// [`reduce`]).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{ops::Sum, thread, warp};
///
/// /// Each lane's offset into a packed output of its warp's counts.
/// #[kernel]
/// pub fn warp_offsets(counts: &[u32], mut out: DisjointSlice<u32>) {
///     let i = thread::index();
///     let c = counts.get(i.get()).copied().unwrap_or(0);
///     out.set(&i, warp::exclusive_scan(c, 0, Sum));
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn exclusive_scan<T: ShuffleValue, Op: crate::ops::ReduceOp<T>>(
    value: T,
    initial: T,
    op: Op,
) -> T {
    let mask = warp_lanes();
    all_lanes_take_part(mask);
    let inclusive = inclusive_scan_masked(mask, value, op);
    // SAFETY: the calling lane exists in its warp, so it is in `mask`.
    let before = unsafe { inclusive.__shfl((Mode::Up as u8, mask, 1)) };
    if crate::thread::lane_id() == 0 {
        initial
    } else {
        op.combine(initial, before)
    }
}

/// `value` as passed by lane `src_lane` of the caller's warp, to every lane (CUB's
/// `WarpScan::Broadcast`). Every lane that exists in the warp must call it; a `src_lane` that
/// does not exist (32 or more, or past a partial warp's end) gives the caller's own value.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, warp};
///
/// #[kernel]
/// pub fn first_of_warp(x: &[f64], mut out: DisjointSlice<f64>) {
///     let i = thread::index();
///     out.set(&i, warp::broadcast(x.get(i.get()).copied().unwrap_or(0.0), 0));
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn broadcast<T: ShuffleValue>(value: T, src_lane: u32) -> T {
    let mask = warp_lanes();
    if src_lane >= 32 || mask & (1u32 << src_lane) == 0 {
        // With the same `src_lane` in every lane (the rule of a broadcast) all lanes take this
        // branch alike; lanes that differ leave the others waiting, as any lane missing from
        // a warp collective does.
        return value;
    }
    all_lanes_take_part(mask);
    // SAFETY: the calling lane exists in its warp, so it is in `mask`.
    unsafe { value.__shfl((Mode::Idx as u8, mask, src_lane)) }
}
