//! Runtime entry points reached from a graph host node are refused with
//! `Error::CallInHostFunction` (see also misuse_host_node.rs), and drops inside a host node
//! (which cannot return an error) neither call the backend nor wait for the work running the
//! host node. Each case runs on a worker with a time limit.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Context, Device, Error, LaunchConfig};
use gpukernel_tests::plain_kernels;

const N: usize = 256;

/// `None` when `f` did not return within `secs`.
fn with_time_limit<T: Send + 'static>(
    secs: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => Some(v),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the worker panicked"),
    }
}

fn sim() -> Context {
    Device::simulator().primary_context().unwrap()
}

type Calls = Arc<Mutex<Vec<(&'static str, String)>>>;

fn describe<T>(r: gpukernel_runtime::Result<T>) -> String {
    match r {
        Ok(_) => "Ok".to_owned(),
        Err(Error::CallInHostFunction { .. }) => "CallInHostFunction".to_owned(),
        Err(e) => format!("other error: {e}"),
    }
}

/// Entry points that reach the backend (module lookups, events, occupancy, attributes) called
/// from a host node: each must give `CallInHostFunction`.
#[test]
fn backend_calls_from_a_host_node_are_refused() {
    for (name, ctx) in gpukernel_tests::devices() {
        backend_calls_refused_on(&name, ctx);
    }
}

fn backend_calls_refused_on(name: &str, ctx: Context) {
    let calls: Calls = Arc::default();
    let c2 = calls.clone();
    let done = with_time_limit(60, move || {
        let module = plain_kernels(&ctx);
        let stream = ctx.new_stream().unwrap();
        let ev = ctx.new_event().unwrap();
        let ev2 = ctx.new_event().unwrap();
        ev.record(&stream).unwrap();
        ev2.record(&stream).unwrap();
        stream.synchronize().unwrap();
        let graph = ctx.new_graph("host calls").unwrap();
        {
            let (ctx, stream, calls) = (ctx.clone(), stream.clone(), c2.clone());
            graph
                .add_host(&[], move || {
                    let mut c = calls.lock().unwrap();
                    c.push(("Module::kernel", describe(module.kernel(saxpy))));
                    c.push(("Module::function", describe(module.function("saxpy"))));
                    c.push(("Context::new_event", describe(ctx.new_event())));
                    c.push(("Event::elapsed_ms", describe(ev.elapsed_ms(&ev2))));
                    c.push(("Stream::wait_event", describe(stream.wait_event(&ev))));
                    c.push(("Stream::record_event", describe(stream.record_event(&ev2))));
                    c.push((
                        "Stream::wait_stream",
                        describe(stream.wait_stream(&ctx.default_stream())),
                    ));
                    c.push(("Stream::query", describe(stream.query())));
                    c.push((
                        "Context::new_stream_with_priority",
                        describe(ctx.new_stream_with_priority(0)),
                    ));
                    c.push(("Context::htod_copy", describe(ctx.htod_copy(&[1u8; 4]))));
                    if let Ok(f) = module.function("saxpy") {
                        c.push((
                            "Function::optimal_block_size",
                            describe(f.optimal_block_size(0)),
                        ));
                        c.push((
                            "Function::set_max_dynamic_shared_bytes",
                            describe(f.set_max_dynamic_shared_bytes(0)),
                        ));
                    }
                })
                .unwrap();
        }
        let exec = graph.instantiate().unwrap();
        exec.launch(&stream).unwrap();
        stream.synchronize().unwrap();
    });
    assert!(done.is_some(), "{name}: the host node's calls hung");
    let calls = calls.lock().unwrap();
    assert!(!calls.is_empty(), "{name}: the host node did not run");
    let mut not_refused = Vec::new();
    for (what, r) in calls.iter() {
        if r != "CallInHostFunction" {
            not_refused.push(format!("{what} -> {r}"));
        }
    }
    assert!(
        not_refused.is_empty(),
        "{name}: calls inside a host node not refused: {not_refused:?}"
    );
}

/// A module whose kernel was launched, dropped inside a host node: its drop synchronizes the
/// context (module.rs `ModuleInner::drop`) from inside work of that context.
#[test]
fn dropping_a_launched_module_in_a_host_node_does_not_hang() {
    // On a GPU (`--features gpu`) the drop's context synchronization runs on the driver's
    // callback thread, inside the host function it would wait for.
    for (name, ctx) in gpukernel_tests::devices() {
        let done = with_time_limit(30, move || {
            let module = plain_kernels(&ctx);
            let stream = ctx.new_stream().unwrap();
            {
                let k = module.kernel(saxpy).unwrap();
                let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
                let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
                stream
                    .launch(
                        &k,
                        LaunchConfig::for_elements(N).unwrap(),
                        (2.0f32, &x, &mut y),
                    )
                    .unwrap();
            }
            let mut held = Some(module);
            let graph = ctx.new_graph("drop module").unwrap();
            graph
                .add_host(&[], move || {
                    drop(held.take());
                })
                .unwrap();
            let exec = graph.instantiate().unwrap();
            exec.launch(&stream).unwrap();
            stream.synchronize().unwrap();
        });
        assert!(
            done.is_some(),
            "dropping a launched module in a host node on {name} hung for 30 s"
        );
    }
}

/// A buffer whose home is the stream running the graph, dropped inside a host node: its drop
/// orders its free on that stream (tracker `join_for_drop`) from inside that stream's work.
#[test]
fn dropping_a_buffer_in_a_host_node_does_not_hang() {
    let done = with_time_limit(30, || {
        let ctx = sim();
        let stream = ctx.new_stream().unwrap();
        let buf = stream.htod_copy(&[1.0f32; N]).unwrap();
        let other = ctx.new_stream().unwrap();
        let mut copy = other.alloc_zeros::<f32>(N).unwrap();
        copy.copy_from_device(&buf).unwrap();
        let mut held = Some((buf, copy));
        let graph = ctx.new_graph("drop buffer").unwrap();
        graph
            .add_host(&[], move || {
                drop(held.take());
            })
            .unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch(&stream).unwrap();
        stream.synchronize().unwrap();
        ctx.synchronize().unwrap();
    });
    assert!(
        done.is_some(),
        "dropping a buffer in a host node hung for 30 s"
    );
}

/// A stream and an event dropped inside a host node.
#[test]
fn dropping_a_stream_and_event_in_a_host_node_does_not_hang() {
    let done = with_time_limit(30, || {
        let ctx = sim();
        let stream = ctx.new_stream().unwrap();
        let s2 = ctx.new_stream().unwrap();
        let ev = ctx.new_event().unwrap();
        ev.record(&s2).unwrap();
        let _b = s2.alloc_zeros::<u8>(16).unwrap();
        let mut held = Some((s2, ev));
        let graph = ctx.new_graph("drop stream").unwrap();
        graph
            .add_host(&[], move || {
                drop(held.take());
            })
            .unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch(&stream).unwrap();
        stream.synchronize().unwrap();
    });
    assert!(
        done.is_some(),
        "dropping a stream and an event in a host node hung for 30 s"
    );
}
