//! The memory-bound rows of the suite (math rows: `math_rows.rs`; GEMMs: `gemm.rs`).

use super::{Bench, BoxError, C_FLAGS, Row, launch_c, p, rel_err, unit};
use ffi_examples_kernels::suite::{self, BLOCK, STENCIL_X, STENCIL_Y, TILE, TILE_ROWS};
use ffi_examples_kernels::{saxpy as saxpy_kernel, suite::gemm};
use gpukernel_runtime::{Kernel, LaunchConfig};

/// The entries of the Rust module.
pub(crate) const RUST_KERNELS: &[&str] = &[
    saxpy_kernel::NAME,
    suite::saxpy_grid_stride::NAME,
    suite::saxpy_same_len::NAME,
    suite::sum_f32::NAME,
    suite::histogram256::NAME,
    suite::histogram256_aligned::NAME,
    suite::transpose::NAME,
    suite::stencil5::NAME,
    suite::softmax_rows::NAME,
    suite::softmax_rows_aligned::NAME,
    suite::nbody::NAME,
    gemm::sgemm::NAME,
    gemm::gemm_bf16::NAME,
    gemm::gemm_bf16_wide::NAME,
];

const GB: f64 = 1e9;

/// `ours / reference` in throughput (= reference time / our time), labelled.
pub(crate) fn ratio(ours_ms: f64, ref_ms: f64, what: &str) -> String {
    format!("{:.3}× {what}", ref_ms / ours_ms)
}

#[allow(clippy::too_many_arguments)] // one row's columns, named at each call
pub(crate) fn push(
    b: &mut Bench,
    name: String,
    ms: f64,
    work: f64,
    unit: &'static str,
    ratios: Vec<String>,
    err: Option<f64>,
    flags: &str,
) {
    b.rows.push(Row {
        name,
        ms,
        rate: (work / (ms * 1e-3) / GB, unit),
        ratios,
        err,
        flags: flags.to_string(),
    });
}

fn grid_1d(blocks: u32) -> LaunchConfig {
    LaunchConfig::new(blocks, BLOCK)
}

pub(crate) fn saxpy(b: &mut Bench) -> Result<(), BoxError> {
    let n: usize = 1 << 28;
    let xs: Vec<f32> = (0..n).map(|i| unit(1, i as u64)).collect();
    let y0s: Vec<f32> = (0..n).map(|i| unit(2, i as u64)).collect();
    let a = 1.5f32;
    let want: Vec<f32> = (0..n).map(|i| a.mul_add(xs[i], y0s[i])).collect();
    let s = &b.stream;
    let x = s.htod_copy(&xs)?;
    let y0 = s.htod_copy(&y0s)?;
    let mut y = s.alloc_zeros::<f32>(n)?;
    let k_idiom = b.rust.kernel(suite::saxpy_same_len)?;
    let k_safe = b.rust.kernel(saxpy_kernel)?;
    let k_gs = b.rust.kernel(suite::saxpy_grid_stride)?;
    let (c_one, c_gs) = (b.c_fn("saxpy_c")?, b.c_fn("saxpy_grid_stride_c")?);
    let one = LaunchConfig::for_elements(n)?;
    let gs = grid_1d(b.sms * 8);
    let (xp, nn) = (x.as_raw(), n as u64);
    let run =
        |which: usize, y: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            let (mut a, mut xp, mut yp, mut nn) = (a, xp, y.as_raw(), nn);
            let params = &mut [p(&mut a), p(&mut xp), p(&mut yp), p(&mut nn)];
            match which {
                0 => Ok(s.launch(&k_idiom, one, (a, &x, y))?),
                1 => Ok(s.launch(&k_gs, gs, (a, &x, y))?),
                // SAFETY: (float, const float*, float*, u64) as the twins declare; x and y hold n
                // floats and live past the synchronization that ends this function.
                2 => unsafe { launch_c(&c_one, s, one, params) },
                // SAFETY: as above.
                3 => unsafe { launch_c(&c_gs, s, gs, params) },
                _ => Ok(s.launch(&k_safe, one, (a, &x, y))?),
            }
        };
    let names = [
        "saxpy 2^28, safe idiom (`same_len(x, y)`)",
        "saxpy 2^28, grid-stride",
        "saxpy 2^28 CUDA C",
        "saxpy 2^28 CUDA C grid-stride",
        "saxpy 2^28, safe idiom without `same_len` (x checked per thread)",
    ];
    for (which, name) in names.iter().enumerate() {
        y.copy_from_device(&y0)?;
        run(which, &mut y)?;
        if y.to_host_vec()? != want {
            b.fail(name, "differs from the host's fused multiply-add".into());
        }
    }
    let ms: Vec<f64> = (0..names.len())
        .map(|w| b.time(|| run(w, &mut y)))
        .collect::<Result<_, _>>()?;
    let copy = b.time(|| Ok(s.memcpy_dtod_async(&mut y, &x)?))?;
    let bytes = 12.0 * n as f64;
    let rf = "Rust: DisjointSlice at thread::index(), same_len(x, y)";
    push(
        b,
        names[0].into(),
        ms[0],
        bytes,
        "GB/s",
        vec![
            ratio(ms[0], ms[2], "CUDA C"),
            ratio(ms[0], copy * 1.5, "device copy (same bytes)"),
        ],
        Some(0.0),
        rf,
    );
    push(
        b,
        names[4].into(),
        ms[4],
        bytes,
        "GB/s",
        vec![ratio(ms[4], ms[2], "CUDA C")],
        Some(0.0),
        "Rust: DisjointSlice at thread::index()",
    );
    push(
        b,
        names[1].into(),
        ms[1],
        bytes,
        "GB/s",
        vec![ratio(ms[1], ms[3], "CUDA C grid-stride")],
        Some(0.0),
        "Rust: unsafe write in a grid-stride loop",
    );
    push(
        b,
        names[2].into(),
        ms[2],
        bytes,
        "GB/s",
        vec![],
        None,
        C_FLAGS,
    );
    push(
        b,
        names[3].into(),
        ms[3],
        bytes,
        "GB/s",
        vec![],
        None,
        C_FLAGS,
    );
    push(
        b,
        "device copy 2^28 f32 (cuMemcpyDtoDAsync)".into(),
        copy,
        8.0 * n as f64,
        "GB/s",
        vec![],
        None,
        "driver",
    );
    Ok(())
}

pub(crate) fn sum(b: &mut Bench) -> Result<(), BoxError> {
    let n: usize = 1 << 28;
    let xs: Vec<f32> = (0..n).map(|i| unit(3, i as u64)).collect();
    let want: f64 = xs.iter().map(|&v| v as f64).sum();
    let s = &b.stream;
    let x = s.htod_copy(&xs)?;
    let mut total = s.alloc_zeros::<f32>(1)?;
    let k = b.rust.kernel(suite::sum_f32)?;
    let c = b.c_fn("sum_f32_c")?;
    let cfg = grid_1d(b.sms * 8);
    let (xp, nn) = (x.as_raw(), n as u64);
    let run =
        |rust: bool, total: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            if rust {
                return Ok(s.launch(&k, cfg, (&x, total))?);
            }
            let (mut xp, mut nn, mut tp) = (xp, nn, total.as_raw());
            // SAFETY: (const float*, u64, float*) as sum_f32_c declares; live buffers.
            unsafe { launch_c(&c, s, cfg, &mut [p(&mut xp), p(&mut nn), p(&mut tp)]) }
        };
    let mut errs = [0.0; 2];
    for (i, rust) in [true, false].into_iter().enumerate() {
        total.memset_zeros()?;
        run(rust, &mut total)?;
        let got = total.to_host_vec()?[0];
        errs[i] = rel_err(&[got], &[want]);
        // The f32 sum of 2^28 values of either sign, in a different order than the host's.
        if errs[i] > 1e-3 || !got.is_finite() {
            b.fail("sum", format!("got {got}, want {want}"));
        }
    }
    // The suite's sum: the device-wide reduce of gpukernel-algorithms (one launch, 16-byte
    // loads, the last block combining the partials), checked like the others.
    let algs = gpukernel_algorithms::Algorithms::new(&s.context())?;
    let sum_op = gpukernel_algorithms::Sum;
    algs.reduce(s, &x, sum_op, &mut total)?;
    let got = total.to_host_vec()?[0];
    let err_a = rel_err(&[got], &[want]);
    if err_a > 1e-3 || !got.is_finite() {
        b.fail(
            "sum (Algorithms::reduce)",
            format!("got {got}, want {want}"),
        );
    }
    let ms_a = b.time(|| Ok(algs.reduce(s, &x, sum_op, &mut total)?))?;
    let ms_r = b.time(|| run(true, &mut total))?;
    let ms_c = b.time(|| run(false, &mut total))?;
    let bytes = 4.0 * n as f64;
    let mut ratios = vec![ratio(ms_a, ms_c, "CUDA C")];
    let numba = b.numba_ms("sum");
    if let Some((nb, how)) = &numba {
        ratios.push(ratio(ms_a, *nb, &format!("Numba ({how})")));
    }
    push(
        b,
        "sum 2^28 f32 (gpukernel-algorithms reduce)".into(),
        ms_a,
        bytes,
        "GB/s",
        ratios,
        Some(err_a),
        "Rust",
    );
    push(
        b,
        "sum 2^28 f32 (hand-written: block + shuffles + atomics)".into(),
        ms_r,
        bytes,
        "GB/s",
        vec![ratio(ms_r, ms_c, "CUDA C")],
        Some(errs[0]),
        "Rust",
    );
    push(
        b,
        "sum 2^28 f32, CUDA C".into(),
        ms_c,
        bytes,
        "GB/s",
        vec![],
        Some(errs[1]),
        C_FLAGS,
    );
    if let Some((nb, how)) = numba {
        push(
            b,
            format!("sum 2^28 f32, Numba-CUDA ({how})"),
            nb,
            bytes,
            "GB/s",
            vec![],
            None,
            "numba.cuda.jit defaults (separate process, same machine)",
        );
    }
    Ok(())
}

pub(crate) fn histogram(b: &mut Bench) -> Result<(), BoxError> {
    let words: usize = 1 << 26; // 2^28 bytes
    let data: Vec<u32> = (0..words).map(|i| super::hash(i as u64) as u32).collect();
    let mut want = vec![0u32; 256];
    for w in &data {
        for k in 0..4 {
            want[((w >> (8 * k)) & 255) as usize] += 1;
        }
    }
    let s = &b.stream;
    let d = s.htod_copy(&data)?;
    let mut bins = s.alloc_zeros::<u32>(256)?;
    let k = b.rust.kernel(suite::histogram256)?;
    let k_al = b.rust.kernel(suite::histogram256_aligned)?;
    let c = b.c_fn("histogram256_c")?;
    let cfg = grid_1d(b.sms * 8);
    let (dp, nn) = (d.as_raw(), words as u64);
    let run =
        |which: usize, bins: &mut gpukernel_runtime::DeviceBuffer<u32>| -> Result<(), BoxError> {
            match which {
                0 => return Ok(s.launch(&k, cfg, (&d, &mut *bins))?),
                1 => return Ok(s.launch(&k_al, cfg, (&d, &mut *bins))?),
                _ => {}
            }
            let (mut dp, mut nn, mut bp) = (dp, nn, bins.as_raw());
            // SAFETY: (const unsigned*, u64, unsigned*) as histogram256_c declares.
            unsafe { launch_c(&c, s, cfg, &mut [p(&mut dp), p(&mut nn), p(&mut bp)]) }
        };
    for which in 0..3 {
        bins.memset_zeros()?;
        run(which, &mut bins)?;
        if bins.to_host_vec()? != want {
            b.fail(
                "histogram",
                format!(
                    "{} counts differ from the host's",
                    ["Rust", "Rust (aligned barriers)", "CUDA C"][which]
                ),
            );
        }
    }
    let ms_r = b.time(|| run(0, &mut bins))?;
    let ms_al = b.time(|| run(1, &mut bins))?;
    let ms_c = b.time(|| run(2, &mut bins))?;
    let bytes = 4.0 * words as f64;
    push(
        b,
        "histogram 256 bins of 2^28 bytes (shared atomics)".into(),
        ms_r,
        bytes,
        "GB/s",
        vec![ratio(ms_r, ms_c, "CUDA C")],
        Some(0.0),
        "Rust",
    );
    push(
        b,
        "histogram, aligned barriers (`bar.sync`, as `__syncthreads()`)".into(),
        ms_al,
        bytes,
        "GB/s",
        vec![
            ratio(ms_al, ms_c, "CUDA C"),
            ratio(ms_al, ms_r, "non-aligned"),
        ],
        Some(0.0),
        "Rust",
    );
    push(
        b,
        "histogram, CUDA C".into(),
        ms_c,
        bytes,
        "GB/s",
        vec![],
        Some(0.0),
        C_FLAGS,
    );
    Ok(())
}

pub(crate) fn transpose(b: &mut Bench) -> Result<(), BoxError> {
    let (rows, cols) = (8192usize, 8192usize);
    let xs: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let s = &b.stream;
    let x = s.htod_copy(&xs)?;
    let mut out = s.alloc_zeros::<f32>(rows * cols)?;
    let k = b.rust.kernel(suite::transpose)?;
    let c = b.c_fn("transpose_c")?;
    let cfg = LaunchConfig::new(
        (
            (cols as u32).div_ceil(TILE),
            (rows as u32).div_ceil(TILE),
            1,
        ),
        (TILE, TILE_ROWS, 1),
    );
    let xp = x.as_raw();
    let run =
        |rust: bool, out: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            if rust {
                let input = x.view_2d(cols, rows, cols)?;
                let view = out.view_2d_mut(rows, cols, rows)?;
                return Ok(s.launch(&k, cfg, (input, view))?);
            }
            let (mut xp, mut r, mut c2, mut op) = (xp, rows as u32, cols as u32, out.as_raw());
            // SAFETY: (const float*, unsigned, unsigned, float*) as transpose_c declares.
            unsafe {
                launch_c(
                    &c,
                    s,
                    cfg,
                    &mut [p(&mut xp), p(&mut r), p(&mut c2), p(&mut op)],
                )
            }
        };
    for rust in [true, false] {
        out.memset_zeros()?;
        run(rust, &mut out)?;
        let got = out.to_host_vec()?;
        if let Some(i) = (0..rows * cols).find(|&i| got[i] != xs[(i % rows) * cols + i / rows]) {
            b.fail("transpose", format!("element {i} is {}", got[i]));
        }
    }
    let ms_r = b.time(|| run(true, &mut out))?;
    let ms_c = b.time(|| run(false, &mut out))?;
    let bytes = 8.0 * (rows * cols) as f64;
    push(
        b,
        "transpose 8192² f32 (32×33 shared tile)".into(),
        ms_r,
        bytes,
        "GB/s",
        vec![ratio(ms_r, ms_c, "CUDA C")],
        Some(0.0),
        "Rust",
    );
    push(
        b,
        "transpose, CUDA C".into(),
        ms_c,
        bytes,
        "GB/s",
        vec![],
        Some(0.0),
        C_FLAGS,
    );
    Ok(())
}

pub(crate) fn stencil_host(u: &[f32], nx: usize, ny: usize, c0: f32, c1: f32) -> Vec<f64> {
    let mut out = vec![0.0f64; nx * ny];
    for y in 0..ny {
        for x in 0..nx {
            let i = y * nx + x;
            out[i] = if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
                u[i] as f64
            } else {
                c0 as f64 * u[i] as f64
                    + c1 as f64
                        * (u[i - nx] as f64 + u[i + nx] as f64 + u[i - 1] as f64 + u[i + 1] as f64)
            };
        }
    }
    out
}

pub(crate) fn stencil(b: &mut Bench) -> Result<(), BoxError> {
    let (nx, ny) = (8192usize, 8192usize);
    let us: Vec<f32> = (0..nx * ny).map(|i| unit(4, i as u64)).collect();
    let (c0, c1) = (0.5f32, 0.125f32);
    let want = stencil_host(&us, nx, ny, c0, c1);
    let s = &b.stream;
    let u = s.htod_copy(&us)?;
    let mut out = s.alloc_zeros::<f32>(nx * ny)?;
    let k = b.rust.kernel(suite::stencil5)?;
    let c = b.c_fn("stencil5_c")?;
    let cfg = LaunchConfig::new(
        (
            (nx as u32).div_ceil(STENCIL_X),
            (ny as u32).div_ceil(STENCIL_Y),
            1,
        ),
        (STENCIL_X, STENCIL_Y, 1),
    );
    let up = u.as_raw();
    let run =
        |rust: bool, out: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            if rust {
                let view = out.view_2d_mut(nx, ny, nx)?;
                return Ok(s.launch(&k, cfg, (&u, nx as u32, ny as u32, c0, c1, view))?);
            }
            let (mut up, mut x, mut y, mut a, mut bb, mut op) =
                (up, nx as u32, ny as u32, c0, c1, out.as_raw());
            // SAFETY: (const float*, unsigned, unsigned, float, float, float*) as stencil5_c declares.
            unsafe {
                launch_c(
                    &c,
                    s,
                    cfg,
                    &mut [
                        p(&mut up),
                        p(&mut x),
                        p(&mut y),
                        p(&mut a),
                        p(&mut bb),
                        p(&mut op),
                    ],
                )
            }
        };
    let mut errs = [0.0; 2];
    for (i, rust) in [true, false].into_iter().enumerate() {
        run(rust, &mut out)?;
        errs[i] = rel_err(&out.to_host_vec()?, &want);
        if errs[i] > 1e-6 {
            b.fail("stencil", format!("relative error {:.2e}", errs[i]));
        }
    }
    let ms_r = b.time(|| run(true, &mut out))?;
    let ms_c = b.time(|| run(false, &mut out))?;
    let bytes = 8.0 * (nx * ny) as f64;
    let mut ratios = vec![ratio(ms_r, ms_c, "CUDA C")];
    let numba = b.numba_ms("stencil");
    if let Some((nb, how)) = &numba {
        ratios.push(ratio(ms_r, *nb, &format!("Numba ({how})")));
    }
    push(
        b,
        "2D 5-point stencil 8192² f32 (shared halo)".into(),
        ms_r,
        bytes,
        "GB/s",
        ratios,
        Some(errs[0]),
        "Rust",
    );
    push(
        b,
        "stencil, CUDA C".into(),
        ms_c,
        bytes,
        "GB/s",
        vec![],
        Some(errs[1]),
        C_FLAGS,
    );
    if let Some((nb, how)) = numba {
        push(
            b,
            format!("stencil, Numba-CUDA ({how})"),
            nb,
            bytes,
            "GB/s",
            vec![],
            None,
            "numba.cuda.jit defaults (separate process, same machine)",
        );
    }
    Ok(())
}
