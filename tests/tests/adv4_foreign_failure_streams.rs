//! Foreign-call failures counted across two loads of one module and observed from two streams,
//! on every test device: every failure is counted once at the first observation that covers
//! it, the record re-arms, and the stream whose kernel failed never reads its results without
//! the error.

use ffi_examples_lto_kernels::{PTX, sqrt_checked};
use gpukernel_runtime::{Error, LaunchConfig};
use gpukernel_tests::devices;

fn negatives(n: usize, bad: &[usize]) -> Vec<f32> {
    (0..n)
        .map(|i| if bad.contains(&i) { -1.0 } else { i as f32 })
        .collect()
}

#[test]
fn failures_of_two_loads_of_one_module_are_counted_together_then_re_armed() {
    for (dev, ctx) in devices() {
        let (m1, m2) = (
            ctx.load_module(PTX.as_bytes()).unwrap(),
            ctx.load_module(PTX.as_bytes()).unwrap(),
        );
        let (k1, k2) = (
            m1.kernel(sqrt_checked).unwrap(),
            m2.kernel(sqrt_checked).unwrap(),
        );
        let s = ctx.new_stream().unwrap();
        let n = 256;
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let x1 = s.htod_copy(&negatives(n, &[3, 100])).unwrap();
        let x2 = s.htod_copy(&negatives(n, &[5, 6, 200])).unwrap();
        let mut out = s.alloc_zeros::<f32>(n).unwrap();
        s.launch(&k1, cfg, (&x1, &mut out)).unwrap();
        s.launch(&k2, cfg, (&x2, &mut out)).unwrap();
        match s.synchronize() {
            Err(Error::ForeignCallFailed { more, others, .. }) => {
                assert_eq!(more, 4, "{dev}: five failures in all: {others:?}")
            }
            other => panic!("{dev}: expected ForeignCallFailed, got {other:?}"),
        }
        s.synchronize()
            .unwrap_or_else(|e| panic!("{dev}: reported twice: {e}"));
        s.launch(&k2, cfg, (&x1, &mut out)).unwrap();
        match out.to_host_vec() {
            Err(Error::ForeignCallFailed { more, thread, .. }) => {
                // Either failing thread may claim the record first.
                assert!(
                    more == 1 && [3, 100].contains(&thread),
                    "{dev}: re-armed: {more} more, thread {thread}"
                )
            }
            other => panic!("{dev}: expected ForeignCallFailed after re-arming, got {other:?}"),
        }
    }
}

/// Stream `a` runs a failing launch, stream `b` a clean launch of the same module (a GPU's
/// record does not say which stream failed), and `b` is observed first: whatever `b`'s check
/// reports, `a`'s results must not then be read without the error.
#[test]
fn a_failure_reported_on_another_stream_first_is_still_reported_on_its_own() {
    for (dev, ctx) in devices() {
        let m = ctx.load_module(PTX.as_bytes()).unwrap();
        let k = m.kernel(sqrt_checked).unwrap();
        let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let n = 256;
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let bad = a.htod_copy(&negatives(n, &[7])).unwrap();
        let good = b.htod_copy(&negatives(n, &[])).unwrap();
        let mut out_a = a.alloc_zeros::<f32>(n).unwrap();
        let mut out_b = b.alloc_zeros::<f32>(n).unwrap();
        a.launch(&k, cfg, (&bad, &mut out_a)).unwrap();
        b.launch(&k, cfg, (&good, &mut out_b)).unwrap();
        // Let `a`'s kernel finish before `b` is observed, without observing `a`.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let on_b = b.synchronize();
        let on_a = out_a.to_host_vec();
        println!(
            "PROBE failure_attribution {dev}: b: {:?}; a: {:?}",
            on_b.as_ref().err().map(|e| e.to_string()),
            on_a.as_ref().map(|v| v[7]).map_err(|e| e.to_string())
        );
        assert!(
            on_a.is_err(),
            "{dev}: stream a read the results of its failed launch without the error (b's check \
             reported: {on_b:?})"
        );
    }
}
