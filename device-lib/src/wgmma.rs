//! Hopper warpgroup matrix multiply-accumulate (`wgmma.mma_async`, sm_90a): four warps (a
//! *warpgroup*, 128 consecutive threads) multiply bf16 tiles read straight from shared memory
//! into f32 accumulators held in registers, asynchronously. This is the form that comes near
//! cuBLAS on an H100; [`crate::mma`]'s `mma.sync` needs every operand in registers first.
//!
//! # Building
//! `wgmma` exists only on the architecture-specific target `sm_90a`: build the kernels crate
//! with `nvptx_builder::Builder::from_build_script().arch("sm_90a")`. Its PTX then loads on
//! compute capability 9.0 only (H100, H200).
//!
//! # Shared-memory layout: K-major with the 128-byte swizzle
//! Both operands are *K-major*: A is `64 × K` (a row of A is contiguous in `k`), B is `N × K`
//! (B stored as its transpose: `C = A · Bᵀ`), as a row-major `m × k` A and an `n × k` B are in
//! global memory. A tile row holds 64 bf16 values (128 bytes); rows are 128 bytes apart, and
//! each group of 8 rows (an *atom*, 1024 bytes) starts 1024 bytes after the previous one. Inside
//! an atom, the 16-byte chunk `c` (`k = 8c .. 8c + 8`) of row `r` is stored at chunk position
//! `c ^ (r % 8)` ([`sw128_offset`]): the swizzle that lets the tensor cores, and the copies
//! that fill the tile, reach all 32 banks. Tiles start at a multiple of 1024 bytes
//! ([`SharedAddr::align_up`](crate::mma::SharedAddr::align_up)).
//!
//! # Accumulator layout of `m64nNk16` (PTX ISA, "wgmma register fragments")
//! Thread `t` of the warpgroup (`w = t / 32`, `l = t % 32`) holds, for each `j < N / 8`:
//!
//! | register | row | column |
//! |---|---|---|
//! | `acc[4j]`, `acc[4j + 1]` | `16w + l / 4` | `8j + 2 (l % 4)`, `+ 1` |
//! | `acc[4j + 2]`, `acc[4j + 3]` | `16w + l / 4 + 8` | `8j + 2 (l % 4)`, `+ 1` |
//!
//! # Protocol
//! [`fence`], then one or more `mma_*` calls (a *batch*: each reads a 16-deep `k` slice,
//! [`SmemDesc::add_k`]), [`commit_group`], and later [`Accumulators::wait`] before the
//! accumulators are read or the tiles are overwritten. Shared memory written by ordinary
//! stores or `cp.async` needs [`fence_proxy_async`] by the writing thread, then a barrier,
//! before a `wgmma` reads it (the tensor cores read through the *async proxy*).
//!
//! # Safety
//! Every function that issues a `wgmma` instruction is warpgroup-collective (`.sync.aligned`):
//! all 128 threads of the warpgroup execute the same call together, or the behaviour is
//! undefined. That cannot be checked for free, so they are `unsafe fn`s. The accumulators must
//! not be read or written between an `mma_*` call and the `wait` that covers it (the
//! `Accumulators::wait` form names them, so the compiler keeps its own hands off).
//!
//! # Simulator
//! Each `mma_*` computes the calling thread's accumulators at once from the shared tiles
//! (decoding the swizzle, products summed in f32 in `k` order), and checks that the whole warp
//! called it together and that the tiles are 1024-byte aligned; the fences, commits and waits
//! are no-ops there.

/// `core::arch::asm!` with the accumulators `acc[i]` for each listed `i` as the first
/// operands (`inout(reg32)`, numbered from 0 in the template), then the remaining operands.
#[cfg(target_arch = "nvptx64")]
macro_rules! with_accumulators {
    ($acc:ident, [$($i:literal)*], $($t:expr),+; $($rest:tt)*) => {
        core::arch::asm!($($t),+, $(inout(reg32) $acc[$i],)* $($rest)*)
    };
}

/// Calls `$m!` with its arguments followed by the accumulator numbers `[0 .. 128]`.
macro_rules! with_acc128 {
    ($m:ident { $($args:tt)* }) => {
        $m! { $($args)* [
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
            30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
            57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83
            84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107
            108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
        ] }
    };
}

/// Calls `$m!` with its arguments followed by the accumulator numbers `[0 .. 64]`.
macro_rules! with_acc64 {
    ($m:ident { $($args:tt)* }) => {
        $m! { $($args)* [
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
            30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
            57 58 59 60 61 62 63
        ] }
    };
}

/// One `wgmma.mma_async` function: `acc` (`$regs` f32s) `+= A · Bᵀ` for `$ty` operands of
/// shape `$shape`; `$da`, `$db`, `$sc` number the operands after the accumulators (the two
/// descriptors and the scale-d flag); `$cvt` decodes an element for the simulator twin.
macro_rules! wgmma_mma {
    (
        $(#[$attr:meta])*
        fn $name:ident, $ty:literal, $cvt:path, $regs:literal, $shape:literal,
        $da:literal, $db:literal, $sc:literal, [$first:literal $($i:literal)*]
    ) => {
        wgmma_mma!(@emit $(#[$attr])* fn $name, $ty, $cvt, $regs, $shape, $da, $db, $sc,
            [$first $($i)*], "}, p, 1, 1, 0, 0;", mma);
    };
    // FP8 operands (`k` 32) take no transpose flags; `$cvt` decodes a byte.
    (
        $(#[$attr:meta])*
        fp8 fn $name:ident, $ty:literal, $cvt:path, $regs:literal, $shape:literal,
        $da:literal, $db:literal, $sc:literal, [$first:literal $($i:literal)*]
    ) => {
        wgmma_mma!(@emit $(#[$attr])* fn $name, $ty, $cvt, $regs, $shape, $da, $db, $sc,
            [$first $($i)*], "}, p, 1, 1;", mma_fp8);
    };
    (
        @emit $(#[$attr:meta])*
        fn $name:ident, $ty:literal, $cvt:path, $regs:literal, $shape:literal,
        $da:literal, $db:literal, $sc:literal, [$first:literal $($i:literal)*],
        $flags:literal, $host:ident
    ) => {
        $(#[$attr])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(acc: &mut [f32; $regs], a: SmemDesc, b: SmemDesc) {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: the caller's promises (warpgroup convergence, descriptors into live
            // shared memory that no one writes until the matching wait); registers otherwise.
            unsafe {
                with_accumulators!(
                    acc,
                    [$first $($i)*],
                    "{{",
                    ".reg .pred p;",
                    concat!("setp.ne.b32 p, {", $sc, "}, 0;"),
                    concat!(
                        "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty,
                        " {{{", $first, "}", $(", {", $i, "}",)* "}}, {", $da, "}, {", $db,
                        $flags
                    ),
                    "}}";
                    in(reg64) a.bits,
                    in(reg64) b.bits,
                    in(reg32) 1u32,
                    options(nostack),
                );
            }
            #[cfg(not(target_arch = "nvptx64"))]
            host::$host(acc, &a, &b, $cvt);
        }
    };
}

use crate::mma::SharedAddr;

/// Bytes of one 8-row atom of the 128-byte swizzle (the alignment of a tile).
pub const SW128_ATOM_BYTES: usize = 1024;

/// The byte offset, in a K-major tile with the 128-byte swizzle, of the 16-byte chunk `chunk`
/// (`k = 8 chunk ..`, `chunk < 8`) of row `row`: where a `cp.async` of that chunk goes.
///
/// ```
/// use gpukernel_device::wgmma::sw128_offset;
/// assert_eq!(sw128_offset(0, 3), 48);
/// assert_eq!(sw128_offset(1, 0), 128 + 16); // chunk 0 of row 1 sits at position 1
/// assert_eq!(sw128_offset(9, 2), 1024 + 128 + 3 * 16);
/// ```
#[inline(always)]
pub const fn sw128_offset(row: usize, chunk: usize) -> usize {
    row * 128 + ((chunk ^ (row % 8)) * 16)
}

/// A `wgmma` shared-memory matrix descriptor: a K-major tile with the 128-byte swizzle (the
/// [module documentation](self) describes the layout), at a `k` offset.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread, wgmma::SmemDesc};
///
/// /// The descriptor of the 16-deep slice `k = 32 .. 48` of a tile at the start of the
/// /// (1024-byte aligned) dynamic shared memory.
/// #[kernel]
/// pub fn slice(mut out: DisjointSlice<u32>) {
///     let tile = SharedAddr::of(dynamic_shared::<u8>().as_mut_ptr()).align_up(1024);
///     let _d: SmemDesc = SmemDesc::k_major_sw128(tile).add_k(32);
///     out.set(thread::index(), 1);
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SmemDesc {
    #[cfg(target_arch = "nvptx64")]
    bits: u64,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *const u8,
    #[cfg(not(target_arch = "nvptx64"))]
    k_bytes: usize,
}

impl SmemDesc {
    /// The descriptor of the K-major, 128-byte-swizzled tile that starts at `tile` (a
    /// multiple of [`SW128_ATOM_BYTES`]; the simulator checks it): leading-dimension offset
    /// unused, stride 1024 bytes between 8-row atoms, swizzle mode 128 bytes.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread, wgmma};
    ///
    /// /// Descriptors of the two tiles of a stage: A (64 rows) then B.
    /// #[kernel]
    /// pub fn descriptors(mut out: DisjointSlice<u32>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let a = wgmma::SmemDesc::k_major_sw128(a_tile);
    ///     let b = wgmma::SmemDesc::k_major_sw128(a_tile.add_bytes(64 * 128)).add_k(16);
    ///     let _ = (a, b);
    ///     out.set(thread::index(), 1);
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn k_major_sw128(tile: SharedAddr) -> SmemDesc {
        #[cfg(target_arch = "nvptx64")]
        {
            let start = ((tile.raw() & 0x3_ffff) >> 4) as u64;
            SmemDesc {
                // start | leading offset 16 B (unused when swizzled) | stride 1024 B | 128 B swizzle
                bits: start | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let base = tile.raw() as *const u8;
            assert!(
                (base as usize).is_multiple_of(SW128_ATOM_BYTES),
                "wgmma::SmemDesc::k_major_sw128: the tile at {base:p} is not {SW128_ATOM_BYTES}-byte aligned"
            );
            SmemDesc { base, k_bytes: 0 }
        }
    }

    /// The same tile, `k` elements (16-bit) further along each row: `k` a multiple of 16 with
    /// the result inside the 64-element row (the `k` slices of one 64-deep tile are
    /// `add_k(0)`, `add_k(16)`, `add_k(32)`, `add_k(48)`).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread, wgmma};
    ///
    /// /// The four 16-deep slices of a 64-deep tile.
    /// #[kernel]
    /// pub fn slices(mut out: DisjointSlice<u32>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     let tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let d = wgmma::SmemDesc::k_major_sw128(tile);
    ///     let _slices = [d, d.add_k(16), d.add_k(32), d.add_k(48)];
    ///     out.set(thread::index(), 4);
    /// }
    /// ```
    #[inline(always)]
    pub fn add_k(self, k: usize) -> SmemDesc {
        #[cfg(target_arch = "nvptx64")]
        {
            // 2 bytes per element, the address field counts 16-byte units.
            SmemDesc {
                bits: self.bits.wrapping_add((k as u64 * 2) >> 4),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            SmemDesc {
                base: self.base,
                k_bytes: self.k_bytes + 2 * k,
            }
        }
    }

    /// The same tile, `bytes` further along each row: a multiple of 16 with the result inside
    /// the 128-byte row. For 1-byte elements (FP8) it is the `k` offset itself: the 32-deep
    /// slices of a 128-deep e4m3 tile are `add_k_bytes(0)`, `(32)`, `(64)`, `(96)`.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread, wgmma};
    ///
    /// /// The four 32-deep slices of a 128-deep FP8 tile.
    /// #[kernel]
    /// pub fn fp8_slices(mut out: DisjointSlice<u32>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     let tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let d = wgmma::SmemDesc::k_major_sw128(tile);
    ///     let _slices = [0, 32, 64, 96].map(|k| d.add_k_bytes(k));
    ///     out.set(thread::index(), 4);
    /// }
    /// ```
    #[inline(always)]
    pub fn add_k_bytes(self, bytes: usize) -> SmemDesc {
        #[cfg(target_arch = "nvptx64")]
        {
            // The address field counts 16-byte units.
            SmemDesc {
                bits: self.bits.wrapping_add(bytes as u64 >> 4),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            SmemDesc {
                base: self.base,
                k_bytes: self.k_bytes + bytes,
            }
        }
    }

    /// The simulator's view: the byte `(row, k)` of the tile (an FP8 element).
    #[cfg(not(target_arch = "nvptx64"))]
    fn byte(&self, row: usize, k: usize) -> u8 {
        let byte = self.k_bytes + k;
        let at = sw128_offset(row % 8, byte / 16) + (row / 8) * SW128_ATOM_BYTES + byte % 16;
        // SAFETY: the caller of the `mma_*` function promised a live tile of these rows.
        unsafe { self.base.add(at).read() }
    }

    /// The simulator's view: the bf16 element `(row, k)` of the tile, as f32.
    #[cfg(not(target_arch = "nvptx64"))]
    fn element(&self, row: usize, k: usize, cvt: fn(u16) -> f32) -> f32 {
        let byte = self.k_bytes + 2 * k;
        let at = sw128_offset(row % 8, byte / 16) + (row / 8) * SW128_ATOM_BYTES + byte % 16;
        // SAFETY: the caller of the `mma_*` function promised a live tile of these rows.
        let bits = unsafe { self.base.add(at).cast::<u16>().read_unaligned() };
        cvt(bits)
    }
}

/// Orders this thread's earlier shared-memory writes (ordinary stores and completed
/// `cp.async` copies) before later accesses through the async proxy, which `wgmma` reads
/// through (`fence.proxy.async.shared::cta`). Each writing thread calls it; a barrier then
/// makes the writes of every thread visible to the `wgmma` issued after it.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
/// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
///
/// /// One warpgroup (128 threads, 25 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
/// /// 64 × 64 bf16 `a` and a 128 × 64 `b` (row-major, bits), thread `t` keeping its
/// /// accumulators (layout in the module documentation) in `c[t]`.
/// #[kernel]
/// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 64]>) {
///     assert!(a.len() >= 64 * 64 && b.len() >= 128 * 64 && thread::block_dim_x() == 128);
///     let smem = dynamic_shared::<u8>();
///     assert!(smem.len() >= (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES);
///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
///     let b_tile = a_tile.add_bytes(64 * 128);
///     let t = thread::thread_idx_x() as usize;
///     for q in (t..(64 + 128) * 8).step_by(128) {
///         let (row, chunk) = (q / 8, q % 8);
///         let (src, dst) = if row < 64 {
///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
///         } else {
///             let r = row - 64;
///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
///         };
///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
///         // this thread's and inside the block's shared memory.
///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
///     }
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
///     sync::sync_threads();
///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
///     let mut acc = [0.0f32; 64];
///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
///     // complete, aligned, and not written again.
///     unsafe {
///         wgmma::fence();
///         for k in [0, 16, 32, 48] {
///             wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
///         }
///         wgmma::commit_group();
///         acc.wait::<0>();
///     }
///     c.set(thread::index(), acc);
/// }
/// ```
#[inline(always)]
pub fn fence_proxy_async() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack));
    }
}

/// Starts a batch (`wgmma.fence.sync.aligned`): orders earlier register and shared-memory
/// accesses of the warpgroup before the `mma_*` calls that follow.
///
/// # Safety
/// Warpgroup-collective (module documentation).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
/// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
///
/// /// One warpgroup (128 threads, 25 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
/// /// 64 × 64 bf16 `a` and a 128 × 64 `b` (row-major, bits), thread `t` keeping its
/// /// accumulators (layout in the module documentation) in `c[t]`.
/// #[kernel]
/// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 64]>) {
///     assert!(a.len() >= 64 * 64 && b.len() >= 128 * 64 && thread::block_dim_x() == 128);
///     let smem = dynamic_shared::<u8>();
///     assert!(smem.len() >= (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES);
///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
///     let b_tile = a_tile.add_bytes(64 * 128);
///     let t = thread::thread_idx_x() as usize;
///     for q in (t..(64 + 128) * 8).step_by(128) {
///         let (row, chunk) = (q / 8, q % 8);
///         let (src, dst) = if row < 64 {
///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
///         } else {
///             let r = row - 64;
///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
///         };
///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
///         // this thread's and inside the block's shared memory.
///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
///     }
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
///     sync::sync_threads();
///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
///     let mut acc = [0.0f32; 64];
///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
///     // complete, aligned, and not written again.
///     unsafe {
///         wgmma::fence();
///         for k in [0, 16, 32, 48] {
///             wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
///         }
///         wgmma::commit_group();
///         acc.wait::<0>();
///     }
///     c.set(thread::index(), acc);
/// }
/// ```
#[inline(always)]
pub unsafe fn fence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's convergence promise.
    unsafe {
        core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::converged("wgmma::fence");
}

/// Closes the batch of `mma_*` calls since the last [`fence`] into one group
/// (`wgmma.commit_group.sync.aligned`), for [`Accumulators::wait`].
///
/// # Safety
/// Warpgroup-collective (module documentation).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
/// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
///
/// /// One warpgroup (128 threads, 25 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
/// /// 64 × 64 bf16 `a` and a 128 × 64 `b` (row-major, bits), thread `t` keeping its
/// /// accumulators (layout in the module documentation) in `c[t]`.
/// #[kernel]
/// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 64]>) {
///     assert!(a.len() >= 64 * 64 && b.len() >= 128 * 64 && thread::block_dim_x() == 128);
///     let smem = dynamic_shared::<u8>();
///     assert!(smem.len() >= (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES);
///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
///     let b_tile = a_tile.add_bytes(64 * 128);
///     let t = thread::thread_idx_x() as usize;
///     for q in (t..(64 + 128) * 8).step_by(128) {
///         let (row, chunk) = (q / 8, q % 8);
///         let (src, dst) = if row < 64 {
///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
///         } else {
///             let r = row - 64;
///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
///         };
///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
///         // this thread's and inside the block's shared memory.
///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
///     }
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
///     sync::sync_threads();
///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
///     let mut acc = [0.0f32; 64];
///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
///     // complete, aligned, and not written again.
///     unsafe {
///         wgmma::fence();
///         for k in [0, 16, 32, 48] {
///             wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
///         }
///         wgmma::commit_group();
///         acc.wait::<0>();
///     }
///     c.set(thread::index(), acc);
/// }
/// ```
#[inline(always)]
pub unsafe fn commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's convergence promise.
    unsafe {
        core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack));
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The accumulator arrays of the `wgmma` shapes: `[f32; 128]` (`m64n256k16`) and `[f32; 64]`
/// (`m64n128k16`).
///
/// ```
/// use gpukernel_device::wgmma::Accumulators;
///
/// /// Zeroed accumulators of either shape.
/// fn fresh<A: Accumulators>() -> A {
///     A::zero()
/// }
/// let acc: [f32; 64] = fresh();
/// assert_eq!(acc.len(), 64);
/// ```
pub trait Accumulators: sealed::Sealed {
    /// Waits until at most `N` committed groups of this warpgroup are pending
    /// (`wgmma.wait_group.sync.aligned N`); with `N = 0` the accumulators are final and the
    /// tiles the batches read may be overwritten (after a barrier, for other warpgroups'
    /// batches).
    ///
    /// # Safety
    /// Warpgroup-collective (module documentation).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup (128 threads, 25 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
    /// /// 64 × 64 bf16 `a` and a 128 × 64 `b` (row-major, bits), thread `t` keeping its
    /// /// accumulators (layout in the module documentation) in `c[t]`.
    /// #[kernel]
    /// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 64]>) {
    ///     assert!(a.len() >= 64 * 64 && b.len() >= 128 * 64 && thread::block_dim_x() == 128);
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(smem.len() >= (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let b_tile = a_tile.add_bytes(64 * 128);
    ///     let t = thread::thread_idx_x() as usize;
    ///     for q in (t..(64 + 128) * 8).step_by(128) {
    ///         let (row, chunk) = (q / 8, q % 8);
    ///         let (src, dst) = if row < 64 {
    ///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
    ///         } else {
    ///             let r = row - 64;
    ///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
    ///         };
    ///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
    ///         // this thread's and inside the block's shared memory.
    ///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
    ///     }
    ///     mma::cp_async_commit();
    ///     mma::cp_async_wait::<0>();
    ///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
    ///     sync::sync_threads();
    ///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
    ///     let mut acc = [0.0f32; 64];
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete, aligned, and not written again.
    ///     unsafe {
    ///         wgmma::fence();
    ///         for k in [0, 16, 32, 48] {
    ///             wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
    ///         }
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    unsafe fn wait<const N: u32>(&mut self);

    /// Zeroed accumulators, in registers. (`[0.0; 128]` compiles to a loop that LLVM only
    /// partly unrolls, which leaves the array in local memory.)
    ///
    /// ```
    /// use gpukernel_device::wgmma::Accumulators;
    /// let acc = <[f32; 128]>::zero();
    /// assert!(acc.iter().all(|&x| x == 0.0));
    /// ```
    fn zero() -> Self;
}

with_acc128!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 16 bf16 A and an 256 × 16 bf16 B read from shared memory
    /// through their descriptors, f32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16`, accumulator layout in the
    /// [module documentation](self)). Asynchronous: the result is there after the
    /// [`commit_group`] and [`Accumulators::wait`] that cover this call.
    ///
    /// # Safety
    /// Warpgroup-collective, between a [`fence`] and a [`commit_group`]; `a` and `b` describe
    /// complete tiles (64 and 256 rows, [`fence_proxy_async`] and a barrier after they were
    /// written) that nothing writes until the wait; `acc` is untouched until then.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup (128 threads, 41 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
    /// /// 64 × 64 bf16 `a` and a 256 × 64 `b` (row-major, bits), thread `t` keeping its
    /// /// accumulators (layout in the module documentation) in `c[t]`.
    /// #[kernel]
    /// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 128]>) {
    ///     assert!(a.len() >= 64 * 64 && b.len() >= 256 * 64 && thread::block_dim_x() == 128);
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(smem.len() >= (64 + 256) * 128 + wgmma::SW128_ATOM_BYTES);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let b_tile = a_tile.add_bytes(64 * 128);
    ///     let t = thread::thread_idx_x() as usize;
    ///     for q in (t..(64 + 256) * 8).step_by(128) {
    ///         let (row, chunk) = (q / 8, q % 8);
    ///         let (src, dst) = if row < 64 {
    ///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
    ///         } else {
    ///             let r = row - 64;
    ///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
    ///         };
    ///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
    ///         // this thread's and inside the block's shared memory.
    ///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
    ///     }
    ///     mma::cp_async_commit();
    ///     mma::cp_async_wait::<0>();
    ///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
    ///     sync::sync_threads();
    ///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
    ///     let mut acc = [0.0f32; 128];
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete, aligned, and not written again.
    ///     unsafe {
    ///         wgmma::fence();
    ///         for k in [0, 16, 32, 48] {
    ///             wgmma::mma_m64n256k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
    ///         }
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fn mma_m64n256k16_bf16, "bf16", crate::mma::bf16_to_f32, 128, "m64n256k16", 128, 129, 130,
});

with_acc128!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 16 f16 A and an 256 × 16 f16 B (IEEE half precision) read from shared memory
    /// through their descriptors, f32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16`, accumulator layout in the
    /// [module documentation](self)). Asynchronous: the result is there after the
    /// [`commit_group`] and [`Accumulators::wait`] that cover this call.
    ///
    /// # Safety
    /// Warpgroup-collective, between a [`fence`] and a [`commit_group`]; `a` and `b` describe
    /// complete tiles (64 and 256 rows, [`fence_proxy_async`] and a barrier after they were
    /// written) that nothing writes until the wait; `acc` is untouched until then.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup multiplies the IEEE-half tiles someone staged in the block's dynamic
    /// /// shared memory (64 rows of A, then 256 rows of B, 128-byte-swizzled, after 1 KiB of
    /// /// alignment slack; here all zero) and keeps its accumulators.
    /// #[kernel]
    /// pub fn tile_f16(mut c: DisjointSlice<[f32; 128]>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(thread::block_dim_x() == 128 && smem.len() >= (64 + 256) * 128 + 1024);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let da = SmemDesc::k_major_sw128(a_tile);
    ///     let db = SmemDesc::k_major_sw128(a_tile.add_bytes(64 * 128));
    ///     wgmma::fence_proxy_async();
    ///     sync::sync_threads();
    ///     let mut acc = <[f32; 128]>::zero();
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete and aligned, and nothing writes them.
    ///     unsafe {
    ///         wgmma::fence();
    ///         wgmma::mma_m64n256k16_f16(&mut acc, da, db);
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fn mma_m64n256k16_f16, "f16", crate::mma::f16_to_f32, 128, "m64n256k16", 128, 129, 130,
});

with_acc64!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 16 bf16 A and an 128 × 16 bf16 B read from shared memory
    /// through their descriptors, f32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`, accumulator layout in the
    /// [module documentation](self)). Asynchronous: the result is there after the
    /// [`commit_group`] and [`Accumulators::wait`] that cover this call.
    ///
    /// # Safety
    /// Warpgroup-collective, between a [`fence`] and a [`commit_group`]; `a` and `b` describe
    /// complete tiles (64 and 128 rows, [`fence_proxy_async`] and a barrier after they were
    /// written) that nothing writes until the wait; `acc` is untouched until then.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma, mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup (128 threads, 25 KiB of dynamic shared memory): `c` = `a` · `b`ᵀ for a
    /// /// 64 × 64 bf16 `a` and a 128 × 64 `b` (row-major, bits), thread `t` keeping its
    /// /// accumulators (layout in the module documentation) in `c[t]`.
    /// #[kernel]
    /// pub fn tile(a: &[u16], b: &[u16], mut c: DisjointSlice<[f32; 64]>) {
    ///     assert!(a.len() >= 64 * 64 && b.len() >= 128 * 64 && thread::block_dim_x() == 128);
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(smem.len() >= (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let b_tile = a_tile.add_bytes(64 * 128);
    ///     let t = thread::thread_idx_x() as usize;
    ///     for q in (t..(64 + 128) * 8).step_by(128) {
    ///         let (row, chunk) = (q / 8, q % 8);
    ///         let (src, dst) = if row < 64 {
    ///             (&a[row * 64 + chunk * 8], a_tile.add_bytes(wgmma::sw128_offset(row, chunk)))
    ///         } else {
    ///             let r = row - 64;
    ///             (&b[r * 64 + chunk * 8], b_tile.add_bytes(wgmma::sw128_offset(r, chunk)))
    ///         };
    ///         // SAFETY: 16 readable, 16-byte aligned bytes (a row is 128 bytes); the slot is
    ///         // this thread's and inside the block's shared memory.
    ///         unsafe { mma::cp_async_16_at(dst, (src as *const u16).cast()) };
    ///     }
    ///     mma::cp_async_commit();
    ///     mma::cp_async_wait::<0>();
    ///     wgmma::fence_proxy_async(); // this thread's copies, visible to the tensor cores
    ///     sync::sync_threads();
    ///     let (da, db) = (SmemDesc::k_major_sw128(a_tile), SmemDesc::k_major_sw128(b_tile));
    ///     let mut acc = [0.0f32; 64];
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete, aligned, and not written again.
    ///     unsafe {
    ///         wgmma::fence();
    ///         for k in [0, 16, 32, 48] {
    ///             wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
    ///         }
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fn mma_m64n128k16_bf16, "bf16", crate::mma::bf16_to_f32, 64, "m64n128k16", 64, 65, 66,
});

with_acc64!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 16 f16 A and an 128 × 16 f16 B (IEEE half precision) read from shared memory
    /// through their descriptors, f32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16`, accumulator layout in the
    /// [module documentation](self)). Asynchronous: the result is there after the
    /// [`commit_group`] and [`Accumulators::wait`] that cover this call.
    ///
    /// # Safety
    /// Warpgroup-collective, between a [`fence`] and a [`commit_group`]; `a` and `b` describe
    /// complete tiles (64 and 128 rows, [`fence_proxy_async`] and a barrier after they were
    /// written) that nothing writes until the wait; `acc` is untouched until then.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup multiplies the IEEE-half tiles someone staged in the block's dynamic
    /// /// shared memory (64 rows of A, then 128 rows of B, 128-byte-swizzled, after 1 KiB of
    /// /// alignment slack; here all zero) and keeps its accumulators.
    /// #[kernel]
    /// pub fn tile_f16(mut c: DisjointSlice<[f32; 64]>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(thread::block_dim_x() == 128 && smem.len() >= (64 + 128) * 128 + 1024);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let da = SmemDesc::k_major_sw128(a_tile);
    ///     let db = SmemDesc::k_major_sw128(a_tile.add_bytes(64 * 128));
    ///     wgmma::fence_proxy_async();
    ///     sync::sync_threads();
    ///     let mut acc = <[f32; 64]>::zero();
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete and aligned, and nothing writes them.
    ///     unsafe {
    ///         wgmma::fence();
    ///         wgmma::mma_m64n128k16_f16(&mut acc, da, db);
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fn mma_m64n128k16_f16, "f16", crate::mma::f16_to_f32, 64, "m64n128k16", 64, 65, 66,
});

with_acc128!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 32 FP8 e4m3 A and a 256 × 32 e4m3 B read from shared memory
    /// through their descriptors, f32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3`, accumulator layout in the
    /// [module documentation](self)). The tiles are K-major with the 128-byte swizzle as for
    /// bf16, a row holding 128 one-byte elements: the four 32-deep slices of a row are
    /// [`SmemDesc::add_k_bytes`] `0`, `32`, `64`, `96`. Asynchronous: the result is there after
    /// the [`commit_group`] and [`Accumulators::wait`] that cover this call.
    ///
    /// # Safety
    /// Warpgroup-collective, between a [`fence`] and a [`commit_group`]; `a` and `b` describe
    /// complete tiles (64 and 256 rows, [`fence_proxy_async`] and a barrier after they were
    /// written by ordinary stores, or the TMA's `mbarrier` phase) that nothing writes until
    /// the wait; `acc` is untouched until then.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup multiplies the e4m3 tiles someone staged in the block's dynamic shared
    /// /// memory (64 rows of A, then 256 rows of B, 128 bytes each, 128-byte-swizzled, after
    /// /// 1 KiB of alignment slack; here all zero), 128 deep, and keeps its accumulators.
    /// #[kernel]
    /// pub fn tile_e4m3(mut c: DisjointSlice<[f32; 128]>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(thread::block_dim_x() == 128 && smem.len() >= (64 + 256) * 128 + 1024);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let da = SmemDesc::k_major_sw128(a_tile);
    ///     let db = SmemDesc::k_major_sw128(a_tile.add_bytes(64 * 128));
    ///     wgmma::fence_proxy_async();
    ///     sync::sync_threads();
    ///     let mut acc = <[f32; 128]>::zero();
    ///     // SAFETY: the whole warpgroup runs this straight-line code together; the tiles are
    ///     // complete and aligned, and nothing writes them.
    ///     unsafe {
    ///         wgmma::fence();
    ///         for k in [0, 32, 64, 96] {
    ///             wgmma::mma_m64n256k32_e4m3(&mut acc, da.add_k_bytes(k), db.add_k_bytes(k));
    ///         }
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fp8 fn mma_m64n256k32_e4m3, "e4m3", crate::fp8::e4m3_to_f32, 128, "m64n256k32", 128, 129, 130,
});

with_acc64!(wgmma_mma {
    /// `acc += A · Bᵀ` for a 64 × 32 FP8 e4m3 A and a 128 × 32 e4m3 B
    /// (`wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3`); as
    /// [`mma_m64n256k32_e4m3`] with 128 columns.
    ///
    /// # Safety
    /// As [`mma_m64n256k32_e4m3`], B with 128 rows.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, sync, thread};
    ///
    /// /// One warpgroup multiplies staged e4m3 tiles (here all zero), 32 deep.
    /// #[kernel]
    /// pub fn tile_e4m3_n128(mut c: DisjointSlice<[f32; 64]>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     assert!(thread::block_dim_x() == 128 && smem.len() >= (64 + 128) * 128 + 1024);
    ///     let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    ///     let da = SmemDesc::k_major_sw128(a_tile);
    ///     let db = SmemDesc::k_major_sw128(a_tile.add_bytes(64 * 128));
    ///     wgmma::fence_proxy_async();
    ///     sync::sync_threads();
    ///     let mut acc = <[f32; 64]>::zero();
    ///     // SAFETY: the whole warpgroup runs this together; the tiles are complete, aligned.
    ///     unsafe {
    ///         wgmma::fence();
    ///         wgmma::mma_m64n128k32_e4m3(&mut acc, da, db);
    ///         wgmma::commit_group();
    ///         acc.wait::<0>();
    ///     }
    ///     c.set(thread::index(), acc);
    /// }
    /// ```
    fp8 fn mma_m64n128k32_e4m3, "e4m3", crate::fp8::e4m3_to_f32, 64, "m64n128k32", 64, 65, 66,
});

impl sealed::Sealed for [f32; 128] {}

impl Accumulators for [f32; 128] {
    #[inline(always)]
    fn zero() -> Self {
        // SAFETY: all-zero bits are 0.0 for f32; a memset, which LLVM splits into registers.
        unsafe { core::mem::zeroed() }
    }

    #[inline(always)]
    unsafe fn wait<const N: u32>(&mut self) {
        #[cfg(not(target_arch = "nvptx64"))]
        host::converged("wgmma wait");
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's convergence promise. Naming every accumulator (in a PTX
        // comment) keeps the compiler from reading or moving them across the wait.
        unsafe {
            let acc = self;
            with_accumulators!(
            acc,
                [
                    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
                    30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
                    57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83
                    84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107
                    108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
                ],
                "wgmma.wait_group.sync.aligned {n};",
                "// accumulators: {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} {12} {13} {14} {15} {16} {17} {18} {19} {20} {21} {22} {23} {24} {25} {26} {27} {28} {29} {30} {31} {32} {33} {34} {35} {36} {37} {38} {39} {40} {41} {42} {43} {44} {45} {46} {47} {48} {49} {50} {51} {52} {53} {54} {55} {56} {57} {58} {59} {60} {61} {62} {63} {64} {65} {66} {67} {68} {69} {70} {71} {72} {73} {74} {75} {76} {77} {78} {79} {80} {81} {82} {83} {84} {85} {86} {87} {88} {89} {90} {91} {92} {93} {94} {95} {96} {97} {98} {99} {100} {101} {102} {103} {104} {105} {106} {107} {108} {109} {110} {111} {112} {113} {114} {115} {116} {117} {118} {119} {120} {121} {122} {123} {124} {125} {126} {127}";
                n = const N,
                options(nostack),
            );
        }
    }
}

impl sealed::Sealed for [f32; 64] {}

impl Accumulators for [f32; 64] {
    #[inline(always)]
    fn zero() -> Self {
        // SAFETY: all-zero bits are 0.0 for f32; a memset, which LLVM splits into registers.
        unsafe { core::mem::zeroed() }
    }

    #[inline(always)]
    unsafe fn wait<const N: u32>(&mut self) {
        #[cfg(not(target_arch = "nvptx64"))]
        host::converged("wgmma wait");
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's convergence promise. Naming every accumulator (in a PTX
        // comment) keeps the compiler from reading or moving them across the wait.
        unsafe {
            let acc = self;
            with_accumulators!(
            acc,
                [
                    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
                    30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
                    57 58 59 60 61 62 63
                ],
                "wgmma.wait_group.sync.aligned {n};",
                "// accumulators: {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} {12} {13} {14} {15} {16} {17} {18} {19} {20} {21} {22} {23} {24} {25} {26} {27} {28} {29} {30} {31} {32} {33} {34} {35} {36} {37} {38} {39} {40} {41} {42} {43} {44} {45} {46} {47} {48} {49} {50} {51} {52} {53} {54} {55} {56} {57} {58} {59} {60} {61} {62} {63}";
                n = const N,
                options(nostack),
            );
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::SmemDesc;
    use crate::host::with_context;
    use crate::warp::FULL_MASK;

    /// Checks that the calling thread's whole warp reached this call together.
    #[track_caller]
    pub(super) fn converged(what: &'static str) {
        with_context(what, |cx| {
            let ex = cx.hooks().warp_exchange(
                crate::host::WarpOp {
                    kind: crate::host::WarpOpKind::Collective,
                    name: what,
                },
                FULL_MASK,
                0,
            );
            assert!(
                ex.participants == FULL_MASK,
                "{what} needs all 32 lanes of every warp of the warpgroup (participants {:#010x})",
                ex.participants
            );
        })
    }

    /// The host twin of the FP8 `wgmma.mma_async.m64nNk32` (N = 2 · R): this thread's
    /// accumulators, each the sum of 32 exact products added in `k` order in f32.
    #[track_caller]
    pub(super) fn mma_fp8<const R: usize>(
        acc: &mut [f32; R],
        a: &SmemDesc,
        b: &SmemDesc,
        cvt: fn(u8) -> f32,
    ) {
        converged("wgmma::mma");
        let t = with_context("wgmma::mma", |cx| (cx.linear_thread() % 128) as usize);
        let (w, l) = (t / 32, t % 32);
        // Every code's value once (256 decodes instead of two per product).
        let value: [f32; 256] = core::array::from_fn(|c| cvt(c as u8));
        for (i, v) in acc.iter_mut().enumerate() {
            let row = 16 * w + l / 4 + 8 * ((i / 2) % 2);
            let col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
            let mut s = 0f32;
            for k in 0..32 {
                s += value[a.byte(row, k) as usize] * value[b.byte(col, k) as usize];
            }
            *v += s;
        }
    }

    /// The host twin of `wgmma.mma_async.m64nNk16` (N = 2 · R): this thread's accumulators.
    #[track_caller]
    pub(super) fn mma<const R: usize>(
        acc: &mut [f32; R],
        a: &SmemDesc,
        b: &SmemDesc,
        cvt: fn(u16) -> f32,
    ) {
        converged("wgmma::mma");
        let t = with_context("wgmma::mma", |cx| (cx.linear_thread() % 128) as usize);
        let (w, l) = (t / 32, t % 32);
        for (i, v) in acc.iter_mut().enumerate() {
            let row = 16 * w + l / 4 + 8 * ((i / 2) % 2);
            let col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
            let mut s = 0f32;
            for k in 0..16 {
                s += a.element(row, k, cvt) * b.element(col, k, cvt);
            }
            *v += s;
        }
    }
}

/// `setmaxnreg.inc.sync.aligned.u32 N` (sm_90a): raises the calling warpgroup's per-thread
/// register budget to `N` (24 to 256, a multiple of 8), taking registers that other
/// warpgroups of the block released with [`setmaxnreg_dec`]: warp specialisation gives the
/// math warpgroups more registers than the producer. A no-op in the simulator.
///
/// # Safety
/// Warpgroup-collective: all four warps of a warpgroup execute the same call, converged; the
/// block's budget after every warpgroup's change fits the registers it was launched with
/// (ptxas's count times the threads), else the warps wait for registers forever.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, wgmma};
/// /// Two warpgroups: the first gives registers back, the second takes them.
/// #[kernel]
/// pub fn specialised(mut out: DisjointSlice<u32>) {
///     let wg = thread::thread_idx_x() / 128;
///     // SAFETY: each warpgroup executes one call, converged; 40 + 232 ≤ 2 × 168.
///     if wg == 0 {
///         unsafe { wgmma::setmaxnreg_dec::<40>() };
///     } else {
///         unsafe { wgmma::setmaxnreg_inc::<232>() };
///     }
///     out.set(thread::index(), wg);
/// }
/// ```
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    const {
        assert!(
            N >= 24 && N <= 256 && N.is_multiple_of(8),
            "setmaxnreg: N must be 24 to 256, a multiple of 8"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack));
    }
}

/// `setmaxnreg.dec.sync.aligned.u32 N` (sm_90a): lowers the calling warpgroup's per-thread
/// register budget to `N` (24 to 256, a multiple of 8), releasing registers for
/// [`setmaxnreg_inc`]. A no-op in the simulator.
///
/// # Safety
/// As [`setmaxnreg_inc`]; the warpgroup's live values fit `N` registers afterwards (ptxas
/// spills nothing for this: the kernel must be written for it).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{thread, wgmma};
/// #[kernel]
/// pub fn producer_gives_back(mut out: DisjointSlice<u32>) {
///     if thread::thread_idx_x() / 128 == 0 {
///         unsafe { wgmma::setmaxnreg_dec::<40>() }; // SAFETY: the warpgroup, converged
///     }
///     out.set(thread::index(), 0);
/// }
/// ```
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    const {
        assert!(
            N >= 24 && N <= 256 && N.is_multiple_of(8),
            "setmaxnreg: N must be 24 to 256, a multiple of 8"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack));
    }
}
