//! No foreign-call failure is dropped: the device counts every failing call (a module's record
//! keeps the first in full and the count), and an observation reports the first failure of the
//! work it covers and how many more happened, whichever launches, streams or modules they were
//! in. Before, a GPU module's record kept its first failure until a check read it, and later
//! failures of its kernels were lost; a check reported one failure and left the others for
//! later checks.
//!
//! Every test device: the simulator here, and with the `gpu` feature the GPU as well.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::divide_checked;
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, DeviceBuffer, Error, Kernel, LaunchConfig, Module, Result};
use gpukernel_tests::devices;

const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");

static TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());
fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURNS.lock().unwrap_or_else(|p| p.into_inner())
}

const N: usize = 256;

fn link(ctx: &Context) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", &[divide_checked::NAME])
                .add_cuda_source(FUNCTIONS_CU, "functions.cu")
                .header("gpukernel_abi.h", ABI_H)
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking with functions.cu failed: {e}"))
}

/// Divisors with a zero (status 22 from `checked_div`) at each of `zeros`.
fn divisors(ctx: &Context, zeros: &[usize]) -> DeviceBuffer<f32> {
    let mut b = vec![2.0f32; N];
    for &z in zeros {
        b[z] = 0.0;
    }
    ctx.htod_copy(&b).unwrap()
}

fn cfg() -> LaunchConfig {
    LaunchConfig::for_elements(N).unwrap()
}

/// The failing thread and how many more failures the error reports.
fn failure(r: Result<()>, what: &str) -> (u64, u64) {
    match r {
        Err(Error::ForeignCallFailed {
            function,
            status,
            thread,
            kernel,
            more,
            others,
        }) => {
            assert_eq!((function.as_str(), status), ("checked_div", 22), "{what}");
            assert_eq!(kernel.as_deref(), Some("divide_checked"), "{what}");
            assert_eq!(
                others.is_empty(),
                more == 0,
                "{what}: {more} more, described as {others:?}"
            );
            (thread, more)
        }
        other => panic!("{what}: expected ForeignCallFailed, got {other:?}"),
    }
}

/// The context starts clean (another test's failure is not ours).
fn clean(ctx: &Context) {
    let _ = ctx.synchronize();
}

#[test]
fn two_failing_launches_of_one_module_on_one_stream_are_both_counted() {
    let _t = turn();
    for (device, ctx) in devices() {
        clean(&ctx);
        let m = link(&ctx);
        let k = m.kernel(divide_checked).unwrap();
        let s = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let (d1, d2) = (divisors(&ctx, &[97]), divisors(&ctx, &[3]));
        let mut out = s.alloc_zeros::<f32>(N).unwrap();
        s.launch(&k, cfg(), (&x, &d1, &mut out)).unwrap();
        s.launch(&k, cfg(), (&x, &d2, &mut out)).unwrap();
        let what = format!("two failing launches on one stream, on {device}");
        let (thread, more) = failure(out.to_host_vec().map(drop), &what);
        assert_eq!((thread, more), (97, 1), "{what}: the first, and one more");
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("{what}: reported twice: {e}"));
    }
}

#[test]
fn every_failing_thread_of_a_launch_is_counted() {
    let _t = turn();
    for (device, ctx) in devices() {
        clean(&ctx);
        let m = link(&ctx);
        let k = m.kernel(divide_checked).unwrap();
        let s = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let zeros: Vec<usize> = (0..N).step_by(5).collect();
        let d = divisors(&ctx, &zeros);
        let mut out = s.alloc_zeros::<f32>(N).unwrap();
        s.launch(&k, cfg(), (&x, &d, &mut out)).unwrap();
        let what = format!("{} failing threads in one launch, on {device}", zeros.len());
        let (thread, more) = failure(s.synchronize(), &what);
        assert!(
            zeros.contains(&(thread as usize)),
            "{what}: thread {thread}"
        );
        assert_eq!(more, zeros.len() as u64 - 1, "{what}");
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("{what}: reported twice: {e}"));
    }
}

#[test]
fn failures_of_one_module_on_two_streams_are_all_reported() {
    let _t = turn();
    for (device, ctx) in devices() {
        clean(&ctx);
        let m = link(&ctx);
        let k = m.kernel(divide_checked).unwrap();
        let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let (da, db) = (divisors(&ctx, &[97]), divisors(&ctx, &[3, 4]));
        let mut oa = a.alloc_zeros::<f32>(N).unwrap();
        let mut ob = b.alloc_zeros::<f32>(N).unwrap();
        a.launch(&k, cfg(), (&x, &da, &mut oa)).unwrap();
        b.launch(&k, cfg(), (&x, &db, &mut ob)).unwrap();
        // A context synchronization covers both streams: one error, all three failures.
        let what = format!("one module on two streams, context synchronization, on {device}");
        let (thread, more) = failure(ctx.synchronize(), &what);
        assert!([97, 3, 4].contains(&thread), "{what}: thread {thread}");
        assert_eq!(more, 2, "{what}");
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("{what}: reported twice: {e}"));

        // Observed stream by stream: each stream whose launch failed reports an error, none is
        // lost, and a failure is reported at most once to each stream it may concern. The
        // simulator knows the stream of each failure; a GPU's record does not, so each of the
        // module's two streams reports all three (the stream that failed must never read its
        // results without the error).
        a.launch(&k, cfg(), (&x, &da, &mut oa)).unwrap();
        b.launch(&k, cfg(), (&x, &db, &mut ob)).unwrap();
        let what = format!("one module on two streams, stream by stream, on {device}");
        let mut reported = 0;
        for (name, r) in [("b", b.synchronize()), ("a", a.synchronize())] {
            assert!(r.is_err(), "{what}: stream {name} failed without an error");
            reported += failure(r, &what).1 + 1;
        }
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("{what}: reported again: {e}"));
        if device == "simulator" {
            assert_eq!(reported, 3, "{what}: failures reported in all");
        } else {
            assert_eq!(reported, 6, "{what}: failures reported in all");
        }
    }
}

#[test]
fn failures_of_two_modules_are_reported_by_one_observation() {
    let _t = turn();
    for (device, ctx) in devices() {
        clean(&ctx);
        let (m1, m2) = (link(&ctx), link(&ctx));
        let (k1, k2) = (
            m1.kernel(divide_checked).unwrap(),
            m2.kernel(divide_checked).unwrap(),
        );
        let s = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let (d1, d2) = (divisors(&ctx, &[97]), divisors(&ctx, &[3]));
        let mut out = s.alloc_zeros::<f32>(N).unwrap();
        s.launch(&k1, cfg(), (&x, &d1, &mut out)).unwrap();
        s.launch(&k2, cfg(), (&x, &d2, &mut out)).unwrap();
        let what = format!("two modules on one stream, on {device}");
        let r = out.to_host_vec().map(drop);
        let Err(Error::ForeignCallFailed { ref others, .. }) = r else {
            panic!("{what}: expected ForeignCallFailed, got {r:?}")
        };
        let described = others.join("; ");
        let (thread, more) = failure(r, &what);
        assert!([97, 3].contains(&thread), "{what}: thread {thread}");
        assert_eq!(more, 1, "{what}");
        let other = if thread == 97 {
            "thread 3"
        } else {
            "thread 97"
        };
        assert!(
            described.contains(other) && described.contains("checked_div"),
            "{what}: the other module's failure is named: {described}"
        );
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("{what}: reported twice: {e}"));
    }
}

#[test]
fn the_message_says_how_many_more_failed() {
    let e = Error::ForeignCallFailed {
        function: "checked_div".into(),
        status: 22,
        thread: 97,
        kernel: Some("divide_checked".into()),
        more: 3,
        others: vec![
            "2 more in launches of `divide_checked`".into(),
            "`checked_div` returned 22 (thread 3) in a launch of `divide_checked`".into(),
        ],
    };
    assert_eq!(
        e.to_string(),
        "foreign device function `checked_div` returned status 22 (thread 97) in a launch of \
         `divide_checked`; 3 more foreign calls failed: 2 more in launches of `divide_checked`; \
         `checked_div` returned 22 (thread 3) in a launch of `divide_checked`"
    );
}
