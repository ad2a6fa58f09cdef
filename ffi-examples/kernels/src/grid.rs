//! Kernels with safe two- and three-dimensional outputs and grid-stride loops: each thread
//! writes only elements that its index types ([`ThreadIndex2D`], [`ThreadIndex3D`], the
//! indices of a grid-stride loop) give it, so none of these kernels is `unsafe`.

use gpukernel_device::{math, prelude::*, thread};

/// `out = mᵀ` for a row-major `rows × cols` matrix `m`: `out` is `cols` rows of `rows`
/// elements (any row pitch), and thread `(x, y)` writes `out[y][x] = m[x][y]`.
#[kernel]
pub fn transpose_2d(m: &[f32], cols: u32, mut out: DisjointSlice2D<f32>) {
    let i = thread::index_2d();
    if let Some(o) = out.get_mut(&i) {
        *o = m[i.x() * cols as usize + i.y()];
    }
}

/// [`transpose_2d`] with a read-only 2D input: `out = mᵀ` for any `rows × cols` view `m` (any
/// row pitch); thread `(x, y)` writes `out[y][x] = m[(x, y)]`. The read checks `x < m.rows()`
/// and `y < m.cols()` only: the shape was checked against the buffer at the launch.
#[kernel]
pub fn transpose_view_2d(m: Slice2D<f32>, mut out: DisjointSlice2D<f32>) {
    let i = thread::index_2d();
    if let (Some(v), Some(o)) = (m.get(i.x(), i.y()), out.get_mut(&i)) {
        *o = *v;
    }
}

/// `out[i] = m[(r, c)]` in every thread: an element read through the index operator, which
/// traps when `(r, c)` is outside the view's shape, even where the buffer goes on (a pitch's
/// padding, rows past the view).
#[kernel]
pub fn read_view_2d(m: Slice2D<f32>, r: u32, c: u32, mut out: DisjointSlice<f32>) {
    let v = m[(r as usize, c as usize)];
    out.set(thread::index(), v);
}

/// `out[r] = the sum of row r of m`, one thread per row, through [`Slice2D::row`].
#[kernel]
pub fn row_sums_view_2d(m: Slice2D<f32>, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(row) = m.row(i.get()) {
        out.set(&i, row.iter().sum());
    }
}

/// `out[y][x] = a[y][x] + b[y][x]` for dense `a` and `b` of `out.cols()` columns, with a 2D
/// grid-stride loop, so any 2D grid covers any shape.
#[kernel]
pub fn add_2d_grid_stride(a: &[f32], b: &[f32], mut out: DisjointSlice2D<f32>) {
    let cols = out.cols();
    for i in thread::grid_stride_2d(out.cols(), out.rows()) {
        let k = i.y() * cols + i.x();
        out.set(&i, a[k] + b[k]);
    }
}

/// `out[z][y][x] = x + 1000 y + 1000000 z`, with a 3D grid-stride loop (any launch).
#[kernel]
pub fn coordinates_3d(mut out: DisjointSlice3D<u32>) {
    for i in thread::grid_stride_3d(out.cols(), out.rows(), out.depth()) {
        out.set(&i, (i.x() + 1000 * i.y() + 1_000_000 * i.z()) as u32);
    }
}

/// saxpy with a grid-stride loop: `y[i] = a * x[i] + y[i]` for every `i`, whatever the
/// (one-dimensional) grid size.
#[kernel]
pub fn saxpy_grid_stride(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    for i in thread::grid_stride(y.len()) {
        if let Some(yi) = y.get_mut(&i) {
            *yi = math::fmaf(a, x[i.get()], *yi);
        }
    }
}
