//! Attention forward on Hopper's warpgroup MMA (`wgmma`, sm_90a), head dimensions 64 and 128.
//!
//! Two warpgroups of 64 query rows each; per 128-key tile, `S = Q Kᵀ` is one batch of
//! `wgmma.m64n128k16` with both operands in shared memory (K-major, 128-byte swizzle), the
//! online softmax runs on the accumulators in registers, and `O += P V` is one batch of
//! `wgmma.m64n{D}k16` with `P` (rounded to bf16) straight from those registers as the A operand
//! and `V` read transposed (N-major) from the tile as it was copied
//! ([`gpukernel_device::wgmma_rs`]). The `P V` of one tile runs on the tensor cores during
//! the softmax of the next (issued together with that tile's `Q Kᵀ`); `K` and `V` tiles
//! rotate over three `cp.async` stages.

use gpukernel_device::mma::{
    SharedAddr, cp_async_16_at, cp_async_commit, cp_async_wait, pack_bf16x2,
};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::warp::{FULL_MASK, shfl_xor_sync};
use gpukernel_device::wgmma::{self, Accumulators, SmemDesc, sw128_offset};
use gpukernel_device::wgmma_rs::{
    NMajorDesc, RsAccumulators, mma_m64n64k16_bf16_rs_tb, mma_m64n128k16_bf16_rs_tb,
};
use gpukernel_device::{math, sync, thread, unroll};

/// Query rows per block of the `wgmma` kernels: two warpgroups of 64.
pub const WG_BLOCK_Q: u32 = 128;
/// Keys per tile.
pub const WG_BLOCK_KV: u32 = 128;
/// Threads per block.
pub const WG_THREADS: u32 = 256;
/// Bytes of one 64-column panel of a 128-row tile (128 rows × 128 bytes); a tile of head
/// dimension `D` is `D / 64` panels.
const PANEL: usize = 128 * 128;

/// Dynamic shared memory of a launch of the `wgmma` kernel for head dimension `head_dim`:
/// the Q tile, three stages of a K and a V tile, and 1024 bytes of alignment slack (above
/// 48 KiB: `Function::set_max_dynamic_shared_bytes`).
pub const fn wg_shared_bytes(head_dim: u32) -> u32 {
    7 * 128 * head_dim * 2 + 1024
}

/// The grid of a launch of the `wgmma` kernels: one block per 128 queries of each of
/// `batch_heads` heads, head by head.
pub const fn wg_grid(batch_heads: u32, seq: u32) -> u32 {
    seq.div_ceil(WG_BLOCK_Q) * batch_heads
}

/// [`crate::attention_fwd_d128`] on `wgmma`: the same parameters and results; launch with
/// [`wg_grid`], [`WG_THREADS`] threads and [`wg_shared_bytes`]`(128)` of dynamic shared
/// memory (anything else traps).
#[kernel]
pub fn attention_fwd_d128_wgmma(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    forward::<128, 64>(q, k, v, seq, scale, causal, o);
}

/// [`crate::attention_fwd_d64`] on `wgmma` (launch with [`wg_shared_bytes`]`(64)`).
#[kernel]
pub fn attention_fwd_d64_wgmma(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    forward::<64, 32>(q, k, v, seq, scale, causal, o);
}

/// `O += P V` for a head dimension: the register-A `wgmma` of that width.
trait PvAccumulators: RsAccumulators + Sized {
    /// Zeroed accumulators.
    fn zeroed() -> Self {
        // SAFETY: all-zero bits are 0.0 for f32; a memset LLVM splits into registers.
        unsafe { core::mem::zeroed() }
    }

    /// One 16-key step.
    ///
    /// # Safety
    /// As the `wgmma_rs` functions.
    unsafe fn pv(&mut self, a: [u32; 4], b: NMajorDesc);
}

impl PvAccumulators for [f32; 64] {
    #[inline(always)]
    unsafe fn pv(&mut self, a: [u32; 4], b: NMajorDesc) {
        // SAFETY: the caller's promises.
        unsafe { mma_m64n128k16_bf16_rs_tb(self, a, b) }
    }
}

impl PvAccumulators for [f32; 32] {
    #[inline(always)]
    unsafe fn pv(&mut self, a: [u32; 4], b: NMajorDesc) {
        // SAFETY: the caller's promises.
        unsafe { mma_m64n64k16_bf16_rs_tb(self, a, b) }
    }
}

/// The body for head dimension `D` (`OA = D / 2` accumulators per thread).
#[inline(always)]
fn forward<const D: usize, const OA: usize>(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<'_, u16>,
) where
    [f32; OA]: PvAccumulators + core::ops::IndexMut<usize, Output = f32>,
{
    const BQ: usize = WG_BLOCK_Q as usize;
    const BN: usize = WG_BLOCK_KV as usize;
    let s = seq as usize;
    let smem = dynamic_shared::<u8>();
    let blocks_q = s.div_ceil(BQ);
    let heads = thread::grid_dim_x() as usize / blocks_q.max(1);
    let total = heads * s * D;
    let tile = 128 * D * 2;
    assert!(
        OA * 2 == D
            && thread::block_dim_x() == WG_THREADS
            && smem.len() >= 7 * tile + 1024
            && s > 0
            && thread::grid_dim_x() as usize == heads * blocks_q
            && q.len() >= total
            && k.len() >= total
            && v.len() >= total
            && o.len() >= total
            && scale > 0.0
    );
    let causal = causal != 0;
    let bx = thread::block_idx_x() as usize;
    let (hd, qi) = (bx / blocks_q, bx % blocks_q);
    let qb = if causal { blocks_q - 1 - qi } else { qi };
    let q0 = qb * BQ;
    let head = hd * s * D;
    let tid = thread::thread_idx_x() as usize;
    let (wg, w, l) = (tid / 128, tid / 32, tid % 32);
    let (g, t) = (l / 4, l % 4);

    let raw = smem.as_mut_ptr();
    let base = SharedAddr::of(raw).align_up(wgmma::SW128_ATOM_BYTES);
    let pad = SharedAddr::of(raw).bytes_to(base);
    // Q at 0, stage i's K at (1 + 2 i) tiles, its V after it (three stages).
    let q_tile = base;
    let k_tile = |i: usize| base.add_bytes((1 + 2 * i) * tile);
    let v_tile = |i: usize| base.add_bytes((2 + 2 * i) * tile);

    // Rows row0 .. row0 + 128 of one head of `src` into the tile at byte `dst` of `base`:
    // 16-byte chunk c of row r goes to panel c / 8 at the swizzled place of chunk c % 8;
    // rows past the sequence are zero.
    let load = |dst: usize, src: &[u16], row0: usize| {
        let mut i = tid;
        while i < 128 * (D / 8) {
            let (r, c) = (i / (D / 8), i % (D / 8));
            let at = dst + (c / 8) * PANEL + sw128_offset(r, c % 8);
            if row0 + r < s {
                // SAFETY: row row0 + r < seq of this head: its chunk c is inside `src`
                // (lengths checked above), 16-byte aligned; the destination is inside the
                // tile, which nothing reads or writes until the wait and barrier that follow.
                unsafe {
                    cp_async_16_at(
                        base.add_bytes(at),
                        src.as_ptr()
                            .wrapping_add(head + (row0 + r) * D + c * 8)
                            .cast(),
                    )
                };
            } else {
                // SAFETY: as above for the destination, this thread's alone; `raw + pad`
                // is the generic address of `base`.
                unsafe { raw.add(pad + at).cast::<[u32; 4]>().write([0; 4]) };
            }
            i += WG_THREADS as usize;
        }
    };

    load(0, q, q0);
    load(tile, k, 0);
    load(2 * tile, v, 0);
    cp_async_commit();

    let tiles = if causal {
        (q0 + BQ).min(s).div_ceil(BN)
    } else {
        s.div_ceil(BN)
    };
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let row0 = q0 + 16 * w + g; // this thread's first row; the second is row0 + 8
    let mut acc = <[f32; OA]>::zeroed();
    let mut m = [f32::NEG_INFINITY; 2];
    let mut lsum = [0f32; 2];
    let qa = q_tile.add_bytes(wg * 64 * 128);

    // Waits for tile n, then starts the copy of tile n + 1 (into the slot of tile n - 2,
    // which both warpgroups finished with in iteration n - 1).
    let next_tile = |n: usize| {
        cp_async_wait::<0>();
        wgmma::fence_proxy_async();
        // SAFETY: every thread of the block calls this once per tile (uniform bounds) and
        // reaches this barrier together. After it tile n is complete and visible to the async
        // proxy, and both warpgroups are done with tile n - 2 (they waited for all their
        // batches before calling this for tile n).
        unsafe { sync::sync_threads_aligned() };
        if n + 1 < tiles {
            let st = (n + 1) % 3;
            load((1 + 2 * st) * tile, k, (n + 1) * BN);
            load((2 + 2 * st) * tile, v, (n + 1) * BN);
        }
        cp_async_commit();
    };
    // Issues S = Q K(n)ᵀ into `sc` (zeroed first) and commits it; expands to unsafe calls,
    // used only inside `unsafe` blocks.
    //
    // SAFETY (of the calls): the warpgroup together (straight-line code, no branch around
    // them: ptxas serialises wgmma in a branch it cannot prove uniform); Q and tile n
    // complete (`next_tile(n)`), 1024-byte aligned, not rewritten before the waits below;
    // `wgmma::fence` first, after the registers were last written.
    macro_rules! issue_s { ($sc:expr, $n:expr) => {{
        let (sc, n): (&mut [f32; 64], usize) = ($sc, $n);
        let kt = k_tile(n % 3);
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let p = (kk / 4) * PANEL;
                let kd = 16 * (kk % 4);
                wgmma::mma_m64n128k16_bf16(
                    sc,
                    SmemDesc::k_major_sw128(qa.add_bytes(p)).add_k(kd),
                    SmemDesc::k_major_sw128(kt.add_bytes(p)).add_k(kd),
                );
            }
        });
        wgmma::commit_group();
    }}}
    // Issues O += P V(n) and commits it (unsafe calls, as `issue_s`; `pf` and `acc` are kept
    // until `wait_keeping`).
    macro_rules! issue_pv { ($acc:expr, $pf:expr, $n:expr) => {{
        let (acc, pf, n): (&mut [f32; OA], &[[u32; 4]; 8], usize) = ($acc, $pf, $n);
        let vd = NMajorDesc::sw128(v_tile(n % 3), PANEL);
        unroll!(kc in [0, 1, 2, 3, 4, 5, 6, 7] {
            acc.pv(pf[kc], vd.add_k(16 * kc));
        });
        wgmma::commit_group();
    }}}
    // The online softmax of tile n in base 2: masks, updates the row maxima and sums, and
    // returns P as bf16 A fragments and the factor for the O accumulated so far (row g:
    // elements 4j, 4j + 1; row g + 8: 4j + 2, 4j + 3; each row over the 4 threads of a group).
    macro_rules! softmax { ($sc:expr, $n:expr) => {{
        let (sc, n): (&mut [f32; 64], usize) = ($sc, $n);
        let key0 = n * BN;
        // Keys past the sequence, and after the query when causal, get no weight.
        if key0 + BN > s || (causal && key0 + BN > q0 + 16 * w + 1) {
            unroll!(i in [
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
                48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63
            ] {
                let key = key0 + 8 * (i / 4) + 2 * t + (i % 2);
                let row = row0 + 8 * ((i / 2) % 2);
                if key >= s || (causal && key > row) {
                    sc[i] = f32::NEG_INFINITY;
                }
            });
        }
        let mut tmax = [f32::NEG_INFINITY; 2];
        unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            tmax[0] = tmax[0].max(sc[4 * j]).max(sc[4 * j + 1]);
            tmax[1] = tmax[1].max(sc[4 * j + 2]).max(sc[4 * j + 3]);
        });
        let mut shift = [0f32; 2];
        let mut alpha = [0f32; 2];
        unroll!(h in [0, 1] {
            let x = tmax[h].max(shfl_xor_sync(FULL_MASK, tmax[h], 1));
            let x = x.max(shfl_xor_sync(FULL_MASK, x, 2));
            let m_new = m[h].max(x * scale_log2);
            // A row with no key yet keeps -inf; subtract 0 then (exp2(-inf) = 0, no NaN).
            shift[h] = if m_new == f32::NEG_INFINITY { 0.0 } else { m_new };
            alpha[h] = math::exp2f(m[h] - shift[h]);
            m[h] = m_new;
            lsum[h] *= alpha[h];
        });
        let mut pf = [[0u32; 4]; 8];
        unroll!(kc in [0, 1, 2, 3, 4, 5, 6, 7] {
            let mut p = [0f32; 8];
            unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7] {
                let x = math::exp2f(math::fmaf(sc[8 * kc + e], scale_log2, -shift[(e / 2) % 2]));
                lsum[(e / 2) % 2] += x;
                p[e] = x;
            });
            pf[kc] = [
                pack_bf16x2(p[0], p[1]),
                pack_bf16x2(p[2], p[3]),
                pack_bf16x2(p[4], p[5]),
                pack_bf16x2(p[6], p[7]),
            ];
        });
        (pf, alpha)
    }}}

    // Tile 0 alone; then iteration n issues S(n) = Q K(n)ᵀ and O += P(n - 1) V(n - 1)
    // together and runs the softmax of S(n) while the second product is still on the tensor
    // cores; the last P V after the loop. Causal blocks run every tile of the block for both
    // warpgroups (the first one's last tile is masked whole): a wgmma in a branch would be
    // serialised.
    next_tile(0);
    let mut sc = <[f32; 64]>::zero();
    // SAFETY: see `issue_s`.
    unsafe {
        wgmma::fence();
        issue_s!(&mut sc, 0);
        sc.wait::<0>();
    }
    let (mut pf, _) = softmax!(&mut sc, 0);
    for n in 1..tiles {
        next_tile(n);
        let mut sc = <[f32; 64]>::zero();
        // SAFETY: see `issue_s`; S's group is the older of the two, so `wait::<1>` covers
        // it, and `wait_keeping::<0>` the P V, after which `acc` holds O up to tile n - 1.
        unsafe {
            wgmma::fence();
            issue_s!(&mut sc, n);
            issue_pv!(&mut acc, &pf, n - 1);
            sc.wait::<1>();
        }
        let (next, alpha) = softmax!(&mut sc, n);
        // SAFETY: see above.
        unsafe { acc.wait_keeping::<0>(&pf) };
        // O so far was relative to the previous maxima; P(n) to the new ones.
        unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if j < D / 8 {
                acc[4 * j] *= alpha[0];
                acc[4 * j + 1] *= alpha[0];
                acc[4 * j + 2] *= alpha[1];
                acc[4 * j + 3] *= alpha[1];
            }
        });
        pf = next;
    }
    // SAFETY: see `issue_s`.
    unsafe {
        wgmma::fence();
        issue_pv!(&mut acc, &pf, tiles - 1);
        acc.wait_keeping::<0>(&pf);
    }
    cp_async_wait::<0>();

    // Normalise by the row sums and store.
    let mut inv = [0f32; 2];
    unroll!(h in [0, 1] {
        let x = lsum[h] + shfl_xor_sync(FULL_MASK, lsum[h], 1);
        let x = x + shfl_xor_sync(FULL_MASK, x, 2);
        inv[h] = 1.0 / x;
    });
    let out = o.as_mut_ptr();
    unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        unroll!(h in [0, 1] {
            let row = row0 + 8 * h;
            if j < D / 8 && row < s {
                let col = 8 * j + 2 * t;
                let bits = pack_bf16x2(acc[4 * j + 2 * h] * inv[h], acc[4 * j + 2 * h + 1] * inv[h]);
                // SAFETY: row < seq, col + 2 <= D: inside this head of `o`; 4-byte aligned.
                // The pair is this thread's alone (accumulator layout: disjoint elements per
                // thread of a warpgroup's 64 rows; warpgroups and blocks disjoint rows).
                unsafe { out.add(head + row * D + col).cast::<u32>().write(bits) };
            }
        });
    });
}
