//! Event record / wait nodes and child graph nodes on the simulator.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::LaunchConfig;
use crate::error::Error;
use crate::launch::tests::{saxpy, sim};

const N: usize = 256;

#[test]
fn a_child_graph_runs_in_its_parent_at_each_launch_as_it_was_when_added() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let parent = ctx.new_graph("parent").unwrap();
        let (xb, yb) = (parent.buffer(&x), parent.buffer_mut(&mut y));
        let zero = parent.add_memset_zeros(&[], yb).unwrap();
        let child = ctx.new_graph("child").unwrap();
        let a = child.add_kernel(&[], &k, cfg, (2.0f32, xb, yb)).unwrap();
        let c = calls.clone();
        child
            .add_host(&[a], move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        // Both child nodes write y: ordered after the memset and after each other.
        let first = parent.add_child(&[], &child).unwrap();
        let second = parent.add_child(&[], &child).unwrap();
        {
            let st = parent.inner.lock();
            assert_eq!(st.nodes[first.index()].deps, vec![zero.index()]);
            assert_eq!(st.nodes[second.index()].deps, vec![first.index()]);
        }
        // Added to the child later: not in the parent's copies.
        child.add_kernel(&[], &k, cfg, (100.0f32, xb, yb)).unwrap();
        drop(child); // the parent keeps the copies' arguments and closures
        let exec = parent.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        for _ in 0..3 {
            exec.launch(&s).unwrap();
        }
        s.synchronize().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    assert_eq!(y.to_host_vec().unwrap(), vec![4.0; N]);
}

#[test]
fn children_nest_and_order_against_the_parents_nodes() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut host = vec![0.0f32; N];
    {
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let top = ctx.new_graph("top").unwrap();
        let (xb, yb) = (top.buffer(&x), top.buffer_mut(&mut y));
        let inner = ctx.new_graph("inner").unwrap();
        inner.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
        let middle = ctx.new_graph("middle").unwrap();
        middle.add_child(&[], &inner).unwrap();
        middle.add_kernel(&[], &k, cfg, (10.0f32, xb, yb)).unwrap();
        top.add_child(&[], &middle).unwrap();
        // Reads y: ordered after the child that writes it, with no explicit dependency.
        let down = top.add_memcpy_dtoh(&[], &mut host, yb).unwrap();
        assert_eq!(top.inner.lock().nodes[down.index()].deps, vec![0]);
        drop((inner, middle));
        let exec = top.instantiate().unwrap();
        exec.launch(&ctx.default_stream()).unwrap();
        exec.launch(&ctx.default_stream()).unwrap();
    }
    assert_eq!(host, vec![22.0; N]);
}

#[test]
fn a_child_graph_is_refused_where_cuda_refuses_it() {
    let (ctx, _module) = sim();
    let g = ctx.new_graph("g").unwrap();
    let e = g.add_child(&[], &g).unwrap_err();
    assert!(
        matches!(&e, Error::ChildGraphRefused { child, graph, .. } if child == "g" && graph == "g"),
        "{e}"
    );

    let conditional = ctx.new_graph("has a handle").unwrap();
    conditional.conditional_handle(true).unwrap();
    let e = g.add_child(&[], &conditional).unwrap_err();
    assert!(
        matches!(&e, Error::ChildGraphRefused { reason, .. } if reason.contains("conditional")),
        "{e}"
    );

    let cyclic = ctx.new_graph("cyclic").unwrap();
    let (a, b) = (
        cyclic.add_empty(&[]).unwrap(),
        cyclic.add_empty(&[]).unwrap(),
    );
    cyclic.add_dependency(a, b).unwrap();
    cyclic.add_dependency(b, a).unwrap();
    let e = g.add_child(&[], &cyclic).unwrap_err();
    assert!(
        matches!(&e, Error::GraphCycle { graph, .. } if graph == "cyclic"),
        "{e}"
    );

    let other = ctx.new_graph("other").unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    let child = ctx.new_graph("child").unwrap();
    child.add_empty(&[]).unwrap();
    let e = g.add_child(&[foreign], &child).unwrap_err();
    assert!(matches!(e, Error::ForeignGraphNode { .. }), "{e}");

    // In a conditional body: a body cannot be a child, and a child cannot hold a host node.
    let with_host = ctx.new_graph("with host").unwrap();
    with_host.add_host(&[], || {}).unwrap();
    let cond = g.conditional_handle(false).unwrap();
    let mut results = Vec::new();
    g.add_if(&[], cond, |body| {
        results.push(g.add_child(&[], body).map(drop));
        results.push(body.add_child(&[], &with_host).map(drop));
        results.push(body.add_child(&[], &child).map(drop));
        Ok(())
    })
    .unwrap();
    assert!(matches!(results[0], Err(Error::ChildGraphRefused { .. })));
    assert!(
        matches!(&results[1], Err(Error::ConditionalBody { reason, .. }) if reason.contains("host")),
        "{:?}",
        results[1]
    );
    assert!(results[2].is_ok());
    // Nothing was added by the refusals: the graph still instantiates.
    drop(g.instantiate().unwrap());
}

#[test]
fn event_nodes_record_and_wait_at_each_launch() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let (start, end) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
    assert!(matches!(
        start.elapsed_ms(&end),
        Err(Error::EventNotRecorded { .. })
    ));
    {
        let g = ctx.new_graph("timed").unwrap();
        let (xb, yb) = (g.buffer(&x), g.buffer_mut(&mut y));
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let a = g.add_event_record(&[], &start).unwrap();
        let kn = g.add_kernel(&[a], &k, cfg, (3.0f32, xb, yb)).unwrap();
        let b = g.add_event_record(&[kn], &end).unwrap();
        let w = g.add_event_wait(&[b], &end).unwrap();
        assert_eq!(g.inner.lock().nodes[w.index()].deps, vec![b.index()]);
        let exec = g.instantiate().unwrap();
        let s = ctx.new_stream().unwrap();
        exec.launch(&s).unwrap();
        // Recorded by the nodes: the time between them is measurable.
        assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
        end.synchronize().unwrap();
        // Another stream waits for the graph's record.
        ctx.new_stream().unwrap().wait_event(&end).unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![3.0; N]);
}

#[test]
fn event_nodes_are_refused_in_a_conditional_body() {
    let (ctx, _module) = sim();
    let ev = ctx.new_event().unwrap();
    let g = ctx.new_graph("g").unwrap();
    let cond = g.conditional_handle(true).unwrap();
    let mut results = Vec::new();
    g.add_while(&[], cond, |body| {
        results.push(body.add_event_record(&[], &ev).map(drop));
        results.push(body.add_event_wait(&[], &ev).map(drop));
        Ok(())
    })
    .unwrap();
    for r in results {
        assert!(
            matches!(&r, Err(Error::ConditionalBody { reason, .. }) if reason.contains("event")),
            "{r:?}"
        );
    }
    // A graph holding an event node cannot be the child of a node in a body.
    let with_event = ctx.new_graph("with event").unwrap();
    with_event.add_event_record(&[], &ev).unwrap();
    let h = ctx.new_graph("h").unwrap();
    let c = h.conditional_handle(false).unwrap();
    let mut r = None;
    h.add_if(&[], c, |body| {
        r = Some(body.add_child(&[], &with_event).map(drop));
        Ok(())
    })
    .unwrap();
    assert!(
        matches!(r, Some(Err(Error::ConditionalBody { .. }))),
        "{r:?}"
    );
}

#[test]
fn whole_graph_update_takes_new_events_and_children_of_the_same_shape() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let (e1, e2) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
    {
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let anchor = ctx.new_graph("buffers").unwrap();
        let (xb, yb) = (anchor.buffer(&x), anchor.buffer_mut(&mut y));
        let build = |a: f32, ev, extra: bool| {
            let child = ctx.new_graph("child").unwrap();
            child.add_kernel(&[], &k, cfg, (a, xb, yb)).unwrap();
            if extra {
                child.add_empty(&[]).unwrap();
            }
            let g = ctx.new_graph("v").unwrap();
            let c = g.add_child(&[], &child).unwrap();
            g.add_event_record(&[c], ev).unwrap();
            g
        };
        let v1 = build(1.0, &e1, false);
        let v2 = build(10.0, &e2, false);
        let v3 = build(1.0, &e1, true);
        let mut exec = v1.instantiate().unwrap();
        let s = ctx.default_stream();
        exec.launch(&s).unwrap(); // y = 1
        exec.update(&v2).unwrap();
        exec.launch(&s).unwrap(); // y = 11, e2 recorded
        e2.synchronize().unwrap();
        let e = exec.update(&v3).unwrap_err();
        assert!(
            matches!(&e, Error::GraphUpdateRefused { graph, reason } if graph == "v" && reason.contains("child")),
            "{e}"
        );
        exec.launch(&s).unwrap(); // unchanged: y = 21
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![21.0; N]);
}
