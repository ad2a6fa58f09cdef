//! `wgmma` with the A operand in registers and B transposed (N-major) in shared memory
//! (sm_90a): the second product of attention, `O += P · V`, where `P` comes out of the first
//! product's accumulators (never through shared memory) and `V` is stored as it sits in
//! global memory, `k` (the key) rows of `n` (the head dimension) contiguous values.
//!
//! # The A fragment
//! Warp `w` of the warpgroup supplies rows `16 w .. 16 w + 16` of the `64 × 16` A slice, in the
//! layout of `mma.sync.m16n8k16`'s A ([`crate::mma`]): with `g = lane / 4`, `t = lane % 4`,
//! `a[0]` = row `g`, columns `2t, 2t+1`; `a[1]` = row `g + 8`; `a[2]` = row `g`, columns
//! `2t+8, 2t+9`; `a[3]` = row `g + 8`, columns `2t+8, 2t+9` (two bf16 per register, the lower
//! column in the low half). The accumulators of [`crate::wgmma`]'s `m64nNk16` hold, per `8`
//! columns `j`, exactly these positions: `acc[4j..4j+4]` of column blocks `2c` and `2c + 1`
//! rounded to bf16 pairs form the A fragment of columns `16c .. 16c + 16`.
//!
//! # The N-major B tile ([`NMajorDesc`])
//! `B` is `K × N` with `N` contiguous: 64 values of `n` (128 bytes) per row, rows 128 bytes
//! apart, 8-row groups 1024 bytes apart, each 128-byte row with the 128-byte swizzle (16-byte
//! chunk `c` of row `r` at chunk `c ^ (r % 8)`, as [`crate::wgmma::sw128_offset`]); an `N` of
//! 128 is two such 64-wide panels, `panel_bytes` apart. It is the layout of a K-major tile of
//! the same bytes read the other way round, so one copy routine fills both.
//!
//! # Safety
//! As [`crate::wgmma`]: warpgroup-collective, the accumulators untouched between the `mma`
//! and the wait that covers it; and here the A registers too, which the tensor cores read
//! asynchronously: [`RsAccumulators::wait_keeping`] names them so the compiler cannot reuse
//! them earlier.
//!
//! # Simulator
//! The twin computes the calling thread's accumulators at once: the warp's A rows through the
//! warp exchange (each warp's output rows need only its own A rows), B decoded from the tile.

use crate::mma::SharedAddr;

/// `core::arch::asm!` with `acc[0..64]` as its first 64 operands (`inout(reg32)`).
#[cfg(target_arch = "nvptx64")]
macro_rules! acc64_asm {
    ($acc:ident, $($t:expr),+; $($rest:tt)*) => {
        core::arch::asm!(
            $($t),+,
            inout(reg32) $acc[0], inout(reg32) $acc[1], inout(reg32) $acc[2], inout(reg32) $acc[3],
            inout(reg32) $acc[4], inout(reg32) $acc[5], inout(reg32) $acc[6], inout(reg32) $acc[7],
            inout(reg32) $acc[8], inout(reg32) $acc[9], inout(reg32) $acc[10], inout(reg32) $acc[11],
            inout(reg32) $acc[12], inout(reg32) $acc[13], inout(reg32) $acc[14], inout(reg32) $acc[15],
            inout(reg32) $acc[16], inout(reg32) $acc[17], inout(reg32) $acc[18], inout(reg32) $acc[19],
            inout(reg32) $acc[20], inout(reg32) $acc[21], inout(reg32) $acc[22], inout(reg32) $acc[23],
            inout(reg32) $acc[24], inout(reg32) $acc[25], inout(reg32) $acc[26], inout(reg32) $acc[27],
            inout(reg32) $acc[28], inout(reg32) $acc[29], inout(reg32) $acc[30], inout(reg32) $acc[31],
            inout(reg32) $acc[32], inout(reg32) $acc[33], inout(reg32) $acc[34], inout(reg32) $acc[35],
            inout(reg32) $acc[36], inout(reg32) $acc[37], inout(reg32) $acc[38], inout(reg32) $acc[39],
            inout(reg32) $acc[40], inout(reg32) $acc[41], inout(reg32) $acc[42], inout(reg32) $acc[43],
            inout(reg32) $acc[44], inout(reg32) $acc[45], inout(reg32) $acc[46], inout(reg32) $acc[47],
            inout(reg32) $acc[48], inout(reg32) $acc[49], inout(reg32) $acc[50], inout(reg32) $acc[51],
            inout(reg32) $acc[52], inout(reg32) $acc[53], inout(reg32) $acc[54], inout(reg32) $acc[55],
            inout(reg32) $acc[56], inout(reg32) $acc[57], inout(reg32) $acc[58], inout(reg32) $acc[59],
            inout(reg32) $acc[60], inout(reg32) $acc[61], inout(reg32) $acc[62], inout(reg32) $acc[63],
            $($rest)*
        )
    };
}

/// `core::arch::asm!` with `acc[0..32]` as its first 32 operands (`inout(reg32)`).
#[cfg(target_arch = "nvptx64")]
macro_rules! acc32_asm {
    ($acc:ident, $($t:expr),+; $($rest:tt)*) => {
        core::arch::asm!(
            $($t),+,
            inout(reg32) $acc[0], inout(reg32) $acc[1], inout(reg32) $acc[2], inout(reg32) $acc[3],
            inout(reg32) $acc[4], inout(reg32) $acc[5], inout(reg32) $acc[6], inout(reg32) $acc[7],
            inout(reg32) $acc[8], inout(reg32) $acc[9], inout(reg32) $acc[10], inout(reg32) $acc[11],
            inout(reg32) $acc[12], inout(reg32) $acc[13], inout(reg32) $acc[14], inout(reg32) $acc[15],
            inout(reg32) $acc[16], inout(reg32) $acc[17], inout(reg32) $acc[18], inout(reg32) $acc[19],
            inout(reg32) $acc[20], inout(reg32) $acc[21], inout(reg32) $acc[22], inout(reg32) $acc[23],
            inout(reg32) $acc[24], inout(reg32) $acc[25], inout(reg32) $acc[26], inout(reg32) $acc[27],
            inout(reg32) $acc[28], inout(reg32) $acc[29], inout(reg32) $acc[30], inout(reg32) $acc[31],
            $($rest)*
        )
    };
}

/// A `wgmma` descriptor of an N-major (transposed) B tile with the 128-byte swizzle, at a `k`
/// offset (module documentation).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{mma::SharedAddr, shared::dynamic_shared, thread, wgmma_rs::NMajorDesc};
///
/// /// The descriptor of rows `k = 16 .. 32` of a 64-row tile of 128 columns (two panels).
/// #[kernel]
/// pub fn slice(mut out: DisjointSlice<u32>) {
///     let tile = SharedAddr::of(dynamic_shared::<u8>().as_mut_ptr()).align_up(1024);
///     let _d = NMajorDesc::sw128(tile, 64 * 128).add_k(16);
///     out.set(thread::index(), 1);
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NMajorDesc {
    #[cfg(target_arch = "nvptx64")]
    bits: u64,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *const u8,
    #[cfg(not(target_arch = "nvptx64"))]
    panel_bytes: usize,
}

impl NMajorDesc {
    /// The descriptor of the N-major tile at `tile` (1024-byte aligned; the simulator checks
    /// it) whose 64-column panels are `panel_bytes` apart (a multiple of 1024): leading
    /// offset `panel_bytes` (between panels along `n`), stride 1024 bytes (between 8-row
    /// groups along `k`), 128-byte swizzle.
    ///
    /// ```
    /// use gpukernel_device::{mma::SharedAddr, wgmma_rs::NMajorDesc};
    /// /// V's tile in shared memory (64 rows of 128 columns in two 8 KiB panels): the
    /// /// descriptor of its first 16 rows.
    /// fn v_desc(tile: SharedAddr) -> NMajorDesc {
    ///     NMajorDesc::sw128(tile, 8192)
    /// }
    /// ```
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn sw128(tile: SharedAddr, panel_bytes: usize) -> NMajorDesc {
        #[cfg(target_arch = "nvptx64")]
        {
            let start = ((tile.raw() & 0x3_ffff) >> 4) as u64;
            let lbo = ((panel_bytes as u64) >> 4) & 0x3fff;
            NMajorDesc {
                bits: start | (lbo << 16) | ((1024u64 >> 4) << 32) | (1 << 62),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let base = tile.raw() as *const u8;
            assert!(
                (base as usize).is_multiple_of(1024) && panel_bytes.is_multiple_of(1024),
                "wgmma_rs::NMajorDesc::sw128: the tile at {base:p} or its panel stride \
                 {panel_bytes} is not a multiple of 1024 bytes"
            );
            NMajorDesc { base, panel_bytes }
        }
    }

    /// The same tile `k` rows further (`k` a multiple of 8): the `k` slices of a tile are
    /// `add_k(0)`, `add_k(16)`, ….
    ///
    /// ```
    /// use gpukernel_device::wgmma_rs::NMajorDesc;
    /// /// The four 16-deep slices of a 64-row tile.
    /// fn slices(d: NMajorDesc) -> [NMajorDesc; 4] {
    ///     [d.add_k(0), d.add_k(16), d.add_k(32), d.add_k(48)]
    /// }
    /// ```
    #[inline(always)]
    pub fn add_k(self, k: usize) -> NMajorDesc {
        #[cfg(target_arch = "nvptx64")]
        {
            // 128 bytes per row, the address field counts 16-byte units.
            NMajorDesc {
                bits: self.bits.wrapping_add((k as u64 * 128) >> 4),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            NMajorDesc {
                // SAFETY of later reads: the caller's promise of a live tile of these rows.
                base: self.base.wrapping_add(k * 128),
                panel_bytes: self.panel_bytes,
            }
        }
    }

    /// The simulator's view: element `(k, n)` as f32.
    #[cfg(not(target_arch = "nvptx64"))]
    fn element(&self, k: usize, n: usize) -> f32 {
        let at = (n / 64) * self.panel_bytes
            + (k / 8) * 1024
            + crate::wgmma::sw128_offset(k % 8, (n % 64) / 8)
            + (n % 8) * 2;
        // SAFETY: the caller of the `mma_*` function promised a live tile of these rows.
        let bits = unsafe { self.base.add(at).cast::<u16>().read_unaligned() };
        crate::mma::bf16_to_f32(bits)
    }
}

/// `acc += A · B` on `wgmma.mma_async.m64n128k16.f32.bf16.bf16` with A (64 × 16) in
/// registers (module documentation) and B (16 × 128) N-major in shared memory (`imm-trans-b`
/// 1). Accumulator layout as [`crate::wgmma`]'s `m64n128k16`.
///
/// # Safety
/// Warpgroup-collective; a [`crate::wgmma::fence`] since the accumulators or `a` were last
/// written by other instructions; the tile live and unwritten, `acc` and `a` untouched, until
/// the [`RsAccumulators::wait_keeping`] that covers this call (module documentation).
///
/// ```
/// use gpukernel_device::wgmma_rs::{self, NMajorDesc, RsAccumulators};
/// /// `O += P · V` for one 64-deep tile: four 16-deep steps, then the wait that keeps `p`.
/// ///
/// /// # Safety
/// /// As `mma_m64n128k16_bf16_rs_tb`, for the whole warpgroup.
/// unsafe fn p_v(o: &mut [f32; 64], p: &[[u32; 4]; 8], v: NMajorDesc) {
///     unsafe { gpukernel_device::wgmma::fence() };
///     for s in 0..4 {
///         unsafe { wgmma_rs::mma_m64n128k16_bf16_rs_tb(o, p[s], v.add_k(16 * s)) };
///     }
///     unsafe { gpukernel_device::wgmma::commit_group() };
///     unsafe { o.wait_keeping::<0>(p) };
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m64n128k16_bf16_rs_tb(acc: &mut [f32; 64], a: [u32; 4], b: NMajorDesc) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promises (warpgroup convergence, a live tile, registers kept).
    unsafe {
        acc64_asm!(
            acc,
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {69}, 0;",
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}}}, {{{64}, {65}, {66}, {67}}}, {68}, p, 1, 1, 1;",
            "}}";
            in(reg32) a[0],
            in(reg32) a[1],
            in(reg32) a[2],
            in(reg32) a[3],
            in(reg64) b.bits,
            in(reg32) 1u32,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::mma_rs(acc, a, &b);
}

/// `acc += A · B` on `wgmma.mma_async.m64n64k16.f32.bf16.bf16`: [`mma_m64n128k16_bf16_rs_tb`]
/// for a 64-column B (one panel).
///
/// # Safety
/// As [`mma_m64n128k16_bf16_rs_tb`].
///
/// ```
/// use gpukernel_device::wgmma_rs::{self, NMajorDesc};
/// /// One 16-deep step of `O += P · V` with a 64-column V.
/// ///
/// /// # Safety
/// /// As `mma_m64n64k16_bf16_rs_tb`, for the whole warpgroup.
/// unsafe fn step(o: &mut [f32; 32], p: [u32; 4], v: NMajorDesc) {
///     unsafe { wgmma_rs::mma_m64n64k16_bf16_rs_tb(o, p, v) };
/// }
/// ```
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m64n64k16_bf16_rs_tb(acc: &mut [f32; 32], a: [u32; 4], b: NMajorDesc) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promises (warpgroup convergence, a live tile, registers kept).
    unsafe {
        acc32_asm!(
            acc,
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {37}, 0;",
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}}}, {{{32}, {33}, {34}, {35}}}, {36}, p, 1, 1, 1;",
            "}}";
            in(reg32) a[0],
            in(reg32) a[1],
            in(reg32) a[2],
            in(reg32) a[3],
            in(reg64) b.bits,
            in(reg32) 1u32,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::mma_rs(acc, a, &b);
}

mod sealed {
    pub trait Sealed {}
}

/// The accumulator arrays of the register-A shapes: `[f32; 64]` (`m64n128k16`) and
/// `[f32; 32]` (`m64n64k16`).
///
/// ```
/// use gpukernel_device::wgmma_rs::RsAccumulators;
/// fn is_accumulator<A: RsAccumulators>() {}
/// is_accumulator::<[f32; 64]>();
/// is_accumulator::<[f32; 32]>();
/// ```
pub trait RsAccumulators: sealed::Sealed {
    /// `wgmma.wait_group.sync.aligned N` for batches of register-A `mma`s into these
    /// accumulators: like [`crate::wgmma::Accumulators::wait`], and also naming the A
    /// registers of the batches (`a`, eight 16-deep steps), so that the compiler keeps them
    /// intact until the tensor cores have read them.
    ///
    /// # Safety
    /// Warpgroup-collective.
    ///
    /// ```
    /// use gpukernel_device::wgmma_rs::RsAccumulators;
    /// /// Waits for every batch into `o`, keeping the A registers `p` until then.
    /// ///
    /// /// # Safety
    /// /// Warpgroup-collective.
    /// unsafe fn finish(o: &mut [f32; 32], p: &[[u32; 4]; 8]) {
    ///     unsafe { o.wait_keeping::<0>(p) };
    /// }
    /// ```
    unsafe fn wait_keeping<const N: u32>(&mut self, a: &[[u32; 4]; 8]);
}

/// The wait with the accumulators (`$m`, their asm macro) and the 32 A registers named.
macro_rules! wait_keeping_body {
    ($m:ident, $acc:ident, $a:ident, $accs:literal, $aregs:literal) => {{
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (&$acc, $a);
            host::converged("wgmma_rs wait");
        }
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's convergence promise; the operands are only named in a comment.
        unsafe {
            $m!(
                $acc,
                "wgmma.wait_group.sync.aligned {n};",
                $accs,
                $aregs;
                in(reg32) $a[0][0], in(reg32) $a[0][1], in(reg32) $a[0][2], in(reg32) $a[0][3],
                in(reg32) $a[1][0], in(reg32) $a[1][1], in(reg32) $a[1][2], in(reg32) $a[1][3],
                in(reg32) $a[2][0], in(reg32) $a[2][1], in(reg32) $a[2][2], in(reg32) $a[2][3],
                in(reg32) $a[3][0], in(reg32) $a[3][1], in(reg32) $a[3][2], in(reg32) $a[3][3],
                in(reg32) $a[4][0], in(reg32) $a[4][1], in(reg32) $a[4][2], in(reg32) $a[4][3],
                in(reg32) $a[5][0], in(reg32) $a[5][1], in(reg32) $a[5][2], in(reg32) $a[5][3],
                in(reg32) $a[6][0], in(reg32) $a[6][1], in(reg32) $a[6][2], in(reg32) $a[6][3],
                in(reg32) $a[7][0], in(reg32) $a[7][1], in(reg32) $a[7][2], in(reg32) $a[7][3],
                n = const N,
                options(nostack),
            );
        }
    }};
}

impl sealed::Sealed for [f32; 64] {}

impl RsAccumulators for [f32; 64] {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wait_keeping<const N: u32>(&mut self, a: &[[u32; 4]; 8]) {
        let acc = self;
        wait_keeping_body!(
            acc64_asm,
            acc,
            a,
            "// accumulators {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} {12} {13} {14} {15} {16} {17} {18} {19} {20} {21} {22} {23} {24} {25} {26} {27} {28} {29} {30} {31} {32} {33} {34} {35} {36} {37} {38} {39} {40} {41} {42} {43} {44} {45} {46} {47} {48} {49} {50} {51} {52} {53} {54} {55} {56} {57} {58} {59} {60} {61} {62} {63}",
            "// a {64} {65} {66} {67} {68} {69} {70} {71} {72} {73} {74} {75} {76} {77} {78} {79} {80} {81} {82} {83} {84} {85} {86} {87} {88} {89} {90} {91} {92} {93} {94} {95}"
        );
    }
}

impl sealed::Sealed for [f32; 32] {}

impl RsAccumulators for [f32; 32] {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wait_keeping<const N: u32>(&mut self, a: &[[u32; 4]; 8]) {
        let acc = self;
        wait_keeping_body!(
            acc32_asm,
            acc,
            a,
            "// accumulators {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} {12} {13} {14} {15} {16} {17} {18} {19} {20} {21} {22} {23} {24} {25} {26} {27} {28} {29} {30} {31}",
            "// a {32} {33} {34} {35} {36} {37} {38} {39} {40} {41} {42} {43} {44} {45} {46} {47} {48} {49} {50} {51} {52} {53} {54} {55} {56} {57} {58} {59} {60} {61} {62} {63}"
        );
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::NMajorDesc;
    use crate::host::with_context;
    use crate::warp::FULL_MASK;

    /// Every lane's `v` through the warp exchange, after checking that the whole warp came.
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
                "{what} needs all 32 lanes of every warp of the warpgroup (participants {:#010x})",
                ex.participants
            );
            ex.values
        })
    }

    #[track_caller]
    pub(super) fn converged(what: &'static str) {
        exchange(what, 0);
    }

    /// The host twin of the register-A, N-major-B `m64nNk16` (N = 2 · R): this thread's
    /// accumulators.
    #[track_caller]
    pub(super) fn mma_rs<const R: usize>(acc: &mut [f32; R], a: [u32; 4], b: &NMajorDesc) {
        let a01 = exchange("wgmma_rs::mma", a[0] as u64 | ((a[1] as u64) << 32));
        let a23 = exchange("wgmma_rs::mma", a[2] as u64 | ((a[3] as u64) << 32));
        let t = with_context("wgmma_rs::mma", |cx| (cx.linear_thread() % 128) as usize);
        let l = t % 32;
        // This warp's 16 rows of A.
        let mut am = [[0f32; 16]; 16];
        for (lane, (&x01, &x23)) in a01.iter().zip(&a23).enumerate() {
            let (g, tt) = (lane / 4, lane % 4);
            let regs = [
                x01 as u32,
                (x01 >> 32) as u32,
                x23 as u32,
                (x23 >> 32) as u32,
            ];
            for (r, v) in regs.into_iter().enumerate() {
                let (row, col) = (g + 8 * (r & 1), 2 * tt + 8 * (r >> 1));
                am[row][col] = crate::mma::bf16_to_f32(v as u16);
                am[row][col + 1] = crate::mma::bf16_to_f32((v >> 16) as u16);
            }
        }
        for (i, v) in acc.iter_mut().enumerate() {
            let row = l / 4 + 8 * ((i / 2) % 2);
            let col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
            let mut s = 0f32;
            for (k, a_k) in am[row].iter().enumerate() {
                s += a_k * b.element(k, col);
            }
            *v += s;
        }
    }
}
