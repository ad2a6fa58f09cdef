//! The suite's matrix multiplications: f32 SGEMM on CUDA cores (shared-memory tiles, 8×8
//! register blocking, `float4` loads) and bf16 GEMM on tensor cores (`mma.sync` m16n8k16
//! fed by `ldmatrix`, with a multi-stage `cp.async` pipeline).
//!
//! Both check their shape assumptions up front (`assert!`, uniform across the launch) and then
//! use unchecked accesses whose bounds follow from those checks.

use super::{ld4, st4};
use gpukernel_device::mma::{
    self, SharedAddr, cp_async_16_at, cp_async_commit, cp_async_wait, ldmatrix_x4_at,
};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::{dynamic_shared, shared_array};
use gpukernel_device::{math, sync, thread};

/// SGEMM block tile: rows of C per block.
pub const SGEMM_BM: u32 = 128;
/// SGEMM block tile: columns of C per block.
pub const SGEMM_BN: u32 = 128;
/// SGEMM k step per shared-memory tile.
pub const SGEMM_BK: u32 = 8;
/// SGEMM threads per block (16 × 16, each computing 8 × 8 outputs).
pub const SGEMM_THREADS: u32 = 256;

/// `c = a · b` for row-major `a` (`m × k`), `b` (`k × n`), all f32, and `c` `m` rows of `n`
/// (row pitch a multiple of 4 elements).
///
/// Launch with one-dimensional blocks of [`SGEMM_THREADS`] threads and a grid of
/// `n / SGEMM_BN × m / SGEMM_BM`; `m` and `n` must be multiples of 128 and `k` of 8 (else
/// every thread traps). Each thread computes two 4×4 quadrants 64 rows / columns apart, so
/// that its `float4` reads of the shared tiles are conflict-free broadcasts.
#[kernel]
pub fn sgemm(a: &[f32], b: &[f32], m: u32, n: u32, k: u32, c: DisjointSlice2D<f32>) {
    const BM: usize = SGEMM_BM as usize;
    const BN: usize = SGEMM_BN as usize;
    const BK: usize = SGEMM_BK as usize;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(
        thread::block_dim_x() == SGEMM_THREADS
            && m % BM == 0
            && n % BN == 0
            && k % BK == 0
            && a.len() >= m * k
            && b.len() >= k * n
            && c.cols() == n
            && c.rows() == m
            && c.pitch() % 4 == 0
            && (c.as_mut_ptr() as usize).is_multiple_of(16)
            && (thread::grid_dim_x() as usize) * BN <= n
            && (thread::grid_dim_y() as usize) * BM <= m
    );
    // Two buffers of A (transposed: [k][m]) and B ([k][n]).
    let a_s = shared_array!(super::F4, 2 * BK * BM / 4);
    let b_s = shared_array!(super::F4, 2 * BK * BN / 4);
    let (a_s, b_s) = (
        a_s.as_mut_ptr().cast::<f32>(),
        b_s.as_mut_ptr().cast::<f32>(),
    );
    let tid = thread::thread_idx_x() as usize;
    let (tx, ty) = (tid % 16, tid / 16);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    // What each thread copies per tile: one float4 of A and one of B.
    let (a_row, a_col) = (tid / 2, (tid % 2) * 4);
    let (b_row, b_col) = (tid / 32, (tid % 32) * 4);
    let a_g = a.as_ptr();
    let b_g = b.as_ptr();
    // SAFETY: rows bm + a_row < m, columns < k (k % 8 == 0), and a.len() >= m * k; offsets
    // are multiples of 4 floats of a 16-byte aligned allocation.
    let load_a = |k0: usize| unsafe { ld4(a_g.add((bm + a_row) * k + k0 + a_col)) };
    // SAFETY: as for `load_a`, with rows k0 + b_row < k and b.len() >= k * n.
    let load_b = |k0: usize| unsafe { ld4(b_g.add((k0 + b_row) * n + bn + b_col)) };
    // SAFETY: (also for the shared reads below) indices are below 2 * BK * BM; each slot is
    // written by one thread, between barriers that separate it from the reads of that buffer.
    let store = |buf: usize, av: [f32; 4], bv: [f32; 4]| unsafe {
        for (i, v) in av.into_iter().enumerate() {
            *a_s.add(buf * BK * BM + (a_col + i) * BM + a_row) = v;
        }
        st4(b_s.add(buf * BK * BN + b_row * BN + b_col), bv);
    };
    let mut acc = [[0.0f32; 8]; 8];
    store(0, load_a(0), load_b(0));
    sync::sync_threads();
    let tiles = k / BK;
    let mut buf = 0;
    for kt in 0..tiles {
        let more = kt + 1 < tiles;
        let (mut na, mut nb) = ([0.0; 4], [0.0; 4]);
        if more {
            (na, nb) = (load_a((kt + 1) * BK), load_b((kt + 1) * BK));
        }
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            // SAFETY: see above (reads of the current buffer).
            let (a0, a1, b0, b1) = unsafe {
                let ar = a_s.add(buf * BK * BM + kk * BM);
                let br = b_s.add(buf * BK * BN + kk * BN);
                (ld4(ar.add(ty * 4)), ld4(ar.add(ty * 4 + 64)), ld4(br.add(tx * 4)), ld4(br.add(tx * 4 + 64)))
            };
            let av = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
            let bv = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
            for i in 0..8 {
                for j in 0..8 {
                    acc[i][j] = math::fmaf(av[i], bv[j], acc[i][j]);
                }
            }
        });
        if more {
            store(buf ^ 1, na, nb);
            sync::sync_threads();
            buf ^= 1;
        }
    }
    let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
    for (i, row) in acc.iter().enumerate() {
        let r = bm + ty * 4 + (i % 4) + 64 * (i / 4);
        for half in 0..2 {
            let col = bn + tx * 4 + 64 * half;
            let v = [
                row[4 * half],
                row[4 * half + 1],
                row[4 * half + 2],
                row[4 * half + 3],
            ];
            // SAFETY: (r, col..col + 4) is inside c (r < m = rows, col + 4 <= n = cols),
            // 16-byte aligned (col and the pitch are multiples of 4), and belongs to this
            // thread alone (blocks own disjoint 128×128 tiles, threads disjoint rows /
            // columns within them).
            unsafe { st4(c_g.add(r * pitch + col), v) };
        }
    }
}

/// bf16 GEMM block tile: rows of C per block (both variants).
pub const GEMM_BM: u32 = 128;
/// bf16 GEMM k step per pipeline stage.
pub const GEMM_BK: u32 = 64;
/// The shared-memory row pitch of a stage, in bf16 elements: 64 + 8 padding (144 bytes), so
/// that the eight 16-byte rows one `ldmatrix` reads fall in distinct banks.
const LDS: usize = 72;

/// Columns of C per block of [`gemm_bf16`] (128) or [`gemm_bf16_wide`] (256).
pub const fn gemm_bn(wide: bool) -> u32 {
    if wide { 256 } else { 128 }
}

/// Threads per block of [`gemm_bf16`] (four warps) or [`gemm_bf16_wide`] (eight), each warp
/// computing a 64 × 64 tile of C.
pub const fn gemm_threads(wide: bool) -> u32 {
    gemm_bn(wide) / 64 * 64
}

/// Bytes of one pipeline stage (the A and B tiles) of either variant.
pub const fn gemm_stage_bytes(wide: bool) -> u32 {
    (GEMM_BM + gemm_bn(wide)) * LDS as u32 * 2
}

/// Pipeline depth of [`gemm_bf16`] and [`gemm_bf16_wide`] (3 stages).
pub const fn gemm_stages(wide: bool) -> u32 {
    // Three for both: the wide tile's fourth stage would not fit (221 KiB is the limit with
    // the larger k step), the narrow tile's would leave room for one block per SM, not two.
    let _ = wide;
    3
}

/// Dynamic shared memory a launch of either variant needs: `stages × stage bytes`
/// (above 48 KiB: call `Function::set_max_dynamic_shared_bytes` first).
pub const fn gemm_shared_bytes(wide: bool) -> u32 {
    gemm_stages(wide) * gemm_stage_bytes(wide)
}

/// A pair of f32s, 8-byte aligned (one 64-bit store).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct F2([f32; 2]);

/// `c = a · bᵀ` on tensor cores, for row-major bf16 `a` (`m × k`) and `b` (`n × k`, i.e. B
/// stored `n`-major, the `.col` operand of `mma.sync`), bf16 values as raw bit patterns, and
/// f32 `c`, `m` rows of `n` (row pitch even). Block tile 128 × 128 × 64, four warps of 64 × 64, a 3-stage `cp.async`
/// pipeline (two blocks fit an SM).
///
/// Launch with `gemm_threads(false)` threads per block, a grid of `n / 128 × m / 128`, and
/// `gemm_shared_bytes(false)` bytes of dynamic shared memory. `m`, `n` must be multiples of the
/// block tile and `k` of 64 (else every thread traps).
#[kernel]
pub fn gemm_bf16(a: &[u16], b: &[u16], m: u32, n: u32, k: u32, c: DisjointSlice2D<f32>) {
    gemm_bf16_body::<2, 3>(a, b, m, n, k, c);
}

/// [`gemm_bf16`] with a 128 × 256 block tile, eight warps and 3 stages (launch with
/// `gemm_threads(true)` threads, a grid of `n / 256 × m / 128`, `gemm_shared_bytes(true)`).
#[kernel]
pub fn gemm_bf16_wide(a: &[u16], b: &[u16], m: u32, n: u32, k: u32, c: DisjointSlice2D<f32>) {
    gemm_bf16_body::<4, 3>(a, b, m, n, k, c);
}

/// The tensor-core GEMM with `WN` warps along N (2 × `WN` warps of 64 × 64) and a
/// `STAGES`-deep pipeline. Shared addresses are computed once per thread as 32-bit
/// [`SharedAddr`]s and offset by constants inside the loop.
#[inline(always)]
fn gemm_bf16_body<const WN: usize, const STAGES: usize>(
    a: &[u16],
    b: &[u16],
    m: u32,
    n: u32,
    k: u32,
    c: DisjointSlice2D<'_, f32>,
) {
    const BM: usize = GEMM_BM as usize;
    const BK: usize = GEMM_BK as usize;
    let bn_: usize = 64 * WN;
    let threads: usize = 64 * WN;
    let stage_bytes: usize = (BM + bn_) * LDS * 2;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let smem = dynamic_shared::<u16>();
    assert!(
        thread::block_dim_x() as usize == threads
            && smem.len() * 2 >= STAGES * stage_bytes
            && m % BM == 0
            && n % bn_ == 0
            && k % BK == 0
            && a.len() >= m * k
            && b.len() >= n * k
            && c.cols() == n
            && c.rows() == m
            && c.pitch() % 2 == 0
            && (c.as_mut_ptr() as usize).is_multiple_of(8)
            && (thread::grid_dim_x() as usize) * bn_ <= n
            && (thread::grid_dim_y() as usize) * BM <= m
    );
    let base = SharedAddr::of(smem.as_mut_ptr());
    let tid = thread::thread_idx_x() as usize;
    let lane = tid % 32;
    let (wm, wn) = ((tid / 32) / WN, (tid / 32) % WN);
    // Grouped block order (L2 reuse); a bijection, so blocks still own disjoint tiles.
    let (tile_row, tile_col) = thread::grouped_block_tile(8);
    let (bm, bn) = (tile_row * BM, tile_col * bn_);
    // This thread's 16-byte chunks of a stage: A rows `chunk / 8` (BM * 8 / threads chunks),
    // B rows likewise (8 chunks), columns `(chunk % 8) * 8`.
    let chunk = |i: usize| (tid + i * threads) / 8;
    let col = (tid % 8) * 8;
    // SAFETY (the source pointers): rows bm + row < m, bn + row < n, columns col + 8 <= 64 <=
    // k of each k tile: inside a and b (checked above); 16-byte aligned (k % 64 == 0).
    let a_src = |i: usize| a.as_ptr().wrapping_add((bm + chunk(i)) * k + col);
    let b_src = |i: usize| b.as_ptr().wrapping_add((bn + chunk(i)) * k + col);
    let a_dst = |i: usize| (chunk(i) * LDS + col) * 2;
    let b_dst = |i: usize| (BM * LDS + chunk(i) * LDS + col) * 2;
    let load_stage = |slot: usize, kt: usize| {
        let st = base.add_bytes(slot * stage_bytes);
        for i in 0..BM * 8 / threads {
            // SAFETY: see `a_src`; the destination is inside stage `slot`, which no thread
            // reads until the wait and barrier of the iteration that computes it.
            unsafe {
                cp_async_16_at(
                    st.add_bytes(a_dst(i)),
                    a_src(i).wrapping_add(kt * BK).cast(),
                )
            };
        }
        for i in 0..8 {
            // SAFETY: as for A.
            unsafe {
                cp_async_16_at(
                    st.add_bytes(b_dst(i)),
                    b_src(i).wrapping_add(kt * BK).cast(),
                )
            };
        }
    };
    // Per-lane ldmatrix row offsets inside a stage (bytes).
    let a_frag = ((wm * 64 + lane % 16) * LDS + (lane / 16) * 8) * 2;
    let b_frag =
        (BM * LDS + (wn * 64 + (lane / 16) * 8 + lane % 8) * LDS + ((lane / 8) % 2) * 8) * 2;
    let tiles = k / BK;
    for st in 0..STAGES - 1 {
        if st < tiles {
            load_stage(st, st);
        }
        cp_async_commit();
    }
    let mut acc = [[[0.0f32; 4]; 8]; 4];
    let (mut read_slot, mut write_slot) = (0, STAGES - 1);
    for kt in 0..tiles {
        // Tile kt's group is complete once at most STAGES - 2 newer ones are pending.
        match STAGES {
            2 => cp_async_wait::<0>(),
            3 => cp_async_wait::<1>(),
            _ => cp_async_wait::<2>(),
        }
        sync::sync_threads();
        if kt + STAGES - 1 < tiles {
            load_stage(write_slot, kt + STAGES - 1);
        }
        cp_async_commit();
        write_slot = if write_slot + 1 == STAGES {
            0
        } else {
            write_slot + 1
        };
        let st = base.add_bytes(read_slot * stage_bytes);
        read_slot = if read_slot + 1 == STAGES {
            0
        } else {
            read_slot + 1
        };
        unroll!(kk in [0, 1, 2, 3] {
            let mut af = [[0u32; 4]; 4];
            let mut bf = [[0u32; 2]; 8];
            // SAFETY: every lane of every warp runs these loads and mmas together (uniform
            // control flow: the loop bounds are uniform); rows < 128 (A) / bn_ (B) and columns
            // < 64 of the current stage, 16-byte aligned (LDS * 2 = 144 bytes); the stage is
            // complete (wait + barrier above) and not overwritten before the next barrier.
            unsafe {
                unroll!(mi in [0, 1, 2, 3] {
                    af[mi] = ldmatrix_x4_at(st.add_bytes(a_frag + (mi * 16 * LDS + kk * 16) * 2));
                });
                unroll!(nj in [0, 1, 2, 3] {
                    let r = ldmatrix_x4_at(st.add_bytes(b_frag + (nj * 16 * LDS + kk * 16) * 2));
                    bf[2 * nj] = [r[0], r[1]];
                    bf[2 * nj + 1] = [r[2], r[3]];
                });
                unroll!(mi in [0, 1, 2, 3] {
                    unroll!(ni in [0, 1, 2, 3, 4, 5, 6, 7] {
                        acc[mi][ni] = mma::mma_m16n8k16_bf16(af[mi], bf[ni], acc[mi][ni]);
                    });
                });
            }
        });
    }
    cp_async_wait::<0>();
    let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
    let (g, t) = (lane / 4, lane % 4);
    unroll!(mi in [0, 1, 2, 3] {
        unroll!(ni in [0, 1, 2, 3, 4, 5, 6, 7] {
            let v = acc[mi][ni];
            let row = bm + wm * 64 + mi * 16 + g;
            let col = bn + wn * 64 + ni * 8 + 2 * t;
            // SAFETY: row + 8 < m = rows, col + 2 <= n = cols (tiles inside c), 8-byte
            // aligned (col and the pitch even); each (row, col) pair is this lane's alone: the
            // fragment layout gives lanes disjoint elements, warps and blocks own disjoint
            // tiles.
            unsafe {
                c_g.add(row * pitch + col).cast::<F2>().write(F2([v[0], v[1]]));
                c_g.add((row + 8) * pitch + col).cast::<F2>().write(F2([v[2], v[3]]));
            }
        });
    });
}
