//! Misuse of the Hopper device features that hangs or misbehaves on the GPU is an error in
//! the simulator, naming the wait or the operation: a cluster barrier that cannot complete,
//! `grid::sync` outside a cooperative launch, an `mbarrier` phase whose arrivals never come,
//! a rank outside the cluster, a TMA multicast into a block whose `mbarrier` is not yet
//! initialised.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::misuse::{
    cluster_barrier_deadlock, grid_sync_anywhere, map_rank, mbarrier_missing_arrival,
    multicast_before_peer_init,
};
use ffi_examples_hopper_kernels::{MC_SLICE_ROWS, tma_multicast_tiles};
use gpukernel_runtime::{
    Context, Device, Error, GridBarrierWord, LaunchConfig, Module, Swizzle, TensorMap2D,
};

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

/// The rule of TMA multicast: every destination block initialises its `mbarrier`, fences it
/// (`fence.mbarrier_init.release.cluster`) and arrives at a cluster barrier before any block
/// multicasts into it. A multicast issued before the peer's initialisation (ordered so by a
/// cluster barrier between them, so it happens on every run) completes its bytes on a word that
/// is not a barrier yet: undefined on the GPU (the later `init` erases the bytes and the peer
/// waits forever), an error naming the completion in the simulator. The same exchange with the
/// cluster barrier between the initialisations and the copies passes, launch after launch.
#[test]
fn a_multicast_before_the_peer_initialised_its_mbarrier_is_reported() {
    let (ctx, md) = sim();
    let rows = 4 * 2 * MC_SLICE_ROWS as usize;
    let src: Vec<f32> = (0..rows * 32).map(|i| i as f32).collect();
    let ds = ctx.htod_copy(&src).unwrap();
    let map = TensorMap2D::new(
        &ctx,
        &ds,
        [rows as u64, 32],
        32,
        [MC_SLICE_ROWS, 32],
        Swizzle::None,
    )
    .unwrap();
    let s = ctx.default_stream();
    let bad = md.kernel(multicast_before_peer_init).unwrap();
    let mut flags = ctx.alloc_zeros::<u32>(2 * 32).unwrap();
    // SAFETY: the simulator; a 2D f32 map with 8 × 32 boxes; clusters of two.
    let msg = fault_message(unsafe {
        s.launch_unchecked(
            &bad,
            LaunchConfig::new(2, 32).with_cluster(2),
            (map.param(), &mut flags),
        )
    });
    assert!(
        msg.contains("a bulk copy's completion on an mbarrier that was not initialised"),
        "{msg}"
    );
    let good = md.kernel(tma_multicast_tiles).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(8 * 512).unwrap();
    for _ in 0..20 {
        // SAFETY: a 2D f32 map of 32 columns with 8 × 32 boxes; clusters of 2 along x; `out`
        // has 8 · 2 · 256 elements.
        unsafe {
            s.launch_unchecked(
                &good,
                LaunchConfig::new(8, 32).with_cluster(2),
                (map.param(), 3u32, &mut out),
            )
        }
        .unwrap();
        let got = out.to_host_vec().unwrap();
        for b in 0..8 {
            let c = b / 2;
            assert_eq!(&got[b * 512..(b + 1) * 512], &src[c * 512..(c + 1) * 512]);
        }
    }
}
