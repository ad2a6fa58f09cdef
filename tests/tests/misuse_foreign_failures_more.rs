//! Foreign-call failure reporting on the simulator: every observation point reports a failure
//! that happened before it, once, naming the failing kernel; a failure of one stream does not
//! hide another stream's failure of the same module.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::divide_checked;
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{
    Context, Device, DeviceBuffer, Error, Kernel, LaunchConfig, Module, Result, Stream,
};

const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");

static TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());
fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURNS.lock().unwrap_or_else(|p| p.into_inner())
}

const N: usize = 256;

fn link(ctx: &Context) -> Module {
    let mut l = Linker::new(ctx).unwrap();
    l.add_ptx_kernels(PTX, "kernels.ptx", &[divide_checked::NAME])
        .add_cuda_source(FUNCTIONS_CU, "functions.cu")
        .header("gpukernel_abi.h", ABI_H)
        .link_and_load()
        .unwrap()
}

fn divisors(ctx: &Context, zero_at: usize) -> DeviceBuffer<f32> {
    let mut b = vec![2.0f32; N];
    b[zero_at] = 0.0;
    ctx.htod_copy(&b).unwrap()
}

fn is_failure(r: &Result<()>, thread: u64) -> bool {
    matches!(r, Err(Error::ForeignCallFailed { thread: t, kernel, .. })
        if *t == thread && kernel.as_deref().is_some_and(|k| k.starts_with("divide_checked")))
}

fn cfg() -> LaunchConfig {
    LaunchConfig::for_elements(N).unwrap()
}

/// One module, two streams, each launch failing (threads 97 and 3) before any observation:
/// the observation of B's output must report B's failure (thread 3).
#[test]
fn two_failures_of_one_module_on_two_streams_are_both_reported() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let (da, db) = (divisors(&ctx, 97), divisors(&ctx, 3));
    let mut oa = a.alloc_zeros::<f32>(N).unwrap();
    let mut ob = b.alloc_zeros::<f32>(N).unwrap();
    a.launch(&k, cfg(), (&x, &da, &mut oa)).unwrap();
    b.launch(&k, cfg(), (&x, &db, &mut ob)).unwrap();
    let rb = ob.to_host_vec().map(drop);
    let ra = oa.to_host_vec().map(drop);
    let rest = ctx.synchronize();
    println!("B's read: {rb:?}\nA's read: {ra:?}\nctx sync: {rest:?}");
    assert!(
        is_failure(&rb, 3),
        "B's failure (thread 3) not reported at B's read: {rb:?}; A: {ra:?}; ctx: {rest:?}"
    );
}

/// A failure in a graph kernel node: the launching stream's synchronization reports it.
#[test]
fn a_failure_in_a_graph_node_is_reported_by_the_launch_stream() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut o = ctx.alloc_zeros::<f32>(N).unwrap();
    let (r1, r2);
    {
        let g = ctx.new_graph("failing").unwrap();
        let ob = g.buffer_mut(&mut o);
        g.add_kernel(&[], &k, cfg(), (g.buffer(&x), g.buffer(&d), ob))
            .unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        r1 = s.synchronize();
        exec.launch(&s).unwrap();
        r2 = o_read_after(&s);
    }
    let rest = ctx.synchronize();
    println!("{r1:?}\n{r2:?}\n{rest:?}");
    assert!(
        is_failure(&r1, 97) && is_failure(&r2, 97),
        "graph failure not reported at the launch stream: first {r1:?}, second launch {r2:?}, ctx {rest:?}"
    );
}

fn o_read_after(s: &Stream) -> Result<()> {
    s.synchronize()
}

/// A failure on A, an event recorded after it, B waits for the event (no buffer shared):
/// B's synchronization happened after the failure.
#[test]
fn a_failure_reaches_another_stream_through_wait_event() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let (a, b, c) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut o = a.alloc_zeros::<f32>(N).unwrap();
    a.launch(&k, cfg(), (&x, &d, &mut o)).unwrap();
    let ev = ctx.new_event().unwrap();
    ev.record(&a).unwrap();
    b.wait_event(&ev).unwrap();
    // A chain: C waits for B.
    c.wait_stream(&b).unwrap();
    let rc = c.synchronize();
    let rest = ctx.synchronize();
    println!("{rc:?}\n{rest:?}");
    assert!(
        is_failure(&rc, 97),
        "C (after B after A's event) synchronized clean: {rc:?}; ctx {rest:?}"
    );
}

/// A failure on a stream that is then dropped: the output's read reports it.
#[test]
fn a_failure_on_a_dropped_stream_is_reported_by_the_output_read() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut o = ctx.alloc_zeros::<f32>(N).unwrap();
    {
        let a = ctx.new_stream().unwrap();
        a.launch(&k, cfg(), (&x, &d, &mut o)).unwrap();
    }
    // A new stream may reuse the dropped one's handle: its unrelated work must stay clean.
    let fresh = ctx.new_stream().unwrap();
    let rf = fresh.synchronize();
    let r = o.to_host_vec().map(drop);
    let rest = ctx.synchronize();
    println!("fresh {rf:?}\nread {r:?}\nctx {rest:?}");
    assert!(
        rf.is_ok() && is_failure(&r, 97),
        "fresh stream {rf:?}, output read {r:?}, ctx {rest:?}"
    );
}

/// A failure, then two threads observe it at once (an output read and a context
/// synchronization): exactly one reports it.
#[test]
fn two_threads_observing_one_failure_report_it_once() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut bad = Vec::new();
    for round in 0..50 {
        let a = ctx.new_stream().unwrap();
        let mut o = a.alloc_zeros::<f32>(N).unwrap();
        a.launch(&k, cfg(), (&x, &d, &mut o)).unwrap();
        let (r1, r2) = std::thread::scope(|sc| {
            let h = sc.spawn(|| ctx.synchronize());
            let r1 = o.to_host_vec().map(drop);
            (r1, h.join().unwrap())
        });
        let r3 = ctx.synchronize();
        let n = [&r1, &r2, &r3].iter().filter(|r| r.is_err()).count();
        if n != 1 {
            bad.push(format!("round {round}: {r1:?} / {r2:?} / {r3:?}"));
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

/// A failure inside a captured launch: the launch of the captured graph reports it.
#[test]
fn a_failure_in_a_captured_graph_is_reported() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut o = ctx.alloc_zeros::<f32>(N).unwrap();
    let r = {
        let graph = s
            .capture("failing capture", |c| {
                let ob = c.buffer_mut(&mut o);
                c.launch(&k, cfg(), (c.buffer(&x), c.buffer(&d), ob))
            })
            .unwrap();
        let exec = graph.instantiate().unwrap();
        let other = ctx.new_stream().unwrap();
        exec.launch(&other).unwrap();
        other.synchronize()
    };
    let r2 = o.to_host_vec().map(drop);
    let rest = ctx.synchronize();
    println!("{r:?}\n{r2:?}\n{rest:?}");
    assert!(is_failure(&r, 97), "{r:?} then read {r2:?}, ctx {rest:?}");
}

/// A failure on A, the module dropped (its drop reads the record), then A's output read:
/// the read happened after the failure.
#[test]
fn a_failure_of_a_dropped_module_is_reported_by_the_output_read() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let a = ctx.new_stream().unwrap();
    let mut o = a.alloc_zeros::<f32>(N).unwrap();
    {
        let m = link(&ctx);
        let k = m.kernel(divide_checked).unwrap();
        a.launch(&k, cfg(), (&x, &d, &mut o)).unwrap();
    }
    let r = o.to_host_vec().map(drop);
    let rest = ctx.synchronize();
    println!("{r:?}\n{rest:?}");
    assert!(is_failure(&r, 97), "read {r:?}, ctx {rest:?}");
}

/// Graph launched twice (each launch fails) before one observation, then the output read.
#[test]
fn a_graph_launched_twice_reports_per_observation() {
    let _t = turn();
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.synchronize().ok();
    let m = link(&ctx);
    let k = m.kernel(divide_checked).unwrap();
    let s = ctx.new_stream().unwrap();
    let s2 = ctx.new_stream().unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let d = divisors(&ctx, 97);
    let mut o = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut o2 = ctx.alloc_zeros::<f32>(N).unwrap();
    let (r1, r2);
    {
        let g = ctx.new_graph("failing").unwrap();
        g.add_kernel(
            &[],
            &k,
            cfg(),
            (g.buffer(&x), g.buffer(&d), g.buffer_mut(&mut o)),
        )
        .unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        // Another failing launch of the same module on another stream, not ordered with s.
        s2.launch(&k, cfg(), (&x, &divisors(&ctx, 3), &mut o2))
            .unwrap();
        r2 = s2.synchronize();
        r1 = s.synchronize();
    }
    let rest = ctx.synchronize();
    println!("s2 {r2:?}\ns {r1:?}\nctx {rest:?}");
    assert!(
        is_failure(&r2, 3) && is_failure(&r1, 97),
        "s2 {r2:?}, s {r1:?}, ctx {rest:?}"
    );
}
