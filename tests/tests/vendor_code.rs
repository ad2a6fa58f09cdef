//! NVIDIA's own device code called from Rust kernels through `declare_device!` wrappers of
//! ours (`ffi-examples/vendor-kernels/cuda/vendor.cu`): CUB's block reduce and scan with the
//! temporary storage in the Rust kernel's shared memory, libcu++'s `cuda::std::complex`, and
//! cuRAND's device API (Philox4x32-10, XORWOW) against cuRAND's host generator.
//!
//! The simulator tests run everywhere (the wrappers' portable branches; Philox against the
//! published known-answer vector). The GPU tests are compiled as ignored unless the `gpu`
//! feature is on (`cargo test -p gpukernel-tests --features gpu --test vendor_code`); they
//! link `vendor.cu` with NVRTC, which finds CUB, libcu++ and cuRAND's headers in the CUDA
//! toolkit at run time, and load cuRAND's host library (`libcurand.so`) for the reference.

use ffi_examples_vendor_kernels::{
    BLOCK, Complex32, NOT_SIMULATED, PTX, VENDOR_CU, complex_exp_mul, cub_block_prefix,
    cub_block_totals, curand_philox, curand_xorwow, interleaved,
};
use gpukernel_runtime::link::{CachePolicy, Linker};
use gpukernel_runtime::{Context, Device, Error, Kernel, LaunchConfig, Module};
use gpukernel_tests::{Rng, assert_close};

/// Philox4x32-10 (Salmon et al., SC'11), written independently of `vendor.cu`: the block for
/// counter `ctr` and key `key`.
fn philox_block(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for _ in 0..10 {
        let p0 = 0xD251_1F53u64 * u64::from(ctr[0]);
        let p1 = 0xCD9E_8D57u64 * u64::from(ctr[2]);
        ctr = [
            (p1 >> 32) as u32 ^ ctr[1] ^ key[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ ctr[3] ^ key[1],
            p0 as u32,
        ];
        key = [
            key[0].wrapping_add(0x9E37_79B9),
            key[1].wrapping_add(0xBB67_AE85),
        ];
    }
    ctr
}

/// cuRAND's Philox output at `offset` of `subsequence` for `seed` (its device API's mapping:
/// key = seed, counter = (offset / 4, subsequence), word offset % 4).
fn philox(seed: u64, subsequence: u64, offset: u64) -> u32 {
    let block = offset / 4;
    let ctr = [
        block as u32,
        (block >> 32) as u32,
        subsequence as u32,
        (subsequence >> 32) as u32,
    ];
    philox_block(ctr, [seed as u32, (seed >> 32) as u32])[(offset % 4) as usize]
}

fn simulator() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    (ctx, module)
}

/// The block sums and exclusive prefix sums of `x` (blocks of `BLOCK`), on the host.
fn block_reference(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut totals = Vec::with_capacity(x.len());
    let mut prefix = Vec::with_capacity(x.len());
    for chunk in x.chunks(BLOCK as usize) {
        let sum: f64 = chunk.iter().map(|&v| f64::from(v)).sum();
        let mut run = 0.0f64;
        for &v in chunk {
            prefix.push(run as f32);
            run += f64::from(v);
            totals.push(sum as f32);
        }
    }
    (totals, prefix)
}

/// Runs the CUB kernels on `module` and returns (totals, prefix).
fn run_block_kernels(ctx: &Context, module: &Module, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = x.len();
    let cfg = LaunchConfig::new((n as u32).div_ceil(BLOCK), BLOCK);
    let dx = ctx.htod_copy(x).unwrap();
    let mut totals = ctx.alloc_zeros::<f32>(n).unwrap();
    let mut prefix = ctx.alloc_zeros::<f32>(n).unwrap();
    let stream = ctx.default_stream();
    stream
        .launch(
            &module.kernel(cub_block_totals).unwrap(),
            cfg,
            (&dx, &mut totals),
        )
        .unwrap();
    stream
        .launch(
            &module.kernel(cub_block_prefix).unwrap(),
            cfg,
            (&dx, &mut prefix),
        )
        .unwrap();
    (totals.to_host_vec().unwrap(), prefix.to_host_vec().unwrap())
}

/// `exp(a) * b` on the host.
fn exp_mul(a: Complex32, b: Complex32) -> Complex32 {
    let (ar, ai, br, bi) = (
        f64::from(a.re),
        f64::from(a.im),
        f64::from(b.re),
        f64::from(b.im),
    );
    let (er, ei) = (ar.exp() * ai.cos(), ar.exp() * ai.sin());
    Complex32 {
        re: (er * br - ei * bi) as f32,
        im: (er * bi + ei * br) as f32,
    }
}

fn run_complex(ctx: &Context, module: &Module, a: &[Complex32], b: &[Complex32]) -> Vec<Complex32> {
    let (da, db) = (ctx.htod_copy(a).unwrap(), ctx.htod_copy(b).unwrap());
    let mut out = ctx.alloc_zeros::<Complex32>(a.len()).unwrap();
    ctx.default_stream()
        .launch(
            &module.kernel(complex_exp_mul).unwrap(),
            LaunchConfig::for_elements(a.len()).unwrap(),
            (&da, &db, &mut out),
        )
        .unwrap();
    out.to_host_vec().unwrap()
}

fn complex_inputs(rng: &mut Rng, n: usize) -> (Vec<Complex32>, Vec<Complex32>) {
    let mut c = || Complex32 {
        re: rng.f32() * 2.0,
        im: rng.f32() * 3.0,
    };
    let a = (0..n).map(|_| c()).collect();
    let b = (0..n).map(|_| c()).collect();
    (a, b)
}

fn parts(v: &[Complex32]) -> Vec<f32> {
    v.iter().flat_map(|c| [c.re, c.im]).collect()
}

/// cuRAND's two generators of the device API.
#[derive(Debug, Clone, Copy)]
enum Generator {
    Philox,
    Xorwow,
}

/// Runs `generator`'s kernel for `n` outputs.
fn run_rng(
    ctx: &Context,
    module: &Module,
    generator: Generator,
    seed: u64,
    subsequences: u32,
    run: u32,
    n: usize,
) -> Result<Vec<u32>, Error> {
    let mut out = ctx.alloc_zeros::<u32>(n)?;
    let cfg = LaunchConfig::for_elements(n)?;
    let stream = ctx.default_stream();
    let args = (seed, subsequences, run, &mut out);
    match generator {
        Generator::Philox => stream.launch(&module.kernel(curand_philox)?, cfg, args)?,
        Generator::Xorwow => stream.launch(&module.kernel(curand_xorwow)?, cfg, args)?,
    };
    out.to_host_vec()
}

#[test]
fn cub_block_reduce_and_scan_twins_run_in_the_simulator() {
    let mut rng = Rng::from_env("vendor_cub_sim");
    let x = rng.vec_f32(BLOCK as usize * 5 + 37);
    let (ctx, module) = simulator();
    let (totals, prefix) = run_block_kernels(&ctx, &module, &x);
    let (want_totals, want_prefix) = block_reference(&x);
    assert_close("block totals (simulator)", &totals, &want_totals, 1e-4);
    assert_close("block prefix (simulator)", &prefix, &want_prefix, 1e-4);
}

#[test]
fn libcu_complex_runs_in_the_simulator() {
    let mut rng = Rng::from_env("vendor_complex_sim");
    let (a, b) = complex_inputs(&mut rng, 1000);
    let (ctx, module) = simulator();
    let got = run_complex(&ctx, &module, &a, &b);
    let want: Vec<Complex32> = a.iter().zip(&b).map(|(&a, &b)| exp_mul(a, b)).collect();
    assert_close("exp(a) * b (simulator)", &parts(&got), &parts(&want), 1e-5);
}

#[test]
fn philox_in_the_simulator_matches_the_known_answer_and_curands_mapping() {
    let (ctx, module) = simulator();
    // Random123's known-answer test: counter 0, key 0.
    let kat = [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8];
    assert_eq!(philox_block([0; 4], [0; 2]), kat);
    let got = run_rng(&ctx, &module, Generator::Philox, 0, 1, 1, 8).unwrap();
    assert_eq!(got[..4], kat, "offsets 0..4 of subsequence 0, seed 0");
    assert_eq!(got[4..], philox_block([1, 0, 0, 0], [0; 2]));
    // The host generator's documented layouts: Philox's output 4·65536 is subsequence 0's
    // offset 4 (the second round), output 5 subsequence 1's offset 1; XORWOW's output 4097 is
    // subsequence 1's offset 1.
    let at = |n, l: HostLayout| interleaved(n, l.subsequences, l.run);
    assert_eq!(at(4 * 65536, PHILOX_LEGACY), (0, 4));
    assert_eq!(at(5, PHILOX_LEGACY), (1, 1));
    assert_eq!(at(4 * 65536 * 2 + 4 * 3 + 2, PHILOX_LEGACY), (3, 10));
    assert_eq!(at(4097, XORWOW_LEGACY), (1, 1));
    // Other seeds, subsequences and offsets, interleaved as a host generator would.
    for (seed, subsequences, run) in [(0x1234_5678_9abc_def0u64, 7, 1), (42, 5, 4)] {
        let got = run_rng(
            &ctx,
            &module,
            Generator::Philox,
            seed,
            subsequences,
            run,
            300,
        )
        .unwrap();
        for (n, &v) in got.iter().enumerate() {
            let (s, p) = interleaved(n as u64, subsequences, run);
            assert_eq!(
                v,
                philox(seed, s, p),
                "seed {seed:#x}, output {n} = ({s}, {p})"
            );
        }
    }
}

#[test]
fn xorwow_says_it_needs_the_gpu_in_the_simulator() {
    let (ctx, module) = simulator();
    match run_rng(&ctx, &module, Generator::Xorwow, 1, 1, 1, 4) {
        Err(Error::ForeignCallFailed {
            function, status, ..
        }) => {
            assert_eq!(function, "vendor_xorwow");
            assert_eq!(status, NOT_SIMULATED);
        }
        other => panic!("expected vendor_xorwow's status {NOT_SIMULATED}, got {other:?}"),
    }
}

/// The CUB and libcu++ wrappers compile with NVRTC against the CUDA headers' `include/cccl`
/// and link without a GPU (NVRTC and nvJitLink, as in `link_offline.rs`; `cargo xtask
/// doctor` installs them). cuRAND's headers are not in the compiler wheels: its wrappers are
/// linked on the GPU only.
#[test]
fn cub_and_libcu_wrappers_compile_with_nvrtc_and_link_offline() {
    let mut linker = Linker::for_arch("sm_90").unwrap_or_else(|e| panic!("{e}"));
    linker.cache(CachePolicy::Disabled);
    let kernels = [
        cub_block_totals::NAME,
        cub_block_prefix::NAME,
        complex_exp_mul::NAME,
    ];
    let image = linker
        .add_ptx_kernels(PTX, "kernels.ptx", &kernels)
        .add_cuda_source(VENDOR_CU, "vendor.cu")
        .link()
        .unwrap_or_else(|e| panic!("{e}"));
    let entries = image.entry_points().unwrap_or_else(|e| panic!("{e}"));
    for k in kernels {
        assert!(entries.iter().any(|e| e == k), "{k} in {entries:?}");
    }
}

// ---- on the GPU ------------------------------------------------------------------------

/// CUDA device 0's context; fails (never skips) without a GPU.
fn gpu() -> Context {
    match Device::get(0).and_then(|d| d.primary_context()) {
        Ok(ctx) => ctx,
        Err(e) => panic!("this test needs a CUDA GPU (feature `gpu` is on): {e}"),
    }
}

/// The vendor kernels linked with `vendor.cu` (NVRTC, the toolkit's headers).
fn gpu_module(ctx: &Context) -> Module {
    let kernels = [
        cub_block_totals::NAME,
        cub_block_prefix::NAME,
        complex_exp_mul::NAME,
        curand_philox::NAME,
        curand_xorwow::NAME,
    ];
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", &kernels)
                .add_cuda_source(VENDOR_CU, "vendor.cu")
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking vendor.cu (CUB, libcu++, cuRAND headers) failed: {e}"))
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn cub_block_reduce_and_scan_from_a_rust_kernel_on_the_gpu() {
    let mut rng = Rng::from_env("vendor_cub_gpu");
    let x = rng.vec_f32(BLOCK as usize * 300 + 77);
    let ctx = gpu();
    let (totals, prefix) = run_block_kernels(&ctx, &gpu_module(&ctx), &x);
    let (want_totals, want_prefix) = block_reference(&x);
    assert_close("CUB block totals", &totals, &want_totals, 1e-4);
    assert_close("CUB block prefix", &prefix, &want_prefix, 1e-4);
    // Every thread of a block holds the same total (CUB's aggregate, broadcast).
    for (b, chunk) in totals.chunks(BLOCK as usize).enumerate() {
        assert!(chunk.iter().all(|&t| t == chunk[0]), "block {b}: {chunk:?}");
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn libcu_complex_on_the_gpu_matches_the_host_and_the_simulator() {
    let mut rng = Rng::from_env("vendor_complex_gpu");
    let (a, b) = complex_inputs(&mut rng, 10_000);
    let ctx = gpu();
    let got = run_complex(&ctx, &gpu_module(&ctx), &a, &b);
    let want: Vec<Complex32> = a.iter().zip(&b).map(|(&a, &b)| exp_mul(a, b)).collect();
    assert_close("exp(a) * b (GPU)", &parts(&got), &parts(&want), 1e-5);
    let (sim, module) = simulator();
    let on_sim = run_complex(&sim, &module, &a, &b);
    assert_close(
        "exp(a) * b (GPU vs simulator)",
        &parts(&got),
        &parts(&on_sim),
        1e-5,
    );
}

/// cuRAND's host library, loaded at run time (`CUDA_HOME`, `/usr/local/cuda`, then the
/// loader's search path).
struct Curand {
    lib: libloading::Library,
}

type CurandGenerator = *mut std::ffi::c_void;
/// `CURAND_RNG_PSEUDO_XORWOW`, `CURAND_RNG_PSEUDO_PHILOX4_32_10` (curand.h).
const XORWOW: i32 = 101;
const PHILOX: i32 = 161;
/// `CURAND_ORDERING_PSEUDO_LEGACY`.
const LEGACY: i32 = 103;

impl Curand {
    fn load() -> Curand {
        let mut tried = Vec::new();
        let mut candidates: Vec<String> = Vec::new();
        for root in [
            std::env::var("CUDA_HOME").ok(),
            Some("/usr/local/cuda".into()),
        ]
        .into_iter()
        .flatten()
        {
            candidates.push(format!("{root}/lib64/libcurand.so"));
        }
        candidates.extend(["libcurand.so.10".to_owned(), "libcurand.so".to_owned()]);
        for c in candidates {
            // SAFETY: loading cuRAND runs its initialisers, which have no preconditions.
            match unsafe { libloading::Library::new(&c) } {
                Ok(lib) => return Curand { lib },
                Err(e) => tried.push(format!("{c}: {e}")),
            }
        }
        panic!(
            "cuRAND's host library (the reference) was not found:\n{}",
            tried.join("\n")
        )
    }

    /// `n` outputs of the host generator `rng` for `seed`, in the legacy ordering.
    fn generate(&self, rng: i32, seed: u64, n: usize) -> Vec<u32> {
        type Create = unsafe extern "C" fn(*mut CurandGenerator, i32) -> i32;
        type Seed = unsafe extern "C" fn(CurandGenerator, u64) -> i32;
        type Order = unsafe extern "C" fn(CurandGenerator, i32) -> i32;
        type Generate = unsafe extern "C" fn(CurandGenerator, *mut u32, usize) -> i32;
        type Destroy = unsafe extern "C" fn(CurandGenerator) -> i32;
        // SAFETY: the symbols have these C signatures in curand.h; the generator is created
        // before use and destroyed once; `out` holds `n` values.
        unsafe {
            let sym = |name: &[u8]| {
                self.lib
                    .get::<*const ()>(name)
                    .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(name)))
            };
            let create: Create = std::mem::transmute(*sym(b"curandCreateGeneratorHost\0"));
            let set_seed: Seed = std::mem::transmute(*sym(b"curandSetPseudoRandomGeneratorSeed\0"));
            let order: Order = std::mem::transmute(*sym(b"curandSetGeneratorOrdering\0"));
            let generate: Generate = std::mem::transmute(*sym(b"curandGenerate\0"));
            let destroy: Destroy = std::mem::transmute(*sym(b"curandDestroyGenerator\0"));
            let mut g: CurandGenerator = std::ptr::null_mut();
            assert_eq!(create(&mut g, rng), 0, "curandCreateGeneratorHost({rng})");
            assert_eq!(set_seed(g, seed), 0, "curandSetPseudoRandomGeneratorSeed");
            assert_eq!(order(g, LEGACY), 0, "curandSetGeneratorOrdering(LEGACY)");
            let mut out = vec![0u32; n];
            let status = generate(g, out.as_mut_ptr(), n);
            destroy(g);
            assert_eq!(status, 0, "curandGenerate");
            out
        }
    }
}

/// How cuRAND's host generator lays out its output in the legacy ordering (cuRAND's "Host API
/// Overview", generator types): it goes round `subsequences` streams of the device API,
/// `run` consecutive values from each (`interleaved`). XORWOW: output n is position
/// (n mod 4096)·2^67 + ⌊n / 4096⌋ of the sequence, i.e. offset ⌊n / 4096⌋ of subsequence
/// n mod 4096. Philox4x32-10: 65536 subsequences, each giving the four words of one counter
/// block before the next subsequence's four.
#[derive(Debug, Clone, Copy)]
struct HostLayout {
    subsequences: u32,
    run: u32,
}

const XORWOW_LEGACY: HostLayout = HostLayout {
    subsequences: 4096,
    run: 1,
};
const PHILOX_LEGACY: HostLayout = HostLayout {
    subsequences: 65536,
    run: 4,
};

/// Where subsequence 0's value at offset `run` appears in `host`, if anywhere: what a layout
/// other than the documented one would show (for the failure message).
fn observed_layout(host: &[u32], first: &[u32], run: usize) -> String {
    match host.iter().skip(1).position(|&v| v == first[run]) {
        Some(i) => format!(
            "subsequence 0's value at offset {run} is the host generator's output {}",
            i + 1
        ),
        None => format!(
            "subsequence 0's value at offset {run} is not among the host generator's first {} \
             outputs",
            host.len()
        ),
    }
}

/// Checks the device API's outputs against the host generator's, output for output, through
/// the documented `layout`. `rounds` times round every subsequence, so that each
/// subsequence's later offsets (the wrap-around of the interleaving) are compared too.
fn check_against_host_generator(name: &str, rng: i32, generator: Generator, layout: HostLayout) {
    let HostLayout { subsequences, run } = layout;
    let rounds = 3;
    let n = subsequences as usize * run as usize * rounds;
    let seed = 0x5eed_1234_abcd_0042u64;
    let host = Curand::load().generate(rng, seed, n);
    let ctx = gpu();
    let module = gpu_module(&ctx);
    let device = run_rng(&ctx, &module, generator, seed, subsequences, run, n).unwrap();
    if let Some(i) = (0..n).find(|&i| device[i] != host[i]) {
        // Subsequence 0's first values, to say what the host generator did instead.
        let first = run_rng(&ctx, &module, generator, seed, 1, 1, 8).unwrap();
        panic!(
            "{name}: output {i} differs: device API {:#010x} at (subsequence, offset) = {:?}, \
             host generator {:#010x} (documented legacy layout: {subsequences} subsequences, \
             runs of {run}); {}",
            device[i],
            interleaved(i as u64, subsequences, run),
            host[i],
            observed_layout(&host, &first, run as usize)
        );
    }
    eprintln!(
        "{name}: {n} outputs match the host generator ({subsequences} subsequences, runs of \
         {run}, {rounds} rounds)"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn curand_philox_device_api_matches_the_host_generator_and_the_simulator() {
    check_against_host_generator("Philox4x32-10", PHILOX, Generator::Philox, PHILOX_LEGACY);
    // And the simulator's Philox, bit for bit.
    let ctx = gpu();
    let module = gpu_module(&ctx);
    let (sim, sim_module) = simulator();
    for (seed, subsequences, run) in [(7u64, 4096u32, 1u32), (u64::MAX, 33, 4)] {
        let gpu_out = run_rng(
            &ctx,
            &module,
            Generator::Philox,
            seed,
            subsequences,
            run,
            10_000,
        )
        .unwrap();
        let sim_out = run_rng(
            &sim,
            &sim_module,
            Generator::Philox,
            seed,
            subsequences,
            run,
            10_000,
        )
        .unwrap();
        assert_eq!(gpu_out, sim_out, "seed {seed:#x}");
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn curand_xorwow_device_api_matches_the_host_generator() {
    check_against_host_generator("XORWOW", XORWOW, Generator::Xorwow, XORWOW_LEGACY);
}
