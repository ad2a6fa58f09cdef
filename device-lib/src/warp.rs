//! Warp-level operations: shuffles (`__shfl*_sync`) and votes (`__all_sync`, `__any_sync`,
//! `__ballot_sync`, `__activemask`).
//!
//! Every lane named in `mask` must call the same operation with the same mask (CUDA's rule);
//! the calling lane must be in `mask`. Lanes are numbered by the thread's linear index in its
//! block modulo 32; the last warp of a block whose size is not a multiple of 32 has fewer lanes,
//! and lanes of `mask` that do not exist are ignored. A shuffle whose source lane is outside
//! the warp's width segment (for `up`/`down`/`xor`) returns the caller's own value, as in CUDA;
//! a source lane that is not a participant gives an unspecified value on the GPU and the
//! caller's own value in the simulator.

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

#[inline(always)]
fn shfl32(mode: Mode, mask: u32, v: u32, arg: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `shfl.sync`; the lanes of `mask` must all execute it (documented above).
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
pub trait ShuffleValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn __shfl(self, mode_and_args: (u8, u32, u32)) -> Self;
}

macro_rules! shuffle32 {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl ShuffleValue for $t {
            #[inline(always)]
            fn __shfl(self, (mode, mask, arg): (u8, u32, u32)) -> Self {
                <$t>::from_ne_bytes(shfl32(mode_of(mode), mask, u32::from_ne_bytes(self.to_ne_bytes()), arg).to_ne_bytes())
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
            fn __shfl(self, (mode, mask, arg): (u8, u32, u32)) -> Self {
                let bits = u64::from_ne_bytes(self.to_ne_bytes());
                let m = mode_of(mode);
                let lo = shfl32(m, mask, bits as u32, arg) as u64;
                let hi = shfl32(m, mask, (bits >> 32) as u32, arg) as u64;
                <$t>::from_ne_bytes((lo | (hi << 32)).to_ne_bytes())
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
#[inline(always)]
pub fn shfl_sync<T: ShuffleValue>(mask: u32, value: T, src_lane: u32) -> T {
    value.__shfl((Mode::Idx as u8, mask, src_lane))
}

/// `__shfl_up_sync(mask, value, delta)`: `value` as passed by lane `lane_id() - delta`; lanes
/// below `delta` keep their own value.
#[inline(always)]
pub fn shfl_up_sync<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    value.__shfl((Mode::Up as u8, mask, delta))
}

/// `__shfl_down_sync(mask, value, delta)`: `value` as passed by lane `lane_id() + delta`;
/// lanes whose source would be past lane 31 keep their own value.
#[inline(always)]
pub fn shfl_down_sync<T: ShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    value.__shfl((Mode::Down as u8, mask, delta))
}

/// `__shfl_xor_sync(mask, value, lane_mask)`: `value` as passed by lane `lane_id() ^ lane_mask`.
#[inline(always)]
pub fn shfl_xor_sync<T: ShuffleValue>(mask: u32, value: T, lane_mask: u32) -> T {
    value.__shfl((Mode::Xor as u8, mask, lane_mask))
}

/// `__all_sync(mask, predicate)`: whether every participating lane passed `true`.
#[inline(always)]
pub fn all_sync(mask: u32, predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.all`; the lanes of `mask` must all execute it.
    unsafe {
        nv::vote_all(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (bits, participants) = crate::host::ballot("warp::all_sync", mask, predicate);
        bits == participants
    }
}

/// `__any_sync(mask, predicate)`: whether any participating lane passed `true`.
#[inline(always)]
pub fn any_sync(mask: u32, predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.any`; the lanes of `mask` must all execute it.
    unsafe {
        nv::vote_any(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::ballot("warp::any_sync", mask, predicate).0 != 0
    }
}

/// `__ballot_sync(mask, predicate)`: bit `l` is set when lane `l` participates and passed
/// `true`.
#[inline(always)]
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `vote.sync.ballot`; the lanes of `mask` must all execute it.
    unsafe {
        nv::vote_ballot(mask, predicate)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::ballot("warp::ballot_sync", mask, predicate).0
    }
}

/// `__activemask()`: the lanes of the caller's warp that are executing it together.
///
/// In the simulator, which runs a warp's lanes one after another, this is the set of lanes
/// that exist in the caller's warp (all 32 except in a partial last warp): kernels should use
/// it, as in CUDA, only to form a mask for a following `*_sync` call.
#[inline(always)]
pub fn active_mask() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `activemask` has no preconditions.
    unsafe {
        nv::activemask()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::with_context("warp::active_mask", |cx| {
        let threads = cx.block_dim.volume() as u32;
        let warp_start = cx.linear_thread() / 32 * 32;
        let lanes = (threads - warp_start).min(32);
        if lanes == 32 {
            u32::MAX
        } else {
            (1u32 << lanes) - 1
        }
    })
}
