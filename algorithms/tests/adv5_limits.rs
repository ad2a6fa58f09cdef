//! Arguments at their limits that must be refused with a named error before anything runs:
//! rows of no elements over a non-empty input, and histograms whose `u32` counters or bin
//! indices cannot hold the input's counts.
//!
//! The histogram cases need buffers of 2^32 + 1 four-byte elements (16 GiB): on the simulator
//! an allocation of 256-byte alignment is zeroed page by page, so they run on the GPU (feature
//! `gpu`), where they fail before the fix by counting (a wrapped bin), and are ignored
//! otherwise.

use gpukernel_algorithms::{Algorithms, Sum};
use gpukernel_runtime::{Device, Error};

fn setup() -> (gpukernel_runtime::Context, Algorithms) {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    (ctx, algs)
}

/// CUDA device 0 with the `gpu` feature, else the simulator.
fn big_setup() -> (gpukernel_runtime::Context, Algorithms) {
    let ctx = if cfg!(feature = "gpu") {
        Device::get(0)
            .and_then(|d| d.primary_context())
            .expect("CUDA device 0")
    } else {
        Device::simulator()
            .primary_context()
            .expect("simulator context")
    };
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    (ctx, algs)
}

/// `reduce_rows` promises `LengthMismatch` unless `input.len() == out.len() × row_len`: rows of
/// no elements cannot tile five elements, so the call must not report every row empty.
#[test]
fn rows_of_no_elements_over_a_non_empty_input_are_refused() {
    let (ctx, algs) = setup();
    let stream = ctx.default_stream();
    let x = stream.htod_copy(&[1u32, 2, 3, 4, 5]).expect("copy in");
    let mut out = stream.htod_copy(&[7u32, 7, 7]).expect("copy in");
    match algs.reduce_rows(&stream, &x, 0, Sum, &mut out) {
        Err(Error::LengthMismatch {
            operation,
            destination,
            source_len,
        }) => {
            assert!(operation.contains("reduce_rows"), "{operation}");
            assert_eq!((destination, source_len), (0, 5));
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    assert_eq!(out.to_host_vec().expect("copy out"), [7, 7, 7]);
    // Rows of no elements over no elements are fine: every row is empty (the identity).
    let empty = stream.alloc_zeros::<u32>(0).expect("alloc");
    algs.reduce_rows(&stream, &empty, 0, Sum, &mut out)
        .expect("empty rows");
    assert_eq!(out.to_host_vec().expect("copy out"), [0, 0, 0]);
}

/// Runs `f` on another thread and gives its result, or `None` when it is still running after
/// `secs` seconds (a refusal takes microseconds; running the launch takes hours).
fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
}

/// 2^32 + 1 samples in one bin would wrap its `u32` counter to 1: `histogram_even` must refuse
/// them as `histogram256` does, never count them.
#[test]
#[cfg_attr(
    not(feature = "gpu"),
    ignore = "16 GiB of memory (the simulator zeroes its allocations): run with the gpu feature"
)]
fn more_samples_than_a_u32_bin_counts_are_refused() {
    let r = within(60, || {
        let (ctx, algs) = big_setup();
        let stream = ctx.default_stream();
        let n = (1usize << 32) + 1;
        // SAFETY: never read: the call must refuse the input before it launches anything
        // (the simulator's memory is the host's, mapped lazily: no 16 GiB are touched).
        let x = unsafe { stream.alloc::<u32>(n) }.expect("alloc");
        let mut bins = stream.alloc_zeros::<u32>(4).expect("alloc");
        algs.histogram_even(&stream, &x, 0u32, u32::MAX, &mut bins)
            .map(|()| bins.to_host_vec().expect("copy out"))
    });
    match r {
        Some(Err(Error::InvalidLaunchConfig {
            kernel,
            dimension,
            value,
            max,
            ..
        })) => {
            assert_eq!(kernel, "histogram_even_u32");
            assert!(dimension.contains("u32"), "{dimension}");
            assert_eq!((value, max), ((1u64 << 32) + 1, u32::MAX as u64));
        }
        Some(other) => panic!("expected InvalidLaunchConfig, got {other:?}"),
        None => panic!("histogram_even launched over 2^32 + 1 samples instead of refusing them"),
    }
}

/// More bins than a `u32` bin index reaches: refused on the host (the kernel would stop at
/// its entry check, after the host had zeroed 16 GiB of bins).
#[test]
#[cfg_attr(
    not(feature = "gpu"),
    ignore = "16 GiB of memory (the simulator zeroes its allocations): run with the gpu feature"
)]
fn more_bins_than_a_u32_index_reaches_are_refused() {
    let r = within(60, || {
        let (ctx, algs) = big_setup();
        let stream = ctx.default_stream();
        let x = stream.htod_copy(&[1.0f32, 2.0]).expect("copy in");
        let n = (1usize << 32) + 1;
        // SAFETY: never read or written: the call must refuse the bins first (the
        // simulator's memory is mapped lazily).
        let mut bins = unsafe { stream.alloc::<u32>(n) }.expect("alloc");
        algs.histogram_even(&stream, &x, 0.0f32, 4.0, &mut bins)
    });
    match r {
        Some(Err(Error::InvalidArgument {
            operation,
            argument,
            ..
        })) => {
            assert_eq!(operation, "Algorithms::histogram_even");
            assert_eq!(argument, "bins");
        }
        Some(other) => panic!("expected InvalidArgument, got {other:?}"),
        None => panic!("histogram_even zeroed 2^32 + 1 bins instead of refusing them"),
    }
}

/// The histogram kernel launched directly (a safe kernel) over more samples than a bin counts:
/// it stops at its entry check (an error at the launch's synchronization), never wraps a bin.
#[test]
#[cfg_attr(
    not(feature = "gpu"),
    ignore = "16 GiB of memory (the simulator zeroes its allocations): run with the gpu feature"
)]
fn the_histogram_kernel_refuses_more_samples_than_a_bin_counts() {
    // On a GPU the kernel's stop (a trap) leaves the context unusable for the rest of the
    // process: the test runs alone, in a child process.
    if cfg!(feature = "gpu") && std::env::var_os("GPUKERNEL_ADV5_CHILD").is_none() {
        let name = "the_histogram_kernel_refuses_more_samples_than_a_bin_counts";
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env("GPUKERNEL_ADV5_CHILD", "1")
            .output()
            .expect("run the child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{name} failed in its child process");
        return;
    }
    let r = within(60, || {
        let (ctx, _) = big_setup();
        let stream = ctx.default_stream();
        let module = ctx
            .load_module(gpukernel_algorithms_kernels::PTX.as_bytes())
            .expect("load");
        let kernel = module
            .kernel(gpukernel_algorithms_kernels::histogram_even_u32)
            .expect("lookup");
        let n = (1usize << 32) + 1;
        // SAFETY: never read: the kernel stops at its entry check (lazily mapped memory).
        let x = unsafe { stream.alloc::<u32>(n) }.expect("alloc");
        let mut bins = stream.alloc_zeros::<u32>(4).expect("alloc");
        stream
            .launch(
                &kernel,
                gpukernel_runtime::LaunchConfig::new(1, gpukernel_algorithms_kernels::BLOCK),
                (&x, 0u32, u32::MAX, &mut bins),
            )
            .and_then(|()| bins.to_host_vec())
    });
    match r {
        // The simulator names the kernel; a GPU reports the trap.
        Some(Err(e)) => println!("refused: {e}"),
        Some(Ok(b)) => panic!("2^32 + 1 samples counted as {b:?}"),
        None => panic!("the kernel ran over 2^32 + 1 samples instead of stopping at its entry"),
    }
}
