//! A graph host node that calls the runtime: CUDA forbids CUDA calls in host functions, and the
//! simulator runs host nodes inline on the launching thread (a launch of the same graph from
//! its host node deadlocked). Every such call returns `Error::CallInHostFunction` on both
//! backends, nothing hangs, and the graph's own launch succeeds. Each case runs on a worker
//! thread with a time limit, so that a regression fails instead of hanging.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Context, Error, GraphExec, LaunchConfig};
use gpukernel_tests::{devices, plain_kernels};

const N: usize = 256;

/// Runs `f` on its own thread and fails if it does not return within a minute.
fn with_time_limit<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: hung for a minute"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the worker panicked"),
    }
}

type Calls = Arc<Mutex<Vec<(&'static str, gpukernel_runtime::Result<()>)>>>;

fn host_node_calls(ctx: Context) -> Vec<(&'static str, gpukernel_runtime::Result<()>)> {
    let module = plain_kernels(&ctx);
    let k = module.kernel(saxpy).unwrap();
    let stream = ctx.new_stream().unwrap();
    let calls: Calls = Arc::default();
    let exec_cell: Arc<OnceLock<GraphExec<'static>>> = Arc::default();
    let graph = ctx.new_graph("host calls").unwrap();
    {
        let (ctx, stream, calls, exec_cell) = (
            ctx.clone(),
            stream.clone(),
            calls.clone(),
            exec_cell.clone(),
        );
        let x = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
        graph
            .add_host(&[], move || {
                let cfg = LaunchConfig::for_elements(N).unwrap();
                let mut c = calls.lock().unwrap();
                c.push((
                    "Stream::launch",
                    stream.launch(&k, cfg, (2.0f32, &x, &mut y)),
                ));
                c.push(("DeviceBuffer::copy_from_host", y.copy_from_host(&[3.0; N])));
                c.push(("DeviceBuffer::to_host_vec", y.to_host_vec().map(drop)));
                c.push(("Stream::synchronize", stream.synchronize()));
                c.push(("Context::synchronize", ctx.synchronize()));
                c.push(("Context::alloc_zeros", ctx.alloc_zeros::<u8>(4).map(drop)));
                c.push(("Context::new_stream", ctx.new_stream().map(drop)));
                c.push(("Context::new_graph", ctx.new_graph("inner").map(drop)));
                c.push((
                    "Stream::capture",
                    stream.capture("inner", |_| Ok(())).map(drop),
                ));
                let exec = exec_cell.get().expect("set before the launch");
                c.push(("GraphExec::launch", exec.launch(&stream)));
            })
            .unwrap();
    }
    let exec = graph.instantiate().unwrap();
    let _ = exec_cell.set(exec);
    let exec = exec_cell.get().unwrap();
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    // The host node ran; the graph is usable afterwards.
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    let calls = calls.lock().unwrap();
    calls
        .iter()
        .map(|(what, r)| (*what, r.as_ref().map(|_| ()).map_err(clone_error)))
        .collect()
}

/// The variant and its message (errors are not `Clone`).
fn clone_error(e: &Error) -> Error {
    match e {
        Error::CallInHostFunction { operation } => Error::CallInHostFunction { operation },
        other => Error::InvalidCollective {
            operation: "unexpected error",
            reason: other.to_string(),
        },
    }
}

#[test]
fn runtime_calls_from_a_host_node_are_refused_not_hung() {
    for (name, ctx) in devices() {
        let calls = with_time_limit(format!("host node on {name}"), move || host_node_calls(ctx));
        // Two launches, ten calls each.
        assert_eq!(calls.len(), 20, "{name}: the host node ran twice");
        for (what, r) in calls {
            match r {
                Err(Error::CallInHostFunction { .. }) => {
                    let e = r.unwrap_err().to_string();
                    assert!(
                        e.contains("CUDA forbids CUDA calls in host functions")
                            && e.contains("hint:"),
                        "{name}: {what}: {e}"
                    );
                }
                other => panic!("{name}: {what} from a host node gave {other:?}"),
            }
        }
    }
}
