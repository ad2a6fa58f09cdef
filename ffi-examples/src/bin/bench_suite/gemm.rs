//! The GEMM rows: SGEMM 4096³ (Rust, CUDA C twin, cuBLAS) and bf16 GEMM 8192³ on tensor
//! cores (Rust `mma.sync`, cuBLAS `cublasGemmEx`). cuBLAS is loaded at run time
//! (`libcublas.so` from `LD_LIBRARY_PATH`); without it the reference rows are skipped, named.

use super::rows::{push, ratio};
use super::{Bench, BoxError, C_FLAGS, launch_c, p, rel_err, unit};
use cudarc::cublas::sys as cb;
use ffi_examples_hopper_kernels as hopper;
use ffi_examples_kernels::suite::gemm::{
    self, GEMM_BM, SGEMM_BM, SGEMM_BN, SGEMM_THREADS, gemm_bn, gemm_shared_bytes, gemm_stages,
    gemm_threads,
};
use gpukernel_device::mma::{bf16_bits, bf16_to_f32};
use gpukernel_runtime::{DeviceBuffer, LaunchConfig, Stream};

/// One Rust bf16 GEMM kernel of the table.
#[derive(Clone, Copy)]
enum Variant {
    /// `ffi_examples_hopper_kernels::gemm_bf16_wgmma` (sm_90a).
    Wgmma,
    /// `gemm_bf16` (false: 128×128 tile) or `gemm_bf16_wide` (true: 128×256).
    MmaSync(bool),
}

/// A cuBLAS handle bound to the bench's stream; destroyed on drop.
pub(crate) struct Cublas(pub(crate) cb::cublasHandle_t);

impl Cublas {
    pub(crate) fn new(stream: &Stream) -> Result<Option<Cublas>, BoxError> {
        // SAFETY: probing the library has no preconditions.
        if !unsafe { cb::is_culib_present() } {
            println!("# cuBLAS not found (libcublas.so): reference rows skipped");
            return Ok(None);
        }
        let h =
            cudarc::cublas::result::create_handle().map_err(|e| format!("cublasCreate: {e:?}"))?;
        // SAFETY: a live handle and a live stream of the current context.
        unsafe { cudarc::cublas::result::set_stream(h, stream.raw() as cb::cudaStream_t) }
            .map_err(|e| format!("cublasSetStream: {e:?}"))?;
        Ok(Some(Cublas(h)))
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { cudarc::cublas::result::destroy_handle(self.0) };
    }
}

/// Sampled output positions of an `m × n` result.
pub(crate) fn samples(m: usize, n: usize) -> Vec<(usize, usize)> {
    (0..256u64)
        .map(|i| {
            (
                (super::hash(2 * i) as usize) % m,
                (super::hash(2 * i + 1) as usize) % n,
            )
        })
        .collect()
}

pub(crate) fn sampled(c: &[f32], n: usize, at: &[(usize, usize)]) -> Vec<f32> {
    at.iter().map(|&(i, j)| c[i * n + j]).collect()
}

pub(crate) fn sgemm(b: &mut Bench) -> Result<(), BoxError> {
    let (m, n, k) = (4096usize, 4096usize, 4096usize);
    let av: Vec<f32> = (0..m * k).map(|i| unit(10, i as u64)).collect();
    let bv: Vec<f32> = (0..k * n).map(|i| unit(11, i as u64)).collect();
    let at = samples(m, n);
    let want: Vec<f64> = at
        .iter()
        .map(|&(i, j)| {
            (0..k)
                .map(|q| av[i * k + q] as f64 * bv[q * n + j] as f64)
                .sum()
        })
        .collect();
    let s = &b.stream;
    let a = s.htod_copy(&av)?;
    let bb = s.htod_copy(&bv)?;
    let mut c = s.alloc_zeros::<f32>(m * n)?;
    let kr = b.rust.kernel(gemm::sgemm)?;
    let kc = b.c_fn("sgemm_c")?;
    let cfg = LaunchConfig::new(
        ((n as u32) / SGEMM_BN, (m as u32) / SGEMM_BM, 1),
        SGEMM_THREADS,
    );
    let blas = Cublas::new(s)?;
    let (ap, bp) = (a.as_raw(), bb.as_raw());
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let run = |which: usize, c: &mut DeviceBuffer<f32>| -> Result<(), BoxError> {
        match which {
            0 => Ok(s.launch(&kr, cfg, (&a, &bb, mu, nu, ku, c.view_2d_mut(n, m, n)?))?),
            1 => {
                let (mut ap, mut bp, mut mm, mut nn, mut kk, mut cp) =
                    (ap, bp, mu, nu, ku, c.as_raw());
                let params = &mut [
                    p(&mut ap),
                    p(&mut bp),
                    p(&mut mm),
                    p(&mut nn),
                    p(&mut kk),
                    p(&mut cp),
                ];
                // SAFETY: (const float*, const float*, unsigned ×3, float*) as sgemm_c declares.
                unsafe { launch_c(&kc, s, cfg, params) }
            }
            _ => {
                let h = blas.as_ref().ok_or("no cuBLAS")?.0;
                let (alpha, beta) = (1.0f32, 0.0f32);
                // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS (n, m, k) on (B, A).
                // SAFETY: device buffers of the stated sizes, live past the synchronization.
                unsafe {
                    cudarc::cublas::result::sgemm(
                        h,
                        cb::cublasOperation_t::CUBLAS_OP_N,
                        cb::cublasOperation_t::CUBLAS_OP_N,
                        n as i32,
                        m as i32,
                        k as i32,
                        &alpha,
                        bp as *const f32,
                        n as i32,
                        ap as *const f32,
                        k as i32,
                        &beta,
                        c.as_raw() as *mut f32,
                        n as i32,
                    )
                }
                .map_err(|e| format!("cublasSgemm: {e:?}").into())
            }
        }
    };
    let refs = if blas.is_some() { 3 } else { 2 };
    let mut errs = [0.0; 3];
    for (which, err) in errs.iter_mut().enumerate().take(refs) {
        c.memset_zeros()?;
        run(which, &mut c)?;
        *err = rel_err(&sampled(&c.to_host_vec()?, n, &at), &want);
        if *err > 1e-4 {
            b.fail(
                "sgemm",
                format!("variant {which}: relative error {err:.2e}"),
            );
        }
    }
    let ms: Vec<f64> = (0..refs)
        .map(|w| b.time(|| run(w, &mut c)))
        .collect::<Result<_, _>>()?;
    let flops = 2.0 * (m * n * k) as f64;
    let mut ratios = vec![ratio(ms[0], ms[1], "CUDA C")];
    if refs == 3 {
        ratios.push(ratio(ms[0], ms[2], "cuBLAS"));
    }
    let tile = "128×128×8 tiles, 8×8/thread, float4";
    push(
        b,
        "SGEMM 4096³ f32".into(),
        ms[0],
        flops,
        "GFLOP/s",
        ratios,
        Some(errs[0]),
        &format!("Rust; {tile}"),
    );
    push(
        b,
        "SGEMM, CUDA C".into(),
        ms[1],
        flops,
        "GFLOP/s",
        vec![],
        Some(errs[1]),
        &format!("{C_FLAGS}; {tile}"),
    );
    if refs == 3 {
        push(
            b,
            "SGEMM, cuBLAS (cublasSgemm, FP32 math)".into(),
            ms[2],
            flops,
            "GFLOP/s",
            vec![],
            Some(errs[2]),
            "cuBLAS defaults",
        );
    }
    Ok(())
}

pub(crate) fn gemm_bf16(b: &mut Bench) -> Result<(), BoxError> {
    let (m, n, k) = (8192usize, 8192usize, 8192usize);
    // B is stored n-major (n rows of k): C = A · Bᵀ.
    let av: Vec<u16> = (0..m * k).map(|i| bf16_bits(unit(12, i as u64))).collect();
    let bv: Vec<u16> = (0..n * k).map(|i| bf16_bits(unit(13, i as u64))).collect();
    let at = samples(m, n);
    let want: Vec<f64> = at
        .iter()
        .map(|&(i, j)| {
            (0..k)
                .map(|q| bf16_to_f32(av[i * k + q]) as f64 * bf16_to_f32(bv[j * k + q]) as f64)
                .sum()
        })
        .collect();
    let s = &b.stream;
    let a = s.htod_copy(&av)?;
    let bb = s.htod_copy(&bv)?;
    let mut c = s.alloc_zeros::<f32>(m * n)?;
    let k_narrow = b.rust.kernel(gemm::gemm_bf16)?;
    let k_wide = b.rust.kernel(gemm::gemm_bf16_wide)?;
    k_narrow.set_max_dynamic_shared_bytes(gemm_shared_bytes(false))?;
    k_wide.set_max_dynamic_shared_bytes(gemm_shared_bytes(true))?;
    let k_wgmma = match &b.hopper {
        Some(h) => {
            let k = h.kernel(hopper::gemm_bf16_wgmma)?;
            k.set_max_dynamic_shared_bytes(hopper::WG_SHARED_BYTES)?;
            Some(k)
        }
        None => None,
    };
    // The Rust variants (wgmma 128×256, mma.sync 128×128 and 128×256); cuBLAS comes last.
    let mut variants = vec![];
    if k_wgmma.is_some() {
        variants.push(Variant::Wgmma);
    }
    variants.extend([Variant::MmaSync(false), Variant::MmaSync(true)]);
    let cfg = |wide: bool| {
        LaunchConfig::new(
            ((n as u32) / gemm_bn(wide), (m as u32) / GEMM_BM, 1),
            gemm_threads(wide),
        )
        .with_shared_mem_bytes(gemm_shared_bytes(wide))
    };
    let wg_cfg = LaunchConfig::new(
        ((n as u32) / hopper::WG_BN, (m as u32) / hopper::WG_BM, 1),
        hopper::WG_THREADS,
    )
    .with_shared_mem_bytes(hopper::WG_SHARED_BYTES);
    let blas = Cublas::new(s)?;
    let (ap, bp) = (a.as_raw(), bb.as_raw());
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let run = |which: usize, c: &mut DeviceBuffer<f32>| -> Result<(), BoxError> {
        if let Some(&v) = variants.get(which) {
            let args = (&a, &bb, mu, nu, ku, c.view_2d_mut(n, m, n)?);
            match v {
                Variant::Wgmma => {
                    s.launch(k_wgmma.as_ref().ok_or("no wgmma kernel")?, wg_cfg, args)?
                }
                Variant::MmaSync(true) => s.launch(&k_wide, cfg(true), args)?,
                Variant::MmaSync(false) => s.launch(&k_narrow, cfg(false), args)?,
            }
            return Ok(());
        }
        let h = blas.as_ref().ok_or("no cuBLAS")?.0;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major C (m × n) = A · Bᵀ is column-major Cᵀ (n × m) = B · Aᵀ, where the
        // row-major n × k B is a column-major k × n matrix: op(B) = transposed.
        // SAFETY: device buffers of the stated sizes, live past the synchronization.
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
    let nv = variants.len();
    let refs = if blas.is_some() { nv + 1 } else { nv };
    let mut errs = vec![0.0; refs];
    for (which, err) in errs.iter_mut().enumerate().take(refs) {
        c.memset_zeros()?;
        run(which, &mut c)?;
        *err = rel_err(&sampled(&c.to_host_vec()?, n, &at), &want);
        if *err > 1e-4 {
            b.fail(
                "bf16 gemm",
                format!("variant {which}: relative error {err:.2e}"),
            );
        }
    }
    let ms: Vec<f64> = (0..refs)
        .map(|w| b.time(|| run(w, &mut c)))
        .collect::<Result<_, _>>()?;
    let flops = 2.0 * (m * n * k) as f64;
    for (i, &v) in variants.iter().enumerate() {
        let mut ratios = Vec::new();
        if refs > nv {
            ratios.push(ratio(ms[i], ms[nv], "cuBLAS"));
        }
        let (name, flags) = match v {
            Variant::Wgmma => (
                format!(
                    "bf16 GEMM 8192³ → f32, tensor cores, wgmma, 128×{} tile, {} stages",
                    hopper::WG_BN,
                    hopper::WG_STAGES
                ),
                format!(
                    "Rust (sm_90a); wgmma.mma_async m64n{}k16 from 128-byte-swizzled shared tiles, 2 warpgroups, cp.async {}-stage pipeline, grouped block order",
                    hopper::WG_BN,
                    hopper::WG_STAGES
                ),
            ),
            Variant::MmaSync(wide) => (
                format!(
                    "bf16 GEMM 8192³ → f32, tensor cores, mma.sync, 128×{} tile, {} stages",
                    gemm_bn(wide),
                    gemm_stages(wide)
                ),
                format!(
                    "Rust; mma.sync m16n8k16 + ldmatrix, 128×{}×{} tiles, {} warps of 64×64, cp.async, grouped block order",
                    gemm_bn(wide),
                    gemm::GEMM_BK,
                    gemm_threads(wide) / 32
                ),
            ),
        };
        push(
            b,
            name,
            ms[i],
            flops,
            "GFLOP/s",
            ratios,
            Some(errs[i]),
            &flags,
        );
    }
    if refs > nv {
        push(
            b,
            "bf16 GEMM, cuBLAS (cublasGemmEx, COMPUTE_32F)".into(),
            ms[nv],
            flops,
            "GFLOP/s",
            vec![],
            Some(errs[nv]),
            "cuBLAS defaults",
        );
    }
    Ok(())
}
