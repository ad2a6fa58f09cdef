//! FP8 probes: every conversion of `gpukernel_device::fp8` on a batch of values, and one
//! warpgroup's e4m3 `wgmma` tile, for the tests to compare with the host twins.

use gpukernel_device::fp8::{e4m3, e5m2};
use gpukernel_device::half::bf16;
use gpukernel_device::mma::{SharedAddr, cp_async_16_at, cp_async_commit, cp_async_wait};
use gpukernel_device::prelude::*;
use gpukernel_device::shared::dynamic_shared;
use gpukernel_device::wgmma::{self, Accumulators, SmemDesc, sw128_offset};
use gpukernel_device::{sync, thread, unroll};

/// For each `i`: `out[i]` = the bits of `e4m3::from_f32(x[i])`, `e5m2::from_f32(x[i])`,
/// `e4m3::from_bf16(bf16::from_f32(x[i]))`, and of code `i % 256` as f32 (e4m3, e5m2) and as
/// bf16 (e4m3, e5m2), each widened to `u32`.
#[kernel]
pub fn fp8_conversions(x: &[f32], mut out: DisjointSlice<[u32; 7]>) {
    let i = thread::index();
    let Some(o) = out.get_mut(&i) else {
        return;
    };
    let v = x[i.get()];
    let code = (i.get() % 256) as u8;
    let (c4, c5) = (e4m3::from_bits(code), e5m2::from_bits(code));
    *o = [
        e4m3::from_f32(v).to_bits() as u32,
        e5m2::from_f32(v).to_bits() as u32,
        e4m3::from_bf16(bf16::from_f32(v)).to_bits() as u32,
        c4.to_f32().to_bits(),
        c5.to_f32().to_bits(),
        c4.to_bf16().to_bits() as u32,
        c5.to_bf16().to_bits() as u32,
    ];
}

/// Bytes of dynamic shared memory [`wgmma_tile_e4m3`] needs: a 64-row A tile and a 128-row B
/// tile of 128 bytes per row, plus 1024 bytes of alignment slack.
pub const FP8_TILE_SHARED_BYTES: u32 = (64 + 128) * 128 + wgmma::SW128_ATOM_BYTES as u32;

/// One warpgroup (launch 128 threads, one block, [`FP8_TILE_SHARED_BYTES`] of dynamic shared
/// memory): `a · bᵀ` for a 64 × 128 `a` and a 128 × 128 `b` (row-major e4m3 bytes) on
/// `wgmma.m64n128k32` (four 32-deep slices); thread `t` stores its 64 accumulators (layout in
/// `gpukernel_device::wgmma`'s documentation) in `c[t]`.
#[kernel]
pub fn wgmma_tile_e4m3(a: &[u8], b: &[u8], mut c: DisjointSlice<[f32; 64]>) {
    let smem = dynamic_shared::<u8>();
    assert!(
        a.len() >= 64 * 128
            && b.len() >= 128 * 128
            && thread::block_dim_x() == 128
            && thread::grid_dim_x() == 1
            && smem.len() >= FP8_TILE_SHARED_BYTES as usize
    );
    let a_tile = SharedAddr::of(smem.as_mut_ptr()).align_up(wgmma::SW128_ATOM_BYTES);
    let b_tile = a_tile.add_bytes(64 * 128);
    let t = thread::thread_idx_x() as usize;
    for q in (t..(64 + 128) * 8).step_by(128) {
        let (row, chunk) = (q / 8, q % 8);
        let (src, dst) = if row < 64 {
            (
                &a[row * 128 + chunk * 16],
                a_tile.add_bytes(sw128_offset(row, chunk)),
            )
        } else {
            let r = row - 64;
            (
                &b[r * 128 + chunk * 16],
                b_tile.add_bytes(sw128_offset(r, chunk)),
            )
        };
        // SAFETY: 16 readable bytes (a row is 128 bytes, the chunk 16 of them), 16-byte
        // aligned (the allocation is; rows are 128 bytes); the slot is this thread's, inside
        // the block's shared memory (size checked above).
        unsafe { cp_async_16_at(dst, (src as *const u8).cast()) };
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
    // SAFETY: the block is one warpgroup and this code is reached by all of it together; the
    // tiles are complete (wait, proxy fence, barrier), aligned, and not written again; `acc`
    // is only touched by the wgmma calls and the wait.
    unsafe {
        wgmma::fence();
        unroll!(k in [0, 32, 64, 96] {
            wgmma::mma_m64n128k32_e4m3(&mut acc, da.add_k_bytes(k), db.add_k_bytes(k));
        });
        wgmma::commit_group();
        acc.wait::<0>();
    }
    c.set(thread::index(), acc);
}
