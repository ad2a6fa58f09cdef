//! The Hopper GEMM rows: the warp-specialised TMA GEMMs of `ffi_examples_hopper_kernels`
//! (bf16 → f32 against cuBLAS `cublasGemmEx`; FP8 e4m3 → bf16 against cuBLASLt's FP8
//! `cublasLtMatmul`, with and without its fast accumulation) at 8192³, 4096³ and 2048³. cuBLAS
//! and cuBLASLt are loaded at run time in this process; without them the reference rows are
//! skipped, named. Each result is checked on sampled outputs before timing; the variants of a
//! size are timed in turn (see `time_interleaved`).

use super::gemm::{Cublas, sampled, samples};
use super::rows::{push, ratio};
use super::{Bench, BoxError, TRIALS, WARMUP, rel_err, unit};
use core::ffi::c_void;
use cudarc::cublas::sys as cb;
use cudarc::cublaslt::sys as lt;
use ffi_examples_hopper_kernels as hopper;
use gpukernel_device::fp8::{e4m3_bits, e4m3_to_f32};
use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
use gpukernel_runtime::{DeviceBuffer, LaunchConfig, Stream, Swizzle, TensorMap2D};

/// The sizes of the rows (square problems).
const SIZES: [usize; 3] = [8192, 4096, 2048];
/// Largest problem: every buffer is allocated for it and smaller sizes use its prefix.
const MAX: usize = 8192;

/// The two grids the TMA GEMMs run with: one block per 128 × 256 tile of the `m × n` C
/// (`persistent` false), or one block per multiprocessor looping over the tiles.
fn launch_cfg(m: usize, n: usize, persistent: bool, sms: u32) -> LaunchConfig {
    let tiles = ((m / hopper::TMA_BM as usize) * (n / hopper::TMA_BN as usize)) as u32;
    let blocks = if persistent { sms.min(tiles) } else { tiles };
    LaunchConfig::new(blocks, hopper::TMA_THREADS).with_shared_mem_bytes(hopper::TMA_SHARED_BYTES)
}

/// How the rows name the two grids.
const GRIDS: [&str; 2] = ["one block per tile", "persistent, one block per SM"];

/// Median event-timed milliseconds of each of `n` variants, timed in turn (0, 1, .., n − 1,
/// 0, ..) after as many warm-up rounds as `Bench::time` uses: a GPU that slows down as it
/// warms up over a row's seconds of tensor-core work then slows every variant alike, where
/// timing one variant after another would favour the first.
fn time_interleaved(
    b: &Bench,
    n: usize,
    mut run: impl FnMut(usize) -> Result<(), BoxError>,
) -> Result<Vec<f64>, BoxError> {
    let ctx = b.stream.context();
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    for _ in 0..WARMUP {
        for v in 0..n {
            run(v)?;
        }
    }
    b.stream.synchronize()?;
    let mut ms = vec![Vec::with_capacity(TRIALS); n];
    for _ in 0..TRIALS {
        for (v, times) in ms.iter_mut().enumerate() {
            start.record(&b.stream)?;
            run(v)?;
            end.record(&b.stream)?;
            times.push(start.elapsed_ms(&end)? as f64);
        }
    }
    Ok(ms
        .into_iter()
        .map(|mut v| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        })
        .collect())
}

/// `Σ_q a[i, q] · b[j, q]` in f64 at each sampled `(i, j)`, for `n × k` row-major operands.
fn sampled_reference(
    at: &[(usize, usize)],
    k: usize,
    a: impl Fn(usize) -> f32,
    b: impl Fn(usize) -> f32,
) -> Vec<f64> {
    at.iter()
        .map(|&(i, j)| {
            (0..k)
                .map(|q| a(i * k + q) as f64 * b(j * k + q) as f64)
                .sum()
        })
        .collect()
}

pub(crate) fn gemm_tma_bf16(b: &mut Bench) -> Result<(), BoxError> {
    let Some(md) = &b.hopper else {
        println!("# not compute capability 9.0: the TMA GEMM rows are skipped");
        return Ok(());
    };
    let kernel = md.kernel(hopper::gemm_bf16_tma)?;
    kernel.set_max_dynamic_shared_bytes(hopper::TMA_SHARED_BYTES)?;
    let av: Vec<u16> = (0..MAX * MAX)
        .map(|i| bf16_bits(unit(12, i as u64)))
        .collect();
    let bv: Vec<u16> = (0..MAX * MAX)
        .map(|i| bf16_bits(unit(13, i as u64)))
        .collect();
    let s = &b.stream;
    let a = s.htod_copy(&av)?;
    let bb = s.htod_copy(&bv)?;
    let mut c = s.alloc_zeros::<f32>(MAX * MAX)?;
    let blas = Cublas::new(s)?;
    let ctx = s.context();
    for size in SIZES {
        let s = &b.stream;
        let (m, n, k) = (size, size, size);
        let at = samples(m, n);
        let want = sampled_reference(&at, k, |i| bf16_to_f32(av[i]), |i| bf16_to_f32(bv[i]));
        let ma = TensorMap2D::new(
            &ctx,
            &a,
            [m as u64, k as u64],
            k as u64,
            hopper::tma_box_a(2),
            Swizzle::B128,
        )?;
        let mb = TensorMap2D::new(
            &ctx,
            &bb,
            [n as u64, k as u64],
            k as u64,
            hopper::tma_box_b(2),
            Swizzle::B128,
        )?;
        let (ap, bp) = (a.as_raw(), bb.as_raw());
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let sms = b.sms;
        let run = |which: usize, c: &mut DeviceBuffer<f32>| -> Result<(), BoxError> {
            if which < 2 {
                let args = (ma.param(), mb.param(), mu, nu, ku, c.view_2d_mut(n, m, n)?);
                let cfg = launch_cfg(m, n, which == 1, sms);
                // SAFETY: the maps describe `a` and `b` as m × k and n × k with the kernel's
                // boxes and the 128-byte swizzle; nothing writes them during the launch.
                unsafe { s.launch_unchecked(&kernel, cfg, args)? };
                return Ok(());
            }
            let h = blas.as_ref().ok_or("no cuBLAS")?.0;
            let (alpha, beta) = (1.0f32, 0.0f32);
            // Row-major C = A · Bᵀ is column-major Cᵀ = B · Aᵀ (see `gemm::gemm_bf16`).
            // SAFETY: device buffers of at least the stated sizes, live past the launch.
            unsafe {
                cudarc::cublas::result::gemm_ex(
                    h,
                    cb::cublasOperation_t::CUBLAS_OP_T,
                    cb::cublasOperation_t::CUBLAS_OP_N,
                    n as i32,
                    m as i32,
                    k as i32,
                    (&alpha as *const f32).cast(),
                    bp as *const _,
                    cb::cudaDataType::CUDA_R_16BF,
                    k as i32,
                    ap as *const _,
                    cb::cudaDataType::CUDA_R_16BF,
                    k as i32,
                    (&beta as *const f32).cast(),
                    c.as_raw() as *mut _,
                    cb::cudaDataType::CUDA_R_32F,
                    n as i32,
                    cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(|e| format!("cublasGemmEx: {e:?}").into())
        };
        let refs = if blas.is_some() { 3 } else { 2 };
        let mut errs = [0.0; 3];
        for (which, err) in errs.iter_mut().enumerate().take(refs) {
            c.memset_zeros()?;
            run(which, &mut c)?;
            *err = rel_err(&sampled(&c.to_host_vec()?[..m * n], n, &at), &want);
            if *err > 1e-4 {
                b.fail(
                    "bf16 tma gemm",
                    format!("{size}³ variant {which}: relative error {err:.2e}"),
                );
            }
        }
        let ms = time_interleaved(b, refs, |w| run(w, &mut c))?;
        let flops = 2.0 * (m * n * k) as f64;
        for (v, grid) in GRIDS.iter().enumerate() {
            let ratios = if refs == 3 {
                vec![ratio(ms[v], ms[2], "cuBLAS")]
            } else {
                vec![]
            };
            push(
                b,
                format!("bf16 GEMM {size}³ → f32, TMA + warp-specialised wgmma, {grid}"),
                ms[v],
                flops,
                "GFLOP/s",
                ratios,
                Some(errs[v]),
                &format!(
                    "Rust (sm_90a); 1 TMA producer + 2 wgmma m64n256k16 consumer warpgroups, setmaxnreg 40/232, 128×256×64 tiles, {}-stage mbarrier ring, launch bounds 384×1, grouped tile order",
                    hopper::TMA_STAGES
                ),
            );
        }
        if refs == 3 {
            push(
                b,
                format!("bf16 GEMM {size}³, cuBLAS (cublasGemmEx, COMPUTE_32F)"),
                ms[2],
                flops,
                "GFLOP/s",
                vec![],
                Some(errs[2]),
                "cuBLAS defaults",
            );
        }
    }
    Ok(())
}

/// A cuBLASLt FP8 matmul `C (bf16) = alpha · A · Bᵀ` for row-major e4m3 `m × k` A and `n × k`
/// B, set up once per size; everything destroyed on drop.
struct LtFp8 {
    handle: lt::cublasLtHandle_t,
    desc: lt::cublasLtMatmulDesc_t,
    layouts: [lt::cublasLtMatrixLayout_t; 3],
    pref: lt::cublasLtMatmulPreference_t,
    algo: lt::cublasLtMatmulAlgo_t,
}

impl LtFp8 {
    /// `fast`: cuBLASLt's FP8 fast accumulation (no periodic promotion of the partial sums),
    /// the arithmetic `wgmma` does when the kernel adds every k slice into one accumulator.
    fn new(m: usize, n: usize, k: usize, fast: bool, workspace: usize) -> Result<Self, BoxError> {
        use cudarc::cublaslt::result as r;
        fn e(what: &'static str) -> impl Fn(cudarc::cublaslt::result::CublasError) -> String {
            move |err| format!("cuBLASLt {what}: {err:?}")
        }
        let handle = r::create_handle().map_err(e("create"))?;
        let desc = r::create_matmul_desc(
            lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            lt::cudaDataType::CUDA_R_32F,
        )
        .map_err(e("matmul desc"))?;
        // Column-major view: Cᵀ (n × m) = op(B_rm) · A_rmᵀ with our row-major n × k B as the
        // k × n "A" transposed, our m × k A as the k × m "B": the TN form FP8 requires.
        // cuBLASLt takes cuBLAS's `cublasOperation_t` (a 32-bit enum).
        let (t, nn) = (
            cb::cublasOperation_t::CUBLAS_OP_T,
            cb::cublasOperation_t::CUBLAS_OP_N,
        );
        let fast_flag: i8 = fast as i8;
        // SAFETY: a live descriptor; each buffer holds the attribute's type.
        unsafe {
            r::set_matmul_desc_attribute(
                desc,
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                (&t as *const cb::cublasOperation_t).cast(),
                size_of::<cb::cublasOperation_t>(),
            )
            .map_err(e("TRANSA"))?;
            r::set_matmul_desc_attribute(
                desc,
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                (&nn as *const cb::cublasOperation_t).cast(),
                size_of::<cb::cublasOperation_t>(),
            )
            .map_err(e("TRANSB"))?;
            r::set_matmul_desc_attribute(
                desc,
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                (&fast_flag as *const i8).cast(),
                1,
            )
            .map_err(e("FAST_ACCUM"))?;
        }
        let fp8 = lt::cudaDataType::CUDA_R_8F_E4M3;
        let layouts = [
            r::create_matrix_layout(fp8, k as u64, n as u64, k as i64).map_err(e("layout A"))?,
            r::create_matrix_layout(fp8, k as u64, m as u64, k as i64).map_err(e("layout B"))?,
            r::create_matrix_layout(lt::cudaDataType::CUDA_R_16BF, n as u64, m as u64, n as i64)
                .map_err(e("layout C"))?,
        ];
        let pref = r::create_matmul_pref().map_err(e("preference"))?;
        let ws = workspace as u64;
        // SAFETY: live descriptors of the sizes stated.
        let heuristic = unsafe {
            r::set_matmul_pref_attribute(
                pref,
                lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws as *const u64).cast(),
                8,
            )
            .map_err(e("workspace preference"))?;
            r::get_matmul_algo_heuristic(
                handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref,
            )
            .map_err(e("heuristic (FP8 e4m3 TN → bf16)"))?
        };
        Ok(LtFp8 {
            handle,
            desc,
            layouts,
            pref,
            algo: heuristic.algo,
        })
    }

    /// One matmul on `stream`.
    ///
    /// # Safety
    /// `a`, `b`, `c` and `workspace` are device allocations of at least the sizes given to
    /// [`LtFp8::new`], live until the stream reaches the launch.
    unsafe fn run(
        &self,
        stream: &Stream,
        alpha: f32,
        (a, b, c): (u64, u64, u64),
        (workspace, bytes): (u64, usize),
    ) -> Result<(), BoxError> {
        let beta = 0.0f32;
        // SAFETY: the caller's contract; live descriptors.
        unsafe {
            cudarc::cublaslt::result::matmul(
                self.handle,
                self.desc,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
                b as *const c_void,
                self.layouts[0],
                a as *const c_void,
                self.layouts[1],
                c as *const c_void,
                self.layouts[2],
                c as *mut c_void,
                self.layouts[2],
                &self.algo,
                workspace as *mut c_void,
                bytes,
                stream.raw() as lt::cudaStream_t,
            )
        }
        .map_err(|e| format!("cublasLtMatmul (FP8): {e:?}").into())
    }
}

impl Drop for LtFp8 {
    fn drop(&mut self) {
        use cudarc::cublaslt::result as r;
        // SAFETY: created by `new`, destroyed once each.
        unsafe {
            let _ = r::destroy_matmul_pref(self.pref);
            for l in self.layouts {
                let _ = r::destroy_matrix_layout(l);
            }
            let _ = r::destroy_matmul_desc(self.desc);
            let _ = r::destroy_handle(self.handle);
        }
    }
}

pub(crate) fn gemm_fp8(b: &mut Bench) -> Result<(), BoxError> {
    /// Our variants: two kernels (without and with multicast) on two grids each.
    const OURS: usize = 4;
    let Some(md) = &b.hopper else {
        println!("# not compute capability 9.0: the FP8 GEMM rows are skipped");
        return Ok(());
    };
    let kernel = md.kernel(hopper::gemm_e4m3_tma)?;
    kernel.set_max_dynamic_shared_bytes(hopper::TMA_SHARED_BYTES)?;
    let multicast = md.kernel(hopper::gemm_e4m3_tma_multicast)?;
    multicast.set_max_dynamic_shared_bytes(hopper::TMA_SHARED_BYTES)?;
    // Values in [-1, 1) as e4m3; the product scaled by `alpha` (where per-tensor scales go).
    let av: Vec<u8> = (0..MAX * MAX)
        .map(|i| e4m3_bits(unit(14, i as u64)))
        .collect();
    let bv: Vec<u8> = (0..MAX * MAX)
        .map(|i| e4m3_bits(unit(15, i as u64)))
        .collect();
    let alpha = 0.5f32;
    let s = &b.stream;
    let a = s.htod_copy(&av)?;
    let bb = s.htod_copy(&bv)?;
    let mut c = s.alloc_zeros::<u16>(MAX * MAX)?;
    const WORKSPACE: usize = 32 << 20;
    let ws = s.alloc_zeros::<u8>(WORKSPACE)?;
    // SAFETY: probing the library has no preconditions.
    let have_lt = unsafe { lt::is_culib_present() };
    if !have_lt {
        println!("# cuBLASLt not found (libcublasLt.so): FP8 reference rows skipped");
    }
    let ctx = s.context();
    for size in SIZES {
        let s = &b.stream;
        let (m, n, k) = (size, size, size);
        let at = samples(m, n);
        let want: Vec<f64> =
            sampled_reference(&at, k, |i| e4m3_to_f32(av[i]), |i| e4m3_to_f32(bv[i]))
                .into_iter()
                .map(|x| x * alpha as f64)
                .collect();
        let ma = TensorMap2D::new(
            &ctx,
            &a,
            [m as u64, k as u64],
            k as u64,
            hopper::tma_box_a(1),
            Swizzle::B128,
        )?;
        let mb = TensorMap2D::new(
            &ctx,
            &bb,
            [n as u64, k as u64],
            k as u64,
            hopper::tma_box_b(1),
            Swizzle::B128,
        )?;
        // B's map for the multicast kernel: each block of a cluster loads half of the tile.
        let mb_half = TensorMap2D::new(
            &ctx,
            &bb,
            [n as u64, k as u64],
            k as u64,
            hopper::tma_box_b_half(1),
            Swizzle::B128,
        )?;
        let lts = if have_lt {
            vec![
                LtFp8::new(m, n, k, true, WORKSPACE)?,
                LtFp8::new(m, n, k, false, WORKSPACE)?,
            ]
        } else {
            vec![]
        };
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let sms = b.sms;
        // Variants 0, 1: the kernel on its two grids; 2, 3: the multicast kernel on the same
        // grids (clusters of two: the persistent grid rounded down to even); then cuBLASLt.
        let run = |which: usize, c: &mut DeviceBuffer<u16>| -> Result<(), BoxError> {
            if which < OURS {
                let mc = which >= 2;
                let args = (
                    ma.param(),
                    if mc { mb_half.param() } else { mb.param() },
                    mu,
                    nu,
                    ku,
                    alpha,
                    c.view_2d_mut(n, m, n)?,
                );
                let persistent = which % 2 == 1;
                let cfg = if mc {
                    launch_cfg(m, n, persistent, sms & !1).with_cluster(2)
                } else {
                    launch_cfg(m, n, persistent, sms)
                };
                // SAFETY: the maps describe `a` and `b` as m × k and n × k bytes with the
                // kernel's boxes (half of B's tile for the multicast kernel, launched in
                // clusters of two) and the 128-byte swizzle; nothing writes them meanwhile.
                unsafe {
                    if mc {
                        s.launch_unchecked(&multicast, cfg, args)?
                    } else {
                        s.launch_unchecked(&kernel, cfg, args)?
                    }
                };
                return Ok(());
            }
            // SAFETY: buffers of at least m·k, n·k and m·n elements and the workspace, live
            // past the synchronisation that follows every timed launch.
            unsafe {
                lts[which - OURS].run(
                    s,
                    alpha,
                    (a.as_raw(), bb.as_raw(), c.as_raw()),
                    (ws.as_raw(), WORKSPACE),
                )
            }
        };
        let runs = OURS + lts.len();
        let mut errs = vec![0.0; runs];
        for (which, err) in errs.iter_mut().enumerate() {
            c.memset_zeros()?;
            run(which, &mut c)?;
            let got: Vec<f32> = sampled(
                &c.to_host_vec()?[..m * n]
                    .iter()
                    .map(|&x| bf16_to_f32(x))
                    .collect::<Vec<_>>(),
                n,
                &at,
            );
            *err = rel_err(&got, &want);
            if *err > 1e-2 {
                b.fail(
                    "fp8 gemm",
                    format!("{size}³ variant {which}: relative error {err:.2e}"),
                );
            }
        }
        let ms = time_interleaved(b, runs, |w| run(w, &mut c))?;
        let flops = 2.0 * (m * n * k) as f64;
        for v in 0..OURS {
            let (mc, grid) = (v >= 2, GRIDS[v % 2]);
            let mut ratios = vec![];
            if runs == OURS + 2 {
                ratios.push(ratio(ms[v], ms[OURS], "cuBLASLt FP8 fast accum"));
                ratios.push(ratio(ms[v], ms[OURS + 1], "cuBLASLt FP8 default"));
            }
            if mc {
                ratios.push(ratio(ms[v], ms[v - 2], "without multicast"));
            }
            let what = if mc {
                "TMA multicast of B in clusters of 2 + warp-specialised wgmma"
            } else {
                "TMA + warp-specialised wgmma"
            };
            push(
                b,
                format!("FP8 e4m3 GEMM {size}³ → bf16, {what}, {grid}"),
                ms[v],
                flops,
                "GFLOP/s",
                ratios,
                Some(errs[v]),
                &format!(
                    "Rust (sm_90a); wgmma m64n256k32 e4m3, f32 accumulation in one accumulator; 128×256×128 tiles, {}-stage TMA ring, 2 consumer warpgroups",
                    hopper::TMA_STAGES
                ),
            );
        }
        for (i, what) in ["fast accumulation", "default (promoted partial sums)"]
            .iter()
            .enumerate()
            .take(lts.len())
        {
            push(
                b,
                format!("FP8 GEMM {size}³, cuBLASLt e4m3 TN → bf16, {what}"),
                ms[i + OURS],
                flops,
                "GFLOP/s",
                vec![],
                Some(errs[i + OURS]),
                "cublasLtMatmul, COMPUTE_32F, heuristic's first algorithm, 32 MiB workspace",
            );
        }
    }
    Ok(())
}
