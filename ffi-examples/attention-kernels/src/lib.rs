//! Example kernels: attention forward, flash style (FlashAttention-2's algorithm: the scores
//! of a block of queries against one tile of keys at a time, an online softmax, and the
//! output accumulated in registers; the `S × S` score matrix never reaches memory).
//!
//! `O = softmax(scale · Q Kᵀ [+ causal mask]) V` for bf16 `Q`, `K`, `V`, `O` of layout
//! `[batch, heads, seq, head_dim]` (bit patterns as `u16`), head dimensions 64 and 128, with
//! f32 accumulation, on the tensor cores' `mma.sync.m16n8k16` (bf16 → f32).
//!
//! `build.rs` builds this crate for `sm_90a` (the Hopper target), so its [`PTX`] loads on
//! compute capability 9.0 only (H100, H200). On the host the kernels run in the simulator
//! like any other.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel, link_llvm_intrinsics))]
// `link_llvm_intrinsics` reaches NVVM's `ex2.approx.ftz` (device builds only).
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

use gpukernel_device::mma::{
    SharedAddr, cp_async_16_at, cp_async_commit, cp_async_wait, ldmatrix_x4_at,
    ldmatrix_x4_trans_at, mma_m16n8k16_bf16, pack_bf16x2,
};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::warp::{FULL_MASK, shfl_xor_sync};
use gpukernel_device::{math, sync, thread, unroll};

mod hopper;
pub mod turns;
mod ws;
pub use hopper::{
    WG_BLOCK_KV, WG_BLOCK_Q, WG_THREADS, attention_fwd_d64_wgmma, attention_fwd_d128_wgmma,
    wg_grid, wg_shared_bytes,
};
pub use ws::{
    WS_BLOCK_KV, WS_BOX_COLS, attention_fwd_d64_tma, attention_fwd_d64_tma_q128,
    attention_fwd_d128_tma, ws_block_q, ws_consumers, ws_grid, ws_shared_bytes, ws_stages,
    ws_threads,
};

/// The PTX of every kernel in this crate, for `sm_90a`.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Machine code of every kernel (SASS for `sm_90a` plus the PTX) in one fatbin.
#[cfg(not(target_arch = "nvptx64"))]
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

/// Query rows per block: eight warps of 16 rows.
pub const BLOCK_Q: u32 = 128;
/// Keys per tile of `K` and `V` in shared memory.
pub const BLOCK_KV: u32 = 64;
/// Threads per block.
pub const THREADS: u32 = 256;

/// Slack for aligning the dynamic shared memory to 1024 bytes (the swizzle's XOR of a
/// fragment's column into an address needs its low 10 bits clear).
const ALIGN: usize = 1024;

/// Bytes of dynamic shared memory a launch of the kernel for head dimension `head_dim`
/// needs: two stages of a `K` and a `V` tile (the first `Q` tile reuses the second stage),
/// plus alignment slack. Above 48 KiB for 128: call `Function::set_max_dynamic_shared_bytes`.
pub const fn shared_bytes(head_dim: u32) -> u32 {
    4 * BLOCK_KV * head_dim * 2 + ALIGN as u32
}

/// The grid of a launch: one block per [`BLOCK_Q`] queries of each of `batch_heads` heads,
/// head by head (the blocks of a head, which read the same `K` and `V`, run together and
/// share them in L2).
pub const fn grid(batch_heads: u32, seq: u32) -> u32 {
    seq.div_ceil(BLOCK_Q) * batch_heads
}

/// Flash attention forward for head dimension 128: `o = softmax(scale · q kᵀ) v` per head,
/// with keys after the query masked out when `causal` is not 0.
///
/// `q`, `k`, `v`, `o` hold `heads` heads (batch × heads) of `seq` rows of 128 bf16 values each (bit
/// patterns). `scale` must be positive (`1 / sqrt(128)` for the usual attention). Launch with
/// [`grid`], [`THREADS`] threads and [`shared_bytes`]`(128)` bytes of dynamic shared memory;
/// anything else traps.
#[kernel]
pub fn attention_fwd_d128(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    forward::<128, 8, 16>(q, k, v, seq, scale, causal, o);
}

/// [`attention_fwd_d128`] for head dimension 64 (launch with [`shared_bytes`]`(64)`).
#[kernel]
pub fn attention_fwd_d64(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    forward::<64, 4, 8>(q, k, v, seq, scale, causal, o);
}

/// The kernel body for head dimension `D` (`DK = D / 16` steps of `k` in `Q Kᵀ`, `DN = D / 8`
/// column tiles of `O`).
///
/// Warp `w` owns query rows `16 w ..` of the block's 128 and keeps their `Q` fragments, the
/// running row maxima and sums, and its `16 × D` slice of `O` in registers. Each iteration
/// takes one 64-key tile of `K` and `V` from shared memory (two stages: the copy of the next
/// tile runs during this one's arithmetic), computes the 16 × 64 scores (`mma`, `K` through
/// `ldmatrix`), masks keys past `seq` (and after the query when causal), updates the online
/// softmax in base 2 (`scale · log2 e` folded into one `fma` before `ex2`), turns the
/// probabilities into bf16 `A` fragments in registers (the score accumulators' layout is
/// the `A` layout), and adds `P V` (`V` through `ldmatrix.trans`). Causal blocks stop at the
/// diagonal, a warp skips tiles wholly after its rows, and the blocks with the most tiles
/// start first.
///
/// Tiles in shared memory are row-major with the 16-byte chunk `c` of row `r` at chunk
/// `c ^ (r % 8)`, so that the eight rows of each `ldmatrix` phase hit distinct banks.
#[inline(always)]
fn forward<const D: usize, const DK: usize, const DN: usize>(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<'_, u16>,
) {
    const BQ: usize = BLOCK_Q as usize;
    const BN: usize = BLOCK_KV as usize;
    let s = seq as usize;
    let tile = BN * D * 2; // bytes of one K or V tile
    let smem = dynamic_shared::<u8>();
    let blocks_q = s.div_ceil(BQ);
    let heads = thread::grid_dim_x() as usize / blocks_q.max(1);
    let total = heads * s * D;
    assert!(
        D == 16 * DK
            && D == 8 * DN
            && thread::block_dim_x() == THREADS
            && smem.len() >= 4 * tile + ALIGN
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
    // Causal: the last query blocks of a head have the most key tiles; start them first.
    let qb = if causal { blocks_q - 1 - qi } else { qi };
    let q0 = qb * BQ;
    let head = hd * s * D;
    let tid = thread::thread_idx_x() as usize;
    let (w, l) = (tid / 32, tid % 32);
    let (g, t) = (l / 4, l % 4);

    let raw = smem.as_mut_ptr();
    let base = SharedAddr::of(raw).align_up(ALIGN);
    let pad = SharedAddr::of(raw).bytes_to(base);
    // Stage i: the K tile at 2 i tiles, the V tile after it. The Q tile (BQ = 2 BN rows)
    // occupies stage 1 until its fragments are in registers.
    let k_stage = |i: usize| base.add_bytes(2 * i * tile);
    let v_stage = |i: usize| base.add_bytes(2 * i * tile + tile);
    let q_tile = k_stage(1);
    let off = |r: usize, c: usize| r * D * 2 + ((c ^ (r % 8)) * 16);

    // Rows row0 .. row0 + rows of one head of `src` into the tile at byte `dst_off` of the
    // aligned base: 16-byte chunk i (of D / 8 per row) by thread i % THREADS; rows past the
    // sequence are zero (finite, so masked products stay 0).
    let load = |dst_off: usize, src: &[u16], row0: usize, rows: usize| {
        let chunks = D / 8;
        let mut i = tid;
        while i < rows * chunks {
            let (r, c) = (i / chunks, i % chunks);
            let at = dst_off + off(r, c);
            if row0 + r < s {
                // SAFETY: row row0 + r < seq of this head: its chunk c (8 elements) is inside
                // `src` (length checked above) and 16-byte aligned (rows of D even-sized
                // elements from an aligned allocation, D % 8 == 0); the destination is
                // inside the tile (at + 16 <= rows · D · 2), which nothing reads or writes
                // until the wait and barrier that follow (see the loop).
                unsafe {
                    cp_async_16_at(
                        base.add_bytes(at),
                        src.as_ptr()
                            .wrapping_add(head + (row0 + r) * D + c * 8)
                            .cast(),
                    )
                };
            } else {
                // SAFETY: as above for the destination, written by this thread alone; the
                // generic pointer `raw + pad` is the shared address `base`.
                unsafe { raw.add(pad + at).cast::<[u32; 4]>().write([0; 4]) };
            }
            i += THREADS as usize;
        }
    };

    load(2 * tile, q, q0, BQ);
    load(0, k, 0, BN);
    load(tile, v, 0, BN);
    cp_async_commit();
    cp_async_wait::<0>();
    sync::sync_threads();
    // Q fragments: lane l points at row l % 16, column 8 (l / 16) of each 16 × 16 piece.
    let mut qf = [[0u32; 4]; DK];
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        if kk < DK {
            // SAFETY: the whole warp runs this (uniform control flow); the Q tile is complete
            // (wait and barrier above) and not written until the barrier of the first
            // iteration; rows 16 w + l % 16 < BQ, chunks < D / 8: inside the tile.
            qf[kk] = unsafe { ldmatrix_x4_at(q_tile.add_bytes(off(16 * w + l % 16, 2 * kk + l / 16))) };
        }
    });

    let tiles = if causal {
        (q0 + BQ).min(s).div_ceil(BN)
    } else {
        s.div_ceil(BN)
    };
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let row0 = q0 + 16 * w + g; // this thread's first row; the second is row0 + 8
    // SAFETY: all-zero bits are 0.0; a memset LLVM splits into registers.
    let mut acc: [[f32; 4]; DN] = unsafe { core::mem::zeroed() };
    let mut m = [f32::NEG_INFINITY; 2];
    let mut lsum = [0f32; 2];
    // This lane's ldmatrix rows (see `off`: every row it points at has r % 8 == x): for K,
    // row 8 (l / 16) + x of each 16-key slab at chunk 2 kk + (l / 8) % 2; for V (transposed),
    // row x + 8 ((l / 8) % 2) at chunk 2 dp + l / 16. Chunk (2 i + b) ^ x lies at byte
    // ((b ^ x) * 16) ^ (32 i): the step's part is an XOR of the lane's address (bits 5..7,
    // clear in the 1024-aligned stage and in the row offset, a multiple of 128 bytes) and
    // the 16-key slab's part a constant, so no per-step address outlives an iteration.
    let (x, row_bytes) = (l % 8, D * 2);
    let k_lane = (8 * (l / 16) + x) * row_bytes + ((((l / 8) % 2) ^ x) * 16);
    let v_lane = (x + 8 * ((l / 8) % 2)) * row_bytes + (((l / 16) ^ x) * 16);
    for n in 0..tiles {
        if n > 0 {
            cp_async_wait::<0>();
        }
        // SAFETY: every thread of the block runs this loop the same number of times (the
        // bounds are uniform per block) and reaches this barrier together. After it tile n
        // is complete, and every warp is done with tile n - 1 (and with the Q tile), so its
        // stage may be refilled.
        unsafe { sync::sync_threads_aligned() };
        if n + 1 < tiles {
            let st = (n + 1) % 2;
            load(2 * st * tile, k, (n + 1) * BN, BN);
            load(2 * st * tile + tile, v, (n + 1) * BN, BN);
            cp_async_commit();
        }
        let key0 = n * BN;
        // Causal: a tile whose first key is after this warp's last row adds nothing.
        if causal && key0 > q0 + 16 * w + 15 {
            continue;
        }
        let (ks, vs) = (k_stage(n % 2), v_stage(n % 2));

        // S = Q Kᵀ: 8 column tiles of 8 keys; each ldmatrix gives two tiles' B fragments.
        let mut sc = [[0f32; 4]; 8];
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < DK {
                let kb = ks.add_bytes(k_lane).xor_bytes(32 * kk);
                unroll!(jp in [0, 1, 2, 3] {
                    // SAFETY: the warp runs this together (warp-uniform branch above); the
                    // K tile is complete and not rewritten before the next barrier; the row
                    // (< BN) and chunk (< D / 8) are inside it.
                    unsafe {
                        let b = ldmatrix_x4_at(kb.add_bytes(jp * 16 * row_bytes));
                        sc[2 * jp] = mma_m16n8k16_bf16(qf[kk], [b[0], b[1]], sc[2 * jp]);
                        sc[2 * jp + 1] = mma_m16n8k16_bf16(qf[kk], [b[2], b[3]], sc[2 * jp + 1]);
                    }
                });
            }
        });

        // Keys past the sequence, and after the query when causal, get no weight.
        if key0 + BN > s || (causal && key0 + BN > q0 + 16 * w + 1) {
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                unroll!(e in [0, 1, 2, 3] {
                    let key = key0 + 8 * j + 2 * t + (e & 1);
                    let row = row0 + 8 * (e >> 1);
                    if key >= s || (causal && key > row) {
                        sc[j][e] = f32::NEG_INFINITY;
                    }
                });
            });
        }

        // Online softmax in base 2; each row's 64 scores are spread over the 4 threads of a
        // group (row g: elements 0, 1; row g + 8: elements 2, 3).
        let mut tmax = [f32::NEG_INFINITY; 2];
        unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
            tmax[0] = tmax[0].max(sc[j][0]).max(sc[j][1]);
            tmax[1] = tmax[1].max(sc[j][2]).max(sc[j][3]);
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
        unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
            unroll!(e in [0, 1, 2, 3] {
                let p = math::exp2f(math::fmaf(sc[j][e], scale_log2, -shift[e >> 1]));
                sc[j][e] = p;
                lsum[e >> 1] += p;
            });
        });
        unroll!(dn in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if dn < DN {
                acc[dn][0] *= alpha[0];
                acc[dn][1] *= alpha[0];
                acc[dn][2] *= alpha[1];
                acc[dn][3] *= alpha[1];
            }
        });

        // O += P V: P's accumulator tiles 2 kc, 2 kc + 1 are the A fragment of keys
        // 16 kc .. 16 kc + 16; V's B fragments come transposed from its row-major tile.
        unroll!(kc in [0, 1, 2, 3] {
            let a = [
                pack_bf16x2(sc[2 * kc][0], sc[2 * kc][1]),
                pack_bf16x2(sc[2 * kc][2], sc[2 * kc][3]),
                pack_bf16x2(sc[2 * kc + 1][0], sc[2 * kc + 1][1]),
                pack_bf16x2(sc[2 * kc + 1][2], sc[2 * kc + 1][3]),
            ];
            unroll!(dp in [0, 1, 2, 3, 4, 5, 6, 7] {
                if dp < DN / 2 {
                    let vb = vs.add_bytes(v_lane).xor_bytes(32 * dp);
                    // SAFETY: as for K: the warp together, the V tile complete and not
                    // rewritten before the next barrier, row < BN and chunk < D / 8.
                    unsafe {
                        let b = ldmatrix_x4_trans_at(vb.add_bytes(kc * 16 * row_bytes));
                        acc[2 * dp] = mma_m16n8k16_bf16(a, [b[0], b[1]], acc[2 * dp]);
                        acc[2 * dp + 1] = mma_m16n8k16_bf16(a, [b[2], b[3]], acc[2 * dp + 1]);
                    }
                }
            });
        });
    }

    // Normalise by the row sums (their four parts are in the group's threads) and store.
    let mut inv = [0f32; 2];
    unroll!(h in [0, 1] {
        let x = lsum[h] + shfl_xor_sync(FULL_MASK, lsum[h], 1);
        let x = x + shfl_xor_sync(FULL_MASK, x, 2);
        inv[h] = 1.0 / x;
    });
    let out = o.as_mut_ptr();
    unroll!(dn in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        if dn < DN {
            unroll!(h in [0, 1] {
                let row = row0 + 8 * h;
                if row < s {
                    let col = 8 * dn + 2 * t;
                    let bits = pack_bf16x2(acc[dn][2 * h] * inv[h], acc[dn][2 * h + 1] * inv[h]);
                    // SAFETY: row < seq, col + 2 <= D: inside this head of `o` (length checked
                    // above); 4-byte aligned (col and D even). The pair is this thread's alone:
                    // the accumulator layout gives the threads of a warp disjoint elements of
                    // its 16 rows, the warps disjoint rows, the blocks disjoint query blocks
                    // or heads.
                    unsafe { out.add(head + row * D + col).cast::<u32>().write(bits) };
                }
            });
        }
    });
}

/// The host reference, in f64: row `row` of head `head` of `softmax(scale · q kᵀ) v` (keys
/// after the row masked out when `causal`), into `out` (`d` values). `q`, `k`, `v` are bf16
/// bit patterns in the kernels' layout (`seq` rows of `d` per head).
///
/// ```
/// use ffi_examples_attention_kernels::reference_row;
/// use gpukernel_device::mma::bf16_bits;
/// // One head of two keys: the first row (causal) sees key 0 alone.
/// let one = |x: f32| [bf16_bits(x), bf16_bits(0.0)];
/// let (q, k) = ([one(1.0), one(1.0)].concat(), [one(1.0), one(-1.0)].concat());
/// let v = [one(3.0), one(5.0)].concat();
/// let mut out = [0.0; 2];
/// reference_row(&q, &k, &v, 2, 2, 1.0, true, 0, 0, &mut out);
/// assert_eq!(out, [3.0, 0.0]);
/// ```
#[cfg(not(target_arch = "nvptx64"))]
#[allow(clippy::too_many_arguments)] // the attention problem's own parameters
pub fn reference_row(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    seq: usize,
    d: usize,
    scale: f64,
    causal: bool,
    head: usize,
    row: usize,
    out: &mut [f64],
) {
    use gpukernel_device::mma::bf16_to_f32;
    let at = |x: &[u16], r: usize, c: usize| bf16_to_f32(x[(head * seq + r) * d + c]) as f64;
    let keys = if causal { row + 1 } else { seq };
    let score = |j: usize| scale * (0..d).map(|c| at(q, row, c) * at(k, j, c)).sum::<f64>();
    let max = (0..keys).map(score).fold(f64::NEG_INFINITY, f64::max);
    out[..d].fill(0.0);
    let mut sum = 0.0;
    for j in 0..keys {
        let p = math::exp(score(j) - max);
        sum += p;
        for (c, o) in out[..d].iter_mut().enumerate() {
            *o += p * at(v, j, c);
        }
    }
    for o in &mut out[..d] {
        *o /= sum;
    }
}
