//! Kernel faults (feature `gpu`). A fault leaves the process's context unusable, so each
//! scenario runs alone in a child process: this test binary, re-run on that one test.

mod common;

use std::process::Command;

use common::{gpu, write_null};
use gpukernel_runtime::{Error, LaunchConfig};

/// Set in the child process to the name of the test it runs.
const SCENARIO: &str = "GPUKERNEL_FAULT_SCENARIO";

/// Runs `scenario` if this process is the child for test `name`; else runs this binary on test
/// `name` alone in a child process and fails unless that test ran and passed.
fn isolated(name: &str, scenario: fn()) {
    if std::env::var(SCENARIO).as_deref() == Ok(name) {
        scenario();
        return;
    }
    let exe = std::env::current_exe().expect("path of this test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(SCENARIO, name)
        .output()
        .expect("re-running this test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- child `{name}` stdout:\n{stdout}\n--- child stderr:\n{stderr}");
    assert!(
        out.status.success(),
        "child `{name}` failed: {}",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "child `{name}` did not run exactly one passing test"
    );
}

/// Checks that `e` is the fault of `write_null`, reported by one of `calls`.
fn assert_fault_of_write_null(e: &Error, calls: &[&str]) {
    println!("{e}");
    match e {
        Error::KernelFault {
            call,
            error,
            last_launch,
        } => {
            assert!(
                calls.contains(call),
                "reported by {call}, expected one of {calls:?}"
            );
            assert_eq!(error.name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
            assert_eq!(error.code(), 700);
            assert!(!error.description().is_empty());
            assert_eq!(last_launch.as_deref(), Some("write_null"));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("last launch: `write_null`"), "{e}");
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn kernel_fault_names_the_launch() {
    isolated("kernel_fault_names_the_launch", || {
        let ctx = gpu();
        let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
        let k = common::kernel(&m, write_null).unwrap();
        let probe = ctx.alloc_zeros::<u32>(4).unwrap();
        ctx.synchronize().unwrap();
        let s = ctx.new_stream().unwrap();
        s.launch(&k, LaunchConfig::new(1, 1), ()).unwrap();
        let e = s.synchronize().unwrap_err();
        assert_fault_of_write_null(&e, &["cuStreamSynchronize"]);
        // The fault is sticky: every later call in the context reports it, whichever it is,
        // still naming the launch (made on another stream than the probe's).
        let e = probe.to_host_vec().unwrap_err();
        assert_fault_of_write_null(&e, &["cuMemcpyDtoHAsync", "cuStreamSynchronize"]);
        let e = s.launch(&k, LaunchConfig::new(1, 1), ()).unwrap_err();
        assert_fault_of_write_null(&e, &["cuLaunchKernel"]);
        let e = ctx.synchronize().unwrap_err();
        assert_fault_of_write_null(&e, &["cuCtxSynchronize"]);
    });
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn kernel_fault_first_seen_by_a_read_names_the_launch() {
    isolated("kernel_fault_first_seen_by_a_read_names_the_launch", || {
        let ctx = gpu();
        let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
        let k = common::kernel(&m, write_null).unwrap();
        let probe = ctx.alloc_zeros::<u32>(4).unwrap();
        ctx.synchronize().unwrap();
        // No synchronization in between: the read, ordered after the kernel on the same
        // stream, is the first call to see the fault (at the copy or at its wait).
        ctx.default_stream()
            .launch(&k, LaunchConfig::new(1, 1), ())
            .unwrap();
        let e = probe.to_host_vec().unwrap_err();
        assert_fault_of_write_null(&e, &["cuMemcpyDtoHAsync", "cuStreamSynchronize"]);
        let e = ctx.synchronize().unwrap_err();
        assert_fault_of_write_null(&e, &["cuCtxSynchronize"]);
    });
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_foreign_buffer_is_not_finalized_while_its_work_may_run() {
    isolated(
        "a_foreign_buffer_is_not_finalized_while_its_work_may_run",
        || {
            use std::sync::Arc;
            use std::sync::atomic::{AtomicBool, Ordering};

            use gpukernel_runtime::DeviceBuffer;

            let ctx = gpu();
            let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
            let k = common::kernel(&m, write_null).unwrap();
            let owner = ctx.alloc_zeros::<u32>(16).unwrap();
            let ran = Arc::new(AtomicBool::new(false));
            let flag = ran.clone();
            // SAFETY: `owner` is device memory of this context holding zeroed u32s; the
            // finalizer keeps it alive and is the only other holder.
            let mut foreign = unsafe {
                DeviceBuffer::<u32>::from_raw_parts_with_finalizer(
                    &ctx,
                    owner.device_ptr(),
                    16,
                    move || {
                        drop(owner);
                        flag.store(true, Ordering::SeqCst);
                    },
                )
            }
            .unwrap();
            let s = ctx.new_stream().unwrap();
            // Used on a stream whose next kernel faults: the wait at drop fails.
            s.memset_d8_async(&mut foreign, 0).unwrap();
            s.launch(&k, LaunchConfig::new(1, 1), ()).unwrap();
            drop(foreign);
            assert!(
                !ran.load(Ordering::SeqCst),
                "the finalizer ran although the wait for the buffer's work failed"
            );
        },
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_fault_in_a_graph_launch_names_the_graph_and_its_kernel_nodes() {
    isolated(
        "a_fault_in_a_graph_launch_names_the_graph_and_its_kernel_nodes",
        || {
            let ctx = gpu();
            let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
            let bad = common::kernel(&m, write_null).unwrap();
            let good = common::kernel(&m, common::saxpy).unwrap();
            let x = ctx.htod_copy(&[1.0f32; 32]).unwrap();
            let mut y = ctx.alloc_zeros::<f32>(32).unwrap();
            ctx.synchronize().unwrap();
            let s = ctx.new_stream().unwrap();
            let g = ctx.new_graph("faulty").unwrap();
            let yb = g.buffer_mut(&mut y);
            let a = g
                .add_kernel(&[], &good, LaunchConfig::new(1, 32), (1.0f32, &x, yb))
                .unwrap();
            g.add_kernel(&[a], &bad, LaunchConfig::new(1, 1), ())
                .unwrap();
            let exec = g.instantiate().unwrap();
            exec.launch(&s).unwrap();
            let e = s.synchronize().unwrap_err();
            println!("{e}");
            let want = "graph `faulty` (kernel nodes: saxpy, write_null)";
            match &e {
                Error::KernelFault {
                    call,
                    error,
                    last_launch,
                } => {
                    assert_eq!(*call, "cuStreamSynchronize");
                    assert_eq!(error.name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
                    assert_eq!(last_launch.as_deref(), Some(want));
                }
                other => panic!("unexpected {other}"),
            }
            assert!(e.to_string().contains(want), "{e}");
            // Sticky: a later launch of the graph reports it too, naming the graph.
            let e = exec.launch(&s).unwrap_err();
            assert!(e.to_string().contains("faulty"), "{e}");
            // The instantiation's drop waits on a faulted stream without panicking.
            drop(exec);
        },
    );
}
