//! `histogram256` at the limit of its `u32` counters: 2^32 + 1 equal bytes cannot be counted
//! in a `u32` bin; the call must refuse them with a named error, never wrap to a small count.

use gpukernel_algorithms::Algorithms;
use gpukernel_runtime::Device;

#[test]
#[cfg_attr(
    not(feature = "gpu"),
    ignore = "needs a GPU (feature gpu): 4 GiB of input"
)]
fn more_equal_bytes_than_a_u32_bin_counts_is_refused_not_wrapped() {
    // The direct launch below traps, which leaves the CUDA context unusable for the rest of
    // the process: the test runs alone, in a child process.
    if std::env::var_os("GPUKERNEL_ADV4_CHILD").is_none() {
        let name = "more_equal_bytes_than_a_u32_bin_counts_is_refused_not_wrapped";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env("GPUKERNEL_ADV4_CHILD", "1")
            .output()
            .unwrap();
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{name} failed in its child process");
        return;
    }
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    let algs = Algorithms::new(&ctx).unwrap();
    let stream = ctx.default_stream();
    let n = (1usize << 32) + 1;
    let data = stream.alloc_zeros::<u8>(n).unwrap();
    let mut bins = stream.alloc_zeros::<u32>(256).unwrap();
    match algs.histogram256(&stream, &data, &mut bins) {
        Err(e) => println!("PROBE histogram_u32_limit OK refused: {e}"),
        Ok(()) => {
            let b = bins.to_host_vec().unwrap();
            panic!(
                "PROBE histogram_u32_limit HOLE: {n} zero bytes counted as bins[0] = {} \
                 without an error",
                b[0]
            );
        }
    }
    // The kernel launched directly (it is a safe kernel): a trap, reported at the next
    // synchronization (the context is unusable afterwards: the last step).
    let module = ctx
        .load_module(gpukernel_algorithms_kernels::PTX.as_bytes())
        .unwrap();
    let kernel = module
        .kernel(gpukernel_algorithms_kernels::histogram256_u8)
        .unwrap();
    let launched = stream.launch(
        &kernel,
        gpukernel_runtime::LaunchConfig::new(264, gpukernel_algorithms_kernels::BLOCK),
        (&data, &mut bins),
    );
    match launched.and_then(|()| bins.to_host_vec()) {
        Err(e) => println!("PROBE histogram_kernel_u32_limit OK refused: {e}"),
        Ok(b) => panic!(
            "PROBE histogram_kernel_u32_limit HOLE: {n} zero bytes counted as bins[0] = {}",
            b[0]
        ),
    }
}

#[test]
fn the_simulator_refuses_more_bytes_than_a_bin_counts() {
    use gpukernel_runtime::Error;
    let ctx = Device::simulator().primary_context().unwrap();
    let algs = Algorithms::new(&ctx).unwrap();
    let stream = ctx.default_stream();
    let n = (1usize << 32) + 1;
    // SAFETY: never read: the call refuses the input before it launches anything (the
    // simulator's memory is the host's, mapped lazily, so this costs no 4 GiB).
    let data = unsafe { stream.alloc::<u8>(n) }.unwrap();
    let mut bins = stream.alloc_zeros::<u32>(256).unwrap();
    match algs.histogram256(&stream, &data, &mut bins) {
        Err(Error::InvalidLaunchConfig {
            kernel, value, max, ..
        }) => {
            assert_eq!(kernel, "histogram256_u8");
            assert_eq!((value, max), (n as u64, u32::MAX as u64));
        }
        other => panic!("expected InvalidLaunchConfig, got {other:?}"),
    }
}
