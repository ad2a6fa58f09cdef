//! The warp-specialised GEMMs fed by the tensor memory accelerator: one producer warpgroup
//! issues TMA loads of 128-byte-swizzled K-major tiles into a ring of shared-memory stages,
//! guarded by a *full* and an *empty* `mbarrier` per stage; two consumer warpgroups multiply
//! them with `wgmma` (bf16 `m64n256k16` or e4m3 `m64n256k32`) and release each stage when
//! their batch over it is complete. `setmaxnreg` moves registers from the producer (which
//! needs few) to the consumers (128 f32 accumulators each); the launch bounds in `build.rs`
//! (384 threads, 1 block per multiprocessor) give ptxas the register cap at entry that
//! `setmaxnreg` needs.
//!
//! Both element types fill a stage the same way: a tile row is 128 bytes of `k` (64 bf16 or
//! 128 e4m3 values), the span of the 128-byte swizzle, so the TMA box, the swizzle and the
//! descriptors are shared; only the instruction and the `k` depth per row differ.

use gpukernel_device::mbarrier::{self, Mbarrier};
use gpukernel_device::mma::SharedAddr;
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::tma::{self, TensorMap};
use gpukernel_device::wgmma::{self, Accumulators, SmemDesc};
use gpukernel_device::{cluster, sync, thread, unroll};

/// Rows of C per block of the TMA GEMMs (two consumer warpgroups of 64 rows).
pub const TMA_BM: u32 = 128;
/// Columns of C per block.
pub const TMA_BN: u32 = 256;
/// Bytes of `k` per tile row and stage: the 128-byte swizzle span (64 bf16, 128 e4m3 values).
pub const TMA_ROW_BYTES: u32 = 128;
/// Shared-memory stages of the ring.
pub const TMA_STAGES: u32 = 4;
/// Threads per block: the producer warpgroup, then two consumer warpgroups. Also the
/// kernels' launch bound (`build.rs`).
pub const TMA_THREADS: u32 = 384;
/// Bytes of the A tile of a stage (128 rows of 128 bytes).
const A_TILE: usize = (TMA_BM * TMA_ROW_BYTES) as usize;
/// Bytes of one stage: the A tile, then the B tile (256 rows).
const STAGE: usize = ((TMA_BM + TMA_BN) * TMA_ROW_BYTES) as usize;
/// Dynamic shared memory a launch needs: 1024 bytes to align the first tile, the stages, and
/// the full and empty barriers (above 48 KiB: call `Function::set_max_dynamic_shared_bytes`).
pub const TMA_SHARED_BYTES: u32 =
    wgmma::SW128_ATOM_BYTES as u32 + TMA_STAGES * STAGE as u32 + 2 * TMA_STAGES * 8;
/// The box of A's tensor map: `[rows, row elements]` for 1-byte (`u8`, e4m3) or 2-byte
/// (bf16) elements, with the 128-byte swizzle.
pub const fn tma_box_a(elem_bytes: u32) -> [u32; 2] {
    [TMA_BM, TMA_ROW_BYTES / elem_bytes]
}
/// The box of B's tensor map (`B` is stored `n × k`).
pub const fn tma_box_b(elem_bytes: u32) -> [u32; 2] {
    [TMA_BN, TMA_ROW_BYTES / elem_bytes]
}
/// The box of B's tensor map for [`gemm_e4m3_tma_multicast`]: half of B's tile (each block of a
/// cluster of two loads one half and multicasts it to both).
pub const fn tma_box_b_half(elem_bytes: u32) -> [u32; 2] {
    [TMA_BN / 2, TMA_ROW_BYTES / elem_bytes]
}

/// A pair of f32s, 8-byte aligned (one 64-bit store).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct F2([f32; 2]);

/// What a consumer warpgroup ends with: its accumulators and the first row and column of its
/// 64 × 256 part of C.
struct Part {
    acc: [f32; 128],
    row: usize,
    col: usize,
}

/// The pipeline of a block: the tiles `block, block + blocks, ..` of C in grouped order (one
/// tile per block when the grid covers C; a persistent loop when it is smaller, e.g. one block
/// per multiprocessor, so that the producer loads the next tile's first stages while the
/// consumers store the last one). `FP8`: e4m3 operands (`k` 128 per stage), else bf16 (64).
/// Each consumer warpgroup calls `epilogue` with its [`Part`] of each tile; the producer
/// warpgroup returns when it issued its last load. (The epilogue is called inside the
/// consumers' branch so that nothing is live where the two roles' paths meet: a returned
/// `Option<Part>` would carry the 128 accumulators through the producer's 40 registers,
/// spilling them.)
///
/// `MC`: the blocks run in clusters of two along `M` that share B's tile: the cluster takes
/// the pairs of vertically adjacent tiles in grouped order, each block loads its own A tile and
/// one half of the B tile, which it multicasts into both blocks (`tma::load_multicast`), so B
/// leaves L2 once per cluster. A stage is then free once the consumers of *both* blocks released
/// it (each consumer warpgroup arrives on the empty barrier of both blocks:
/// `Mbarrier::arrive_cluster`); the barriers are published to the peer by a cluster barrier
/// before the first multicast; the caller ends with a cluster barrier (the peer's last
/// arrivals reach this block's barriers after its own work is done).
///
/// # Safety
/// `a` and `b` are runtime maps of the `m × k` A and the `n × k` B (row-major, 1-byte
/// elements when `FP8`, else 2-byte), with boxes [`tma_box_a`] and [`tma_box_b`]
/// ([`tma_box_b_half`] when `MC`) and the 128-byte swizzle; when `MC`, the launch has clusters
/// of 2 blocks along x and every thread calls `cluster::sync` after this call.
#[inline(always)]
unsafe fn pipeline<const FP8: bool, const MC: bool>(
    a: TensorMap,
    b: TensorMap,
    m: usize,
    n: usize,
    k: usize,
    mut epilogue: impl FnMut(&Part),
) {
    const BM: usize = TMA_BM as usize;
    const BN: usize = TMA_BN as usize;
    const STAGES: usize = TMA_STAGES as usize;
    let kt_depth = if FP8 { 128 } else { 64 };
    let smem = dynamic_shared::<u8>();
    assert!(
        thread::block_dim_x() == TMA_THREADS
            && thread::grid_dim_y() == 1
            && thread::grid_dim_z() == 1
            && smem.len() >= TMA_SHARED_BYTES as usize
            && m.is_multiple_of(BM)
            && n.is_multiple_of(BN)
            && k.is_multiple_of(kt_depth)
            && k > 0
            && (!MC || (cluster::size() == 2 && m.is_multiple_of(2 * BM)))
    );
    let rank = if MC {
        cluster::block_rank() as usize
    } else {
        0
    };
    let base = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    let bars = base.add_bytes(STAGES * STAGE);
    let full = |s: usize| Mbarrier::at(bars.add_bytes(8 * s));
    let empty = |s: usize| Mbarrier::at(bars.add_bytes(8 * (STAGES + s)));
    let tid = thread::thread_idx_x() as usize;
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises each barrier once, before the block (cluster)
            // barrier below publishes them: `full` completes on the producer's arrival and the
            // stage's bytes, `empty` on one arrival per consumer warpgroup (of both blocks when
            // they share the stage's B tile).
            unsafe {
                full(s).init(1);
                empty(s).init(if MC { 4 } else { 2 });
            }
        }
        mbarrier::fence_init();
    }
    if MC {
        // Both blocks' barriers are initialised before either multicasts into the other or
        // arrives on the other's barriers.
        cluster::sync();
    } else {
        sync::sync_threads();
    }
    // With `MC` a "row" of tiles is a pair of block rows, the cluster's unit of work.
    let (cols, rows) = (n / BN, m / BM / if MC { 2 } else { 1 });
    let (first, step) = if MC {
        (
            thread::block_idx_x() as usize / 2,
            thread::grid_dim_x() as usize / 2,
        )
    } else {
        (
            thread::block_idx_x() as usize,
            thread::grid_dim_x() as usize,
        )
    };
    let k_tiles = k / kt_depth;
    // Grouped order (L2 reuse); a bijection, so blocks own disjoint tiles.
    let origin = |tile: usize| {
        if MC {
            let (r, c) = thread::grouped_tile(tile, cols, rows, 4);
            ((2 * r + rank) * BM, c * BN)
        } else {
            let (r, c) = thread::grouped_tile(tile, cols, rows, 8);
            (r * BM, c * BN)
        }
    };
    let wg = tid / 128;
    if wg == 0 {
        // SAFETY: the whole producer warpgroup executes this call, converged (`wg` is
        // uniform per warpgroup); 40 × 128 + 232 × 256 registers fit the block's budget of
        // 168 × 384 (the launch bounds).
        unsafe { wgmma::setmaxnreg_dec::<40>() };
        if tid == 0 {
            // SAFETY: `a` and `b` are the runtime's tensor maps (the kernel's contract).
            unsafe {
                a.prefetch();
                b.prefetch();
            }
            // `it` counts the stage fills of this block over all its tiles.
            let mut it = 0usize;
            for tile in (first..rows * cols).step_by(step) {
                let (bm, bn) = origin(tile);
                for kt in 0..k_tiles {
                    let s = it % STAGES;
                    let parity = ((it / STAGES) & 1) as u32;
                    let st = base.add_bytes(s * STAGE);
                    let at_k = (kt * kt_depth) as i32;
                    // SAFETY: stage `s` is free once both consumers released its previous use
                    // (the phase before `parity`; complete at once for the first use); the
                    // producer's one arrival expects the stage's bytes, which the two loads
                    // complete. The boxes are inside the tensors (m, n, k multiples of the
                    // tile, checked above) and land 1024-byte aligned inside the block's
                    // shared memory.
                    // With `MC`, the stage is free in both blocks (the empty barrier counts the
                    // consumers of both), this block's full barrier expects both halves of B
                    // (its own and the peer's multicast, which may land before this
                    // arrival: the transaction count then goes negative, and the phase still
                    // waits for the arrival), and the peer's was initialised before the
                    // cluster barrier above.
                    unsafe {
                        empty(s).wait_parity(parity ^ 1);
                        full(s).arrive_expect_tx(STAGE as u32);
                        tma::load(st, a, [at_k, bm as i32], full(s));
                        if MC {
                            let half = BN / 2;
                            tma::load_multicast(
                                st.add_bytes(A_TILE + rank * half * TMA_ROW_BYTES as usize),
                                b,
                                [at_k, (bn + rank * half) as i32],
                                full(s),
                                0b11,
                            );
                        } else {
                            tma::load(st.add_bytes(A_TILE), b, [at_k, bn as i32], full(s));
                        }
                    }
                    it += 1;
                }
            }
        }
        return;
    }
    // SAFETY: the whole consumer warpgroup executes this call, converged (see above).
    unsafe { wgmma::setmaxnreg_inc::<232>() };
    let cw = wg - 1;
    let release = |it: usize| {
        if tid.is_multiple_of(128) {
            // SAFETY: one arrival per consumer warpgroup per use of the stage (on both blocks'
            // barriers with `MC`: both producers write into it), after the wait that covers its
            // batch over it (the caller's); the peer's barriers were initialised before the
            // cluster barrier, and it does not exit before the caller's last cluster barrier.
            unsafe {
                if MC {
                    empty(it % STAGES).arrive_cluster(0);
                    empty(it % STAGES).arrive_cluster(1);
                } else {
                    empty(it % STAGES).arrive();
                }
            }
        }
    };
    let mut it = 0usize;
    for tile in (first..rows * cols).step_by(step) {
        let (bm, bn) = origin(tile);
        // Not `[0.0; 128]`: rustc emits that as a loop, which LLVM only partly unrolls, and
        // the accumulators would then live in local memory.
        let mut acc = <[f32; 128]>::zero();
        for kt in 0..k_tiles {
            let s = it % STAGES;
            let parity = ((it / STAGES) & 1) as u32;
            let st = base.add_bytes(s * STAGE);
            let da = SmemDesc::k_major_sw128(st.add_bytes(cw * 64 * TMA_ROW_BYTES as usize));
            let db = SmemDesc::k_major_sw128(st.add_bytes(A_TILE));
            // SAFETY: the warpgroup runs these loops together (uniform bounds); the stage is
            // complete once its full barrier's phase `parity` is (the TMA bytes landed,
            // through the async proxy the tensor cores read by); it is 1024-byte aligned and
            // not overwritten before this warpgroup releases it, after the wait that covers
            // the batch; `acc` is only touched by the wgmma calls and waits.
            unsafe {
                full(s).wait_parity(parity);
                wgmma::fence();
                if FP8 {
                    unroll!(kk in [0, 32, 64, 96] {
                        wgmma::mma_m64n256k32_e4m3(&mut acc, da.add_k_bytes(kk), db.add_k_bytes(kk));
                    });
                } else {
                    unroll!(kk in [0, 16, 32, 48] {
                        wgmma::mma_m64n256k16_bf16(&mut acc, da.add_k(kk), db.add_k(kk));
                    });
                }
                wgmma::commit_group();
                acc.wait::<1>();
            }
            // The batch over the previous stage is complete: release it to the producer.
            if kt > 0 {
                release(it - 1);
            }
            it += 1;
        }
        // SAFETY: as above; after it every batch is complete.
        unsafe { acc.wait::<0>() };
        release(it - 1);
        epilogue(&Part {
            acc,
            row: bm + cw * 64,
            col: bn,
        });
    }
}

/// `c = a · bᵀ` for row-major bf16 `a` (`m × k`) and `b` (`n × k`, B stored `n`-major), read
/// through TMA, and f32 `c` (`m` rows of `n`, row pitch even), on `wgmma.m64n256k16`.
///
/// Block tile 128 × 256, 64 deep per stage, [`TMA_STAGES`] stages; warp-specialised (module
/// documentation); grouped tile order for L2 reuse. Launch with [`TMA_THREADS`] threads per
/// block, a one-dimensional grid of any size (one block per tile, `m / 128 · n / 256`
/// blocks, or fewer, e.g. one per multiprocessor: each block then loops over the tiles
/// `blockIdx.x + i · gridDim.x`), and [`TMA_SHARED_BYTES`] bytes of dynamic shared
/// memory. `m`, `n` must be multiples of the block tile and `k` of 64 (else every thread
/// traps).
///
/// # Safety
/// `a` and `b` are tensor maps from the runtime (`TensorMap2D<u16>` or `<bf16>`) of the
/// `m × k` A and the `n × k` B, with boxes [`tma_box_a(2)`](tma_box_a) and
/// [`tma_box_b(2)`](tma_box_b) and the 128-byte swizzle; nothing writes them during the
/// launch.
#[kernel]
pub unsafe fn gemm_bf16_tma(
    a: TensorMap,
    b: TensorMap,
    m: u32,
    n: u32,
    k: u32,
    c: DisjointSlice2D<f32>,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(
        c.cols() == n
            && c.rows() == m
            && c.pitch().is_multiple_of(2)
            && (c.as_mut_ptr() as usize).is_multiple_of(8)
    );
    let epilogue = |part: &Part| {
        let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
        let t = thread::thread_idx_x() as usize % 128;
        let (w, l) = (t / 32, t % 32);
        let row = part.row + 16 * w + l / 4;
        let col0 = part.col + 2 * (l % 4);
        let acc = &part.acc;
        unroll!(j in [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
        ] {
            let col = col0 + 8 * j;
            // SAFETY: row + 8 < m = rows, col + 2 <= n = cols (the block's tile is inside c),
            // 8-byte aligned (col and the pitch even); each (row, col) pair is this thread's alone:
            // the accumulator layout gives the threads of a warpgroup disjoint elements of its
            // 64 × 256 part, the two consumer warpgroups disjoint rows, blocks disjoint tiles.
            unsafe {
                c_g.add(row * pitch + col)
                    .cast::<F2>()
                    .write(F2([acc[4 * j], acc[4 * j + 1]]));
                c_g.add((row + 8) * pitch + col)
                    .cast::<F2>()
                    .write(F2([acc[4 * j + 2], acc[4 * j + 3]]));
            }
        });
    };
    // SAFETY: the kernel's contract.
    unsafe { pipeline::<false, false>(a, b, m, n, k, epilogue) };
}

/// `c = scale · a · bᵀ` for row-major FP8 e4m3 `a` (`m × k`) and `b` (`n × k`), as raw bytes,
/// read through TMA, on `wgmma.m64n256k32` (f32 accumulation), rounded to bf16 `c` (`m` rows
/// of `n`, bit patterns, row pitch even). `scale` is where per-tensor scales of A and B go
/// (their product).
///
/// Block tile 128 × 256, 128 deep per stage; otherwise as [`gemm_bf16_tma`]: [`TMA_THREADS`]
/// threads, a one-dimensional grid of any size, [`TMA_SHARED_BYTES`] of dynamic shared memory; `k`
/// a multiple of 128.
///
/// # Safety
/// `a` and `b` are tensor maps from the runtime (`TensorMap2D<u8>`) of the `m × k` A and the
/// `n × k` B, with boxes [`tma_box_a(1)`](tma_box_a) and [`tma_box_b(1)`](tma_box_b) and the
/// 128-byte swizzle; nothing writes them during the launch.
#[kernel]
pub unsafe fn gemm_e4m3_tma(
    a: TensorMap,
    b: TensorMap,
    m: u32,
    n: u32,
    k: u32,
    scale: f32,
    c: DisjointSlice2D<u16>,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(
        c.cols() == n
            && c.rows() == m
            && c.pitch().is_multiple_of(2)
            && (c.as_mut_ptr() as usize).is_multiple_of(4)
    );
    let epilogue = |part: &Part| {
        let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
        let t = thread::thread_idx_x() as usize % 128;
        let (w, l) = (t / 32, t % 32);
        let row = part.row + 16 * w + l / 4;
        let col0 = part.col + 2 * (l % 4);
        let acc = &part.acc;
        let pair = |x: f32, y: f32| {
            use gpukernel_device::half::bf16;
            gpukernel_device::mma::pack2(
                bf16::from_f32(x * scale).to_bits(),
                bf16::from_f32(y * scale).to_bits(),
            )
        };
        unroll!(j in [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
        ] {
            let col = col0 + 8 * j;
            // SAFETY: as in `gemm_bf16_tma`, with 4-byte stores of two bf16s (col and the pitch
            // even, the base 4-byte aligned).
            unsafe {
                c_g.add(row * pitch + col)
                    .cast::<u32>()
                    .write(pair(acc[4 * j], acc[4 * j + 1]));
                c_g.add((row + 8) * pitch + col)
                    .cast::<u32>()
                    .write(pair(acc[4 * j + 2], acc[4 * j + 3]));
            }
        });
    };
    // SAFETY: the kernel's contract.
    unsafe { pipeline::<true, false>(a, b, m, n, k, epilogue) };
}

/// [`gemm_e4m3_tma`] in clusters of two blocks along `M` that share each stage's B tile
/// through TMA multicast: each block loads its A tile (16 KiB) and half of B (16 KiB) per stage
/// instead of A and all of B (48 KiB), the other half arriving from its peer. Launch as
/// [`gemm_e4m3_tma`] with clusters of 2 (`LaunchConfig::with_cluster(2)`) and an even grid; `m`
/// a multiple of 256.
///
/// # Safety
/// As [`gemm_e4m3_tma`], with B's box [`tma_box_b_half(1)`](tma_box_b_half).
#[kernel]
pub unsafe fn gemm_e4m3_tma_multicast(
    a: TensorMap,
    b: TensorMap,
    m: u32,
    n: u32,
    k: u32,
    scale: f32,
    c: DisjointSlice2D<u16>,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(
        c.cols() == n
            && c.rows() == m
            && c.pitch().is_multiple_of(2)
            && (c.as_mut_ptr() as usize).is_multiple_of(4)
    );
    let epilogue = |part: &Part| {
        let (c_g, pitch) = (c.as_mut_ptr(), c.pitch());
        let t = thread::thread_idx_x() as usize % 128;
        let (w, l) = (t / 32, t % 32);
        let row = part.row + 16 * w + l / 4;
        let col0 = part.col + 2 * (l % 4);
        let acc = &part.acc;
        let pair = |x: f32, y: f32| {
            use gpukernel_device::half::bf16;
            gpukernel_device::mma::pack2(
                bf16::from_f32(x * scale).to_bits(),
                bf16::from_f32(y * scale).to_bits(),
            )
        };
        unroll!(j in [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
        ] {
            let col = col0 + 8 * j;
            // SAFETY: as in `gemm_bf16_tma`, with 4-byte stores of two bf16s (col and the pitch
            // even, the base 4-byte aligned).
            unsafe {
                c_g.add(row * pitch + col)
                    .cast::<u32>()
                    .write(pair(acc[4 * j], acc[4 * j + 1]));
                c_g.add((row + 8) * pitch + col)
                    .cast::<u32>()
                    .write(pair(acc[4 * j + 2], acc[4 * j + 3]));
            }
        });
    };
    // SAFETY: the kernel's contract.
    unsafe { pipeline::<true, true>(a, b, m, n, k, epilogue) };
    // No block exits while its peer may still arrive on its barriers.
    cluster::sync();
}
