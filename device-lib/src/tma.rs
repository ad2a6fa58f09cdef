//! The tensor memory accelerator (TMA, sm_90): bulk copies of a box of a 1- to 5-dimensional
//! tensor between global and shared memory (`cp.async.bulk.tensor`), described by a tensor map
//! the host encodes (`cuTensorMapEncodeTiled`; gpukernel-runtime's `TensorMapNd`).
//!
//! A load names an [`Mbarrier`]: the copy engine writes the box to shared memory and completes
//! that many transaction bytes on the barrier, so the consumer waits for the barrier's phase
//! (the thread that issues the copy usually calls [`Mbarrier::arrive_expect_tx`] with the box's
//! bytes). A store reads shared memory (after [`fence_proxy_async`] orders the threads' writes
//! before the copy engine's reads) and is tracked by bulk groups: [`commit_group`], then
//! [`wait_group_read`] before the shared memory is reused, [`wait_group`] before the kernel
//! relies on the global writes.
//!
//! The kernel receives the map as a [`TensorMap`] parameter: the address of the 128-byte
//! descriptor, which the runtime keeps in device memory (64-byte aligned) for as long as the
//! launches that use it. Every copy is `unsafe`: the hardware checks the box against the tensor
//! but not what else the kernel or other launches do with the memory.
//!
//! In the simulator the map is the runtime's own encoding of the same fields; a copy happens
//! at once (the box, with elements outside the tensor read as zero and not written, the
//! shared side in the map's swizzle), and a load then completes its bytes on the barrier.
//!
//! [`load_multicast`] (sm_90a) writes one box into the shared memory of several blocks of a
//! cluster and completes its bytes on each one's barrier. Its rule, which the hardware does not
//! check: every destination block initialises its barrier, fences it
//! ([`crate::mbarrier::fence_init`]) and passes a cluster barrier ([`crate::cluster::sync`])
//! before any block multicasts into it; the simulator reports a multicast that reaches a barrier
//! not yet initialised.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::mbarrier::{self, Mbarrier};
//! use gpukernel_device::tma::{self, TensorMap};
//! use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
//!
//! /// Copies one 32 × 32 f32 tile per block through shared memory: a TMA load, then a TMA store
//! /// into another tensor of the same shape.
//! ///
//! /// # Safety
//! /// `src` and `dst` are maps of 2D f32 tensors of one shape with 32 × 32 boxes, no swizzle;
//! /// nothing else accesses `dst` during the launch.
//! /// A TMA tile: shared memory aligned as tensor copies need (128 bytes; 1024 covers every
//! /// swizzle). The simulator refuses a copy whose shared side is not aligned.
//! #[repr(C, align(1024))]
//! #[derive(Clone, Copy)]
//! pub struct Tile([f32; 1024]);
//! // SAFETY: an array of floats, no padding.
//! unsafe impl gpukernel_device::DeviceCopy for Tile {}
//!
//! #[kernel]
//! pub unsafe fn tile_copy(src: TensorMap, dst: TensorMap) {
//!     let tile = shared_array!(Tile, 1);
//!     let word = shared_array!(u64, 1);
//!     let bar = Mbarrier::at(SharedAddr::of(word.as_mut_ptr()));
//!     let at = [32 * thread::block_idx_x() as i32, 32 * thread::block_idx_y() as i32];
//!     let smem = SharedAddr::of(tile.as_mut_ptr());
//!     if thread::thread_idx_x() == 0 {
//!         unsafe {
//!             bar.init(1);
//!             mbarrier::fence_init();
//!             bar.arrive_expect_tx(1024 * 4);
//!             tma::load(smem, src, at, bar);
//!             bar.wait_parity(0);
//!             tma::store(dst, at, smem);
//!             tma::commit_group();
//!             tma::wait_group::<0>();
//!         }
//!     }
//! }
//! ```

use crate::mbarrier::Mbarrier;
use crate::mma::SharedAddr;

/// A TMA descriptor, as a kernel parameter: the global address of a 128-byte tensor map
/// (`CUtensorMap`) that the runtime encoded and keeps alive for the launch.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::tma::TensorMap;
/// /// # Safety
/// /// `map` describes a tensor the kernel may read.
/// #[kernel]
/// pub unsafe fn warm(map: TensorMap) {
///     // SAFETY: `map` is a tensor map from the runtime (this kernel's contract).
///     unsafe { map.prefetch() }; // pulls the descriptor into the cache
/// }
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap(u64);

// SAFETY: one `u64`; every bit pattern is a value (the copies that use it are `unsafe`).
unsafe impl crate::DeviceCopy for TensorMap {}

impl TensorMap {
    /// The map at device address `addr` (64-byte aligned, 128 bytes); what the runtime
    /// passes.
    ///
    /// ```
    /// use gpukernel_device::tma::TensorMap;
    /// let m = TensorMap::from_raw(0x1000);
    /// assert_eq!(m.raw(), 0x1000);
    /// ```
    #[inline(always)]
    pub const fn from_raw(addr: u64) -> TensorMap {
        TensorMap(addr)
    }

    /// The descriptor's address.
    ///
    /// ```
    /// use gpukernel_device::tma::TensorMap;
    /// assert_eq!(TensorMap::from_raw(64).raw(), 64);
    /// ```
    #[inline(always)]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// `prefetch.tensormap`: brings the descriptor into the cache ahead of the first copy.
    ///
    /// # Safety
    /// `self` is a tensor map the runtime passed (a `TensorMapNd` kernel argument), or
    /// another address of a `CUtensorMap` valid for the whole launch. The prefetch is not a
    /// mere hint: on an H100 the prefetch of address `0x1` faulted the kernel
    /// (`CUDA_ERROR_ILLEGAL_ADDRESS`), and `from_raw` takes any address.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::tma::TensorMap;
    /// /// # Safety
    /// /// `map` is a tensor map from the runtime.
    /// #[kernel]
    /// pub unsafe fn warm_up(map: TensorMap) {
    ///     // SAFETY: `map` is the runtime's tensor map (this kernel's contract).
    ///     unsafe { map.prefetch() };
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn prefetch(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller passes the address of a tensor map (this function's contract).
        unsafe {
            core::arch::asm!("prefetch.tensormap [{0}];", in(reg64) self.0, options(nostack));
        }
    }
}

/// The simulator's tensor map: what `TensorMap::raw` points to in a simulated launch (the
/// runtime's simulator backend writes it; 128 bytes like `CUtensorMap`).
#[doc(hidden)]
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimTensorMap {
    /// [`SimTensorMap::MAGIC`].
    pub magic: u64,
    /// The tensor's base address.
    pub base: u64,
    /// Dimensions used (1 to 5).
    pub rank: u32,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// Elements along each dimension, innermost first.
    pub dims: [u64; 5],
    /// Bytes between consecutive indices of dimensions 1.. (dimension 0 is contiguous).
    pub strides: [u64; 4],
    /// The box's elements along each dimension.
    pub boxes: [u32; 5],
    /// 0 none, 1 32 bytes, 2 64 bytes, 3 128 bytes (as `CUtensorMapSwizzle`).
    pub swizzle: u32,
    /// Unused.
    pub reserved: [u32; 2],
}

const _: () = assert!(core::mem::size_of::<SimTensorMap>() == 128);

impl SimTensorMap {
    /// Marks a simulator tensor map.
    pub const MAGIC: u64 = 0x7061_6d72_6f73_6e65; // "ensormap"

    /// The bytes of one box.
    ///
    /// ```
    /// use gpukernel_device::tma::SimTensorMap;
    /// let m = SimTensorMap { rank: 2, elem_bytes: 4, boxes: [8, 4, 1, 1, 1], ..Default::default() };
    /// assert_eq!(m.box_bytes(), 128);
    /// ```
    pub fn box_bytes(&self) -> usize {
        let r = self.rank.clamp(1, 5) as usize;
        self.boxes[..r]
            .iter()
            .map(|&b| b as usize)
            .product::<usize>()
            * self.elem_bytes as usize
    }
}

/// The byte offset in shared memory of logical byte `offset` of a box under `swizzle` (0 none,
/// 1/2/3: 32/64/128-byte swizzle): the 16-byte chunk index within a 128-byte row XORed with
/// the row index modulo 2/4/8 (CuTe's `Swizzle<B, 4, 3>`; the hardware applies it to shared
/// addresses, so the destination must be aligned to 256/512/1024 bytes).
///
/// ```
/// use gpukernel_device::tma::swizzled_offset;
/// assert_eq!(swizzled_offset(0, 17), 17);
/// assert_eq!(swizzled_offset(3, 128), 128 + 16); // row 1: chunk 0 ↔ 1
/// ```
pub const fn swizzled_offset(swizzle: u32, offset: usize) -> usize {
    if swizzle == 0 {
        return offset;
    }
    let mask = (1usize << swizzle) - 1;
    offset ^ (((offset >> 7) & mask) << 4)
}

#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use super::{SimTensorMap, swizzled_offset};

    pub(super) fn map<'a>(m: super::TensorMap, what: &str) -> &'a SimTensorMap {
        let p = m.0 as *const SimTensorMap;
        assert!(
            !p.is_null() && (p as usize).is_multiple_of(64),
            "{what}: the tensor map address {:#x} is not a 64-byte-aligned map from the runtime",
            m.0
        );
        // SAFETY: the caller of the `unsafe` copy promised a map the runtime made.
        let map = unsafe { &*p };
        assert!(
            map.magic == SimTensorMap::MAGIC && (1..=5).contains(&map.rank),
            "{what}: {:#x} is not a tensor map made by the runtime's simulator (TensorMapNd)",
            m.0
        );
        map
    }

    /// Refuses a shared-memory side of a copy that is not aligned as the hardware needs: 128
    /// bytes, or the swizzle's span (256, 512, 1024 bytes) when the map is swizzled.
    pub(super) fn check_shared(map: &SimTensorMap, smem: *mut u8, what: &str) {
        let need = 128usize << map.swizzle.min(3);
        assert!(
            (smem as usize).is_multiple_of(need),
            "{what}: the shared-memory address {smem:p} is not aligned to {need} bytes (a tensor copy needs 128, or the swizzle's span when the map is swizzled; the GPU faults or scrambles the box)"
        );
    }

    /// Refuses a shared side of a copy that the box overruns: fewer than its bytes left in the
    /// shared array at `smem` (the simulator's own memory would be overwritten; the GPU writes
    /// over other shared data or faults).
    pub(super) fn check_room(map: &SimTensorMap, smem: *mut u8, what: &str) {
        let need = map.box_bytes();
        let room = crate::host::with_context(what, |cx| cx.hooks().shared_room(smem));
        match room {
            Some(0) => panic!(
                "{what}: the shared-memory address {smem:p} is in no shared array of this block (shared_array! or the dynamic region); the box of {need} bytes needs one with room for it"
            ),
            Some(room) if room < need => panic!(
                "{what}: the box is {need} bytes but only {room} bytes of its shared array follow {smem:p} (the GPU writes over other shared data or faults): give the destination room for the whole box"
            ),
            _ => {}
        }
    }

    /// Calls `f(global element address or None when outside the tensor, shared byte offset)`
    /// for every element of the box at `coords`.
    pub(super) fn for_each<const N: usize>(
        map: &SimTensorMap,
        coords: [i32; N],
        what: &str,
        mut f: impl FnMut(Option<*mut u8>, usize),
    ) {
        assert!(
            map.rank as usize == N,
            "{what}: {N} coordinates for a tensor map of rank {}",
            map.rank
        );
        let eb = map.elem_bytes as usize;
        let total: usize = map.boxes[..N].iter().map(|&b| b as usize).product();
        for linear in 0..total {
            let mut rest = linear;
            let mut inside = true;
            let mut addr = map.base as usize;
            for (d, &at) in coords.iter().enumerate() {
                let b = map.boxes[d] as usize;
                let i = rest % b;
                rest /= b;
                let c = at as i64 + i as i64;
                if c < 0 || c as u64 >= map.dims[d] {
                    inside = false;
                } else if d == 0 {
                    addr += c as usize * eb;
                } else {
                    addr += c as usize * map.strides[d - 1] as usize;
                }
            }
            let smem = swizzled_offset(map.swizzle, linear * eb);
            f(inside.then_some(addr as *mut u8), smem);
        }
    }
}

#[cfg(target_arch = "nvptx64")]
macro_rules! tensor_asm {
    (load $n:literal, $coords:literal, $dst:expr, $map:expr, $bar:expr, $($c:expr),+) => {
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                concat!("cp.async.bulk.tensor.", $n, "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{dst}], [{map}, {{", $coords, "}}], [{bar}];"),
                $(in(reg32) $c),+,
                dst = in(reg32) $dst, map = in(reg64) $map, bar = in(reg32) $bar,
                options(nostack));
        }
    };
    (multicast $n:literal, $coords:literal, $dst:expr, $map:expr, $bar:expr, $mask:expr, $($c:expr),+) => {
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                concat!("cp.async.bulk.tensor.", $n, "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{dst}], [{map}, {{", $coords, "}}], [{bar}], {mask};"),
                $(in(reg32) $c),+,
                dst = in(reg32) $dst, map = in(reg64) $map, bar = in(reg32) $bar,
                mask = in(reg16) $mask,
                options(nostack));
        }
    };
    (store $n:literal, $coords:literal, $map:expr, $src:expr, $($c:expr),+) => {
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                concat!("cp.async.bulk.tensor.", $n, "d.global.shared::cta.tile.bulk_group [{map}, {{", $coords, "}}], [{src}];"),
                $(in(reg32) $c),+,
                map = in(reg64) $map, src = in(reg32) $src,
                options(nostack));
        }
    };
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: copies
/// the box of `map` whose first element is at `coords` (innermost first; `N` is the map's
/// rank, 1 to 5) to shared memory at `dst`, and completes the box's bytes on `bar` once
/// written. Elements outside the tensor are written as zero.
///
/// # Safety
/// `map` is a tensor map from the runtime for memory no one writes during the copy; `dst` is
/// aligned to 128 bytes (to the swizzle span when swizzled: 256, 512, 1024 bytes) with room
/// for the box, untouched until `bar`'s phase completes; `bar` is initialised and expects the
/// bytes (`arrive_expect_tx`) in the phase the copy completes.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::mbarrier::{self, Mbarrier};
/// use gpukernel_device::tma::{self, TensorMap};
/// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
/// /// A TMA destination: 128-byte aligned (the simulator refuses less).
/// #[repr(C, align(128))]
/// #[derive(Clone, Copy)]
/// pub struct Tile([f32; 256]);
/// // SAFETY: an array of floats, no padding.
/// unsafe impl gpukernel_device::DeviceCopy for Tile {}
///
/// /// Sums a 16 × 16 f32 box of a 2D tensor; one block of 32 threads.
/// ///
/// /// # Safety
/// /// `map` is a 2D f32 map with 16 × 16 boxes, no swizzle, that nobody writes.
/// #[kernel]
/// pub unsafe fn box_sum(map: TensorMap, mut out: DisjointSlice<f32>) {
///     let tile = shared_array!(Tile, 1);
///     let w = shared_array!(u64, 1);
///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
///     if thread::thread_idx_x() == 0 {
///         unsafe {
///             bar.init(1);
///             mbarrier::fence_init();
///             bar.arrive_expect_tx(256 * 4);
///             tma::load(SharedAddr::of(tile.as_mut_ptr()), map, [0, 0], bar);
///         }
///     }
///     sync::sync_threads();
///     unsafe { bar.wait_parity(0) };
///     let t = thread::thread_idx_x() as usize;
///     let mut s = 0.0;
///     for j in (t..256).step_by(32) {
///         // SAFETY: the copy completed; no writers.
///         s += unsafe { tile.as_mut_ptr().cast::<f32>().add(j).read() };
///     }
///     out.set(thread::index(), s);
/// }
/// ```
#[inline(always)]
pub unsafe fn load<const N: usize>(
    dst: SharedAddr,
    map: TensorMap,
    coords: [i32; N],
    bar: Mbarrier,
) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (d, m, b) = (dst.raw(), map.0, bar.addr().raw());
        match N {
            1 => tensor_asm!(load "1", "{}", d, m, b, coords[0]),
            2 => tensor_asm!(load "2", "{}, {}", d, m, b, coords[0], coords[1]),
            3 => tensor_asm!(load "3", "{}, {}, {}", d, m, b, coords[0], coords[1], coords[2]),
            4 => {
                tensor_asm!(load "4", "{}, {}, {}, {}", d, m, b, coords[0], coords[1], coords[2], coords[3])
            }
            5 => {
                tensor_asm!(load "5", "{}, {}, {}, {}, {}", d, m, b, coords[0], coords[1], coords[2], coords[3], coords[4])
            }
            _ => crate::__trap_out_of_bounds(N, 6),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let m = sim::map(map, "tma::load");
        let eb = m.elem_bytes as usize;
        let base = dst.raw();
        sim::check_shared(m, base, "tma::load");
        sim::check_room(m, base, "tma::load");
        sim::for_each(m, coords, "tma::load", |global, smem| {
            // SAFETY: the caller's contract: the box fits at `dst`, the tensor is readable.
            unsafe {
                let to = base.add(smem);
                match global {
                    Some(g) => core::ptr::copy_nonoverlapping(g, to, eb),
                    None => core::ptr::write_bytes(to, 0, eb),
                }
            }
        });
        crate::mbarrier::sim_complete_tx(bar.addr().raw(), m.box_bytes() as u32);
    }
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster`
/// (sm_90a): reads the box of `map` at `coords` from global memory once and writes it into the
/// shared memory of every block of the cluster whose rank has its bit set in `cta_mask` (bit
/// `r` for rank `r`), at the same offset as `dst` in this block, completing the box's bytes on
/// the barrier at `bar`'s offset in each of those blocks. Blocks that need the same tile (the
/// `B` tile of a GEMM's blocks along `M`) each load a share and multicast it, so the tile
/// leaves L2 once per cluster instead of once per block.
///
/// # Safety
/// As [`load`], for every destination block; and, beyond what the hardware can check: every
/// bit of `cta_mask` names a rank of this cluster; each destination block's barrier was
/// initialised *before* this copy is issued, and that initialisation was made visible across
/// the cluster — [`Mbarrier::init`], [`crate::mbarrier::fence_init`], then a cluster barrier
/// ([`crate::cluster::sync`], or `arrive`/`wait`) between every block's initialisation and the
/// first multicast into it (the PTX ISA leaves any operation but `init` on an uninitialised
/// `mbarrier` undefined, and a peer's `init` is ordered with this block only through the
/// cluster barrier; without it the peer's `init` can erase the bytes completed on it, and the
/// peer waits forever). Each destination barrier expects the box's bytes in the phase the copy
/// completes, and the destination region of each block is free (its consumers released it,
/// e.g. with [`Mbarrier::arrive_cluster`] on an "empty" barrier of the issuing block). No
/// destination block exits before the copy completed on its barrier.
///
/// In the simulator the copy lands at once in every destination block; a destination barrier
/// that is not initialised yet is reported as an error (not undefined behaviour), and so is a
/// rank outside the cluster.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::mbarrier::{self, Mbarrier};
/// use gpukernel_device::tma::{self, TensorMap};
/// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, sync, thread};
/// /// A TMA destination: 128-byte aligned.
/// #[repr(C, align(128))]
/// #[derive(Clone, Copy)]
/// pub struct Half([f32; 128]);
/// // SAFETY: an array of floats, no padding.
/// unsafe impl gpukernel_device::DeviceCopy for Half {}
///
/// /// In a cluster of two, each block loads one 8 × 16 half of a 16 × 16 f32 tile and
/// /// multicasts it to both; every block then holds the whole tile and sums it.
/// ///
/// /// # Safety
/// /// `map` is a 2D f32 map with 8 × 16 boxes, no swizzle; clusters of 2 blocks.
/// #[kernel]
/// pub unsafe fn both_halves(map: TensorMap, mut out: DisjointSlice<f32>) {
///     let tile = shared_array!(Half, 2);
///     let w = shared_array!(u64, 1);
///     let bar = Mbarrier::at(SharedAddr::of(w.as_mut_ptr()));
///     let rank = cluster::block_rank();
///     if thread::thread_idx_x() == 0 {
///         unsafe {
///             bar.init(1);
///             mbarrier::fence_init();
///             bar.arrive_expect_tx(2 * 128 * 4); // both halves land here
///         }
///     }
///     // Every block's barrier is initialised (and expects its bytes) before any multicast.
///     cluster::sync();
///     if thread::thread_idx_x() == 0 {
///         let dst = SharedAddr::of(tile.as_mut_ptr()).add_bytes(rank as usize * 512);
///         unsafe { tma::load_multicast(dst, map, [0, 8 * rank as i32], bar, 0b11) };
///     }
///     unsafe { bar.wait_parity(0) };
///     let mut s = 0.0;
///     for j in 0..256 {
///         s += unsafe { tile.as_mut_ptr().cast::<f32>().add(j).read() };
///     }
///     // No block leaves while its peer's copy may still write into it.
///     cluster::sync();
///     out.set(thread::index(), s);
/// }
/// ```
#[inline(always)]
pub unsafe fn load_multicast<const N: usize>(
    dst: SharedAddr,
    map: TensorMap,
    coords: [i32; N],
    bar: Mbarrier,
    cta_mask: u16,
) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (d, m, b, k) = (dst.raw(), map.0, bar.addr().raw(), cta_mask);
        match N {
            1 => tensor_asm!(multicast "1", "{}", d, m, b, k, coords[0]),
            2 => tensor_asm!(multicast "2", "{}, {}", d, m, b, k, coords[0], coords[1]),
            3 => {
                tensor_asm!(multicast "3", "{}, {}, {}", d, m, b, k, coords[0], coords[1], coords[2])
            }
            4 => {
                tensor_asm!(multicast "4", "{}, {}, {}, {}", d, m, b, k, coords[0], coords[1], coords[2], coords[3])
            }
            5 => {
                tensor_asm!(multicast "5", "{}, {}, {}, {}, {}", d, m, b, k, coords[0], coords[1], coords[2], coords[3], coords[4])
            }
            _ => crate::__trap_out_of_bounds(N, 6),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let m = sim::map(map, "tma::load_multicast");
        let eb = m.elem_bytes as usize;
        sim::check_shared(m, dst.raw(), "tma::load_multicast");
        sim::check_room(m, dst.raw(), "tma::load_multicast");
        let size = crate::cluster::size();
        assert!(
            (cta_mask as u32) >> size.min(16) == 0,
            "tma::load_multicast: the mask {cta_mask:#b} names a rank outside the cluster of {size} blocks"
        );
        for rank in (0..size.min(16)).filter(|r| cta_mask >> r & 1 == 1) {
            // The same offsets in the destination block (`mapa`), as the hardware addresses
            // them; `map_shared_rank` refuses a block that has exited.
            let base = crate::cluster::map_shared_rank(dst.raw(), rank);
            let peer_bar = crate::cluster::map_shared_rank(bar.addr().raw(), rank);
            sim::for_each(m, coords, "tma::load_multicast", |global, smem| {
                // SAFETY: the caller's contract: the box fits at `dst` in every destination
                // block, the tensor is readable.
                unsafe {
                    let to = base.add(smem);
                    match global {
                        Some(g) => core::ptr::copy_nonoverlapping(g, to, eb),
                        None => core::ptr::write_bytes(to, 0, eb),
                    }
                }
            });
            crate::mbarrier::sim_complete_tx(peer_bar, m.box_bytes() as u32);
        }
    }
}

/// `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`: copies the box at `src` in
/// shared memory to the tensor of `map` at `coords`; elements outside the tensor are not
/// written. Part of the current bulk group ([`commit_group`]).
///
/// # Safety
/// `map` is a tensor map from the runtime for memory only this copy writes until the bulk
/// group completes ([`wait_group`]); `src` is aligned as for [`load`] and holds the box, its
/// writes made visible to the copy engine ([`fence_proxy_async`] after them, then a barrier if
/// other threads wrote it), and is not written until [`wait_group_read`] returns.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::tma::{self, TensorMap};
/// use gpukernel_device::{mma::SharedAddr, shared::shared_array, sync, thread};
/// /// A TMA source: 128-byte aligned (the simulator refuses less).
/// #[repr(C, align(128))]
/// #[derive(Clone, Copy)]
/// pub struct Tile([f32; 64]);
/// // SAFETY: an array of floats, no padding.
/// unsafe impl gpukernel_device::DeviceCopy for Tile {}
///
/// /// Fills a 2D f32 tensor with ones, one 8 × 8 box per block (64 threads).
/// ///
/// /// # Safety
/// /// `map` is a 2D f32 map with 8 × 8 boxes, no swizzle, that only this launch writes.
/// #[kernel]
/// pub unsafe fn ones(map: TensorMap) {
///     let tile = shared_array!(Tile, 1);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: each thread writes its own element (the handle's raw pointer; no reference).
///     unsafe { tile.as_mut_ptr().cast::<f32>().add(t).write(1.0) };
///     tma::fence_proxy_async();
///     sync::sync_threads();
///     if t == 0 {
///         let at = [8 * thread::block_idx_x() as i32, 8 * thread::block_idx_y() as i32];
///         unsafe { tma::store(map, at, SharedAddr::of(tile.as_mut_ptr())) };
///         tma::commit_group();
///         tma::wait_group::<0>();
///     }
/// }
/// ```
#[inline(always)]
pub unsafe fn store<const N: usize>(map: TensorMap, coords: [i32; N], src: SharedAddr) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (m, s) = (map.0, src.raw());
        match N {
            1 => tensor_asm!(store "1", "{}", m, s, coords[0]),
            2 => tensor_asm!(store "2", "{}, {}", m, s, coords[0], coords[1]),
            3 => tensor_asm!(store "3", "{}, {}, {}", m, s, coords[0], coords[1], coords[2]),
            4 => {
                tensor_asm!(store "4", "{}, {}, {}, {}", m, s, coords[0], coords[1], coords[2], coords[3])
            }
            5 => {
                tensor_asm!(store "5", "{}, {}, {}, {}, {}", m, s, coords[0], coords[1], coords[2], coords[3], coords[4])
            }
            _ => crate::__trap_out_of_bounds(N, 6),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let m = sim::map(map, "tma::store");
        let eb = m.elem_bytes as usize;
        let base = src.raw();
        sim::check_shared(m, base, "tma::store");
        sim::check_room(m, base, "tma::store");
        sim::for_each(m, coords, "tma::store", |global, smem| {
            if let Some(g) = global {
                // SAFETY: the caller's contract: the box is at `src`, the tensor writable.
                unsafe { core::ptr::copy_nonoverlapping(base.add(smem), g, eb) };
            }
        });
    }
}

/// `fence.proxy.async.shared::cta`: orders this thread's earlier shared-memory writes before
/// the copy engine's later reads (a [`store`]'s source), and the engine's writes before this
/// thread's later accesses.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{tma, thread};
/// #[kernel]
/// pub fn fenced(mut out: DisjointSlice<u32>) {
///     tma::fence_proxy_async();
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub fn fence_proxy_async() {
    crate::wgmma::fence_proxy_async();
}

/// `cp.async.bulk.commit_group`: closes the bulk group of this thread's [`store`]s issued
/// since the last commit.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{tma, thread};
/// #[kernel]
/// pub fn empty_group(mut out: DisjointSlice<u32>) {
///     tma::commit_group();
///     tma::wait_group::<0>();
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub fn commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: bookkeeping of this thread's bulk copies.
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack));
    }
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's committed bulk
/// groups are pending (their global writes done and visible).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{tma, thread};
/// #[kernel]
/// pub fn drain(mut out: DisjointSlice<u32>) {
///     tma::wait_group::<0>();
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub fn wait_group<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: waits for this thread's own copies.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack));
    }
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` committed bulk groups still
/// read their shared-memory source (which may then be rewritten).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{tma, thread};
/// #[kernel]
/// pub fn reads_done(mut out: DisjointSlice<u32>) {
///     tma::wait_group_read::<0>();
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: waits for this thread's own copies.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack));
    }
}
