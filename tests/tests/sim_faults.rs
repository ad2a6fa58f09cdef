//! The simulator's faults in kernels that call foreign code: a foreign function waiting at
//! `__syncthreads()` while another thread of its block panics, and a warp operation in
//! foreign code whose mask leaves out the calling lane. Each launch must fail with a
//! `SimulatorFault` naming the kernel, block and thread, without unwinding through the
//! foreign frames (which would be undefined), and the process must go on to run later
//! launches correctly.

use std::sync::atomic::Ordering;

use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use gpukernel_tests::sim_faults::{
    DROPPED, foreign_bad_shuffle, foreign_barrier, sim_ptx, tracked_live,
};

fn sim() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let module = ctx.load_module(sim_ptx().as_bytes()).unwrap();
    (ctx, module)
}

fn fault(e: Error) -> (String, [u32; 3], [u32; 3], String) {
    match e {
        Error::SimulatorFault {
            kernel,
            block,
            thread,
            message,
        } => (kernel, block, thread, message),
        other => panic!("expected a SimulatorFault, got: {other}"),
    }
}

/// One test: the counters of dropped and live objects are process-wide.
#[test]
fn faults_while_foreign_frames_wait_end_the_launch_without_unwinding_them() {
    let (ctx, module) = sim();
    let stream = ctx.new_stream().unwrap();
    let n = 64usize;
    let cfg = LaunchConfig::new(2, n as u32 / 2);
    let k = module.kernel(foreign_barrier).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(n).unwrap();

    // A clean launch first: every thread passes the foreign barrier.
    stream.launch(&k, cfg, (u32::MAX, &mut out)).unwrap();
    stream.synchronize().unwrap();
    let want: Vec<u32> = (0..n as u32).map(|i| i % (n as u32 / 2) + 1).collect();
    assert_eq!(out.to_host_vec().unwrap(), want);
    let live_before = tracked_live();
    let dropped_before = DROPPED.load(Ordering::Relaxed);

    // Thread 5 panics while the threads before it wait at `__syncthreads()` in foreign code.
    let e = stream.launch(&k, cfg, (5u32, &mut out)).unwrap_err();
    let (kernel, _block, thread, message) = fault(e);
    assert_eq!(kernel, "foreign_barrier");
    assert_eq!(thread, [5, 0, 0]);
    assert!(message.contains("thread 5 fails on purpose"), "{message}");
    // The waiting threads' frames were discarded, not unwound: neither the foreign
    // function's C++ destructor nor the kernel's `Drop` ran.
    assert!(
        tracked_live() > live_before,
        "the waiting foreign frames were unwound"
    );
    assert_eq!(
        DROPPED.load(Ordering::Relaxed),
        dropped_before,
        "kernel frames above the foreign call were unwound"
    );

    // A misuse inside foreign code: a shuffle mask without the calling lane.
    let kb = module.kernel(foreign_bad_shuffle).unwrap();
    let e = stream
        .launch(&kb, LaunchConfig::new(1, 32), (&mut out,))
        .unwrap_err();
    let (kernel, block, thread, message) = fault(e);
    assert_eq!((kernel.as_str(), block), ("foreign_bad_shuffle", [0, 0, 0]));
    assert_eq!(thread, [0, 0, 0]);
    assert!(message.contains("not in the mask"), "{message}");

    // The process goes on: the same kernels run correctly afterwards.
    for _ in 0..3 {
        stream.launch(&k, cfg, (u32::MAX, &mut out)).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(out.to_host_vec().unwrap(), want);
    }
}
