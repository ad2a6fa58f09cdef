//! The kernels of the benchmark suite (`bench_suite`): bandwidth, shared memory, barriers,
//! shuffles, atomics, math and compute, each with a CUDA C twin (`ffi-examples/src/suite.cu`)
//! that implements the same algorithm with the same launch configuration.
//!
//! Kernels are written the way a user of the library writes them: safe parameters
//! (`&[T]`, `DisjointSlice<T>` for the one-dimensional launches, `DisjointSlice2D<T>` for the
//! two-dimensional ones, `Slice2D<T>` for a matrix read by rows and columns, `same_len` where
//! slices have one length), bounds-checked reads where they are cheap, and `unsafe` only where
//! the library has no safe form (writes at another thread's index, shared memory, atomics
//! through raw pointers), each with its reason. Launch-shape assumptions are checked
//! at the top with `assert!` (a uniform trap, before any barrier).

use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::{atomic, math, sync, thread, warp};

/// Repeats `$body` with `$i` bound to each literal in turn: a full unroll that LLVM's
/// thresholds cannot decline, so that fragment arrays indexed by `$i` stay in registers
/// (a rolled loop over them puts the 128 accumulators in local memory).
macro_rules! unroll {
    ($i:ident in [$($n:literal),*] $body:block) => { $( { let $i: usize = $n; $body } )* };
}

pub mod gemm;
mod softmax;

pub use softmax::*;

/// Threads per block of the one-dimensional suite kernels (sum, histogram, softmax, n-body).
pub const BLOCK: u32 = 256;
/// The edge of a transpose tile; transpose blocks are `TILE × TILE_ROWS` threads.
pub const TILE: u32 = 32;
/// Rows of threads in a transpose block (each thread moves `TILE / TILE_ROWS` elements).
pub const TILE_ROWS: u32 = 8;
/// Stencil blocks are `STENCIL_X × STENCIL_Y` threads.
pub const STENCIL_X: u32 = 32;
/// See [`STENCIL_X`].
pub const STENCIL_Y: u32 = 8;

/// Four f32s, 16-byte aligned: one `ld.v4.f32` / `st.v4.f32` (CUDA's `float4`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct F4(pub [f32; 4]);

// SAFETY: `#[repr(C)]`, plain f32s.
unsafe impl DeviceCopy for F4 {}

/// Reads four f32s at once.
///
/// # Safety
/// `p` is 16-byte aligned and valid for reads of 16 bytes, which nobody writes concurrently.
#[inline(always)]
pub(crate) unsafe fn ld4(p: *const f32) -> [f32; 4] {
    // SAFETY: the caller's promise. Four field reads of one 16-byte aligned struct: LLVM's
    // load/store vectorizer makes them one `ld.v4` (a read of the whole struct would be
    // lowered as two 64-bit loads through local memory).
    let r = unsafe { &*p.cast::<F4>() };
    [r.0[0], r.0[1], r.0[2], r.0[3]]
}

/// Writes four f32s at once.
///
/// # Safety
/// `p` is 16-byte aligned, valid for writes of 16 bytes, and nobody else accesses them.
#[inline(always)]
pub(crate) unsafe fn st4(p: *mut f32, v: [f32; 4]) {
    // SAFETY: the caller's promise; four field writes become one `st.v4` (see `ld4`).
    let r = unsafe { &mut *p.cast::<F4>() };
    r.0[0] = v[0];
    r.0[1] = v[1];
    r.0[2] = v[2];
    r.0[3] = v[3];
}

/// `1 / sqrt(x)`, approximate (`rsqrt.approx.f32`, CUDA's `rsqrtf`; about 2 ulp).
#[inline(always)]
pub fn rsqrt_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a register-only instruction.
        unsafe {
            core::arch::asm!("rsqrt.approx.f32 {0}, {1};", out(reg32) r, in(reg32) x,
                options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x.sqrt()
    }
}

/// `e^x`, approximate: `ex2.approx.ftz.f32(x · log2 e)`, what CUDA's `__expf` compiles to.
#[inline(always)]
pub fn exp_approx(x: f32) -> f32 {
    let y = x * core::f32::consts::LOG2_E;
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a register-only instruction.
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {0}, {1};", out(reg32) r, in(reg32) y,
                options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        y.exp2()
    }
}

/// `y[i] = a * x[i] + y[i]` with a safe grid-stride loop (any grid covers any length): the
/// device library's `thread::grid_stride`, shared with the `grid` examples.
pub use crate::grid::saxpy_grid_stride;

/// `y[i] = a * x[i] + y[i]`, one thread per element: the safe idiom as a user writes it, with
/// the two slices declared of one length (`same_len(x, y)`). The typed launch compares the
/// lengths once, on the host (a launch with unequal lengths is refused,
/// `Error::SameLenViolated`), and the kernel knows them equal, so once `y.get_mut` has tested
/// `i < y.len()` the read `x[i]` needs no test of its own: the one compare CUDA C makes.
/// [`crate::saxpy`], without `same_len`, tests `i < x.len()` again in every thread (a 64-bit
/// compare and a branch to the panic, four instructions).
#[kernel(same_len(x, y))]
pub fn saxpy_same_len(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(yi) = y.get_mut(&i) {
        *yi = math::fmaf(a, x[i.get()], *yi);
    }
}

/// The warp's sum of `v`, in every lane (butterfly shuffles over the full warp).
#[inline(always)]
fn warp_sum(mut v: f32) -> f32 {
    let mut offset = 16;
    while offset > 0 {
        v += warp::shfl_xor_sync(warp::FULL_MASK, v, offset);
        offset /= 2;
    }
    v
}

/// Adds the sum of `input` to `total[0]` (zeroed by the caller): a grid-stride loop per
/// thread, shuffles per warp, shared memory across the block's warps, one atomic per block.
/// Launch with one-dimensional blocks of [`BLOCK`] threads and any grid.
#[kernel]
pub fn sum_f32(input: &[f32], total: DisjointSlice<f32>) {
    assert!(thread::block_dim_x() == BLOCK && !total.is_empty());
    let partial = shared_array!(f32, (BLOCK / 32) as usize);
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    let mut v = 0.0f32;
    while i < input.len() {
        v += input[i];
        i += stride;
    }
    v = warp_sum(v);
    let (lane, w) = (thread::lane_id() as usize, thread::warp_id() as usize);
    if lane == 0 {
        // SAFETY: lane 0 of warp `w` alone writes slot `w`; read after the barrier.
        unsafe { partial.write(w, v) };
    }
    sync::sync_threads();
    if w == 0 {
        let v = warp_sum(if lane < partial.len() {
            // SAFETY: written before the barrier, not written after it.
            unsafe { partial.read(lane) }
        } else {
            0.0
        });
        if lane == 0 {
            // SAFETY: `total` is this launch's exclusive buffer, updated only atomically.
            unsafe { atomic::add(total.as_mut_ptr(), v) };
        }
    }
}

/// Counts the bytes of `data` (four per word, little-endian) into 256 `bins` (zeroed by the
/// caller): each block counts into its own shared-memory bins, then adds them to `bins` with
/// one atomic per non-empty bin. Launch with blocks of [`BLOCK`] threads, any grid.
#[kernel]
pub fn histogram256(data: &[u32], bins: DisjointSlice<u32>) {
    histogram_body::<false>(data, bins);
}

/// [`histogram256`] with aligned barriers (`bar.sync`, what CUDA C's `__syncthreads()`
/// emits) instead of [`sync::sync_threads`]'s non-aligned `barrier.sync`; the benchmark runs
/// both side by side.
#[kernel]
pub fn histogram256_aligned(data: &[u32], bins: DisjointSlice<u32>) {
    histogram_body::<true>(data, bins);
}

/// Waits for the block: the aligned barrier when `ALIGNED`, else the non-aligned one.
///
/// # Safety
/// With `ALIGNED`, as [`sync::sync_threads_aligned`]: every thread of the block executes the
/// call.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn block_sync<const ALIGNED: bool>() {
    if ALIGNED {
        // SAFETY: the caller's promise.
        unsafe { sync::sync_threads_aligned() }
    } else {
        sync::sync_threads()
    }
}

#[inline(always)]
fn histogram_body<const ALIGNED: bool>(data: &[u32], bins: DisjointSlice<'_, u32>) {
    assert!(thread::block_dim_x() == BLOCK && bins.len() >= 256);
    let local = shared_array!(u32, 256);
    let t = thread::thread_idx_x() as usize;
    // SAFETY: thread `t` alone writes slot `t`; the barrier orders it before the atomics.
    unsafe { local.write(t, 0) };
    // SAFETY: every thread of the block reaches this barrier: the assert above fails in all
    // threads or none, and `t < 256` then holds.
    unsafe { block_sync::<ALIGNED>() };
    let stride = thread::grid_stride_x();
    let mut i = thread::global_index_x();
    while i < data.len() {
        let w = data[i];
        for b in 0..4 {
            // SAFETY: a shared-memory address of this block, updated only atomically
            // between the two barriers; the index is below 256.
            unsafe {
                atomic::add(
                    local.as_mut_ptr().add(((w >> (8 * b)) & 255) as usize),
                    1u32,
                )
            };
        }
        i += stride;
    }
    // SAFETY: every thread of the block reaches this barrier: the loop ends in every thread.
    unsafe { block_sync::<ALIGNED>() };
    // SAFETY: no atomic runs after the barrier.
    let c = unsafe { local.read(t) };
    if c != 0 {
        // SAFETY: `t < 256 <= bins.len()`; `bins` is updated only atomically in this launch.
        unsafe { atomic::add(bins.as_mut_ptr().add(t), c) };
    }
}

/// `out = inputᵀ` through a 32×33 shared tile (the padding column avoids bank conflicts):
/// `input` is `rows × cols` and `out` `cols` rows of `rows` elements (any row pitch, both).
/// Launch with blocks of `TILE × TILE_ROWS` threads and a grid of
/// `ceil(cols / TILE) × ceil(rows / TILE)`.
///
/// The input is a [`Slice2D`]: its shape was checked against the buffer at the launch, so a
/// read `input[(r, c)]` checks only `r < rows` and `c < cols`, which the edge test before it
/// already made (no compare of the 64-bit offset with the buffer's length, no branch around
/// the load).
#[kernel]
pub fn transpose(input: Slice2D<f32>, out: DisjointSlice2D<f32>) {
    let (rows, cols) = (input.rows(), input.cols());
    const T: usize = TILE as usize;
    let tile = shared_array!(f32, T * (T + 1));
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let (bx, by) = (
        thread::block_idx_x() as usize * T,
        thread::block_idx_y() as usize * T,
    );
    // All four loads are issued first, together: each checks only the input's own shape (its
    // edge test), so they need nothing else; the launch-shape checks follow while they are in
    // flight (a bounds check between a load and the previous store would serialize them).
    const R: usize = TILE_ROWS as usize;
    let mut v = [0.0f32; T / R];
    unroll!(q in [0, 1, 2, 3] {
        let (r, c) = (by + ty + q * R, bx + tx);
        if r < rows && c < cols {
            v[q] = input[(r, c)];
        }
    });
    // Uniform, before the first barrier; the block shape makes the tile's indices in bounds.
    assert!(
        thread::block_dim_x() == TILE
            && thread::block_dim_y() == TILE_ROWS
            && out.cols() == rows
            && out.rows() == cols
    );
    unroll!(q in [0, 1, 2, 3] {
        // SAFETY: each (ty + q * R, tx) is one thread's slot; read after the barrier.
        unsafe { tile.write((ty + q * R) * (T + 1) + tx, v[q]) };
    });
    sync::sync_threads();
    unroll!(q in [0, 1, 2, 3] {
        // SAFETY: the tile is only read after the barrier.
        v[q] = unsafe { tile.read(tx * (T + 1) + ty + q * R) };
    });
    unroll!(q in [0, 1, 2, 3] {
        let (r, c) = (bx + ty + q * R, by + tx);
        // The shape's own bounds (equal to `cols`, `rows`), so `write`'s checks fold away.
        if r < out.rows() && c < out.cols() {
            // SAFETY: output row r, column c is this thread's alone (blocks own disjoint
            // tiles, threads disjoint (ty + q * R, tx) within them): not the thread's own
            // (x, y), which is the input element it loads.
            unsafe { out.write(c, r, v[q]) };
        }
    });
}

/// One Jacobi step of the 5-point stencil on an `ny × nx` grid:
/// `out = c0 · u + c1 · (north + south + west + east)` inside, `out = u` on the border. Each
/// block stages its tile plus a one-cell halo in shared memory. Launch with blocks of
/// `STENCIL_X × STENCIL_Y` threads and a grid of `ceil(nx / STENCIL_X) × ceil(ny / STENCIL_Y)`;
/// `out` is `ny` rows of `nx` elements (any row pitch), each thread writing its own `(x, y)`.
#[kernel]
pub fn stencil5(u: &[f32], nx: u32, ny: u32, c0: f32, c1: f32, mut out: DisjointSlice2D<f32>) {
    const W: usize = STENCIL_X as usize + 2;
    const H: usize = STENCIL_Y as usize + 2;
    let (nx, ny) = (nx as usize, ny as usize);
    assert!(
        thread::block_dim_x() == STENCIL_X
            && thread::block_dim_y() == STENCIL_Y
            && u.len() >= nx * ny
            && out.cols() == nx
            && out.rows() == ny
    );
    const { assert!(W * H <= 2 * (STENCIL_X * STENCIL_Y) as usize) };
    let tile = shared_array!(f32, W * H);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let x0 = thread::block_idx_x() as usize * STENCIL_X as usize;
    let y0 = thread::block_idx_y() as usize * STENCIL_Y as usize;
    // The tile with its halo: cell (ly, lx) is grid point (y0 + ly - 1, x0 + lx - 1), clamped.
    // Both of a thread's cells are loaded before either is stored (loads in flight together),
    // with 32-bit index arithmetic (the division by the tile width is by a constant).
    let cell = |k: u32| {
        let (ly, lx) = (k / W as u32, k % W as u32);
        let gy = (y0 as u32 + ly).saturating_sub(1).min(ny as u32 - 1);
        let gx = (x0 as u32 + lx).saturating_sub(1).min(nx as u32 - 1);
        gy as usize * nx + gx as usize
    };
    const THREADS: u32 = STENCIL_X * STENCIL_Y;
    let k0 = (ty * STENCIL_X as usize + tx) as u32;
    let k1 = k0 + THREADS;
    let v0 = u[cell(k0)];
    let v1 = if k1 < (W * H) as u32 {
        u[cell(k1)]
    } else {
        0.0
    };
    // SAFETY: cells k0 and k1 are this thread's (W * H <= 2 * THREADS); read after the barrier.
    unsafe {
        tile.write(k0 as usize, v0);
        if k1 < (W * H) as u32 {
            tile.write(k1 as usize, v1);
        }
    }
    sync::sync_threads();
    // This thread's own point: (x0 + tx, y0 + ty), as the block is STENCIL_X × STENCIL_Y.
    let i = thread::index_2d();
    let (x, y) = (i.x(), i.y());
    // The shape's bounds (equal to `nx`, `ny`): the same checks as `set`'s, which fold away.
    if x < out.cols() && y < out.rows() {
        // SAFETY: the tile is only read after the barrier.
        let at = |ly: usize, lx: usize| unsafe { tile.read(ly * W + lx) };
        let centre = at(ty + 1, tx + 1);
        let v = if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
            centre
        } else {
            let s = (at(ty, tx + 1) + at(ty + 2, tx + 1)) + (at(ty + 1, tx) + at(ty + 1, tx + 2));
            math::fmaf(c0, centre, c1 * s)
        };
        out.set(&i, v);
    }
}

/// Gravitational accelerations of `n` bodies, all pairs: `pos[i] = (x, y, z, mass)`,
/// `acc[i] = Σ_j m_j d_ij / (|d_ij|² + eps2)^{3/2}` (`w` = 0), bodies staged through shared
/// memory `BLOCK` at a time. Launch with blocks of [`BLOCK`] threads, one thread per body.
#[kernel]
pub fn nbody(pos: &[F4], eps2: f32, mut acc: DisjointSlice<F4>) {
    assert!(thread::block_dim_x() == BLOCK);
    let tile = shared_array!(F4, BLOCK as usize);
    let i = thread::index();
    let t = thread::thread_idx_x() as usize;
    let n = pos.len();
    let me = if i.get() < n {
        pos[i.get()].0
    } else {
        [0.0; 4]
    };
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    let mut start = 0;
    while start < n {
        let j = start + t;
        // SAFETY: thread `t` alone writes slot `t`; read after the barrier.
        unsafe { tile.write(t, if j < n { pos[j] } else { F4([0.0; 4]) }) };
        sync::sync_threads();
        // Eight bodies per step, as nvcc unrolls the CUDA C twin's loop by default.
        for k8 in 0..BLOCK as usize / 8 {
            unroll!(u in [0, 1, 2, 3, 4, 5, 6, 7] {
            let k = 8 * k8 + u;
            // SAFETY: written before the barrier; the next write follows the next barrier.
            let p = unsafe { ld4(tile.as_mut_ptr().add(k).cast::<f32>()) };
            let (dx, dy, dz) = (p[0] - me[0], p[1] - me[1], p[2] - me[2]);
            let d2 = math::fmaf(dx, dx, math::fmaf(dy, dy, math::fmaf(dz, dz, eps2)));
            let inv = rsqrt_approx(d2);
            let s = p[3] * (inv * inv * inv);
            ax = math::fmaf(dx, s, ax);
            ay = math::fmaf(dy, s, ay);
            az = math::fmaf(dz, s, az);
            });
        }
        sync::sync_threads();
        start += BLOCK as usize;
    }
    if let Some(a) = acc.get_mut(&i) {
        *a = F4([ax, ay, az, 0.0]);
    }
}
