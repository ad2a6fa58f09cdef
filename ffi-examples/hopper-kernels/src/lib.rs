//! Example kernels for Hopper only: the bf16 GEMM on warpgroup MMA (`wgmma`), and the
//! kernels that prove the Hopper launch features: a cooperative grid-wide sum (`grid::sync`),
//! a cluster histogram on distributed shared memory, TMA tile copies on `mbarrier`s, and a
//! pair of kernels joined by programmatic dependent launch.
//!
//! `build.rs` builds this crate for `sm_90a` (`Builder::arch("sm_90a")`), the target on which
//! `wgmma` exists; its [`PTX`] loads on compute capability 9.0 (H100, H200) only. On the host
//! the kernels run in the simulator like any other.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::mma::{SharedAddr, cp_async_16_at, cp_async_commit, cp_async_wait};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::wgmma::{self, Accumulators, SmemDesc, sw128_offset};
use gpukernel_device::{sync, thread, unroll};

pub mod adv;
mod cluster;
mod fp8;
mod gemm_tma;
mod grid;
pub mod misuse;
mod tma;

pub use cluster::{
    BINS_PER_BLOCK, HIST_BLOCK, cluster_registers, histogram_cluster, histogram_global,
};
pub use fp8::{FP8_TILE_SHARED_BYTES, fp8_conversions, wgmma_tile_e4m3};
pub use gemm_tma::{
    TMA_BM, TMA_BN, TMA_ROW_BYTES, TMA_SHARED_BYTES, TMA_STAGES, TMA_THREADS, gemm_bf16_tma,
    gemm_e4m3_tma, gemm_e4m3_tma_multicast, tma_box_a, tma_box_b, tma_box_b_half,
};
pub use grid::{REDUCE_BLOCK, pdl_first, pdl_second, sum_cooperative, sum_final, sum_partials};
pub use tma::{
    BoxGrid, BoxTile, MC_SLICE_ROWS, McTile, TILE, Tile, cluster_aligned_dynamic_exchange,
    cluster_publish, mbarrier_ring, tma_boxes_3d, tma_boxes_4d, tma_boxes_5d, tma_copy_tiles,
    tma_multicast_tiles, tma_swizzle_probe,
};

/// The PTX of every kernel in this crate, for `sm_90a`.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Machine code of every kernel, embedded at build time: SASS for `sm_90a` (an
/// architecture-specific build gets that architecture's alone) plus the PTX, in one fatbin.
/// `ctx.load_module(FATBIN)` JIT-compiles nothing on an H100 or H200; the simulator runs the PTX
/// it holds.
#[cfg(not(target_arch = "nvptx64"))]
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

/// Rows of C per block of [`gemm_bf16_wgmma`].
pub const WG_BM: u32 = 128;
/// Columns of C per block.
pub const WG_BN: u32 = 256;
/// The `k` depth of one pipeline stage (one 128-byte swizzled row of bf16).
pub const WG_BK: u32 = 64;
/// Pipeline stages in shared memory.
pub const WG_STAGES: u32 = 4;
/// Threads per block: two warpgroups, each computing 64 rows × 256 columns.
pub const WG_THREADS: u32 = 256;
/// Bytes of the A tile of a stage (128 rows of 128 bytes).
const A_BYTES: usize = (WG_BM * WG_BK * 2) as usize;
/// Bytes of one stage (A then B tile).
const STAGE_BYTES: usize = ((WG_BM + WG_BN) * WG_BK * 2) as usize;
/// Dynamic shared memory a launch needs: the stages plus 1024 bytes to align the first tile
/// (above 48 KiB: call `Function::set_max_dynamic_shared_bytes` first).
pub const WG_SHARED_BYTES: u32 = WG_STAGES * STAGE_BYTES as u32 + wgmma::SW128_ATOM_BYTES as u32;

/// A pair of f32s, 8-byte aligned (one 64-bit store).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct F2([f32; 2]);

/// `c = a · bᵀ` on Hopper's tensor cores (`wgmma.mma_async.m64n256k16`), for row-major bf16
/// `a` (`m × k`) and `b` (`n × k`, B stored `n`-major), values as raw bit patterns, and f32 `c`
/// (`m` rows of `n`, row pitch even).
///
/// Block tile 128 × 256 × 64: two warpgroups, each 64 × 256 (128 f32 accumulators per thread),
/// reading their operands straight from shared memory in the 128-byte-swizzled K-major layout;
/// a 4-stage `cp.async` pipeline that fetches two tiles ahead while one batch of `wgmma`s is in
/// flight; grouped block order for L2 reuse.
///
/// Launch with [`WG_THREADS`] threads per block, a grid of `n / 256 × m / 128`, and
/// [`WG_SHARED_BYTES`] bytes of dynamic shared memory. `m`, `n` must be multiples of the block
/// tile and `k` of 64 (else every thread traps).
#[kernel]
pub fn gemm_bf16_wgmma(a: &[u16], b: &[u16], m: u32, n: u32, k: u32, c: DisjointSlice2D<f32>) {
    const BM: usize = WG_BM as usize;
    const BN: usize = WG_BN as usize;
    const BK: usize = WG_BK as usize;
    const STAGES: usize = WG_STAGES as usize;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let smem = dynamic_shared::<u8>();
    assert!(
        thread::block_dim_x() == WG_THREADS
            && smem.len() >= WG_SHARED_BYTES as usize
            && m % BM == 0
            && n % BN == 0
            && k % BK == 0
            && a.len() >= m * k
            && b.len() >= n * k
            && c.cols() == n
            && c.rows() == m
            && c.pitch() % 2 == 0
            && (c.as_mut_ptr() as usize).is_multiple_of(8)
            && (thread::grid_dim_x() as usize) * BN <= n
            && (thread::grid_dim_y() as usize) * BM <= m
    );
    let base = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    let tid = thread::thread_idx_x() as usize;
    // Grouped block order (L2 reuse); a bijection, so blocks still own disjoint tiles.
    let (tile_row, tile_col) = thread::grouped_block_tile(8);
    let (bm, bn) = (tile_row * BM, tile_col * BN);

    // The copies of a stage: 16-byte chunk `tid % 8` of rows `tid / 8 + 32 i` (4 of A, 8 of
    // B). Rows 32 apart are four 1024-byte atoms apart and share `row % 8`, so one swizzled
    // offset serves them all.
    let (chunk, row0) = (tid % 8, tid / 8);
    let dst0 = sw128_offset(row0, chunk);
    // SAFETY (the source pointers below): rows bm + row0 + 32 i < m (i < 4) and
    // bn + row0 + 32 i < n (i < 8), columns kt * 64 + chunk * 8 + 8 <= k: inside a and b
    // (checked above); 16-byte aligned (k % 64 == 0).
    let a_src = a.as_ptr().wrapping_add((bm + row0) * k + chunk * 8);
    let b_src = b.as_ptr().wrapping_add((bn + row0) * k + chunk * 8);
    let rows32 = 32 * k;
    let load_stage = |slot: usize, kt: usize| {
        let st = base.add_bytes(slot * STAGE_BYTES);
        unroll!(i in [0, 1, 2, 3] {
            // SAFETY: see `a_src`; the destination is inside stage `slot`, which no thread
            // reads until the wait and barrier of the iteration that computes it, and which
            // the last batch that read it has finished (see the loop).
            unsafe {
                cp_async_16_at(
                    st.add_bytes(dst0 + i * 4096),
                    a_src.wrapping_add(i * rows32 + kt * BK).cast(),
                )
            };
        });
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
            // SAFETY: as for A.
            unsafe {
                cp_async_16_at(
                    st.add_bytes(A_BYTES + dst0 + i * 4096),
                    b_src.wrapping_add(i * rows32 + kt * BK).cast(),
                )
            };
        });
    };

    let wg = tid / 128;
    let tiles = k / BK;
    // Fetch STAGES - 2 tiles ahead: the slot a load overwrites was last read by the batch two
    // iterations back, which every warpgroup has finished by the barrier (each waits for all
    // but its newest batch at the end of an iteration).
    for s in 0..STAGES - 2 {
        if s < tiles {
            load_stage(s, s);
        }
        cp_async_commit();
    }
    // Not `[0.0; 128]`: rustc emits that as a loop, which LLVM only partly unrolls, and the
    // accumulators would then live in local memory.
    let mut acc = <[f32; 128]>::zero();
    for kt in 0..tiles {
        // Groups committed so far cover tiles 0 ..= kt + STAGES - 3; tile kt's is complete
        // once at most STAGES - 3 are pending.
        cp_async_wait::<{ WG_STAGES - 3 }>();
        wgmma::fence_proxy_async();
        // SAFETY: every thread of the block runs this loop the same number of times (uniform
        // bounds) and reaches this barrier together.
        unsafe { sync::sync_threads_aligned() };
        let next = kt + STAGES - 2;
        if next < tiles {
            load_stage(next % STAGES, next);
        }
        cp_async_commit();
        let st = base.add_bytes((kt % STAGES) * STAGE_BYTES);
        let da = SmemDesc::k_major_sw128(st.add_bytes(wg * 64 * 128));
        let db = SmemDesc::k_major_sw128(st.add_bytes(A_BYTES));
        // SAFETY: each warpgroup runs this straight-line code together (uniform control
        // flow); the stage is complete (wait, proxy fence, barrier above), 1024-byte aligned
        // (`base` and the stage and tile sizes are multiples of 1024), and not overwritten
        // before this batch is waited for (the loads above go two slots ahead); `acc` is only
        // touched by the wgmma calls and waits.
        unsafe {
            wgmma::fence();
            unroll!(kk in [0, 16, 32, 48] {
                wgmma::mma_m64n256k16_bf16(&mut acc, da.add_k(kk), db.add_k(kk));
            });
            wgmma::commit_group();
            acc.wait::<1>();
        }
    }
    // SAFETY: as above; after it every batch is complete.
    unsafe { acc.wait::<0>() };
    cp_async_wait::<0>();

    let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
    let t = tid % 128;
    let (w, l) = (t / 32, t % 32);
    let row = bm + wg * 64 + 16 * w + l / 4;
    let col0 = bn + 2 * (l % 4);
    unroll!(j in [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    ] {
        let col = col0 + 8 * j;
        // SAFETY: row + 8 < m = rows, col + 2 <= n = cols (the block's tile is inside c),
        // 8-byte aligned (col and the pitch even); each (row, col) pair is this thread's alone:
        // the accumulator layout gives the threads of a warpgroup disjoint elements of its
        // 64 × 256 tile, the two warpgroups disjoint rows, blocks disjoint tiles.
        unsafe {
            c_g.add(row * pitch + col)
                .cast::<F2>()
                .write(F2([acc[4 * j], acc[4 * j + 1]]));
            c_g.add((row + 8) * pitch + col)
                .cast::<F2>()
                .write(F2([acc[4 * j + 2], acc[4 * j + 3]]));
        }
    });
}

/// Bytes of dynamic shared memory [`wgmma_tile_n128`] needs: a 64-row A tile and a 128-row B
/// tile of 128 bytes per row, plus 1024 bytes of alignment slack.
pub const TILE_SHARED_BYTES: u32 = (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES as u32;

/// One warpgroup (launch 128 threads, one block, [`TILE_SHARED_BYTES`] of dynamic shared
/// memory): `a · bᵀ` for a 64 × 64 `a` and a 128 × 64 `b` (row-major, 16-bit bit patterns:
/// bf16 when `f16` is 0, IEEE half otherwise) on `wgmma.m64n128k16`; thread `t` stores its 64
/// accumulators (layout in `gpukernel_device::wgmma`'s documentation) in `c[t]`.
#[kernel]
pub fn wgmma_tile_n128(a: &[u16], b: &[u16], f16: u32, mut c: DisjointSlice<[f32; 64]>) {
    let smem = dynamic_shared::<u8>();
    assert!(
        a.len() >= 64 * 64
            && b.len() >= 128 * 64
            && thread::block_dim_x() == 128
            && thread::grid_dim_x() == 1
            && smem.len() >= TILE_SHARED_BYTES as usize
    );
    let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    let b_tile = a_tile.add_bytes(64 * 128);
    let t = thread::thread_idx_x() as usize;
    for q in (t..(64 + 128) * 8).step_by(128) {
        let (row, chunk) = (q / 8, q % 8);
        let (src, dst) = if row < 64 {
            (
                &a[row * 64 + chunk * 8],
                a_tile.add_bytes(sw128_offset(row, chunk)),
            )
        } else {
            let r = row - 64;
            (
                &b[r * 64 + chunk * 8],
                b_tile.add_bytes(sw128_offset(r, chunk)),
            )
        };
        // SAFETY: 16 readable bytes (a row is 64 elements, the chunk 8 of them), 16-byte
        // aligned (the allocation is; rows are 128 bytes); the slot is this thread's, inside
        // the block's shared memory (size checked above).
        unsafe { cp_async_16_at(dst, (src as *const u16).cast()) };
    }
    cp_async_commit();
    cp_async_wait::<0>();
    wgmma::fence_proxy_async();
    sync::sync_threads();
    let (da, db) = (
        SmemDesc::k_major_sw128(a_tile),
        SmemDesc::k_major_sw128(b_tile),
    );
    let mut acc = <[f32; 64]>::zero();
    // SAFETY: the block is one warpgroup and this code is reached by all of it together
    // (`f16` is uniform); the tiles are complete (wait, proxy fence, barrier), aligned, and
    // not written again; `acc` is only touched by the wgmma calls and the wait.
    unsafe {
        wgmma::fence();
        if f16 == 0 {
            unroll!(k in [0, 16, 32, 48] {
                wgmma::mma_m64n128k16_bf16(&mut acc, da.add_k(k), db.add_k(k));
            });
        } else {
            unroll!(k in [0, 16, 32, 48] {
                wgmma::mma_m64n128k16_f16(&mut acc, da.add_k(k), db.add_k(k));
            });
        }
        wgmma::commit_group();
        acc.wait::<0>();
    }
    c.set(thread::index(), acc);
}
