//! The kernels of `gpukernel-algorithms`: device-wide reduce in two passes.
//!
//! This crate compiles twice, like every kernels crate: for `nvptx64-nvidia-cuda` (its
//! `build.rs`, through `nvptx-builder`) and for the host, where each kernel is the marker type
//! the runtime launches, on the GPU with [`PTX`] or on the simulator.
//!
//! The first pass ([`reduce_partial_sum_f32`] & co.) runs a grid of a few blocks per SM; each
//! thread walks the input grid-stride in tiles of `BLOCK × VECS` 16-byte vectors (`VECS`
//! vector loads in flight per thread, `ld.global.nc.v4`), the few elements before the first
//! 16-byte boundary and after the last whole vector one per thread; then each block reduces
//! its threads' values ([`gpukernel_device::block::reduce`]) into one partial per block. The
//! second pass ([`reduce_final_sum_f32`] & co.) is one block that reduces the partials into
//! the output. No atomics: the result of a float sum is the same from run to run.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, asm_experimental_arch)
)]

use gpukernel_device::ops::{Identity, Max, Min, Number, ReduceOp, Sum};
use gpukernel_device::prelude::*;
use gpukernel_device::warp::ShuffleValue;
use gpukernel_device::{block, thread};

/// The PTX of every kernel in this crate (for the architecture `GPUKERNEL_ARCH`, default sm_90).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Threads per block of both passes.
pub const BLOCK: u32 = 256;
/// 16-byte vectors each thread loads per step of the first pass (loads in flight).
pub const VECS: usize = 4;

/// An element type of the device-wide algorithms: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`.
pub trait Item: ShuffleValue + DeviceCopy + Number {
    /// `acc ⊕ e` for each element `e` of the 16 bytes `w`, in order.
    fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self;
}

macro_rules! item32 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                let e = |i: usize| <$t>::from_ne_bytes(w[i].to_ne_bytes());
                op.combine(op.combine(op.combine(op.combine(acc, e(0)), e(1)), e(2)), e(3))
            }
        }
    )* };
}
item32!(u32, i32, f32);

macro_rules! item64 {
    ($($t:ty),*) => { $(
        impl Item for $t {
            #[inline(always)]
            fn fold16<Op: ReduceOp<Self>>(acc: Self, w: [u32; 4], op: Op) -> Self {
                let e = |i: usize| {
                    <$t>::from_ne_bytes((w[i] as u64 | (w[i + 1] as u64) << 32).to_ne_bytes())
                };
                op.combine(op.combine(acc, e(0)), e(2))
            }
        }
    )* };
}
item64!(u64, i64, f64);

/// Reads 16 bytes through the non-coherent (read-only) path: `ld.global.nc.v4.u32`.
///
/// # Safety
/// `p` is a 16-byte aligned global address valid for 16 bytes that nothing writes during the
/// kernel (a `&[T]` parameter's memory).
#[inline(always)]
unsafe fn ld16(p: *const [u32; 4]) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller's promise; the generic address of global memory is its global
        // address on every architecture of the target (sm_70 and later).
        unsafe {
            core::arch::asm!(
                "ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d,
                in(reg64) p,
                options(pure, readonly, nostack),
            );
        }
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promise.
    unsafe {
        p.read()
    }
}

/// The first pass: `partials[b]` = the reduction of the elements block `b` visits.
#[inline(always)]
fn partial<T: Item, Op: Identity<T>, const V: usize>(
    input: &[T],
    partials: DisjointSlice<'_, T>,
    op: Op,
) {
    // Uniform checks before any barrier: the host launches exactly this shape.
    assert!(
        thread::block_dim_x() == BLOCK
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && partials.len() == thread::grid_dim_x() as usize
    );
    let size = core::mem::size_of::<T>();
    let per = 16 / size;
    let n = input.len();
    let base = input.as_ptr();
    let mis = base as usize % 16;
    let head = if mis == 0 { 0 } else { ((16 - mis) / size).min(n) };
    let nvec = (n - head) / per;
    let (t, b, g) = (
        thread::thread_idx_x() as usize,
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let block = BLOCK as usize;
    // SAFETY: `head <= n`; `head` elements bring the pointer to a 16-byte boundary (a `T`
    // address is a multiple of `size`, which divides 16).
    let vp = unsafe { base.add(head) }.cast::<[u32; 4]>();
    let tile = block * V;
    let full = nvec / tile;
    // One accumulator per vector in flight: `V` short dependency chains instead of one long.
    let mut accs = [op.identity(); V];
    let mut k = b;
    while k < full {
        let mut w = [[0u32; 4]; V];
        for (j, wj) in w.iter_mut().enumerate() {
            // SAFETY: vectors `k * tile + j * block + t` for `j < V` are below
            // `full * tile <= nvec`: inside the input (a `&[T]`, which nobody writes during the
            // launch), 16-byte aligned.
            *wj = unsafe { ld16(vp.add(k * tile + j * block + t)) };
        }
        for (a, wj) in accs.iter_mut().zip(&w) {
            *a = T::fold16(*a, *wj, op);
        }
        k += g;
    }
    let mut acc = accs[0];
    for a in &accs[1..] {
        acc = op.combine(acc, *a);
    }
    let gid = b * block + t;
    let mut v = full * tile + gid;
    while v < nvec {
        // SAFETY: `v < nvec`, as above.
        acc = T::fold16(acc, unsafe { ld16(vp.add(v)) }, op);
        v += g * block;
    }
    if gid < head {
        acc = op.combine(acc, input[gid]);
    }
    let tail = head + nvec * per + gid;
    if tail < n {
        acc = op.combine(acc, input[tail]);
    }
    let total = block::reduce(acc, op);
    if t == 0 {
        // SAFETY: only the block's first thread writes slot `b`, and `b < grid_dim_x ==
        // partials.len()` (checked above).
        unsafe { partials.write(b, total) };
    }
}

/// The second pass, one block: `out[0]` = the reduction of `partials`.
#[inline(always)]
fn finish<T: Item, Op: Identity<T>>(partials: &[T], mut out: DisjointSlice<'_, T>, op: Op) {
    assert!(thread::grid_dim_x() == 1 && thread::block_dim_y() == 1 && thread::block_dim_z() == 1);
    let (t, nt) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    let mut acc = op.identity();
    let mut i = t;
    while i < partials.len() {
        acc = op.combine(acc, partials[i]);
        i += nt;
    }
    let total = block::reduce(acc, op);
    let i = thread::index();
    if i.get() == 0
        && let Some(o) = out.get_mut(&i)
    {
        *o = total;
    }
}

macro_rules! reduce_kernels {
    ($($partial:ident, $final:ident: $t:ty, $op:ident;)*) => { $(
        #[doc = concat!("First pass of the device-wide `", stringify!($op), "` of `",
            stringify!($t), "`: one partial per block. Blocks of [`BLOCK`] threads, \
            `partials.len()` blocks.")]
        #[kernel]
        pub fn $partial(input: &[$t], partials: DisjointSlice<$t>) {
            partial::<$t, $op, VECS>(input, partials, $op);
        }
        #[doc = concat!("Second pass of the device-wide `", stringify!($op), "` of `",
            stringify!($t), "`: `out[0]` from the partials. One block.")]
        #[kernel]
        pub fn $final(partials: &[$t], out: DisjointSlice<$t>) {
            finish::<$t, $op>(partials, out, $op);
        }
    )* };
}

reduce_kernels! {
    reduce_partial_sum_f32, reduce_final_sum_f32: f32, Sum;
    reduce_partial_sum_f64, reduce_final_sum_f64: f64, Sum;
    reduce_partial_sum_i32, reduce_final_sum_i32: i32, Sum;
    reduce_partial_sum_u32, reduce_final_sum_u32: u32, Sum;
    reduce_partial_sum_i64, reduce_final_sum_i64: i64, Sum;
    reduce_partial_sum_u64, reduce_final_sum_u64: u64, Sum;
    reduce_partial_min_f32, reduce_final_min_f32: f32, Min;
    reduce_partial_min_f64, reduce_final_min_f64: f64, Min;
    reduce_partial_min_i32, reduce_final_min_i32: i32, Min;
    reduce_partial_min_u32, reduce_final_min_u32: u32, Min;
    reduce_partial_min_i64, reduce_final_min_i64: i64, Min;
    reduce_partial_min_u64, reduce_final_min_u64: u64, Min;
    reduce_partial_max_f32, reduce_final_max_f32: f32, Max;
    reduce_partial_max_f64, reduce_final_max_f64: f64, Max;
    reduce_partial_max_i32, reduce_final_max_i32: i32, Max;
    reduce_partial_max_u32, reduce_final_max_u32: u32, Max;
    reduce_partial_max_i64, reduce_final_max_i64: i64, Max;
    reduce_partial_max_u64, reduce_final_max_u64: u64, Max;
}

/// [`reduce_partial_sum_f32`] with 8 vectors in flight per thread instead of [`VECS`]: for
/// the benchmark's tuning rows only.
#[kernel]
pub fn reduce_partial_sum_f32_v8(input: &[f32], partials: DisjointSlice<f32>) {
    partial::<f32, Sum, 8>(input, partials, Sum);
}

/// [`reduce_partial_sum_f32`] with 2 vectors in flight per thread: for the benchmark's tuning
/// rows only.
#[kernel]
pub fn reduce_partial_sum_f32_v2(input: &[f32], partials: DisjointSlice<f32>) {
    partial::<f32, Sum, 2>(input, partials, Sum);
}
