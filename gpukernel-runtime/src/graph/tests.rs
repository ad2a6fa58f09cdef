//! Graphs on the simulator, with the hand-written kernels of the launch tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Error;
use crate::launch::tests::{saxpy, sim, sim_private};
use crate::{DeviceBuffer, LaunchConfig};

const N: usize = 1000;

#[test]
fn copy_kernel_copy_host_node_runs_in_order_each_launch() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let host_x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut host_y = vec![0.0f32; N];
    let mut x = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let g = ctx.new_graph("example").unwrap();
        let (xb, yb) = (g.buffer_mut(&mut x), g.buffer_mut(&mut y));
        let up = g.add_memcpy_htod(&[], xb, &host_x).unwrap();
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let kn = g.add_kernel(&[up], &k, cfg, (2.0f32, xb, yb)).unwrap();
        let down = g.add_memcpy_dtoh(&[kn], &mut host_y, yb).unwrap();
        let c = calls.clone();
        g.add_host(&[down], move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(g.len(), 4);
        let exec = g.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        for _ in 0..3 {
            exec.launch(&s).unwrap();
        }
        s.synchronize().unwrap();
        assert_eq!(
            s.last_launch(),
            Some("graph `example` (kernel nodes: saxpy)")
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // Three launches: y = 3 * 2x, and the last copy saw it.
    assert!(host_y.iter().enumerate().all(|(i, &v)| v == 6.0 * i as f32));
    assert_eq!(y.to_host_vec().unwrap(), host_y);
}

#[test]
fn conflicting_nodes_are_ordered_and_readers_are_not() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let mut z = ctx.alloc_zeros::<f32>(8).unwrap();
    let g = ctx.new_graph("order").unwrap();
    let (xb, yb, zb) = (g.buffer(&x), g.buffer_mut(&mut y), g.buffer_mut(&mut z));
    let cfg = LaunchConfig::for_elements(8).unwrap();
    let a = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
    let b = g.add_kernel(&[], &k, cfg, (1.0f32, xb, zb)).unwrap();
    let c = g.add_kernel(&[], &k, cfg, (1.0f32, yb.read(), zb)).unwrap();
    let st = g.inner.lock();
    assert!(st.nodes[a.index()].deps.is_empty());
    assert!(st.nodes[b.index()].deps.is_empty(), "x is only read");
    let mut dc = st.nodes[c.index()].deps.clone();
    dc.sort();
    assert_eq!(dc, vec![0, 1], "reads y after a, writes z after b");
}

#[test]
fn a_cycle_is_a_named_error() {
    let (ctx, _module) = sim();
    let g = ctx.new_graph("loop").unwrap();
    let a = g.add_empty(&[]).unwrap();
    let b = g.add_empty(&[a]).unwrap();
    let c = g.add_empty(&[b]).unwrap();
    g.add_dependency(c, a).unwrap();
    match g.instantiate() {
        Err(Error::GraphCycle { graph, nodes }) => {
            assert_eq!(graph, "loop");
            assert_eq!(nodes.len(), 3);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_node_of_another_graph_is_a_named_error() {
    let (ctx, _module) = sim();
    let g1 = ctx.new_graph("one").unwrap();
    let g2 = ctx.new_graph("two").unwrap();
    let a = g1.add_empty(&[]).unwrap();
    let b = g2.add_empty(&[]).unwrap();
    assert!(matches!(
        g2.add_empty(&[a]),
        Err(Error::ForeignGraphNode { graph, .. }) if graph == "two"
    ));
    assert!(matches!(
        g2.add_dependency(a, b),
        Err(Error::ForeignGraphNode { .. })
    ));
}

#[test]
fn kernel_args_update_in_an_instantiated_graph() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 4]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(4).unwrap();
    {
        let g = ctx.new_graph("update").unwrap();
        let (xb, yb, ob) = (g.buffer(&x), g.buffer_mut(&mut y), g.buffer_mut(&mut other));
        let cfg = LaunchConfig::for_elements(4).unwrap();
        let n = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        let e = g.add_empty(&[]).unwrap();
        let exec = g.instantiate().unwrap();
        let s = ctx.default_stream();
        exec.launch(&s).unwrap();
        exec.set_kernel_args(n, &k, cfg, (10.0f32, xb, ob)).unwrap();
        exec.launch(&s).unwrap();
        assert!(matches!(
            exec.set_kernel_args(e, &k, cfg, (1.0f32, xb, yb)),
            Err(Error::WrongGraphNode { .. })
        ));
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![1.0; 4]);
    assert_eq!(other.to_host_vec().unwrap(), vec![10.0; 4]);
}

#[test]
fn whole_graph_update_and_its_refusal() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 4]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
    {
        let g1 = ctx.new_graph("v1").unwrap();
        let g2 = ctx.new_graph("v2").unwrap();
        let g3 = ctx.new_graph("v3").unwrap();
        let (xb, yb) = (g1.buffer(&x), g1.buffer_mut(&mut y));
        let cfg = LaunchConfig::for_elements(4).unwrap();
        g1.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        g2.add_kernel(&[], &k, cfg, (100.0f32, xb, yb)).unwrap();
        g3.add_empty(&[]).unwrap();
        g3.add_empty(&[]).unwrap();
        let mut exec = g1.instantiate().unwrap();
        let s = ctx.default_stream();
        exec.launch(&s).unwrap();
        exec.update(&g2).unwrap();
        exec.launch(&s).unwrap();
        assert!(matches!(
            exec.update(&g3),
            Err(Error::GraphUpdateRefused { graph, .. }) if graph == "v2"
        ));
        exec.launch(&s).unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![201.0; 4]);
}

/// An update to a graph with an edge more (or less) is refused, as CUDA refuses it ("the
/// topology changed"): the simulator once compared only a topological order, which both
/// graphs here share, so it accepted the update and the instantiation took on the new graph's
/// edges (what `set_kernel_args` trusts to order nodes) while running the old one.
#[test]
fn an_update_that_adds_or_removes_an_edge_is_refused() {
    let (ctx, _module) = sim();
    let apart = ctx.new_graph("apart").unwrap();
    apart.add_empty(&[]).unwrap();
    apart.add_empty(&[]).unwrap();
    let chained = ctx.new_graph("chained").unwrap();
    let first = chained.add_empty(&[]).unwrap();
    chained.add_empty(&[first]).unwrap();
    let mut exec = apart.instantiate().unwrap();
    assert!(matches!(
        exec.update(&chained),
        Err(Error::GraphUpdateRefused { reason, .. }) if reason.contains("topology")
    ));
    let mut exec = chained.instantiate().unwrap();
    assert!(matches!(
        exec.update(&apart),
        Err(Error::GraphUpdateRefused { reason, .. }) if reason.contains("topology")
    ));
    // The same edges: accepted.
    exec.update(&chained).unwrap();
}

/// An update that would turn a programmatic edge into a full one (or back) is refused: the
/// instantiation keeps its edges, and `set_kernel_args` would order the nodes by the new
/// graph's kinds; the dependent here does not wait (it may, sharing no memory with `p`), so
/// with the full edge of the update its arguments could be set to conflict with `p`'s.
#[test]
fn an_update_that_changes_an_edge_kind_is_refused() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let (mut y1, mut z1) = (
        ctx.alloc_zeros::<f32>(8).unwrap(),
        ctx.alloc_zeros(8).unwrap(),
    );
    let (mut y2, mut z2) = (
        ctx.alloc_zeros::<f32>(8).unwrap(),
        ctx.alloc_zeros(8).unwrap(),
    );
    let cfg = LaunchConfig::for_elements(8).unwrap();
    // SAFETY: `q` shares no memory with `p` (it reads x, which p reads too, and writes z).
    let dependent = unsafe { cfg.programmatic_dependent() };
    let programmatic = ctx.new_graph("programmatic").unwrap();
    let full = ctx.new_graph("full").unwrap();
    for (g, qcfg, y, z) in [
        (&programmatic, dependent, &mut y1, &mut z1),
        (&full, cfg, &mut y2, &mut z2),
    ] {
        let (xb, yb, zb) = (g.buffer(&x), g.buffer_mut(y), g.buffer_mut(z));
        let p = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        g.add_kernel(&[p], &k, qcfg, (1.0f32, xb, zb)).unwrap();
    }
    let mut exec = programmatic.instantiate().unwrap();
    assert!(matches!(
        exec.update(&full),
        Err(Error::GraphUpdateRefused { reason, .. }) if reason.contains("another kind")
    ));
    let mut exec = full.instantiate().unwrap();
    assert!(matches!(
        exec.update(&programmatic),
        Err(Error::GraphUpdateRefused { reason, .. }) if reason.contains("another kind")
    ));
}

#[test]
fn graph_launches_are_ordered_with_other_streams() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 4]).unwrap();
    let mut y: DeviceBuffer<f32> = ctx.alloc_zeros(4).unwrap();
    let s2 = ctx.new_stream().unwrap();
    {
        let g = ctx.new_graph("streams").unwrap();
        let (xb, yb) = (g.buffer(&x), g.buffer_mut(&mut y));
        let cfg = LaunchConfig::for_elements(4).unwrap();
        g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&s2).unwrap();
    }
    // The buffer's tracker saw the launch on `s2`: a host read waits for it.
    assert!(y.stream().same_as(&ctx.default_stream()));
    assert_eq!(y.to_host_vec().unwrap(), vec![1.0; 4]);
}

#[test]
fn a_simulated_fault_names_the_graph_and_node() {
    let (ctx, module) = sim();
    let k = module.kernel(crate::launch::tests::out_of_bounds).unwrap();
    let mut x = ctx.alloc_zeros::<u32>(4).unwrap();
    let g = ctx.new_graph("faulty").unwrap();
    let xb = g.buffer_mut(&mut x);
    g.add_empty(&[]).unwrap();
    g.add_kernel(
        &[],
        &k,
        LaunchConfig::for_elements(8).unwrap(),
        (xb.read(),),
    )
    .unwrap();
    let exec = g.instantiate().unwrap();
    match exec.launch(&ctx.default_stream()) {
        Err(Error::SimulatorFault { kernel, .. }) => {
            assert!(kernel.contains("node #1 of graph `faulty`"), "{kernel}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_foreign_failure_of_a_graph_kernel_surfaces_where_its_stream_is_observed() {
    let (ctx, module) = sim_private();
    let k = module.kernel(crate::launch::tests::fails_foreign).unwrap();
    let x = ctx.alloc_zeros::<u32>(16).unwrap();
    let s = ctx.new_stream().unwrap();
    {
        let g = ctx.new_graph("ffi").unwrap();
        g.add_kernel(
            &[],
            &k,
            LaunchConfig::for_elements(16).unwrap(),
            (g.buffer(&x),),
        )
        .unwrap();
        g.instantiate().unwrap().launch(&s).unwrap();
    }
    match s.synchronize() {
        Err(Error::ForeignCallFailed {
            function, kernel, ..
        }) => {
            assert_eq!(function, "mul_f32_f32");
            assert_eq!(
                kernel.as_deref(),
                Some("fails_foreign (kernel node of graph \"ffi\")")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn capture_records_launches_and_copies_without_running_them() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut z = ctx.htod_copy(&[5.0f32; N]).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let g = s
            .capture("captured", |c| {
                let (yb, zb) = (c.buffer_mut(&mut y), c.buffer_mut(&mut z));
                c.memset_zeros(yb)?;
                c.launch(&k, cfg, (2.0f32, &x, yb))?;
                c.launch(&k, cfg, (1.0f32, &x, yb))?;
                c.memcpy_dtod(zb, yb)?;
                assert_eq!(c.len(), 4);
                Ok(())
            })
            .unwrap();
        assert_eq!(g.len(), 4);
        assert!(!s.is_capturing());
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![3.0f32; N]);
    assert_eq!(z.to_host_vec().unwrap(), vec![3.0f32; N]);
}

#[test]
fn capture_refuses_synchronization_and_ordinary_work_and_goes_on() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(8).unwrap();
    let s = ctx.new_stream().unwrap();
    let s2 = s.clone();
    let homed_on_s = s.alloc_zeros::<f32>(8).unwrap();
    let cfg = LaunchConfig::for_elements(8).unwrap();
    let refused = |e: Error| match e {
        Error::StreamCapturing { operation } => operation,
        e => panic!("unexpected {e}"),
    };
    let g = s
        .capture("refusals", |c| {
            let yb = c.buffer_mut(&mut y);
            c.launch(&k, cfg, (1.0f32, &x, yb))?;
            assert!(s2.is_capturing());
            assert_eq!(
                refused(s2.synchronize().unwrap_err()),
                "Stream::synchronize"
            );
            assert_eq!(refused(s2.query().unwrap_err()), "Stream::query");
            let e = s2.launch(&k, cfg, (1.0f32, &x, &mut other)).unwrap_err();
            assert_eq!(refused(e), "Stream::launch");
            let e = s2.memcpy_htod(&mut other, &[0.0f32; 8]).unwrap_err();
            assert_eq!(refused(e), "a stream-ordered use of a buffer");
            let mut host = [0.0f32; 8];
            let e = s2.memcpy_dtoh(&mut host, &other).unwrap_err();
            assert_eq!(refused(e), "a stream-ordered use of a buffer");
            let e = crate::foreign::check(&s2).unwrap_err();
            assert_eq!(refused(e), "reading the foreign-call records");
            let e = s2.alloc_zeros::<f32>(4).unwrap_err();
            assert_eq!(refused(e), "Stream::alloc");
            let e = s2.capture("nested", |_| Ok(())).unwrap_err();
            assert_eq!(refused(e), "Stream::capture");
            // Dropped while its home stream captures: leaked, not freed into the capture.
            drop(homed_on_s);
            // The capture goes on after the refusals.
            c.launch(&k, cfg, (1.0f32, &x, yb))
        })
        .unwrap();
    assert_eq!(g.len(), 2);
    let exec = g.instantiate().unwrap();
    exec.launch(&s).unwrap();
    drop(exec);
    drop(g);
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; 8]);
    // Nothing of the refused work ran, and the stream is usable again.
    s.launch(&k, cfg, (1.0f32, &x, &mut other)).unwrap();
    assert_eq!(other.to_host_vec().unwrap(), vec![1.0f32; 8]);
}

#[test]
fn a_failed_capture_leaves_the_stream_usable() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(8).unwrap();
    let e = s
        .capture("fails", |c| {
            c.launch(&k, cfg, (1.0f32, &x, c.buffer_mut(&mut y)))?;
            Err(Error::StreamCapturing { operation: "user" })
        })
        .unwrap_err();
    assert!(matches!(e, Error::StreamCapturing { operation: "user" }));
    assert!(!s.is_capturing());
    s.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap();
    s.synchronize().unwrap();
    assert_eq!(y.to_host_vec().unwrap(), vec![1.0f32; 8]);
}

#[test]
fn a_capture_reads_a_buffer_written_on_another_stream() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let writer = ctx.new_stream().unwrap();
    let reader = ctx.new_stream().unwrap();
    let mut x = ctx.alloc_zeros::<f32>(N).unwrap();
    writer.memcpy_htod(&mut x, &vec![4.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let g = reader
            .capture("reads x", |c| {
                c.launch(&k, cfg, (0.5f32, &x, c.buffer_mut(&mut y)))
            })
            .unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&reader).unwrap();
        reader.synchronize().unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; N]);
}

#[test]
fn a_foreign_failure_names_the_kernel_node_of_its_module() {
    let (ctx, m1) = sim_private();
    let m2 = ctx
        .load_module(crate::launch::tests::PTX.as_bytes())
        .unwrap();
    let fails = m1.kernel(crate::launch::tests::fails_foreign).unwrap();
    let k = m2.kernel(saxpy).unwrap();
    let flags = ctx.alloc_zeros::<u32>(16).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 16]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(16).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(16).unwrap();
    {
        let g = ctx.new_graph("two modules").unwrap();
        let yb = g.buffer_mut(&mut y);
        let a = g.add_kernel(&[], &k, cfg, (1.0f32, &x, yb)).unwrap();
        g.add_kernel(&[a], &fails, cfg, (g.buffer(&flags),))
            .unwrap();
        g.add_kernel(&[], &k, cfg, (1.0f32, &x, yb)).unwrap();
        g.instantiate().unwrap().launch(&s).unwrap();
    }
    match s.synchronize() {
        Err(Error::ForeignCallFailed { kernel, .. }) => assert_eq!(
            kernel.as_deref(),
            Some("fails_foreign (kernel node of graph \"two modules\")")
        ),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; 16]);
}

#[test]
fn capture_records_pageable_and_pinned_host_copies() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let host_x: Vec<f32> = (0..N).map(|i| (i % 97) as f32).collect();
    let pinned_z = ctx.pinned_from_slice(&vec![7.0f32; N]).unwrap();
    let mut pinned_y = ctx.alloc_pinned::<f32>(N).unwrap();
    let mut host_z = vec![0.0f32; N];
    let mut x = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut z = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(N).unwrap();
    let s = ctx.new_stream().unwrap();
    let s2 = s.clone();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let (zin, yout) = (
            pinned_z.as_slice().unwrap(),
            pinned_y.as_mut_slice().unwrap(),
        );
        let g = s
            .capture("host copies", |c| {
                let (xb, yb, zb) = (
                    c.buffer_mut(&mut x),
                    c.buffer_mut(&mut y),
                    c.buffer_mut(&mut z),
                );
                c.memcpy_htod(xb, &host_x)?; // pageable
                c.memcpy_htod(zb, zin)?; // pinned
                c.launch(&k, cfg, (2.0f32, xb.read(), yb))?;
                // An ordinary copy borrows its host memory only for the call: refused, and
                // the capture goes on.
                let e = s2.memcpy_htod(&mut other, &host_x).unwrap_err();
                assert!(matches!(e, Error::StreamCapturing { .. }), "{e}");
                c.memcpy_dtoh(yout, yb)?; // pinned
                c.memcpy_dtoh(&mut host_z, zb) // pageable
            })
            .unwrap();
        assert_eq!(g.len(), 5);
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    }
    let want: Vec<f32> = host_x.iter().map(|v| 4.0 * v).collect();
    assert_eq!(pinned_y.as_slice().unwrap(), want.as_slice());
    assert_eq!(host_z, vec![7.0f32; N]);
    // The stream is usable after the capture.
    s.memcpy_htod(&mut other, &host_x).unwrap();
    assert_eq!(other.to_host_vec().unwrap(), host_x);
}

#[test]
fn a_graph_never_reads_or_writes_freed_memory() {
    // The simulator twin of the GPU test: the instantiation's drop and the buffer's drop come
    // after the launches' work; a new allocation is never written by them.
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let s = ctx.new_stream().unwrap();
    for _ in 0..3 {
        let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
        {
            let g = ctx.new_graph("long").unwrap();
            let yb = g.buffer_mut(&mut y);
            let cfg = LaunchConfig::for_elements(N).unwrap();
            let a = g.add_kernel(&[], &k, cfg, (1.0f32, &x, yb)).unwrap();
            g.add_kernel(&[a], &k, cfg, (1.0f32, &x, yb)).unwrap();
            let exec = g.instantiate().unwrap();
            exec.launch(&s).unwrap();
        }
        assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; N]);
        drop(y);
        let fresh = ctx.alloc_zeros::<f32>(N).unwrap();
        s.synchronize().unwrap();
        assert_eq!(fresh.to_host_vec().unwrap(), vec![0.0f32; N]);
    }
}

#[test]
fn programmatic_edges_join_kernel_dependencies_and_keep_later_nodes_ordered_after_both() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let mut z = ctx.alloc_zeros::<f32>(8).unwrap();
    {
        let g = ctx.new_graph("programmatic").unwrap();
        let (xb, yb, zb) = (g.buffer(&x), g.buffer_mut(&mut y), g.buffer_mut(&mut z));
        let cfg = LaunchConfig::for_elements(8).unwrap();
        // SAFETY: the simulator runs a programmatic dependent after its dependency completes,
        // so `saxpy` (which never waits) cannot overlap it there.
        let dependent = unsafe { cfg.programmatic_dependent() };
        let empty = g.add_empty(&[]).unwrap();
        // p writes y; q reads y and writes z, programmatic after p (and after the empty node,
        // which no programmatic edge can leave: a full edge).
        let p = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        let q = g
            .add_kernel(&[p, empty], &k, dependent, (1.0f32, yb.read(), zb))
            .unwrap();
        // r writes y: y's uses of p and q both conflict; q's completion does not imply p's,
        // so r needs its own edge to p although q read (and p wrote) the same bytes.
        let r = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        // s writes z after q wrote it; q wrote z over nothing of p's.
        let s = g.add_kernel(&[], &k, cfg, (1.0f32, xb, zb)).unwrap();
        {
            let st = g.inner.lock();
            let sorted = |n: usize| {
                let mut d = st.nodes[n].deps.clone();
                d.sort();
                d
            };
            assert_eq!(sorted(q.index()), vec![empty.index(), p.index()]);
            assert_eq!(st.nodes[q.index()].programmatic, vec![p.index()]);
            assert_eq!(sorted(r.index()), vec![p.index(), q.index()]);
            assert!(st.nodes[r.index()].programmatic.is_empty());
            assert_eq!(sorted(s.index()), vec![q.index()]);
        }
        // A full edge where a programmatic one exists: refused by name.
        let e = g.add_dependency(p, q).unwrap_err();
        assert!(e.to_string().contains("programmatic"), "{e}");
        let exec = g.instantiate().unwrap();
        let st = ctx.new_stream().unwrap();
        exec.launch(&st).unwrap();
        st.synchronize().unwrap();
    }
    // y = 1 + 0 then + 1 (r), z = y after p (1) + 0, then + 1 (s).
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0; 8]);
    assert_eq!(z.to_host_vec().unwrap(), vec![2.0; 8]);
}

#[test]
fn a_programmatic_node_s_new_arguments_are_checked_against_what_it_overlaps() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let mut z = ctx.alloc_zeros::<f32>(8).unwrap();
    let mut w = ctx.alloc_zeros::<f32>(8).unwrap();
    let cfg = LaunchConfig::for_elements(8).unwrap();
    // SAFETY: as above.
    let dependent = unsafe { cfg.programmatic_dependent() };
    let g = ctx.new_graph("programmatic update").unwrap();
    let (xb, yb, zb, wb) = (
        g.buffer(&x),
        g.buffer_mut(&mut y),
        g.buffer_mut(&mut z),
        g.buffer_mut(&mut w),
    );
    // a writes w; b (programmatic after a) writes y; c (full after b) writes z.
    let a = g.add_kernel(&[], &k, cfg, (1.0f32, xb, wb)).unwrap();
    let b = g.add_kernel(&[a], &k, dependent, (1.0f32, xb, yb)).unwrap();
    let c = g.add_kernel(&[b], &k, cfg, (1.0f32, xb, zb)).unwrap();
    let exec = g.instantiate().unwrap();
    // c given w to write: b's completion does not imply a's, so c and a are unordered.
    let r = exec.set_kernel_args(c, &k, cfg, (1.0f32, xb, wb));
    assert!(
        matches!(r, Err(Error::UnorderedGraphUpdate { other: 0, .. })),
        "{r:?}"
    );
    // b given w: its programmatic dependency, which its contract covers.
    exec.set_kernel_args(b, &k, dependent, (1.0f32, xb, wb))
        .unwrap();
    let _ = a;
}
