//! What the algorithms' tests share: the devices they run on and their deterministic inputs.

#![allow(dead_code)] // each test file uses its own part

use gpukernel_runtime::{Context, Device};

/// The simulator, and CUDA device 0 with the `gpu` feature (whose absence is then a failure).
/// With the `gpu` feature and `GPUKERNEL_ALGORITHMS_GPU_ONLY` set, the GPU alone (a GPU
/// bundle whose simulator runs are CI's).
pub fn devices() -> Vec<(String, Context)> {
    let gpu_only =
        cfg!(feature = "gpu") && std::env::var_os("GPUKERNEL_ALGORITHMS_GPU_ONLY").is_some();
    let mut out = Vec::new();
    if !gpu_only {
        out.push((
            "simulator".to_string(),
            Device::simulator()
                .primary_context()
                .expect("simulator context"),
        ));
    }
    if cfg!(feature = "gpu") {
        let dev = Device::get(0).unwrap_or_else(|e| {
            panic!("the `gpu` feature is on but CUDA device 0 is not usable: {e}")
        });
        out.push((
            dev.name().unwrap_or_else(|_| "CUDA device 0".into()),
            dev.primary_context()
                .expect("primary context of CUDA device 0"),
        ));
    }
    out
}

/// `n` small deterministic integers in `-half..=half` (xorshift from `seed`), mapped by `f`.
pub fn values<T>(n: usize, seed: u64, half: i64, f: impl Fn(i64) -> T) -> Vec<T> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f((x % (2 * half as u64 + 1)) as i64 - half)
        })
        .collect()
}
