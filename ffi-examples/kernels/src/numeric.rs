//! Half-precision arithmetic, vector loads and stores, and formatted output from kernels.

use gpukernel_device::half::{bf16, bf16x2, f16, f16x2};
use gpukernel_device::prelude::*;
use gpukernel_device::vector::{f32x4, split_aligned};
use gpukernel_device::{gpu_println, thread};

/// Compares two halves: bit 0 `a < b`, bit 1 `a == b`, bit 2 `a > b`.
macro_rules! order {
    ($a:expr, $b:expr) => {
        ($a < $b) as u16 | (($a == $b) as u16) << 1 | (($a > $b) as u16) << 2
    };
}

/// For each `i`, the bits of `a + b`, `a - b`, `a * b`, `a / b`, `a.mul_add(b, c)`, `1.7 a`
/// (through `f32`), `max(a, b)` and the comparisons of `a` and `b`, in `f16`.
#[kernel]
pub fn f16_ops(a: &[f16], b: &[f16], c: &[f16], mut out: DisjointSlice<[u16; 8]>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (a, b, c) = (a[i.get()], b[i.get()], c[i.get()]);
        *o = [
            (a + b).to_bits(),
            (a - b).to_bits(),
            (a * b).to_bits(),
            (a / b).to_bits(),
            a.mul_add(b, c).to_bits(),
            f16::from_f32(a.to_f32() * 1.7).to_bits(),
            a.max(b).to_bits(),
            order!(a, b),
        ];
    }
}

/// As [`f16_ops`], in `bf16`.
#[kernel]
pub fn bf16_ops(a: &[bf16], b: &[bf16], c: &[bf16], mut out: DisjointSlice<[u16; 8]>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (a, b, c) = (a[i.get()], b[i.get()], c[i.get()]);
        *o = [
            (a + b).to_bits(),
            (a - b).to_bits(),
            (a * b).to_bits(),
            (a / b).to_bits(),
            a.mul_add(b, c).to_bits(),
            bf16::from_f32(a.to_f32() * 1.7).to_bits(),
            a.max(b).to_bits(),
            order!(a, b),
        ];
    }
}

/// `[f16 bits, bf16 bits]` of each `x` rounded to nearest-even, and of `x` as `f64` minus a
/// third of its last place (so a tie in `f32` is not one in `f64`).
#[kernel]
pub fn to_half(x: &[f32], mut out: DisjointSlice<[u16; 4]>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let v = x[i.get()];
        let w = v as f64 * (1.0 - 1.0 / 3.0 * f64::EPSILON);
        *o = [
            f16::from_f32(v).to_bits(),
            bf16::from_f32(v).to_bits(),
            f16::from_f64(w).to_bits(),
            bf16::from_f64(w).to_bits(),
        ];
    }
}

/// Packed pairs: `[x * y + x, x + y - y * y]` in `f16x2` and `[u * v + u, u - v]` in `bf16x2`,
/// as 32-bit words.
#[kernel]
pub fn half2_ops(
    x: &[f16x2],
    y: &[f16x2],
    u: &[bf16x2],
    v: &[bf16x2],
    mut out: DisjointSlice<[u32; 4]>,
) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (x, y, u, v) = (x[i.get()], y[i.get()], u[i.get()], v[i.get()]);
        *o = [
            x.mul_add(y, x).to_bits(),
            (x + y - y * y).to_bits(),
            u.mul_add(v, u).to_bits(),
            (u - v).to_bits(),
        ];
    }
}

/// `out[i] = a * x[i] + y[i]` on four floats at a time: 16-byte loads and stores.
#[kernel]
pub fn saxpy4(a: f32, x: &[f32x4], y: &[f32x4], mut out: DisjointSlice<f32x4>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        let (x, y) = (x[i.get()].0, y[i.get()].0);
        *o = f32x4([
            a * x[0] + y[0],
            a * x[1] + y[1],
            a * x[2] + y[2],
            a * x[3] + y[3],
        ]);
    }
}

/// `out = 2 x` for scalar slices of any alignment: the aligned middle in `f32x4` loads and
/// stores when both are aligned alike, scalars elsewhere. Thread `i` handles vector `i` and
/// scalar `i` of the head and tail.
#[kernel]
pub fn double_split(x: &[f32], out: DisjointSlice<f32>) {
    let n = out.len();
    let (mut head, mut body, mut tail) = out.split_vectors::<f32x4>();
    let (xh, xb, _) = split_aligned::<f32x4>(&x[..n]);
    let i = thread::index();
    if xh.len() == head.len() {
        if let Some(o) = body.get_mut(&i) {
            let v = xb[i.get()].0;
            *o = f32x4([2.0 * v[0], 2.0 * v[1], 2.0 * v[2], 2.0 * v[3]]);
        }
        let t0 = head.len() + 4 * body.len();
        if let Some(o) = head.get_mut(&i) {
            *o = 2.0 * x[i.get()];
        }
        if let Some(o) = tail.get_mut(&i) {
            *o = 2.0 * x[t0 + i.get()];
        }
    } else {
        // Different alignments: no vector lines up with both; every element as a scalar,
        // through the pieces of `out` (thread `i` owns element `i` of each).
        let (h, b) = (head.len(), body.len());
        if let Some(o) = head.get_mut(&i) {
            *o = 2.0 * x[i.get()];
        }
        if let Some(o) = body.get_mut(&i) {
            let k = h + 4 * i.get();
            *o = f32x4([2.0 * x[k], 2.0 * x[k + 1], 2.0 * x[k + 2], 2.0 * x[k + 3]]);
        }
        if let Some(o) = tail.get_mut(&i) {
            *o = 2.0 * x[h + 4 * b + i.get()];
        }
    }
}

/// Prints one line per element of `x` (threads below `x.len()`), exercising each kind of
/// placeholder.
#[kernel]
pub fn print_values(x: &[f32], flags: &[u32]) {
    let i = thread::index().get();
    if i < x.len() {
        let v = x[i];
        gpu_println!(
            "[{}] x={:.3} g={} e={:e} hex={:#x} neg={} {:<5}|{:05} 100% h={} ok={}",
            i,
            v,
            v,
            v as f64,
            flags[i],
            -(i as i32) - 1,
            i,
            i as i64 - 3,
            f16::from_f32(v),
            flags[i] & 1 == 1
        );
    }
}
