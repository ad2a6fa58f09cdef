//! `GraphExec::set_kernel_args` may not re-point a node at memory that a node no edge orders
//! against it writes (or, writing, at memory such a node uses): an instantiated graph's edges
//! cannot change, so the update is refused (`Error::UnorderedGraphUpdate`) and the node keeps
//! its arguments. On every test device (the GPU too with the `gpu` feature, where the
//! unordered node was seen reading the buffer before its writer finished).

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Error, LaunchConfig};
use gpukernel_tests::{devices, plain_kernels};

const N: usize = 1 << 16;

fn assert_unordered(e: &Error, node: usize, other: usize) {
    match e {
        Error::UnorderedGraphUpdate {
            node: n, other: o, ..
        } => assert_eq!((*n, *o), (node, other), "{e}"),
        _ => panic!("expected UnorderedGraphUpdate, got {e:?}"),
    }
    let s = e.to_string();
    assert!(s.contains("no edge") && s.contains("hint:"), "{s}");
}

#[test]
fn pointing_a_node_at_the_buffer_an_unordered_node_writes_is_refused() {
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(saxpy).unwrap();
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let stream = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&vec![1.0f32; N]).unwrap();
        let mut y1 = ctx.htod_copy(&vec![10.0f32; N]).unwrap();
        let mut y2 = ctx.htod_copy(&vec![100.0f32; N]).unwrap();
        {
            let graph = ctx.new_graph("two writers").unwrap();
            let (xb, y1b, y2b) = (
                graph.buffer(&x),
                graph.buffer_mut(&mut y1),
                graph.buffer_mut(&mut y2),
            );
            // Node 0 writes y1, node 1 writes y2: nothing orders them.
            let n0 = graph.add_kernel(&[], &k, cfg, (2.0f32, xb, y1b)).unwrap();
            let n1 = graph.add_kernel(&[], &k, cfg, (1.0f32, xb, y2b)).unwrap();
            let exec = graph.instantiate().unwrap();
            // The case: node 1 reading what node 0 writes.
            let e = exec
                .set_kernel_args(n1, &k, cfg, (1.0f32, y1b.read(), y2b))
                .unwrap_err();
            assert_unordered(&e, n1.index(), n0.index());
            // Writing what node 0 writes.
            let e = exec
                .set_kernel_args(n1, &k, cfg, (1.0f32, xb, y1b))
                .unwrap_err();
            assert_unordered(&e, n1.index(), n0.index());
            // An edge added to the graph after instantiation orders nothing in `exec`.
            graph.add_dependency(n0, n1).unwrap();
            let e = exec
                .set_kernel_args(n1, &k, cfg, (1.0f32, y1b.read(), y2b))
                .unwrap_err();
            assert_unordered(&e, n1.index(), n0.index());
            // Updates that keep the nodes apart are accepted.
            exec.set_kernel_args(n1, &k, cfg, (3.0f32, xb, y2b))
                .unwrap();
            exec.launch(&stream).unwrap();
            stream.synchronize().unwrap();
        }
        // Both nodes kept or took only what was accepted.
        assert!(
            y1.to_host_vec().unwrap().iter().all(|&v| v == 12.0),
            "{name}"
        );
        assert!(
            y2.to_host_vec().unwrap().iter().all(|&v| v == 103.0),
            "{name}"
        );
    }
}

#[test]
fn an_ordered_node_may_be_pointed_at_its_predecessor_output() {
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(saxpy).unwrap();
        let cfg = LaunchConfig::for_elements(N).unwrap();
        let stream = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&vec![1.0f32; N]).unwrap();
        let mut y1 = ctx.htod_copy(&vec![10.0f32; N]).unwrap();
        let mut y2 = ctx.htod_copy(&vec![100.0f32; N]).unwrap();
        {
            let graph = ctx.new_graph("chain").unwrap();
            let (xb, y1b, y2b) = (
                graph.buffer(&x),
                graph.buffer_mut(&mut y1),
                graph.buffer_mut(&mut y2),
            );
            let n0 = graph.add_kernel(&[], &k, cfg, (2.0f32, xb, y1b)).unwrap();
            let n1 = graph.add_kernel(&[n0], &k, cfg, (1.0f32, xb, y2b)).unwrap();
            let exec = graph.instantiate().unwrap();
            // Node 1 runs after node 0: reading y1 is ordered.
            exec.set_kernel_args(n1, &k, cfg, (1.0f32, y1b.read(), y2b))
                .unwrap();
            exec.launch(&stream).unwrap();
            stream.synchronize().unwrap();
        }
        assert!(
            y1.to_host_vec().unwrap().iter().all(|&v| v == 12.0),
            "{name}"
        );
        // y2 = 1 * y1 + y2, with y1 already updated by node 0.
        assert!(
            y2.to_host_vec().unwrap().iter().all(|&v| v == 112.0),
            "{name}"
        );
    }
}
