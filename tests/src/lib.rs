//! Shared helpers for gpukernel's integration tests.
//!
//! Kernel tests run on every device [`devices`] returns: always the simulator, and with the
//! crate's `gpu` feature also CUDA device 0, which must then exist (the test fails otherwise,
//! so a GPU run never passes without a GPU). Results are compared with a host reference and
//! between the devices.

pub mod sim_faults;

use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Device, Kernel, Module};

/// The simulator, and CUDA device 0 when the `gpu` feature is on.
///
/// # Panics
/// With the `gpu` feature on and no usable CUDA device: a GPU run must not pass without one.
pub fn devices() -> Vec<(String, Context)> {
    let mut out = Vec::new();
    let sim = Device::simulator();
    out.push((
        "simulator".to_string(),
        sim.primary_context().expect("simulator context"),
    ));
    if cfg!(feature = "gpu") {
        let dev = Device::get(0).unwrap_or_else(|e| {
            panic!("the `gpu` feature is on but CUDA device 0 is not usable: {e}")
        });
        let name = dev.name().unwrap_or_else(|_| "CUDA device 0".into());
        out.push((
            name,
            dev.primary_context()
                .expect("primary context of CUDA device 0"),
        ));
    }
    out
}

/// A small deterministic generator (xorshift64*), seeded per test so failures reproduce; the
/// seed comes from `GPUKERNEL_TEST_SEED` or the clock, and is printed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from `GPUKERNEL_TEST_SEED` or the clock; prints the seed.
    pub fn from_env(test: &str) -> Self {
        let seed = std::env::var("GPUKERNEL_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0x9e37_79b9_7f4a_7c15)
            });
        eprintln!("{test}: GPUKERNEL_TEST_SEED={seed}");
        Rng(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A float uniformly in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// `n` floats in [-1, 1).
    pub fn vec_f32(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

/// Asserts `got` is within `rel` (relative to max(|want|, 1)) of `want` everywhere.
#[track_caller]
pub fn assert_close<T: Into<f64> + Copy>(what: &str, got: &[T], want: &[T], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.into(), w.into());
        assert!(
            (g - w).abs() <= rel * w.abs().max(1.0),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

/// The example kernels that call no foreign function, linked (and cached) for `ctx`. The
/// kernels crate's PTX also holds kernels with `.extern .func` foreign calls, which only link
/// together with the code that defines them, so the rest are selected by name.
pub fn plain_kernels(ctx: &Context) -> Module {
    use ffi_examples_kernels::grid::*;
    use ffi_examples_kernels::numeric::*;
    use ffi_examples_kernels::reduce::*;
    use ffi_examples_kernels::*;
    let names = [
        empty_kernel::NAME,
        saxpy::NAME,
        affine::NAME,
        scalar_abi::NAME,
        scale_in_place::NAME,
        block_reduce_sum::NAME,
        block_reduce_sum_aligned::NAME,
        block_reduce_sum_dynamic::NAME,
        warp_reduce_sum::NAME,
        warp_reduce_sum_unchecked::NAME,
        atomic_sum::NAME,
        transpose_2d::NAME,
        transpose_view_2d::NAME,
        read_view_2d::NAME,
        row_sums_view_2d::NAME,
        add_2d_grid_stride::NAME,
        coordinates_3d::NAME,
        saxpy_grid_stride::NAME,
        f16_ops::NAME,
        bf16_ops::NAME,
        to_half::NAME,
        half2_ops::NAME,
        saxpy4::NAME,
        double_split::NAME,
        print_values::NAME,
    ];
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", &names)
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking the example kernels failed: {e}"))
}
