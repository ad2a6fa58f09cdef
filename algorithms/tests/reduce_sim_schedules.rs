//! The one-launch reduce under both of the simulator's schedules: blocks strictly in
//! sequence (one worker thread: the last block to take a ticket is the last block index) and
//! many blocks at once (16 workers: any block may finish last). The worker count is read once
//! per process, so this test's own `main` (see Cargo.toml) runs itself as a child under each,
//! with `REDUCE_SIM_SCHEDULE_CHILD` set.

use gpukernel_algorithms::{Algorithms, Max, Min, Sum, UserKernels};
use gpukernel_algorithms_example_op::{FirstLastAlgorithms, PTX};
use gpukernel_runtime::Device;

const CHILD: &str = "REDUCE_SIM_SCHEDULE_CHILD";

/// What each child checks: sums, minima and maxima of several types and sizes (back to back
/// on one stream), a grid of many blocks, and the in-order reduce of a non-commutative
/// operator.
fn child() {
    let ctx = Device::simulator().primary_context().expect("simulator");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.new_stream().expect("stream");
    let grid = algs.reduce_partials::<f32>(usize::MAX);
    for n in [0usize, 1, 5, 4096 + 3, grid * 2 * 4096 + 7] {
        let xs: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 2003 - 1000).collect();
        let xf: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let (di, df) = (
            stream.htod_copy(&xs).expect("copy"),
            stream.htod_copy(&xf).expect("copy"),
        );
        let got = (
            algs.reduce_to_host(&stream, &di, Sum).expect("sum"),
            algs.reduce_to_host(&stream, &di, Min).expect("min"),
            algs.reduce_to_host(&stream, &df, Max).expect("max"),
            algs.reduce_to_host(&stream, &df, Sum).expect("sum"),
        );
        let want = (
            xs.iter().sum::<i64>(),
            xs.iter().copied().min().unwrap_or(i64::MAX),
            xf.iter().copied().fold(f32::NEG_INFINITY, f32::max),
            xf.iter().sum::<f32>(),
        );
        assert_eq!(got, want, "n = {n}");
    }
    let x = stream.htod_copy(&vec![1.0f32; 3000]).expect("copy");
    let mut out = stream.alloc_zeros::<f32>(1).expect("alloc");
    algs.sum_f32_grid(&stream, &x, &mut out, 700)
        .expect("700 blocks");
    assert_eq!(out.to_host_vec().expect("out"), [3000.0]);
    // (first, last) of a sequence: any block combined out of order changes the result.
    let module = ctx.load_module(PTX.as_bytes()).expect("load");
    let fl = UserKernels::<FirstLastAlgorithms>::load(&module).expect("kernels");
    let n = 200_001u64;
    let xs: Vec<u64> = (1..=n).map(|i| i << 32 | i).collect();
    let x = stream.htod_copy(&xs).expect("copy");
    let mut out = stream.alloc_zeros::<u64>(1).expect("alloc");
    algs.reduce_user(&stream, &fl, &x, &mut out)
        .expect("first-last");
    assert_eq!(out.to_host_vec().expect("out"), [n << 32 | 1]);
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        println!("reduce_sim_schedules child: ok");
        return;
    }
    let me = std::env::current_exe().expect("the test's own path");
    for workers in ["1", "16"] {
        let out = std::process::Command::new(&me)
            .env(CHILD, "1")
            .env("GPUKERNEL_SIM_THREADS", workers)
            .output()
            .expect("run the test as a child");
        assert!(
            out.status.success(),
            "{workers} simulator worker(s): {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{workers} simulator worker(s): ok");
    }
}
