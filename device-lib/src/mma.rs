//! Warp-level matrix multiply-accumulate on tensor cores (`mma.sync`), the shared-memory
//! fragment loads that feed it (`ldmatrix`) and asynchronous global → shared copies
//! (`cp.async`), with simulator twins.
//!
//! # Types
//! Half-precision operands travel as raw bit patterns: a `u32` holds two 16-bit elements, the
//! lower-indexed one in the low half (PTX's `.bf16x2` / `.f16x2`). [`bf16_bits`] and
//! [`bf16_to_f32`] convert single values (round to nearest even).
//!
//! # Fragment layouts of `mma.sync.aligned.m16n8k16.row.col` (PTX ISA, "Matrix Fragments")
//! With `g = lane / 4` (the group) and `t = lane % 4` (the thread in its group):
//!
//! | operand | register | holds |
//! |---|---|---|
//! | A, 16×16 row-major | `a[0]` | row `g`, columns `2t, 2t+1` |
//! | | `a[1]` | row `g + 8`, columns `2t, 2t+1` |
//! | | `a[2]` | row `g`, columns `2t+8, 2t+9` |
//! | | `a[3]` | row `g + 8`, columns `2t+8, 2t+9` |
//! | B, 16×8 (stored as its 8×16 transpose: `n` rows of `k`) | `b[0]` | `k = 2t, 2t+1`, `n = g` |
//! | | `b[1]` | `k = 2t+8, 2t+9`, `n = g` |
//! | C and D, 16×8 f32 | `c[0]`, `c[1]` | row `g`, columns `2t`, `2t+1` |
//! | | `c[2]`, `c[3]` | row `g + 8`, columns `2t`, `2t+1` |
//!
//! [`ldmatrix_x4`] loads four 8×8 matrices of 16-bit elements: lane `l` passes the address of
//! row `l % 8` of matrix `l / 8`, and receives in register `j` row `l / 4`, columns
//! `2 (l % 4)`, `2 (l % 4) + 1` of matrix `j`: exactly the A layout above when lane `l` points at
//! row `l % 16`, column `8 (l / 16)` of a row-major 16×16 tile, and two B fragments (`n` tiles
//! `0..8` and `8..16`) when it points at row `8 (l / 16) + l % 8`, column `8 ((l / 8) % 2)` of an
//! `n`-major 16×16 tile.
//!
//! # Safety of the warp-collective forms
//! `mma.sync.aligned` and `ldmatrix.sync.aligned` require all 32 lanes of the warp to execute
//! the same instruction together (converged, same call site); anything else is undefined in the
//! PTX ISA. That cannot be checked for free, so they are `unsafe fn`s. The simulator checks it:
//! a lane missing from the exchange is reported as an error naming the kernel and thread.
//!
//! # Simulator
//! Each collective exchanges the lanes' registers through the simulator's warp exchange and
//! computes the same result on the host (products summed in f32 in `k` order: the tensor
//! core's rounding of the inner sum is unspecified, so results agree to f32 accuracy, not bit
//! for bit). `cp.async` copies at once, and its commit / wait are no-ops.

/// The bits of `x` rounded to bf16 (round to nearest even; NaN stays NaN).
///
/// ```
/// use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
/// assert_eq!(bf16_bits(1.0), 0x3f80);
/// assert_eq!(bf16_to_f32(bf16_bits(0.1)), 0.10009765625); // 8 significant bits
/// ```
#[inline(always)]
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// The f32 value of the bf16 bit pattern `b` (exact).
///
/// ```
/// use gpukernel_device::mma::bf16_to_f32;
/// assert_eq!(bf16_to_f32(0xc020), -2.5);
/// ```
#[inline(always)]
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Two bf16 bit patterns in one register, `lo` in the low half.
///
/// ```
/// use gpukernel_device::mma::{bf16_bits, pack2};
/// assert_eq!(pack2(bf16_bits(1.0), bf16_bits(-2.0)), 0xc000_3f80);
/// ```
#[inline(always)]
pub fn pack2(lo: u16, hi: u16) -> u32 {
    lo as u32 | ((hi as u32) << 16)
}

/// `lo` and `hi` rounded to bf16 (nearest even) and packed into one register, `lo` in the low
/// half: an `mma` A fragment register from two f32 results (`cvt.rn.bf16x2.f32`, one
/// instruction; sm_80 or later).
///
/// ```
/// use gpukernel_device::mma::{bf16_bits, pack2, pack_bf16x2};
/// assert_eq!(pack_bf16x2(1.0, -2.0), pack2(bf16_bits(1.0), bf16_bits(-2.0)));
/// ```
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: u32;
        // SAFETY: registers only.
        unsafe {
            core::arch::asm!(
                "cvt.rn.bf16x2.f32 {0}, {1}, {2};",
                out(reg32) d, in(reg32) hi, in(reg32) lo,
                options(pure, nomem, nostack),
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        pack2(bf16_bits(lo), bf16_bits(hi))
    }
}

/// `D = A · B + C` on one warp's 16×16 bf16 A, 16×8 bf16 B, 16×8 f32 C fragments
/// (`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`; layouts in the
/// [module documentation](self)). Needs sm_80 or later.
///
/// # Safety
/// All 32 lanes of the warp execute this same call together (see the module documentation).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{mma, thread};
///
/// /// One warp: `d` (16×8, f32) = `a` (16×16) · `b`ᵀ (`b` stored 8×16), bf16 bit patterns in.
/// /// Each lane gathers its fragments (layouts in the module documentation) and keeps its four
/// /// results: lane `l` holds rows `l / 4` and `l / 4 + 8`, columns `2 (l % 4)` and the next.
/// #[kernel]
/// pub fn tile_mma(a: &[u16], b: &[u16], mut d: DisjointSlice<[f32; 4]>) {
///     let l = thread::lane_id() as usize;
///     let (g, t) = (l / 4, l % 4);
///     let at = |r: usize, c: usize| mma::pack2(a[r * 16 + c], a[r * 16 + c + 1]);
///     let bt = |n: usize, k: usize| mma::pack2(b[n * 16 + k], b[n * 16 + k + 1]);
///     let af = [at(g, 2 * t), at(g + 8, 2 * t), at(g, 2 * t + 8), at(g + 8, 2 * t + 8)];
///     let bf = [bt(g, 2 * t), bt(g, 2 * t + 8)];
///     // SAFETY: launched as one warp of 32 threads; every lane reaches this call together.
///     let acc = unsafe { mma::mma_m16n8k16_bf16(af, bf, [0.0; 4]) };
///     d.set(thread::index(), acc);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16_bf16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: [f32; 4];
        let (mut d0, mut d1, mut d2, mut d3) = (c[0], c[1], c[2], c[3]);
        // SAFETY: the caller's convergence promise; registers only.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg32) d0, inout(reg32) d1, inout(reg32) d2, inout(reg32) d3,
                in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3],
                in(reg32) b[0], in(reg32) b[1],
                options(pure, nomem, nostack),
            );
        }
        d = [d0, d1, d2, d3];
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::mma(a, b, c, bf16_to_f32)
    }
}

/// [`mma_m16n8k16_bf16`] for IEEE half precision operands
/// (`mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`).
///
/// # Safety
/// As [`mma_m16n8k16_bf16`].
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{mma, thread};
///
/// /// One warp: `d` (16×8, f32) = `a` (16×16) · `b`ᵀ (`b` stored 8×16), f16 bit patterns in.
/// /// Each lane gathers its fragments (layouts in the module documentation) and keeps its four
/// /// results: lane `l` holds rows `l / 4` and `l / 4 + 8`, columns `2 (l % 4)` and the next.
/// #[kernel]
/// pub fn tile_mma(a: &[u16], b: &[u16], mut d: DisjointSlice<[f32; 4]>) {
///     let l = thread::lane_id() as usize;
///     let (g, t) = (l / 4, l % 4);
///     let at = |r: usize, c: usize| mma::pack2(a[r * 16 + c], a[r * 16 + c + 1]);
///     let bt = |n: usize, k: usize| mma::pack2(b[n * 16 + k], b[n * 16 + k + 1]);
///     let af = [at(g, 2 * t), at(g + 8, 2 * t), at(g, 2 * t + 8), at(g + 8, 2 * t + 8)];
///     let bf = [bt(g, 2 * t), bt(g, 2 * t + 8)];
///     // SAFETY: launched as one warp of 32 threads; every lane reaches this call together.
///     let acc = unsafe { mma::mma_m16n8k16_f16(af, bf, [0.0; 4]) };
///     d.set(thread::index(), acc);
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16_f16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (mut d0, mut d1, mut d2, mut d3) = (c[0], c[1], c[2], c[3]);
        // SAFETY: the caller's convergence promise; registers only.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg32) d0, inout(reg32) d1, inout(reg32) d2, inout(reg32) d3,
                in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3],
                in(reg32) b[0], in(reg32) b[1],
                options(pure, nomem, nostack),
            );
        }
        [d0, d1, d2, d3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::mma(a, b, c, f16_to_f32)
    }
}

/// The f32 value of the IEEE half-precision bit pattern `h` (exact).
///
/// ```
/// use gpukernel_device::mma::f16_to_f32;
/// assert_eq!(f16_to_f32(0x3c00), 1.0);
/// assert_eq!(f16_to_f32(0x3555), 0.333251953125);
/// ```
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// The 32-bit shared-state-space address of a generic pointer into shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shared_u32<T>(p: *const T) -> u32 {
    let s: u64;
    // SAFETY: address arithmetic only.
    unsafe {
        core::arch::asm!("cvta.to.shared.u64 {0}, {1};", out(reg64) s, in(reg64) p as u64,
            options(pure, nomem, nostack));
    }
    s as u32
}

/// An address in the block's shared memory: the 32-bit shared-state-space address on the GPU
/// (what `ldmatrix` and `cp.async` take), a pointer in the simulator. Converting once and
/// offsetting it keeps the per-access address arithmetic 32-bit (the pointer forms of this
/// module convert each time: `cvta.to.shared` plus a read of the shared window's base).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Chunk([u32; 4]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
///
/// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
/// /// writes each chunk's first word back in reverse order.
/// #[kernel]
/// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
///     let tile = shared_array!(Chunk, 64);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
///     // chunk `t`; nothing touches the slot before the wait.
///     let base = mma::SharedAddr::of(tile.as_mut_ptr());
///     unsafe { mma::cp_async_16_at(base.add_bytes(16 * t), x.as_ptr().add(4 * t).cast()) };
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     sync::sync_threads(); // the other threads' copies are complete too
///     // SAFETY: no writes after the barrier.
///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedAddr {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    addr: *mut u8,
}

impl SharedAddr {
    /// The shared address of `p`, which must point into shared memory (a
    /// [`shared_array!`](crate::shared::shared_array) or [`dynamic_shared`](crate::shared::dynamic_shared)
    /// element) for the result to be usable.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::shared::shared_array;
    /// use gpukernel_device::{mma, sync, thread};
    ///
    /// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
    /// #[derive(Clone, Copy)]
    /// #[repr(C, align(16))]
    /// pub struct Chunk([u32; 4]);
    /// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
    /// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
    ///
    /// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
    /// /// writes each chunk's first word back in reverse order.
    /// #[kernel]
    /// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
    ///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
    ///     let tile = shared_array!(Chunk, 64);
    ///     let t = thread::thread_idx_x() as usize;
    ///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
    ///     // chunk `t`; nothing touches the slot before the wait.
    ///     let base = mma::SharedAddr::of(tile.as_mut_ptr());
    ///     unsafe { mma::cp_async_16_at(base.add_bytes(16 * t), x.as_ptr().add(4 * t).cast()) };
    ///     mma::cp_async_commit();
    ///     mma::cp_async_wait::<0>();
    ///     sync::sync_threads(); // the other threads' copies are complete too
    ///     // SAFETY: no writes after the barrier.
    ///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
    /// }
    /// ```
    #[inline(always)]
    pub fn of<T>(p: *const T) -> SharedAddr {
        #[cfg(target_arch = "nvptx64")]
        {
            SharedAddr {
                addr: shared_u32(p),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            SharedAddr { addr: p as *mut u8 }
        }
    }

    /// This address plus `bytes` (no bounds: the accessors' callers promise validity).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::shared::shared_array;
    /// use gpukernel_device::{mma, sync, thread};
    ///
    /// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
    /// #[derive(Clone, Copy)]
    /// #[repr(C, align(16))]
    /// pub struct Chunk([u32; 4]);
    /// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
    /// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
    ///
    /// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
    /// /// writes each chunk's first word back in reverse order.
    /// #[kernel]
    /// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
    ///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
    ///     let tile = shared_array!(Chunk, 64);
    ///     let t = thread::thread_idx_x() as usize;
    ///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
    ///     // chunk `t`; nothing touches the slot before the wait.
    ///     let base = mma::SharedAddr::of(tile.as_mut_ptr());
    ///     unsafe { mma::cp_async_16_at(base.add_bytes(16 * t), x.as_ptr().add(4 * t).cast()) };
    ///     mma::cp_async_commit();
    ///     mma::cp_async_wait::<0>();
    ///     sync::sync_threads(); // the other threads' copies are complete too
    ///     // SAFETY: no writes after the barrier.
    ///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
    /// }
    /// ```
    #[inline(always)]
    pub fn add_bytes(self, bytes: usize) -> SharedAddr {
        #[cfg(target_arch = "nvptx64")]
        {
            SharedAddr {
                addr: self.addr.wrapping_add(bytes as u32),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            SharedAddr {
                addr: self.addr.wrapping_add(bytes),
            }
        }
    }
}

impl SharedAddr {
    /// This address with `bits` XORed in: a swizzled column inside a tile whose start is
    /// aligned past `bits` (e.g. chunk `c ^ (row % 8)` of a 1024-byte-aligned tile). Unlike an
    /// added offset, the compiler cannot fold it into an invariant sum with the tile's start,
    /// so a loop that alternates tiles keeps one address per lane instead of one per column.
    ///
    /// ```
    /// use gpukernel_device::mma::SharedAddr;
    /// #[repr(align(1024))]
    /// struct Tile([u8; 1024]);
    /// let t = Tile([0; 1024]);
    /// let a = SharedAddr::of(t.0.as_ptr());
    /// assert_eq!(a.bytes_to(a.add_bytes(16).xor_bytes(0x70)), 0x60);
    /// ```
    #[inline(always)]
    pub fn xor_bytes(self, bits: usize) -> SharedAddr {
        #[cfg(target_arch = "nvptx64")]
        {
            SharedAddr {
                addr: self.addr ^ bits as u32,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            SharedAddr {
                addr: self.addr.map_addr(|a| a ^ bits),
            }
        }
    }

    /// This address rounded up to a multiple of `align` (a power of two), e.g. the 1024 bytes
    /// a `wgmma` tile with the 128-byte swizzle starts at (allocate `align` spare bytes).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread};
    ///
    /// /// Reports how many bytes of the dynamic shared memory precede the first 1024-byte
    /// /// boundary.
    /// #[kernel]
    /// pub fn padding(mut out: DisjointSlice<u32>) {
    ///     let smem = dynamic_shared::<u8>();
    ///     let base = SharedAddr::of(smem.as_mut_ptr());
    ///     out.set(thread::index(), base.bytes_to(base.align_up(1024)) as u32);
    /// }
    /// ```
    #[inline(always)]
    pub fn align_up(self, align: usize) -> SharedAddr {
        let a = self.raw_usize();
        self.add_bytes(a.wrapping_neg() & (align - 1))
    }

    /// The number of bytes from this address to `later` (`later` not below it).
    ///
    /// ```
    /// use gpukernel_device::mma::SharedAddr;
    /// let x = [0u8; 64];
    /// let a = SharedAddr::of(x.as_ptr());
    /// assert_eq!(a.bytes_to(a.add_bytes(48)), 48);
    /// ```
    #[inline(always)]
    pub fn bytes_to(self, later: SharedAddr) -> usize {
        later.raw_usize().wrapping_sub(self.raw_usize())
    }

    /// The raw address: the 32-bit shared-window address on the GPU, the pointer on the host.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn raw(self) -> u32 {
        self.addr
    }

    /// The raw address: the 32-bit shared-window address on the GPU, the pointer on the host.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub(crate) fn raw(self) -> *mut u8 {
        self.addr
    }

    #[inline(always)]
    fn raw_usize(self) -> usize {
        self.raw() as usize
    }
}

/// [`ldmatrix_x4`] at a [`SharedAddr`] (this lane's row).
///
/// # Safety
/// As [`ldmatrix_x4`].
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Eight bf16 values, 16-byte aligned: one `ldmatrix` row.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Row([u16; 8]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Row {}
///
/// /// One warp stages a row-major 16×16 bf16 tile in shared memory and loads it as an `mma`
/// /// A fragment: lane `l` points at row `l % 16`, column `8 (l / 16)`.
/// #[kernel]
/// pub fn load_fragment(a: &[u16], mut out: DisjointSlice<[u32; 4]>) {
///     let tile = shared_array!(Row, 32);
///     let l = thread::lane_id() as usize;
///     let mut row = [0u16; 8];
///     row.copy_from_slice(&a[8 * l..8 * l + 8]);
///     // SAFETY: slot `l` is this lane's; read after the barrier.
///     unsafe { tile.write(l, Row(row)) };
///     sync::sync_threads();
///     let p = tile.as_mut_ptr().cast::<u16>().wrapping_add((l % 16) * 16 + (l / 16) * 8);
///     // SAFETY: one converged warp; 16-byte aligned rows of the tile; no writer any more.
///     out.set(thread::index(), unsafe { mma::ldmatrix_x4_at(mma::SharedAddr::of(p)) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ldmatrix_x4_at(row: SharedAddr) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (r0, r1, r2, r3): (u32, u32, u32, u32);
        // SAFETY: the caller's promises (convergence, a shared address, no writer).
        unsafe {
            core::arch::asm!(
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3,
                in(reg32) row.addr,
                options(readonly, nostack),
            );
        }
        [r0, r1, r2, r3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::ldmatrix::<4>(row.addr as *const u16)
    }
}

/// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: [`ldmatrix_x4_at`] with each 8×8 matrix
/// transposed. Lane `l` passes the address of row `l % 8` of matrix `l / 8` and receives in
/// register `j` the elements at rows `2 (l % 4)` and `2 (l % 4) + 1` of column `l / 4` of
/// matrix `j`: the `mma` B fragment of a `k`-major (row-major `k × n`) tile, as the `V` of
/// `P · V` is stored. Matrices `k 0..8` and `k 8..16` of one `n` tile give `b[0]`, `b[1]`.
///
/// # Safety
/// As [`ldmatrix_x4`].
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Eight bf16 values, 16-byte aligned: one `ldmatrix` row.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Row([u16; 8]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Row {}
///
/// /// One warp stages four 8×8 matrices (row `r` of matrix `j` in slot `8 j + r`) and loads
/// /// them transposed: lane `l` points at slot `l`.
/// #[kernel]
/// pub fn load_transposed(a: &[u16], mut out: DisjointSlice<[u32; 4]>) {
///     let tile = shared_array!(Row, 32);
///     let l = thread::lane_id() as usize;
///     let mut row = [0u16; 8];
///     row.copy_from_slice(&a[8 * l..8 * l + 8]);
///     // SAFETY: slot `l` is this lane's; read after the barrier.
///     unsafe { tile.write(l, Row(row)) };
///     sync::sync_threads();
///     let p = tile.as_mut_ptr().cast::<u16>().wrapping_add(8 * l);
///     // SAFETY: one converged warp; 16-byte aligned rows of the tile; no writer any more.
///     out.set(thread::index(), unsafe { mma::ldmatrix_x4_trans_at(mma::SharedAddr::of(p)) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ldmatrix_x4_trans_at(row: SharedAddr) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (r0, r1, r2, r3): (u32, u32, u32, u32);
        // SAFETY: the caller's promises (convergence, a shared address, no writer).
        unsafe {
            core::arch::asm!(
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3,
                in(reg32) row.addr,
                options(readonly, nostack),
            );
        }
        [r0, r1, r2, r3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::ldmatrix_trans(row.addr as *const u16)
    }
}

/// [`cp_async_16`] to a [`SharedAddr`].
///
/// # Safety
/// As [`cp_async_16`].
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Chunk([u32; 4]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
///
/// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
/// /// writes each chunk's first word back in reverse order.
/// #[kernel]
/// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
///     let tile = shared_array!(Chunk, 64);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
///     // chunk `t`; nothing touches the slot before the wait.
///     let base = mma::SharedAddr::of(tile.as_mut_ptr());
///     unsafe { mma::cp_async_16_at(base.add_bytes(16 * t), x.as_ptr().add(4 * t).cast()) };
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     sync::sync_threads(); // the other threads' copies are complete too
///     // SAFETY: no writes after the barrier.
///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
/// }
/// ```
#[inline(always)]
pub unsafe fn cp_async_16_at(dst: SharedAddr, src: *const u8) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promises.
    unsafe {
        core::arch::asm!(
            "cp.async.cg.shared.global [{0}], [{1}], 16;",
            in(reg32) dst.addr, in(reg64) src,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promises; the simulator copies at once.
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst.addr, 16)
    }
}

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8×8 matrices of 16-bit elements from
/// shared memory, one row address per lane (layout in the [module documentation](self)).
///
/// # Safety
/// All 32 lanes of the warp execute this call together; `row` points into shared memory, is
/// 16-byte aligned, and its 16 bytes are not written concurrently.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Eight bf16 values, 16-byte aligned: one `ldmatrix` row.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Row([u16; 8]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Row {}
///
/// /// One warp stages a row-major 16×16 bf16 tile in shared memory and loads it as an `mma`
/// /// A fragment: lane `l` points at row `l % 16`, column `8 (l / 16)`.
/// #[kernel]
/// pub fn load_fragment(a: &[u16], mut out: DisjointSlice<[u32; 4]>) {
///     let tile = shared_array!(Row, 32);
///     let l = thread::lane_id() as usize;
///     let mut row = [0u16; 8];
///     row.copy_from_slice(&a[8 * l..8 * l + 8]);
///     // SAFETY: slot `l` is this lane's; read after the barrier.
///     unsafe { tile.write(l, Row(row)) };
///     sync::sync_threads();
///     let p = tile.as_mut_ptr().cast::<u16>().wrapping_add((l % 16) * 16 + (l / 16) * 8);
///     // SAFETY: one converged warp; 16-byte aligned rows of the tile; no writer any more.
///     out.set(thread::index(), unsafe { mma::ldmatrix_x4(p) });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ldmatrix_x4(row: *const u16) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (r0, r1, r2, r3): (u32, u32, u32, u32);
        // SAFETY: the caller's promises (convergence, a shared address, no writer).
        unsafe {
            core::arch::asm!(
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3,
                in(reg32) shared_u32(row),
                options(readonly, nostack),
            );
        }
        [r0, r1, r2, r3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::ldmatrix::<4>(row)
    }
}

/// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: two 8×8 matrices (lanes 0..16 pass the
/// addresses; the others' are ignored).
///
/// # Safety
/// As [`ldmatrix_x4`].
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Eight bf16 values, 16-byte aligned: one `ldmatrix` row.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Row([u16; 8]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Row {}
///
/// /// One warp stages a row-major 16×16 bf16 tile in shared memory and loads it as an `mma`
/// /// A fragment: lane `l` points at row `l % 16`, column `8 (l / 16)`.
/// #[kernel]
/// pub fn load_fragment(a: &[u16], mut out: DisjointSlice<[u32; 4]>) {
///     let tile = shared_array!(Row, 32);
///     let l = thread::lane_id() as usize;
///     let mut row = [0u16; 8];
///     row.copy_from_slice(&a[8 * l..8 * l + 8]);
///     // SAFETY: slot `l` is this lane's; read after the barrier.
///     unsafe { tile.write(l, Row(row)) };
///     sync::sync_threads();
///     let p = tile.as_mut_ptr().cast::<u16>().wrapping_add((l % 16) * 16 + (l / 16) * 8);
///     // SAFETY: one converged warp; 16-byte aligned rows of the tile; no writer any more.
///     out.set(thread::index(), unsafe { { let [r0, r1] = mma::ldmatrix_x2(p); [r0, r1, 0, 0] } });
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ldmatrix_x2(row: *const u16) -> [u32; 2] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (r0, r1): (u32, u32);
        // SAFETY: as in `ldmatrix_x4`.
        unsafe {
            core::arch::asm!(
                "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{0}, {1}}}, [{2}];",
                out(reg32) r0, out(reg32) r1,
                in(reg32) shared_u32(row),
                options(readonly, nostack),
            );
        }
        [r0, r1]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let r = host::ldmatrix::<2>(row);
        [r[0], r[1]]
    }
}

/// Starts an asynchronous copy of 16 bytes from global to shared memory
/// (`cp.async.cg.shared.global`, bypassing L1). The data is there after
/// [`cp_async_commit`] and a [`cp_async_wait`] that covers its group, followed by a barrier
/// for the other threads of the block. Needs sm_80 or later.
///
/// # Safety
/// `dst` points into shared memory and `src` into global memory, both 16-byte aligned and
/// valid for 16 bytes; nothing reads or writes `dst` until the wait.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Chunk([u32; 4]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
///
/// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
/// /// writes each chunk's first word back in reverse order.
/// #[kernel]
/// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
///     let tile = shared_array!(Chunk, 64);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
///     // chunk `t`; nothing touches the slot before the wait.
///     unsafe { mma::cp_async_16(tile.as_mut_ptr().add(t).cast(), x.as_ptr().add(4 * t).cast()) };
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     sync::sync_threads(); // the other threads' copies are complete too
///     // SAFETY: no writes after the barrier.
///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
/// }
/// ```
#[inline(always)]
pub unsafe fn cp_async_16(dst: *mut u8, src: *const u8) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promises.
    unsafe {
        core::arch::asm!(
            "cp.async.cg.shared.global [{0}], [{1}], 16;",
            in(reg32) shared_u32(dst), in(reg64) src,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promises; the simulator copies at once.
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, 16)
    }
}

/// Closes the calling thread's group of [`cp_async_16`] copies (`cp.async.commit_group`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Chunk([u32; 4]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
///
/// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
/// /// writes each chunk's first word back in reverse order.
/// #[kernel]
/// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
///     let tile = shared_array!(Chunk, 64);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
///     // chunk `t`; nothing touches the slot before the wait.
///     unsafe { mma::cp_async_16(tile.as_mut_ptr().add(t).cast(), x.as_ptr().add(4 * t).cast()) };
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     sync::sync_threads(); // the other threads' copies are complete too
///     // SAFETY: no writes after the barrier.
///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
/// }
/// ```
#[inline(always)]
pub fn cp_async_commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; affects only the calling thread's copy groups.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack));
    }
}

/// Waits until at most `N` of the calling thread's committed copy groups are still in flight
/// (`cp.async.wait_group N`). Other threads' copies need a barrier after it.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::shared::shared_array;
/// use gpukernel_device::{mma, sync, thread};
///
/// /// Sixteen bytes, 16-byte aligned: the unit of `cp.async`.
/// #[derive(Clone, Copy)]
/// #[repr(C, align(16))]
/// pub struct Chunk([u32; 4]);
/// // SAFETY: a `#[repr(C)]` array of integers: no padding, all-zero valid.
/// unsafe impl gpukernel_device::DeviceCopy for Chunk {}
///
/// /// One block of 64 threads copies `x[..256]` to shared memory asynchronously, waits, and
/// /// writes each chunk's first word back in reverse order.
/// #[kernel]
/// pub fn stage(x: &[u32], mut out: DisjointSlice<u32>) {
///     assert!(x.len() >= 256 && thread::block_dim_x() == 64);
///     let tile = shared_array!(Chunk, 64);
///     let t = thread::thread_idx_x() as usize;
///     // SAFETY: slot `t` is this thread's; `x`'s allocation is 16-byte aligned and holds
///     // chunk `t`; nothing touches the slot before the wait.
///     unsafe { mma::cp_async_16(tile.as_mut_ptr().add(t).cast(), x.as_ptr().add(4 * t).cast()) };
///     mma::cp_async_commit();
///     mma::cp_async_wait::<0>();
///     sync::sync_threads(); // the other threads' copies are complete too
///     // SAFETY: no writes after the barrier.
///     out.set(thread::index(), unsafe { tile.read(63 - t) }.0[0]);
/// }
/// ```
#[inline(always)]
pub fn cp_async_wait<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; waits on the calling thread's own copies.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack));
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use crate::host::with_context;
    use crate::warp::FULL_MASK;

    /// Every lane's `v`, through the simulator's warp exchange over the full warp.
    #[track_caller]
    fn exchange(what: &'static str, v: u64) -> [u64; 32] {
        with_context(what, |cx| {
            let ex = cx.hooks().warp_exchange(
                crate::host::WarpOp {
                    kind: crate::host::WarpOpKind::Collective,
                    name: what,
                },
                FULL_MASK,
                v,
            );
            assert!(
                ex.participants == FULL_MASK,
                "{what} needs all 32 lanes of the warp (participants {:#010x})",
                ex.participants
            );
            ex.values
        })
    }

    #[track_caller]
    fn lane() -> usize {
        with_context("mma", |cx| (cx.linear_thread() % 32) as usize)
    }

    /// The host twin of `mma.sync.m16n8k16.row.col` with f32 accumulation.
    #[track_caller]
    pub(super) fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4], cvt: fn(u16) -> f32) -> [f32; 4] {
        let a01 = exchange("mma", a[0] as u64 | ((a[1] as u64) << 32));
        let a23 = exchange("mma", a[2] as u64 | ((a[3] as u64) << 32));
        let bb = exchange("mma", b[0] as u64 | ((b[1] as u64) << 32));
        let mut am = [[0f32; 16]; 16];
        let mut bm = [[0f32; 8]; 16];
        for l in 0..32 {
            let (g, t) = (l / 4, l % 4);
            let regs = [
                a01[l] as u32,
                (a01[l] >> 32) as u32,
                a23[l] as u32,
                (a23[l] >> 32) as u32,
            ];
            for (r, v) in regs.into_iter().enumerate() {
                let row = g + 8 * (r & 1);
                let col = 2 * t + 8 * (r >> 1);
                am[row][col] = cvt(v as u16);
                am[row][col + 1] = cvt((v >> 16) as u16);
            }
            for r in 0..2 {
                let v = (bb[l] >> (32 * r)) as u32;
                let k = 2 * t + 8 * r;
                bm[k][g] = cvt(v as u16);
                bm[k + 1][g] = cvt((v >> 16) as u16);
            }
        }
        let l = lane();
        let (g, t) = (l / 4, l % 4);
        let mut d = c;
        for (i, di) in d.iter_mut().enumerate() {
            let (row, col) = (g + 8 * (i >> 1), 2 * t + (i & 1));
            let mut s = 0f32;
            for k in 0..16 {
                s += am[row][k] * bm[k][col];
            }
            *di += s;
        }
        d
    }

    /// The host twin of `ldmatrix.m8n8.xN.b16` (`N` = 2 or 4 matrices; the rest zero).
    #[track_caller]
    pub(super) fn ldmatrix<const N: usize>(row: *const u16) -> [u32; 4] {
        let rows = exchange("ldmatrix", row as u64);
        let l = lane();
        let mut out = [0u32; 4];
        for (j, o) in out.iter_mut().enumerate().take(N) {
            let p = rows[8 * j + l / 4] as *const u16;
            // SAFETY: the caller's promise: each lane's row is 16 readable bytes.
            let (lo, hi) = unsafe { (p.add(2 * (l % 4)).read(), p.add(2 * (l % 4) + 1).read()) };
            *o = super::pack2(lo, hi);
        }
        out
    }
    /// The host twin of `ldmatrix.m8n8.x4.trans.b16`.
    #[track_caller]
    pub(super) fn ldmatrix_trans(row: *const u16) -> [u32; 4] {
        let rows = exchange("ldmatrix", row as u64);
        let l = lane();
        let mut out = [0u32; 4];
        for (j, o) in out.iter_mut().enumerate() {
            let (r, c) = (2 * (l % 4), l / 4);
            let (p0, p1) = (
                rows[8 * j + r] as *const u16,
                rows[8 * j + r + 1] as *const u16,
            );
            // SAFETY: the caller's promise: each lane's row is 16 readable bytes.
            let (lo, hi) = unsafe { (p0.add(c).read(), p1.add(c).read()) };
            *o = super::pack2(lo, hi);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_to_f32(bf16_bits(1.0 + 1.0 / 256.0)), 1.0); // tie → even
        assert_eq!(bf16_to_f32(bf16_bits(1.0 + 3.0 / 256.0)), 1.0 + 4.0 / 256.0);
        assert!(bf16_to_f32(bf16_bits(f32::NAN)).is_nan());
        assert_eq!(bf16_to_f32(bf16_bits(-2.5)), -2.5);
    }

    #[test]
    fn f16_decodes() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 1.0 / 16_777_216.0);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
    }
}
