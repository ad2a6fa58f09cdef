//! The math rows of the suite: softmax over rows and all-pairs n-body.

use super::rows::{push, ratio};
use super::{Bench, BoxError, C_FLAGS, launch_c, p, rel_err, unit};
use ffi_examples_kernels::suite::{self, BLOCK, F4};
use gpukernel_runtime::LaunchConfig;

pub(crate) fn softmax_host(x: &[f32], cols: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|&v| (v as f64 - m).exp() / s));
    }
    out
}

pub(crate) fn softmax(b: &mut Bench) -> Result<(), BoxError> {
    let (rows, cols) = (16384usize, 4096usize);
    let xs: Vec<f32> = (0..rows * cols).map(|i| 4.0 * unit(5, i as u64)).collect();
    let want = softmax_host(&xs, cols);
    let s = &b.stream;
    let x = s.htod_copy(&xs)?;
    let mut out = s.alloc_zeros::<f32>(rows * cols)?;
    let k = b.rust.kernel(suite::softmax_rows)?;
    let k_al = b.rust.kernel(suite::softmax_rows_aligned)?;
    let c = b.c_fn("softmax_rows_c")?;
    let cfg = LaunchConfig::new(rows as u32, BLOCK);
    let xp = x.as_raw();
    let run =
        |which: usize, out: &mut gpukernel_runtime::DeviceBuffer<f32>| -> Result<(), BoxError> {
            match which {
                0 => return Ok(s.launch(&k, cfg, (&x, cols as u32, &mut *out))?),
                1 => return Ok(s.launch(&k_al, cfg, (&x, cols as u32, &mut *out))?),
                _ => {}
            }
            let (mut xp, mut cc, mut op) = (xp, cols as u32, out.as_raw());
            // SAFETY: (const float*, unsigned, float*) as softmax_rows_c declares.
            unsafe { launch_c(&c, s, cfg, &mut [p(&mut xp), p(&mut cc), p(&mut op)]) }
        };
    let mut errs = [0.0; 3];
    for (i, err) in errs.iter_mut().enumerate() {
        run(i, &mut out)?;
        let got = out.to_host_vec()?;
        // Relative error per element (outputs span orders of magnitude).
        *err = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs() / w)
            .fold(0.0, f64::max);
        if err.is_nan() || *err > 1e-4 {
            b.fail("softmax", format!("relative error {err:.2e}"));
        }
    }
    let ms_r = b.time(|| run(0, &mut out))?;
    let ms_al = b.time(|| run(1, &mut out))?;
    let ms_c = b.time(|| run(2, &mut out))?;
    let bytes = 8.0 * (rows * cols) as f64;
    let f = "exp: ex2.approx.ftz (CUDA C: __expf)";
    push(
        b,
        "softmax 16384 rows × 4096 f32 (online max/sum)".into(),
        ms_r,
        bytes,
        "GB/s",
        vec![ratio(ms_r, ms_c, "CUDA C")],
        Some(errs[0]),
        &format!("Rust; {f}"),
    );
    push(
        b,
        "softmax, aligned barrier (`bar.sync`, as `__syncthreads()`)".into(),
        ms_al,
        bytes,
        "GB/s",
        vec![
            ratio(ms_al, ms_c, "CUDA C"),
            ratio(ms_al, ms_r, "non-aligned"),
        ],
        Some(errs[1]),
        &format!("Rust; {f}"),
    );
    push(
        b,
        "softmax, CUDA C".into(),
        ms_c,
        bytes,
        "GB/s",
        vec![],
        Some(errs[2]),
        &format!("{C_FLAGS}; {f}"),
    );
    Ok(())
}

pub(crate) fn nbody(b: &mut Bench) -> Result<(), BoxError> {
    let n: usize = 1 << 16;
    let eps2 = 1e-2f32;
    let ps: Vec<F4> = (0..n as u64)
        .map(|i| {
            F4([
                unit(6, i),
                unit(7, i),
                unit(8, i),
                0.5 + 0.5 * unit(9, i).abs(),
            ])
        })
        .collect();
    let s = &b.stream;
    let pos = s.htod_copy(&ps)?;
    let mut acc = s.alloc_zeros::<F4>(n)?;
    let k = b.rust.kernel(suite::nbody)?;
    let c = b.c_fn("nbody_c")?;
    let cfg = LaunchConfig::new((n as u32).div_ceil(BLOCK), BLOCK);
    let pp = pos.as_raw();
    let run = |rust: bool, acc: &mut gpukernel_runtime::DeviceBuffer<F4>| -> Result<(), BoxError> {
        if rust {
            return Ok(s.launch(&k, cfg, (&pos, eps2, acc))?);
        }
        let (mut pp, mut nn, mut e, mut ap) = (pp, n as u64, eps2, acc.as_raw());
        // SAFETY: (const float4*, u64, float, float4*) as nbody_c declares.
        unsafe {
            launch_c(
                &c,
                s,
                cfg,
                &mut [p(&mut pp), p(&mut nn), p(&mut e), p(&mut ap)],
            )
        }
    };
    // Host reference on 256 sampled bodies (all pairs each), in f64.
    let sample: Vec<usize> = (0..256).map(|i| (super::hash(i) as usize) % n).collect();
    let mut want = Vec::new();
    for &i in &sample {
        let me = ps[i].0;
        let mut a = [0.0f64; 3];
        for q in &ps {
            let d = [
                q.0[0] as f64 - me[0] as f64,
                q.0[1] as f64 - me[1] as f64,
                q.0[2] as f64 - me[2] as f64,
            ];
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2 as f64;
            let s = q.0[3] as f64 / (d2 * d2.sqrt());
            for k in 0..3 {
                a[k] += d[k] * s;
            }
        }
        want.extend(a);
    }
    let mut errs = [0.0; 2];
    for (i, rust) in [true, false].into_iter().enumerate() {
        run(rust, &mut acc)?;
        let got = acc.to_host_vec()?;
        let g: Vec<f32> = sample
            .iter()
            .flat_map(|&j| [got[j].0[0], got[j].0[1], got[j].0[2]])
            .collect();
        errs[i] = rel_err(&g, &want);
        if errs[i] > 1e-4 {
            b.fail("n-body", format!("relative error {:.2e}", errs[i]));
        }
    }
    let ms_r = b.time(|| run(true, &mut acc))?;
    let ms_c = b.time(|| run(false, &mut acc))?;
    let flops = 20.0 * (n * n) as f64;
    let f = "rsqrt.approx.f32 (CUDA C: rsqrtf)";
    push(
        b,
        "n-body 65536 bodies, all pairs (20 flop/pair)".into(),
        ms_r,
        flops,
        "GFLOP/s",
        vec![ratio(ms_r, ms_c, "CUDA C")],
        Some(errs[0]),
        &format!("Rust; {f}"),
    );
    push(
        b,
        "n-body, CUDA C".into(),
        ms_c,
        flops,
        "GFLOP/s",
        vec![],
        Some(errs[1]),
        &format!("{C_FLAGS}; {f}"),
    );
    Ok(())
}
