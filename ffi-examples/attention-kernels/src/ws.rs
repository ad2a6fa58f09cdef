//! Attention forward on Hopper, warp-specialised (FlashAttention-3's structure): a producer
//! warpgroup whose one thread feeds `Q` once and `K` and `V` tiles into a ring of
//! shared-memory stages by TMA (a *full* and an *empty* `mbarrier` per tile and stage), and
//! `NWG` consumer warpgroups of 64 query rows each that compute on them with `wgmma`.
//!
//! Each consumer runs the loop of [`crate::hopper`] (`S(n) = Q K(n)ᵀ` and `O += P(n−1) V(n−1)`
//! issued together, the softmax of `S(n)` while the second product runs), and the consumers
//! take turns to issue their products: named barriers ([`NamedBarrier`], 256 threads: one
//! warpgroup waiting, the one before it arriving) pass the turn round the ring, so that one
//! warpgroup's softmax runs while another's products occupy the tensor cores. `setmaxnreg`
//! moves registers from the producer to the consumers; the launch bounds in `build.rs`
//! (the threads of the block, one block per multiprocessor) give ptxas the cap at entry that
//! it needs. A consumer releases a `K` stage as soon as its `S` is complete and a `V` stage
//! after its `P V`, each with one arrival per consumer warpgroup.
//!
//! The tensors are seen by TMA as one `[heads · seq, D]` matrix each, in boxes of 64 columns
//! (128 bytes, the swizzle span): a key tile that runs past the end of its head holds rows of
//! the next head (or zeros past the tensor). Their scores are masked; their `V` rows are
//! zeroed in shared memory before the last `P V` (a masked key has probability 0, but 0 · ∞
//! is not 0), and the output rows past the sequence are not stored.

use gpukernel_device::mbarrier::{self, Mbarrier};
use gpukernel_device::mma::{SharedAddr, pack_bf16x2};
use gpukernel_device::named_barrier::NamedBarrier;
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::tma::{self, TensorMap};
use gpukernel_device::warp::{FULL_MASK, shfl_xor_sync};
use gpukernel_device::wgmma::{self, Accumulators, SmemDesc, sw128_offset};
use gpukernel_device::wgmma_rs::{
    NMajorDesc, RsAccumulators, mma_m64n64k16_bf16_rs_tb, mma_m64n128k16_bf16_rs_tb,
};
use gpukernel_device::{math, thread, unroll};

/// Keys per `K` / `V` tile of the warp-specialised kernels (the box rows of their maps).
pub const WS_BLOCK_KV: u32 = 128;
/// Columns of one TMA box (128 bytes of bf16, the swizzle span): a tile of head dimension
/// `D` is `D / 64` boxes.
pub const WS_BOX_COLS: u32 = 64;

/// Consumer warpgroups (64 query rows each) of [`attention_fwd_d128_tma`] (2, `head_dim`
/// 128) and [`attention_fwd_d64_tma`] (3, `head_dim` 64); [`attention_fwd_d64_tma_q128`] has
/// 2. The other helpers take the count: the kernels' registers (`build.rs`) fix it per
/// kernel.
pub const fn ws_consumers(head_dim: u32) -> u32 {
    if head_dim == 64 { 3 } else { 2 }
}

/// Query rows per block of a kernel with `consumers` consumer warpgroups (the box rows of
/// its `Q` map).
pub const fn ws_block_q(consumers: u32) -> u32 {
    64 * consumers
}

/// Threads per block of a kernel with `consumers` consumer warpgroups: the producer
/// warpgroup and the consumers.
pub const fn ws_threads(consumers: u32) -> u32 {
    128 * (1 + consumers)
}

/// Stages of the `K` / `V` ring for head dimension `head_dim`.
pub const fn ws_stages(head_dim: u32) -> u32 {
    if head_dim == 64 { 4 } else { 3 }
}

/// Dynamic shared memory of a launch for head dimension `head_dim` with `consumers` consumer
/// warpgroups: 1024 bytes of alignment slack, the `Q` tile, the stages' `K` and `V` tiles,
/// and the barriers (above 48 KiB: `Function::set_max_dynamic_shared_bytes`).
pub const fn ws_shared_bytes(head_dim: u32, consumers: u32) -> u32 {
    1024 + ws_block_q(consumers) * head_dim * 2
        + ws_stages(head_dim) * 2 * WS_BLOCK_KV * head_dim * 2
        + 8 * (1 + 4 * ws_stages(head_dim))
}

/// The grid of a launch with `consumers` consumer warpgroups: one block per
/// [`ws_block_q`]`(consumers)` queries of each of `batch_heads` heads, head by head.
pub const fn ws_grid(batch_heads: u32, seq: u32, consumers: u32) -> u32 {
    seq.div_ceil(ws_block_q(consumers)) * batch_heads
}

/// [`crate::attention_fwd_d128`] for head dimension 128, warp-specialised and fed by TMA,
/// with two consumer warpgroups. Launch with [`ws_grid`]`(.., 2)`, [`ws_threads`]`(2)`
/// threads and [`ws_shared_bytes`]`(128, 2)` bytes of dynamic shared memory (anything else
/// traps).
///
/// # Safety
/// `q`, `k` and `v` are tensor maps from the runtime (`TensorMap2D<u16>` or `<bf16>`, the
/// 128-byte swizzle) of the `[heads · seq, 128]` bf16 tensors, the boxes `[ws_block_q(2),
/// 64]` for `q` and `[128, 64]` for `k` and `v`; `o` holds the same number of elements; nothing
/// writes `q`, `k`, `v` during the launch.
#[kernel]
pub unsafe fn attention_fwd_d128_tma(
    q: TensorMap,
    k: TensorMap,
    v: TensorMap,
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    // SAFETY: the kernel's contract.
    unsafe { forward::<128, 64, 2>(q, k, v, seq, scale, causal, o) };
}

/// [`attention_fwd_d128_tma`] for head dimension 64, with three consumer warpgroups (192
/// query rows per block: [`ws_grid`]`(.., 3)`, [`ws_threads`]`(3)` threads,
/// [`ws_shared_bytes`]`(64, 3)` bytes, `q`'s box `[ws_block_q(3), 64]`).
///
/// # Safety
/// As [`attention_fwd_d128_tma`], for `[heads · seq, 64]` tensors.
#[kernel]
pub unsafe fn attention_fwd_d64_tma(
    q: TensorMap,
    k: TensorMap,
    v: TensorMap,
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    // SAFETY: the kernel's contract.
    unsafe { forward::<64, 32, 3>(q, k, v, seq, scale, causal, o) };
}

/// [`attention_fwd_d64_tma`] with two consumer warpgroups (128 query rows per block:
/// [`ws_grid`]`(.., 2)`, [`ws_threads`]`(2)` threads, [`ws_shared_bytes`]`(64, 2)` bytes,
/// `q`'s box `[ws_block_q(2), 64]`): less work past the diagonal when causal (the key tiles
/// of a 192-row block reach up to 127 keys past its first warpgroup's rows).
///
/// # Safety
/// As [`attention_fwd_d64_tma`].
#[kernel]
pub unsafe fn attention_fwd_d64_tma_q128(
    q: TensorMap,
    k: TensorMap,
    v: TensorMap,
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<u16>,
) {
    // SAFETY: the kernel's contract.
    unsafe { forward::<64, 32, 2>(q, k, v, seq, scale, causal, o) };
}

/// `2^x` in one `ex2.approx.ftz.f32` (results below 2^-126 flush to 0: probabilities that
/// small do not register in a bf16 P or an f32 row sum of at least 1). The plain
/// `ex2.approx.f32` costs three more instructions for subnormal results.
#[inline(always)]
fn exp2_ftz(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        unsafe extern "C" {
            // LLVM's intrinsic (not inline asm, which LLVM cannot place among the `wgmma`s:
            // ptxas then serialised them, C7513).
            #[link_name = "llvm.nvvm.ex2.approx.ftz.f"]
            safe fn ex2_approx_ftz(x: f32) -> f32;
        }
        ex2_approx_ftz(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        math::exp2f(x)
    }
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

/// The body for head dimension `D` (`OA = D / 2` accumulators per thread) with `NWG`
/// consumer warpgroups.
///
/// # Safety
/// The kernels' contract.
#[inline(always)]
unsafe fn forward<const D: usize, const OA: usize, const NWG: usize>(
    q_map: TensorMap,
    k_map: TensorMap,
    v_map: TensorMap,
    seq: u32,
    scale: f32,
    causal: u32,
    o: DisjointSlice<'_, u16>,
) where
    [f32; OA]: PvAccumulators + core::ops::IndexMut<usize, Output = f32>,
{
    const BN: usize = WS_BLOCK_KV as usize;
    // Bytes of one 64-column panel of a K or V tile (128 rows of 128 bytes).
    const PANEL: usize = BN * 128;
    let bq = 64 * NWG;
    let stages = ws_stages(D as u32) as usize;
    let s = seq as usize;
    let smem = dynamic_shared::<u8>();
    let blocks_q = s.div_ceil(bq);
    let heads = thread::grid_dim_x() as usize / blocks_q.max(1);
    assert!(
        OA * 2 == D
            && thread::block_dim_x() == ws_threads(NWG as u32)
            && smem.len() >= ws_shared_bytes(D as u32, NWG as u32) as usize
            && s > 0
            && thread::grid_dim_x() as usize == heads * blocks_q
            && o.len() >= heads * s * D
            && scale > 0.0
    );
    let causal = causal != 0;
    let bx = thread::block_idx_x() as usize;
    let (hd, qi) = (bx / blocks_q, bx % blocks_q);
    // Causal: the last query blocks of a head have the most key tiles; start them first.
    let qb = if causal { blocks_q - 1 - qi } else { qi };
    let q0 = qb * bq;
    let head_row = hd * s; // the head's first row in the [heads · seq, D] matrices
    let tiles = if causal {
        (q0 + bq).min(s).div_ceil(BN)
    } else {
        s.div_ceil(BN)
    };
    let tid = thread::thread_idx_x() as usize;

    let raw = smem.as_mut_ptr();
    let base = SharedAddr::of(raw).align_up(wgmma::SW128_ATOM_BYTES);
    let pad = SharedAddr::of(raw).bytes_to(base);
    // Q (D / 64 panels of bq rows), then stage i's K tile and its V tile (D / 64 panels of
    // 128 rows each), then the barriers.
    let q_tile = base;
    let q_panel = bq * 128;
    let tile = BN * D * 2;
    let k_at = |i: usize| bq * D * 2 + 2 * i * tile;
    let v_at = |i: usize| bq * D * 2 + (2 * i + 1) * tile;
    let bars = base.add_bytes(bq * D * 2 + stages * 2 * tile);
    let full_q = Mbarrier::at(bars);
    let full_k = |i: usize| Mbarrier::at(bars.add_bytes(8 * (1 + i)));
    let full_v = |i: usize| Mbarrier::at(bars.add_bytes(8 * (1 + stages + i)));
    let empty_k = |i: usize| Mbarrier::at(bars.add_bytes(8 * (1 + 2 * stages + i)));
    let empty_v = |i: usize| Mbarrier::at(bars.add_bytes(8 * (1 + 3 * stages + i)));
    let parity = |n: usize| ((n / stages) & 1) as u32;
    if tid == 0 {
        // SAFETY: one thread initialises each barrier once, before the block barrier below
        // publishes them: `full_*` complete on the producer's arrival and the bytes of the
        // tile, `empty_*` on one arrival per consumer thread.
        unsafe {
            full_q.init(1);
            for i in 0..stages {
                full_k(i).init(1);
                full_v(i).init(1);
                empty_k(i).init(128 * NWG as u32);
                empty_v(i).init(128 * NWG as u32);
            }
        }
        mbarrier::fence_init();
    }
    gpukernel_device::sync::sync_threads();

    let wg = tid / 128;
    if wg == 0 {
        // The producer.
        // SAFETY: the whole warpgroup executes this call, converged (`wg` is uniform per
        // warpgroup); 24 registers for its 128 threads and the consumers' (see below) fit the
        // block's budget at the launch bounds of `build.rs`.
        unsafe { wgmma::setmaxnreg_dec::<24>() };
        if tid == 0 {
            // SAFETY: the maps are the runtime's tensor maps (the kernel's contract).
            unsafe {
                q_map.prefetch();
                k_map.prefetch();
                v_map.prefetch();
            }
            // SAFETY: the maps are the kernel's contract (boxes of bq or 128 rows
            // of 64 columns, at 64-column steps inside D); each box lands 1024-byte aligned
            // inside the block's shared memory, in a tile no one reads until its full
            // barrier's phase completes, and that the consumers released (the empty
            // barrier's previous phase; complete at once for a first use). The one arrival
            // of a full barrier expects the bytes its boxes write.
            unsafe {
                full_q.arrive_expect_tx((bq * D * 2) as u32);
                unroll!(p in [0, 1] {
                    if p < D / 64 {
                        tma::load(
                            q_tile.add_bytes(p * q_panel),
                            q_map,
                            [64 * p as i32, (head_row + q0) as i32],
                            full_q,
                        );
                    }
                });
                for n in 0..tiles {
                    let (st, ph) = (n % stages, parity(n));
                    let row = (head_row + n * BN) as i32;
                    empty_k(st).wait_parity(ph ^ 1);
                    full_k(st).arrive_expect_tx(tile as u32);
                    unroll!(p in [0, 1] {
                        if p < D / 64 {
                            tma::load(base.add_bytes(k_at(st) + p * PANEL), k_map, [64 * p as i32, row], full_k(st));
                        }
                    });
                    empty_v(st).wait_parity(ph ^ 1);
                    full_v(st).arrive_expect_tx(tile as u32);
                    unroll!(p in [0, 1] {
                        if p < D / 64 {
                            tma::load(base.add_bytes(v_at(st) + p * PANEL), v_map, [64 * p as i32, row], full_v(st));
                        }
                    });
                }
            }
        }
        return;
    }

    // A consumer.
    // SAFETY: the whole warpgroup executes this call, converged (see above).
    unsafe {
        if NWG == 2 {
            wgmma::setmaxnreg_inc::<240>();
        } else {
            wgmma::setmaxnreg_inc::<160>();
        }
    }
    let c = wg - 1;
    let ct = tid % 128;
    let (w, l) = (ct / 32, ct % 32);
    let (g, t) = (l / 4, l % 4);
    let wrow = q0 + 64 * c + 16 * w; // this warp's first row
    let row0 = wrow + g; // this thread's first row; the second is row0 + 8
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let mut acc = <[f32; OA]>::zeroed();
    let mut m = [f32::NEG_INFINITY; 2];
    let mut lsum = [0f32; 2];
    // The turn: this warpgroup waits at its barrier (with the arrival of the one before it in
    // the ring), issues its products, and arrives at the next one's.
    let my_turn = NamedBarrier::new(1 + c as u32, 256);
    let next_turn = NamedBarrier::new(1 + ((c + 1) % NWG) as u32, 256);
    // All the consumers (the partial last V tile).
    let consumers = NamedBarrier::new(1 + NWG as u32, 128 * NWG as u32);
    // The last warpgroup gives the first its first turn; the first takes one more turn after
    // its loop (the last warpgroup's last arrival), so every phase of every turn barrier
    // completes before the block ends.
    if c == NWG - 1 {
        next_turn.arrive();
    }
    // Every consumer thread arrives (no branch to one thread per warpgroup: that branch
    // among the wgmma pipeline makes ptxas serialise every wgmma of the kernel, C7513).
    let release = |bar: Mbarrier| {
        // SAFETY: one arrival per consumer thread per use of the stage, after the wait that
        // covers this warpgroup's batch over it (the caller's).
        unsafe { bar.arrive() };
    };
    let qa = q_tile.add_bytes(c * 64 * 128);
    // SAFETY: one wait of the one phase of the Q barrier.
    unsafe { full_q.wait_parity(0) };

    // Issues S = Q K(n)ᵀ into `sc` and commits it (unsafe calls, used inside `unsafe` blocks).
    //
    // SAFETY (of the calls): the warpgroup together (straight-line code between uniform
    // branches: ptxas serialises wgmma in a branch it cannot prove uniform); Q and tile n
    // complete (their full barriers), 1024-byte aligned, not rewritten before this
    // warpgroup's release after the waits below; `wgmma::fence` first.
    macro_rules! issue_s { ($sc:expr, $n:expr) => {{
        let (sc, n): (&mut [f32; 64], usize) = ($sc, $n);
        let kt = base.add_bytes(k_at(n % stages));
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let (qp, kp) = ((kk / 4) * q_panel, (kk / 4) * PANEL);
                let kd = 16 * (kk % 4);
                wgmma::mma_m64n128k16_bf16(
                    sc,
                    SmemDesc::k_major_sw128(qa.add_bytes(qp)).add_k(kd),
                    SmemDesc::k_major_sw128(kt.add_bytes(kp)).add_k(kd),
                );
            }
        });
        wgmma::commit_group();
    }}}
    // Issues O += P V(n) and commits it (as `issue_s`; `pf` and `acc` kept until
    // `wait_keeping`).
    macro_rules! issue_pv { ($acc:expr, $pf:expr, $n:expr) => {{
        let (acc, pf, n): (&mut [f32; OA], &[[u32; 4]; 8], usize) = ($acc, $pf, $n);
        let vd = NMajorDesc::sw128(base.add_bytes(v_at(n % stages)), PANEL);
        unroll!(kc in [0, 1, 2, 3, 4, 5, 6, 7] {
            acc.pv(pf[kc], vd.add_k(16 * kc));
        });
        wgmma::commit_group();
    }}}
    // The online softmax of tile n in base 2 (as in `crate::hopper`): masks, updates the row
    // maxima and sums, returns P as bf16 A fragments and the factor for the O so far.
    macro_rules! softmax { ($sc:expr, $n:expr) => {{
        let (sc, n): (&mut [f32; 64], usize) = ($sc, $n);
        let key0 = n * BN;
        // Keys past the sequence, and after the query when causal, get no weight.
        if key0 + BN > s || (causal && key0 + BN > wrow + 1) {
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
            alpha[h] = exp2_ftz(m[h] - shift[h]);
            m[h] = m_new;
            lsum[h] *= alpha[h];
        });
        let mut pf = [[0u32; 4]; 8];
        unroll!(kc in [0, 1, 2, 3, 4, 5, 6, 7] {
            let mut p = [0f32; 8];
            unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7] {
                let x = exp2_ftz(math::fmaf(sc[8 * kc + e], scale_log2, -shift[(e / 2) % 2]));
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

    // Tile 0 alone; then iteration n issues S(n) and O += P(n − 1) V(n − 1) in this
    // warpgroup's turn and runs the softmax of S(n) while the second product is on the
    // tensor cores; the last P V after the loop. Every consumer runs every tile of the block
    // (a causal block's first warpgroups mask their last tiles whole): the turns and the
    // stage releases count on it, and a wgmma in a branch would be serialised.
    // SAFETY: see `issue_s`; the full barrier's phase of tile 0 is its first.
    unsafe {
        full_k(0).wait_parity(0);
        my_turn.sync_aligned();
    }
    let mut sc = <[f32; 64]>::zero();
    // SAFETY: see `issue_s`.
    unsafe {
        wgmma::fence();
        issue_s!(&mut sc, 0);
        next_turn.arrive_aligned();
        sc.wait::<0>();
    }
    release(empty_k(0));
    let (mut pf, _) = softmax!(&mut sc, 0);
    for n in 1..tiles {
        // SAFETY: tile n's K and tile n - 1's V are complete once their full barriers'
        // phases of these uses are. The turn barriers: whole warpgroups, uniform code.
        unsafe {
            full_k(n % stages).wait_parity(parity(n));
            full_v((n - 1) % stages).wait_parity(parity(n - 1));
            my_turn.sync_aligned();
        }
        let mut sc = <[f32; 64]>::zero();
        // SAFETY: see `issue_s`; S's group is the older of the two, so `wait::<1>` covers
        // it, and `wait_keeping::<0>` the P V, after which `acc` holds O up to tile n - 1.
        unsafe {
            wgmma::fence();
            issue_s!(&mut sc, n);
            issue_pv!(&mut acc, &pf, n - 1);
            next_turn.arrive_aligned();
            sc.wait::<1>();
        }
        release(empty_k(n % stages));
        let (next, alpha) = softmax!(&mut sc, n);
        // SAFETY: see above.
        unsafe { acc.wait_keeping::<0>(&pf) };
        release(empty_v((n - 1) % stages));
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
    if c == 0 {
        my_turn.sync();
    }
    let last = tiles - 1;
    // SAFETY: one wait of this use's phase (as in the loop).
    unsafe { full_v(last % stages).wait_parity(parity(last)) };
    let valid = s - last * BN; // keys of the last tile inside the sequence
    if valid < BN {
        // Rows `valid ..` of the last V tile belong to the next head (or are zeros past the
        // tensor): zero them, each consumer thread a share of the 16-byte chunks, before any
        // consumer's last P V reads the tile.
        let vt = v_at(last % stages);
        let mut i = tid - 128;
        while i < (BN - valid) * (D / 8) {
            let (r, ch) = (valid + i / (D / 8), i % (D / 8));
            let at = vt + (ch / 8) * PANEL + sw128_offset(r, ch % 8);
            // SAFETY: inside the V tile (r < 128, ch < D / 8), which the TMA copy completed
            // (its full barrier) and no consumer reads before the barrier below; `raw + pad`
            // is the generic address of `base`; each chunk is this thread's alone.
            unsafe { raw.add(pad + at).cast::<[u32; 4]>().write([0; 4]) };
            i += 128 * NWG;
        }
        wgmma::fence_proxy_async();
        // Every consumer thread comes here (`valid` is uniform over the block).
        consumers.sync();
    }
    // SAFETY: see `issue_s`.
    unsafe {
        wgmma::fence();
        issue_pv!(&mut acc, &pf, last);
        acc.wait_keeping::<0>(&pf);
    }
    release(empty_v(last % stages));

    // Normalise by the row sums and store.
    let mut inv = [0f32; 2];
    unroll!(h in [0, 1] {
        let x = lsum[h] + shfl_xor_sync(FULL_MASK, lsum[h], 1);
        let x = x + shfl_xor_sync(FULL_MASK, x, 2);
        inv[h] = 1.0 / x;
    });
    let out = o.as_mut_ptr();
    let head = head_row * D;
    unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        unroll!(h in [0, 1] {
            let row = row0 + 8 * h;
            if j < D / 8 && row < s {
                let col = 8 * j + 2 * t;
                let bits = pack_bf16x2(acc[4 * j + 2 * h] * inv[h], acc[4 * j + 2 * h + 1] * inv[h]);
                // SAFETY: row < seq, col + 2 <= D: inside this head of `o` (length checked
                // above); 4-byte aligned. The pair is this thread's alone (accumulator
                // layout: disjoint elements per thread of a warpgroup's 64 rows; warpgroups
                // and blocks disjoint rows).
                unsafe { out.add(head + row * D + col).cast::<u32>().write(bits) };
            }
        });
    });
}
