//! NCCL on one GPU (features `gpu` and `nccl`): a one-rank communicator runs every collective
//! through NCCL, ordered with the buffers' other streams. Two ranks on two GPUs: `gpu_peer.rs`.
//! Run with `NCCL_NVLS_ENABLE=0` (the GPU bundle's `run.sh` sets it).
#![cfg(feature = "nccl")]

#[path = "common/collective_graphs.rs"]
mod collective_graphs;
mod common;

use common::saxpy;
use gpukernel_runtime::collective::{self, Communicator, ReduceOp, UniqueId};
use gpukernel_runtime::{Error, LaunchConfig};

/// NCCL runs only with NVLink multicast off (`NCCL_NVLS_ENABLE=0`: shared machines); the
/// library never sets NCCL's environment, so the test insists on it.
fn multicast_off() {
    assert_eq!(
        std::env::var("NCCL_NVLS_ENABLE").as_deref(),
        Ok("0"),
        "run the NCCL tests with NCCL_NVLS_ENABLE=0 (the GPU bundle's run.sh sets it)"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn one_rank_runs_every_collective_through_nccl() {
    multicast_off();
    let (major, minor, patch) = collective::nccl_version().unwrap();
    println!("NCCL {major}.{minor}.{patch}");
    assert!(major >= 2);
    let ctx = common::gpu();
    let comms = Communicator::for_contexts(std::slice::from_ref(&ctx)).unwrap();
    let comm = &comms[0];
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    let s = ctx.new_stream().unwrap();
    let n = 1 << 20;
    let data: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let x = ctx.htod_copy(&data).unwrap();
    for op in [
        ReduceOp::Sum,
        ReduceOp::Avg,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
    ] {
        let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
        comm.all_reduce(&s, &x, &mut y, op).unwrap();
        assert!(y.to_host_vec().unwrap() == data, "{op:?}");
    }
    let mut b = ctx.alloc_zeros::<f32>(n).unwrap();
    comm.broadcast(&s, &x, &mut b, 0).unwrap();
    assert!(b.to_host_vec().unwrap() == data);
    let mut g = ctx.alloc_zeros::<f32>(n).unwrap();
    comm.all_gather(&s, &x, &mut g).unwrap();
    assert!(g.to_host_vec().unwrap() == data);
    let mut r = ctx.alloc_zeros::<f32>(n).unwrap();
    comm.reduce_scatter(&s, &x, &mut r, ReduceOp::Sum).unwrap();
    assert!(r.to_host_vec().unwrap() == data);
    // Inside a group, integers, in place.
    let mut ints = ctx.htod_copy(&[7i64, -3, i64::MAX]).unwrap();
    collective::group(|grp| grp.all_reduce_in_place(comm, &s, &mut ints, ReduceOp::Sum)).unwrap();
    assert_eq!(ints.to_host_vec().unwrap(), vec![7, -3, i64::MAX]);
    // Argument errors come before NCCL sees anything.
    let e = comm.broadcast_in_place(&s, &mut b, 1).unwrap_err();
    assert!(matches!(e, Error::InvalidCollective { .. }), "{e}");
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_collective_waits_for_a_kernel_on_another_stream() {
    multicast_off();
    let ctx = common::gpu();
    let comms = Communicator::for_contexts(std::slice::from_ref(&ctx)).unwrap();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let n = 1 << 24;
    let x = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
    let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let cfg = LaunchConfig::for_elements(n).unwrap();
    for _ in 0..20 {
        a.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap();
    }
    // On another stream, at once: the tracker makes `b` wait for the 20 launches.
    let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
    comms[0]
        .all_reduce(&b, &y, &mut out, ReduceOp::Sum)
        .unwrap();
    assert!(out.to_host_vec().unwrap().iter().all(|&v| v == 20.0));
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_unique_id_makes_a_one_rank_communicator() {
    multicast_off();
    let ctx = common::gpu();
    let id = UniqueId::new(&ctx).unwrap();
    let again = UniqueId::from_hex(&id.to_hex()).unwrap();
    assert_eq!(again.as_bytes(), id.as_bytes());
    let comm = Communicator::init_rank(&ctx, &again, 0, 1).unwrap();
    let mut v = ctx.htod_copy(&[1.5f64, 2.5]).unwrap();
    comm.all_reduce_in_place(&ctx.default_stream(), &mut v, ReduceOp::Sum)
        .unwrap();
    assert_eq!(v.to_host_vec().unwrap(), vec![1.5, 2.5]);
    // A simulator id on a GPU is refused by name.
    let sim = gpukernel_runtime::Device::simulator()
        .primary_context()
        .unwrap();
    let sim_id = UniqueId::new(&sim).unwrap();
    assert!(matches!(
        Communicator::init_rank(&ctx, &sim_id, 0, 1),
        Err(Error::InvalidCollective { .. })
    ));
}

/// NCCL captured into graphs on one GPU (a one-rank communicator): the child-graph form with
/// kernel arguments changed at each of 100 replays, and kernel, all-reduce, kernel in one
/// capture replayed 100 times. Two ranks: `gpu_peer.rs`.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_captured_all_reduce_replays_on_one_rank() {
    multicast_off();
    let ctx = common::gpu();
    collective_graphs::all_reduce_child_graph_replays(std::slice::from_ref(&ctx), 1 << 20, 100);
    collective_graphs::captured_step_replays(std::slice::from_ref(&ctx), 1 << 20, 100);
}
