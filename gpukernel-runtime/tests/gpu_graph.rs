//! CUDA graphs on a CUDA device (feature `gpu`): the twins of the simulator tests in
//! `src/graph/tests.rs`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{fails_foreign, gpu, saxpy};
use gpukernel_runtime::{Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn copy_kernel_copy_host_node_runs_in_order_each_launch() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 100_003;
    let host_x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut host_y = vec![0.0f32; n];
    let mut x = ctx.alloc_zeros::<f32>(n).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let g = ctx.new_graph("example").unwrap();
        let (xb, yb) = (g.buffer_mut(&mut x), g.buffer_mut(&mut y));
        let up = g.add_memcpy_htod(&[], xb, &host_x).unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let kn = g.add_kernel(&[up], &k, cfg, (2.0f32, xb, yb)).unwrap();
        let down = g.add_memcpy_dtoh(&[kn], &mut host_y, yb).unwrap();
        let c = calls.clone();
        g.add_host(&[down], move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let exec = g.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        for _ in 0..3 {
            exec.launch(&s).unwrap();
        }
        s.synchronize().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    for (i, &v) in host_y.iter().enumerate() {
        assert_eq!(v, 6.0 * host_x[i], "element {i}");
    }
    assert_eq!(y.to_host_vec().unwrap(), host_y);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_chain_of_1000_conflicting_kernel_nodes_runs_in_order() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 256]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(256).unwrap();
    {
        let g = ctx.new_graph("chain").unwrap();
        let (xb, yb) = (g.buffer(&x), g.buffer_mut(&mut y));
        let cfg = LaunchConfig::for_elements(256).unwrap();
        // Each node reads and writes all of y: unordered nodes would lose updates.
        for _ in 0..1000 {
            g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        }
        g.instantiate()
            .unwrap()
            .launch(&ctx.default_stream())
            .unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![1000.0; 256]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn kernel_args_and_whole_graph_update() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 64]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(64).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(64).unwrap();
    {
        let g1 = ctx.new_graph("v1").unwrap();
        let g2 = ctx.new_graph("v2").unwrap();
        let g3 = ctx.new_graph("v3").unwrap();
        let (xb, yb, ob) = (
            g1.buffer(&x),
            g1.buffer_mut(&mut y),
            g1.buffer_mut(&mut other),
        );
        let cfg = LaunchConfig::for_elements(64).unwrap();
        let n = g1.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        g2.add_kernel(&[], &k, cfg, (100.0f32, xb, yb)).unwrap();
        g3.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        g3.add_empty(&[]).unwrap();
        let mut exec = g1.instantiate().unwrap();
        let s = ctx.default_stream();
        exec.launch(&s).unwrap(); // y = 1
        exec.set_kernel_args(n, &k, cfg, (10.0f32, xb, ob)).unwrap();
        exec.launch(&s).unwrap(); // other = 10
        exec.update(&g2).unwrap();
        exec.launch(&s).unwrap(); // y = 101
        assert!(matches!(
            exec.update(&g3),
            Err(Error::GraphUpdateRefused { .. })
        ));
        exec.launch(&s).unwrap(); // y = 201
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![201.0; 64]);
    assert_eq!(other.to_host_vec().unwrap(), vec![10.0; 64]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_foreign_failure_of_a_graph_kernel_surfaces_at_synchronize() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, fails_foreign).unwrap();
    let s = ctx.new_stream().unwrap();
    {
        let g = ctx.new_graph("ffi").unwrap();
        g.add_kernel(&[], &k, LaunchConfig::new(1, 32), (9,))
            .unwrap();
        g.instantiate().unwrap().launch(&s).unwrap();
    }
    match s.synchronize() {
        Err(Error::ForeignCallFailed {
            function,
            status,
            kernel,
            ..
        }) => {
            assert_eq!(function, "mul_f32_f32");
            assert_eq!(status, 9);
            assert_eq!(
                kernel.as_deref(),
                Some("fails_foreign (kernel node of graph \"ffi\")")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_foreign_failure_names_the_kernel_node_of_its_module() {
    // Two modules: the failing kernel's own module has one kernel node in the graph, so the
    // failure names it (the device record says only which foreign function failed).
    let ctx = gpu();
    let m1 = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let m2 = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let fails = common::kernel(&m1, fails_foreign).unwrap();
    let k = common::kernel(&m2, saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 32]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(32).unwrap();
    let s = ctx.new_stream().unwrap();
    {
        let g = ctx.new_graph("two modules").unwrap();
        let yb = g.buffer_mut(&mut y);
        let a = g
            .add_kernel(&[], &k, LaunchConfig::new(1, 32), (1.0f32, &x, yb))
            .unwrap();
        g.add_kernel(&[a], &fails, LaunchConfig::new(1, 32), (4,))
            .unwrap();
        g.add_kernel(&[], &k, LaunchConfig::new(1, 32), (1.0f32, &x, yb))
            .unwrap();
        g.instantiate().unwrap().launch(&s).unwrap();
    }
    match s.synchronize() {
        Err(Error::ForeignCallFailed { status, kernel, .. }) => {
            assert_eq!(status, 4);
            assert_eq!(
                kernel.as_deref(),
                Some("fails_foreign (kernel node of graph \"two modules\")")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; 32]);
}

/// `countdown(p: *mut u32, again: ConditionalHandle)`, one thread: `*p -= 1`, then sets
/// `again` to `*p != 0` through the driver-provided `cudaGraphSetConditional`, as nvcc emits
/// it for CUDA C (a plain `.extern .func`, loaded here without the Linker).
const COUNTDOWN_PTX: &str = "
.version 8.0
.target sm_90
.address_size 64
.extern .func cudaGraphSetConditional(.param .b64 cudaGraphSetConditional_param_0, .param .b32 cudaGraphSetConditional_param_1);
.visible .entry countdown(.param .u64 countdown_p, .param .u64 countdown_c)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [countdown_p];
    ld.param.u64 %rd2, [countdown_c];
    cvta.to.global.u64 %rd3, %rd1;
    ld.global.u32 %r1, [%rd3];
    add.s32 %r2, %r1, -1;
    st.global.u32 [%rd3], %r2;
    setp.ne.s32 %p1, %r2, 0;
    selp.u32 %r3, 1, 0, %p1;
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd2;
    .param .b32 param1;
    st.param.b32 [param1], %r3;
    call.uni cudaGraphSetConditional, (param0, param1);
    }
    ret;
}
";

#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct countdown;
// SAFETY: the PTX entry above takes (u64, u64): a pointer and a handle.
unsafe impl gpukernel_device::Kernel for countdown {
    const NAME: &'static str = "countdown";
    type Params = (*mut u32, gpukernel_device::graph::ConditionalHandle);
    const SIM_ENTRY: gpukernel_device::SimEntry = countdown_entry;
    const SIGNATURE: u64 = 0;
}
unsafe fn countdown_entry(_: *const *mut core::ffi::c_void) {
    unreachable!("GPU only")
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_while_node_of_a_plain_loaded_ptx_counts_down_on_the_device() {
    let ctx = gpu();
    let m = ctx.load_module(COUNTDOWN_PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, countdown).unwrap();
    let mut counter = ctx.alloc_zeros::<u32>(1).unwrap();
    let start = [7u32];
    {
        let g = ctx.new_graph("countdown").unwrap();
        let again = g.conditional_handle(true).unwrap();
        let cb = g.buffer_mut(&mut counter);
        let up = g.add_memcpy_htod(&[], cb, &start).unwrap();
        g.add_while(&[up], again, |body| {
            // SAFETY: one thread writes the one element `p` points at.
            unsafe { body.add_kernel_unchecked(&[], &k, LaunchConfig::new(1, 1), (cb, again)) }?;
            Ok(())
        })
        .unwrap();
        let exec = g.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    }
    // Seven rounds: 7 → 0, the last one clearing the condition.
    assert_eq!(counter.to_host_vec().unwrap(), vec![0]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_graph_never_reads_or_writes_freed_memory() {
    // Launches of a long graph are still queued when the instantiation and then the buffer
    // are dropped: the drops wait, so a new allocation (the pool hands the same bytes back)
    // is never written by them.
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 1 << 16;
    let x = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    let s = ctx.new_stream().unwrap();
    let mut reused = 0;
    for round in 0..5 {
        let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
        let old = y.as_raw();
        {
            let g = ctx.new_graph("long").unwrap();
            let yb = g.buffer_mut(&mut y);
            let cfg = LaunchConfig::for_elements(n).unwrap();
            let mut last = None;
            for _ in 0..200 {
                let deps: Vec<_> = last.into_iter().collect();
                last = Some(g.add_kernel(&deps, &k, cfg, (1.0f32, &x, yb)).unwrap());
            }
            let exec = g.instantiate().unwrap();
            for _ in 0..10 {
                exec.launch(&s).unwrap();
            }
        } // the instantiation is dropped with its launches queued
        drop(y);
        let fresh = ctx.alloc_zeros::<f32>(n).unwrap();
        if fresh.as_raw() == old {
            reused += 1;
        }
        s.synchronize().unwrap();
        assert_eq!(
            fresh.to_host_vec().unwrap(),
            vec![0.0f32; n],
            "round {round}: a launch wrote freed memory"
        );
    }
    println!("the freed buffer's address came back {reused} of 5 times");
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn an_event_recorded_by_a_graph_node_orders_other_streams_and_the_host() {
    // The producer's record node follows 200 chained kernels and a host node counting its
    // launches. The consumer graph and the observer use no buffer, so nothing but the event
    // (a wait node; `Stream::wait_event`) orders them after the producer.
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 1 << 16;
    let x = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
    let done = ctx.new_event().unwrap();
    let produced = Arc::new(AtomicUsize::new(0));
    let by_node = Arc::new(Mutex::new(Vec::new()));
    let by_stream = Arc::new(Mutex::new(Vec::new()));
    let (a, b, c) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    {
        let producer = ctx.new_graph("producer").unwrap();
        let yb = producer.buffer_mut(&mut y);
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let mut last = producer.add_kernel(&[], &k, cfg, (1.0f32, &x, yb)).unwrap();
        for _ in 1..200 {
            last = producer
                .add_kernel(&[last], &k, cfg, (1.0f32, &x, yb))
                .unwrap();
        }
        let p = produced.clone();
        let counted = producer
            .add_host(&[last], move || {
                p.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        producer.add_event_record(&[counted], &done).unwrap();

        let consumer = ctx.new_graph("consumer").unwrap();
        let wait = consumer.add_event_wait(&[], &done).unwrap();
        let (p, seen) = (produced.clone(), by_node.clone());
        consumer
            .add_host(&[wait], move || {
                seen.lock().unwrap().push(p.load(Ordering::SeqCst));
            })
            .unwrap();

        let observer = ctx.new_graph("observer").unwrap();
        let (p, seen) = (produced.clone(), by_stream.clone());
        observer
            .add_host(&[], move || {
                seen.lock().unwrap().push(p.load(Ordering::SeqCst));
            })
            .unwrap();

        let (pe, ce, oe) = (
            producer.instantiate().unwrap(),
            consumer.instantiate().unwrap(),
            observer.instantiate().unwrap(),
        );
        for _ in 0..3 {
            pe.launch(&a).unwrap();
            ce.launch(&b).unwrap();
            c.wait_event(&done).unwrap();
            oe.launch(&c).unwrap();
        }
        done.synchronize().unwrap();
        // The host saw the last record: the third launch's kernels and host node are done.
        assert_eq!(produced.load(Ordering::SeqCst), 3);
        b.synchronize().unwrap();
        c.synchronize().unwrap();
    }
    for (what, seen) in [("wait node", &by_node), ("wait_event", &by_stream)] {
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{what}");
        for (round, &count) in seen.iter().enumerate() {
            assert!(
                count > round,
                "{what}: round {round} ran before its producer launch ({seen:?})"
            );
        }
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![600.0f32; n]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_child_graph_inside_a_parent_launched_several_times_gives_the_right_results() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 100_003;
    let host_x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut host_y = vec![0.0f32; n];
    let mut x = ctx.alloc_zeros::<f32>(n).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let parent = ctx.new_graph("parent").unwrap();
        let (xb, yb) = (parent.buffer_mut(&mut x), parent.buffer_mut(&mut y));
        let up = parent.add_memcpy_htod(&[], xb, &host_x).unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        // The child: y += 2x, then y += x, and a host node (its closure kept by the parent).
        let child = ctx.new_graph("step").unwrap();
        let first = child.add_kernel(&[], &k, cfg, (2.0f32, xb, yb)).unwrap();
        child
            .add_kernel(&[first], &k, cfg, (1.0f32, xb, yb))
            .unwrap();
        let c = calls.clone();
        child
            .add_host(&[], move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        // Ordered by their uses: after the upload, one child after the other, the download
        // after both.
        parent.add_child(&[up], &child).unwrap();
        parent.add_child(&[], &child).unwrap();
        drop(child);
        parent.add_memcpy_dtoh(&[], &mut host_y, yb).unwrap();
        let exec = parent.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        for _ in 0..3 {
            exec.launch(&s).unwrap();
        }
        s.synchronize().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    for (i, &v) in host_y.iter().enumerate() {
        assert_eq!(v, 18.0 * host_x[i], "element {i}");
    }
    assert_eq!(y.to_host_vec().unwrap(), host_y);
}
