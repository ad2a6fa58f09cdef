//! A foreign call's failure is reported at every host observation point the README lists
//! (`to_host_vec`, `copy_to_host`, `memcpy_dtoh`, pinned reads, stream / event / context
//! synchronization) whose work it happened before, whichever stream or module it ran on, and
//! names the kernel that failed (not the module's last launched one). Each failure is
//! reported once (all those an observation covers in one error: the first, and how many
//! more); an observation of unrelated work leaves it to the ones it concerns.
//!
//! Every test device: the simulator here, and with the `gpu` feature the GPU as well. The
//! tests take turns: a context synchronization reports every failure in the context, another
//! test's too.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::{divide_checked, multiply_vectors};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{
    Context, DeviceBuffer, Error, Kernel, LaunchConfig, Module, Result, Stream,
};
use gpukernel_tests::devices;

const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");

static TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURNS.lock().unwrap_or_else(|p| p.into_inner())
}

const N: usize = 256;
/// The thread whose `checked_div` gets a zero divisor (status 22).
const FAILING: u64 = 97;

fn link(ctx: &Context, kernels: &[&str]) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", kernels)
                .add_cuda_source(FUNCTIONS_CU, "functions.cu")
                .header("gpukernel_abi.h", ABI_H)
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking with functions.cu failed: {e}"))
}

/// How the observed work depends on the failing kernel (on stream A).
#[derive(Debug, Clone, Copy)]
enum Route {
    /// The failing kernel's own output, observed through stream A.
    SameStream,
    /// A device-to-device copy of its output on stream B, observed through B.
    OtherStream,
    /// A kernel of a second module on stream B reading its output, observed through B.
    OtherModule,
}

/// A host observation point.
#[derive(Debug, Clone, Copy)]
enum Point {
    ToHostVec,
    CopyToHost,
    MemcpyDtoh,
    PinnedRead,
    StreamSync,
    EventSync,
    ContextSync,
}

const ROUTES: [Route; 3] = [Route::SameStream, Route::OtherStream, Route::OtherModule];
const POINTS: [Point; 7] = [
    Point::ToHostVec,
    Point::CopyToHost,
    Point::MemcpyDtoh,
    Point::PinnedRead,
    Point::StreamSync,
    Point::EventSync,
    Point::ContextSync,
];

struct Fixture {
    ctx: Context,
    /// `divide_checked` and `multiply_vectors`.
    first: Module,
    /// `multiply_vectors` alone: a second module.
    second: Module,
    a: DeviceBuffer<f32>,
    /// Zero at `FAILING`.
    b: DeviceBuffer<f32>,
}

impl Fixture {
    fn new(ctx: Context) -> Fixture {
        let first = link(&ctx, &[divide_checked::NAME, multiply_vectors::NAME]);
        let second = link(&ctx, &[multiply_vectors::NAME]);
        let mut b = vec![2.0f32; N];
        b[FAILING as usize] = 0.0;
        Fixture {
            a: ctx.htod_copy(&[1.0f32; N]).unwrap(),
            b: ctx.htod_copy(&b).unwrap(),
            ctx,
            first,
            second,
        }
    }

    /// On `s`: `divide_checked` (fails at `FAILING`) into `out`, then a kernel of the same
    /// module that succeeds (so the module's last launch is not the one that failed).
    fn fail_on(&self, s: &Stream, out: &mut DeviceBuffer<f32>) {
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let divide = self.first.kernel(divide_checked).unwrap();
        s.launch(&divide, cfg, (&self.a, &self.b, &mut *out))
            .unwrap();
        let multiply = self.first.kernel(multiply_vectors).unwrap();
        let mut scratch = s.alloc_zeros::<f32>(N).unwrap();
        s.launch(&multiply, cfg, (&self.a, &self.a, &mut scratch))
            .unwrap();
    }
}

/// Runs `point` on `observed` through `s`.
fn observe(fx: &Fixture, point: Point, s: &Stream, observed: &DeviceBuffer<f32>) -> Result<()> {
    match point {
        Point::ToHostVec => observed.to_host_vec().map(drop),
        Point::CopyToHost => observed.copy_to_host(&mut vec![0.0f32; N]),
        Point::MemcpyDtoh => s.memcpy_dtoh(&mut vec![0.0f32; N], observed),
        Point::PinnedRead => {
            let mut pinned = fx.ctx.alloc_pinned::<f32>(N)?;
            s.memcpy_dtoh_async(&mut pinned, observed)?;
            pinned.as_slice().map(drop)
        }
        Point::StreamSync => s.synchronize(),
        Point::EventSync => {
            let done = fx.ctx.new_event()?;
            done.record(s)?;
            done.synchronize()
        }
        Point::ContextSync => fx.ctx.synchronize(),
    }
}

fn expect_failure(r: Result<()>, what: &str) {
    match r {
        Err(Error::ForeignCallFailed {
            function,
            status,
            thread,
            kernel,
            ..
        }) => {
            assert_eq!(function, "checked_div", "{what}");
            assert_eq!(status, 22, "{what}");
            assert_eq!(thread, FAILING, "{what}");
            assert_eq!(
                kernel.as_deref(),
                Some("divide_checked"),
                "{what}: the failing kernel is named, not the module's last launch"
            );
        }
        other => panic!("{what}: expected ForeignCallFailed, got {other:?}"),
    }
}

#[test]
fn every_observation_point_reports_a_failure_of_any_stream_or_module() {
    let _turn = turn();
    for (device, ctx) in devices() {
        let fx = Fixture::new(ctx.clone());
        let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let second = fx.second.kernel(multiply_vectors).unwrap();
        for route in ROUTES {
            for point in POINTS {
                let what = format!("{point:?} after {route:?} on {device}");
                let mut out = a.alloc_zeros::<f32>(N).unwrap();
                fx.fail_on(&a, &mut out);
                let result = match route {
                    Route::SameStream => observe(&fx, point, &a, &out),
                    Route::OtherStream => {
                        let mut copy = b.alloc_zeros::<f32>(N).unwrap();
                        b.memcpy_dtod_async(&mut copy, &out).unwrap();
                        observe(&fx, point, &b, &copy)
                    }
                    Route::OtherModule => {
                        let mut product = b.alloc_zeros::<f32>(N).unwrap();
                        b.launch(&second, cfg, (&out, &fx.a, &mut product)).unwrap();
                        observe(&fx, point, &b, &product)
                    }
                };
                expect_failure(result, &what);
                // Reported once: everything after is clean.
                ctx.synchronize()
                    .unwrap_or_else(|e| panic!("{what}: reported twice: {e}"));
                let got = out.to_host_vec().unwrap();
                assert_eq!(got[FAILING as usize], 0.0, "{what}");
                assert_eq!(got[0], 0.5, "{what}");
            }
        }
    }
}

#[test]
fn failures_of_two_modules_are_reported_together_once() {
    let _turn = turn();
    for (device, ctx) in devices() {
        let fx = Fixture::new(ctx.clone());
        // A third module that also fails, at another thread, on another stream.
        let third = link(&ctx, &[divide_checked::NAME]);
        let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let mut out = a.alloc_zeros::<f32>(N).unwrap();
        fx.fail_on(&a, &mut out);
        let mut zero_at_3 = vec![1.0f32; N];
        zero_at_3[3] = 0.0;
        let divisors = b.htod_copy(&zero_at_3).unwrap();
        let mut other = b.alloc_zeros::<f32>(N).unwrap();
        b.launch(
            &third.kernel(divide_checked).unwrap(),
            LaunchConfig::for_elements(N).unwrap(),
            (&fx.a, &divisors, &mut other),
        )
        .unwrap();
        // One synchronization reports both: the first in full, the other as one more.
        match ctx.synchronize() {
            Err(Error::ForeignCallFailed {
                thread,
                kernel,
                more,
                others,
                ..
            }) => {
                assert_eq!(kernel.as_deref(), Some("divide_checked"), "on {device}");
                assert!(
                    [3, FAILING].contains(&thread),
                    "on {device}: thread {thread}"
                );
                let other = if thread == 3 { FAILING } else { 3 };
                assert_eq!(more, 1, "on {device}: {others:?}");
                assert!(
                    others
                        .iter()
                        .any(|o| o.contains(&format!("(thread {other})"))),
                    "on {device}: the other module's failure is named: {others:?}"
                );
            }
            other => panic!("expected ForeignCallFailed on {device}, got {other:?}"),
        }
        ctx.synchronize()
            .unwrap_or_else(|e| panic!("on {device}: reported twice: {e}"));
    }
}

#[test]
fn a_failure_of_a_dropped_module_is_reported_by_the_next_context_synchronization() {
    let _turn = turn();
    for (device, ctx) in devices() {
        let b = ctx.new_stream().unwrap();
        let mut unrelated = b.alloc_zeros::<f32>(N).unwrap();
        {
            let fx = Fixture::new(ctx.clone());
            let a = ctx.new_stream().unwrap();
            let mut out = a.alloc_zeros::<f32>(N).unwrap();
            fx.fail_on(&a, &mut out);
        }
        // The module is gone (its failure was read as it was dropped); unrelated work does
        // not report it, the context's synchronization does.
        b.memset_d8_async(&mut unrelated, 0).unwrap();
        unrelated.to_host_vec().unwrap();
        expect_failure(
            ctx.synchronize(),
            &format!("after the module was dropped, on {device}"),
        );
        ctx.synchronize().unwrap();
    }
}

#[test]
fn an_observation_of_unrelated_work_leaves_the_failure_to_its_own() {
    let _turn = turn();
    for (device, ctx) in devices() {
        let fx = Fixture::new(ctx.clone());
        let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let mut out = a.alloc_zeros::<f32>(N).unwrap();
        fx.fail_on(&a, &mut out);
        // A's work is done (the failure published) before B looks, without observing A.
        while !a.query().unwrap() {
            std::thread::yield_now();
        }
        // Stream B never waited for A: its reads and synchronization are clean.
        let mut unrelated = b.alloc_zeros::<u32>(N).unwrap();
        b.memset_d8_async(&mut unrelated, 1).unwrap();
        assert_eq!(
            unrelated.to_host_vec().unwrap()[0],
            0x0101_0101,
            "on {device}"
        );
        b.synchronize().unwrap();
        // The failure waits for an observation of A's work.
        expect_failure(
            out.to_host_vec().map(drop),
            &format!("A's output on {device}"),
        );
        ctx.synchronize().unwrap();
    }
}
