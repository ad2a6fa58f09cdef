//! Misuse of the Hopper device features that hangs or misbehaves on the GPU is an error in
//! the simulator, naming the wait or the operation: a cluster barrier that cannot complete,
//! `grid::sync` outside a cooperative launch, an `mbarrier` phase whose arrivals never come,
//! a rank outside the cluster.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::misuse::{
    cluster_barrier_deadlock, grid_sync_anywhere, map_rank, mbarrier_missing_arrival,
};
use gpukernel_runtime::{Context, Device, Error, GridBarrierWord, LaunchConfig, Module};

fn sim() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    (ctx, md)
}

fn fault_message(r: gpukernel_runtime::Result<()>) -> String {
    match r {
        Err(Error::SimulatorFault { message, .. }) => message,
        other => panic!("expected a simulator fault, got {other:?}"),
    }
}

#[test]
fn a_cluster_barrier_that_cannot_complete_is_reported() {
    let (ctx, md) = sim();
    let k = md.kernel(cluster_barrier_deadlock).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(4 * 64).unwrap();
    for cfg in [
        LaunchConfig::new(4, 64).with_cluster(2),
        // Without clusters each block is a cluster of one: the same deadlock.
        LaunchConfig::new(4, 64),
    ] {
        let msg = fault_message(ctx.default_stream().launch(&k, cfg, (&mut out,)));
        assert!(
            msg.contains("the cluster barrier") && msg.contains("can never complete"),
            "{msg}"
        );
        assert!(msg.contains("waits at sync_threads"), "{msg}");
    }
}

#[test]
fn grid_sync_needs_a_cooperative_launch() {
    let (ctx, md) = sim();
    let k = md.kernel(grid_sync_anywhere).unwrap();
    let bar = GridBarrierWord::new(&ctx).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(2 * 32).unwrap();
    let s = ctx.default_stream();
    // SAFETY: the simulator reports the launch (checked below).
    let r = unsafe { s.launch_unchecked(&k, LaunchConfig::new(2, 32), (bar.param(), &mut out)) };
    let msg = fault_message(r);
    assert!(msg.contains("not cooperative"), "{msg}");
    // Cooperatively, it runs.
    // SAFETY: a cooperative launch; every thread calls `grid::sync` once.
    unsafe {
        s.launch_unchecked(
            &k,
            LaunchConfig::new(2, 32).cooperative(),
            (bar.param(), &mut out),
        )
    }
    .unwrap();
    assert_eq!(out.to_host_vec().unwrap(), vec![1; 64]);
}

#[test]
fn an_mbarrier_phase_that_never_completes_is_reported() {
    let (ctx, md) = sim();
    let k = md.kernel(mbarrier_missing_arrival).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(32).unwrap();
    let msg = fault_message(
        ctx.default_stream()
            .launch(&k, LaunchConfig::new(1, 32), (&mut out,)),
    );
    assert!(
        msg.contains("Mbarrier::wait_parity") && msg.contains("can never complete"),
        "{msg}"
    );
}

#[test]
fn a_rank_outside_the_cluster_stops_the_kernel() {
    let (ctx, md) = sim();
    let k = md.kernel(map_rank).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(2 * 32).unwrap();
    let s = ctx.default_stream();
    s.launch(
        &k,
        LaunchConfig::new(2, 32).with_cluster(2),
        (1u32, &mut out),
    )
    .unwrap();
    assert_eq!(out.to_host_vec().unwrap(), vec![0; 64]);
    let msg = fault_message(s.launch(
        &k,
        LaunchConfig::new(2, 32).with_cluster(2),
        (2u32, &mut out),
    ));
    assert!(
        msg.contains("index out of bounds: the len is 2 but the index is 2"),
        "{msg}"
    );
}
