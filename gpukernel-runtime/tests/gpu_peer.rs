//! Two GPUs (feature `gpu`): peer access, copies between the devices (direct and through host
//! memory), kernels on one device using the other's memory, and NCCL with two ranks (feature
//! `nccl`). With fewer than two GPUs every test here FAILS, never passes: the GPU bundle's
//! `run.sh` does not run this binary then, and reports it as skipped ("needs 2 GPUs"). Run with
//! `NCCL_NVLS_ENABLE=0`.

#[cfg(feature = "nccl")]
#[path = "common/collective_graphs.rs"]
mod collective_graphs;
mod common;

use common::saxpy;
use gpukernel_runtime::{Context, Device, Error, LaunchConfig};

/// NCCL runs only with NVLink multicast off (`NCCL_NVLS_ENABLE=0`: shared machines); the
/// library never sets NCCL's environment, so the test insists on it.
#[cfg(feature = "nccl")]
fn multicast_off() {
    assert_eq!(
        std::env::var("NCCL_NVLS_ENABLE").as_deref(),
        Ok("0"),
        "run the NCCL tests with NCCL_NVLS_ENABLE=0 (the GPU bundle's run.sh sets it)"
    );
}

fn two_gpus() -> (Context, Context) {
    let n = Device::count().expect("these tests need CUDA devices (feature `gpu`)");
    assert!(
        n >= 2,
        "needs 2 GPUs: found {n} (this test never passes on fewer)"
    );
    let c = |i| Device::get(i).unwrap().primary_context().unwrap();
    (c(0), c(1))
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn peer_access_copies_and_kernels_across_two_gpus() {
    let (c0, c1) = two_gpus();
    let m1 = c1.load_module(common::PTX.as_bytes()).unwrap();
    let k1 = common::kernel(&m1, saxpy).unwrap();
    let n = 10 << 20;
    let cfg = LaunchConfig::for_elements(n).unwrap();
    let data: Vec<f32> = (0..n).map(|i| (i % 4099) as f32).collect();
    let x0 = c0.htod_copy(&data).unwrap();

    // Before peer access: a kernel on GPU 1 cannot take GPU 0's buffer (named, with a hint),
    // and a copy goes through host memory.
    let mut y1 = c1.alloc_zeros::<f32>(n).unwrap();
    match c1.default_stream().launch(&k1, cfg, (1.0f32, &x0, &mut y1)) {
        Err(Error::ContextMismatch { hint: Some(h), .. }) => {
            assert!(h.contains("enable_peer_access"))
        }
        other => panic!("unexpected {other:?}"),
    }
    y1.copy_from_device(&x0).unwrap();
    assert!(y1.to_host_vec().unwrap() == data);

    let can01 = c0.can_access_peer(&c1).unwrap();
    let can10 = c1.can_access_peer(&c0).unwrap();
    println!("peer access 0 -> 1: {can01}, 1 -> 0: {can10}");
    if !can10 {
        assert!(matches!(
            c1.enable_peer_access(&c0),
            Err(Error::PeerAccessUnsupported { .. })
        ));
        return;
    }
    c1.enable_peer_access(&c0).unwrap();
    if can01 {
        c0.enable_peer_access(&c1).unwrap();
    }

    // A kernel on GPU 1 reads GPU 0's buffer, right after GPU 0's kernels wrote it on another
    // stream (the tracker orders GPU 1's stream after them through an event of GPU 0).
    let m0 = c0.load_module(common::PTX.as_bytes()).unwrap();
    let k0 = common::kernel(&m0, saxpy).unwrap();
    let ones = c0.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut w0 = c0.alloc_zeros::<f32>(n).unwrap();
    let s0 = c0.new_stream().unwrap();
    for _ in 0..10 {
        s0.launch(&k0, cfg, (1.0f32, &ones, &mut w0)).unwrap();
    }
    let mut z1 = c1.alloc_zeros::<f32>(n).unwrap();
    c1.new_stream()
        .unwrap()
        .launch(&k1, cfg, (2.0f32, &w0, &mut z1))
        .unwrap();
    assert!(z1.to_host_vec().unwrap().iter().all(|&v| v == 20.0));
    // ... and writes into GPU 0's memory.
    let x1 = c1.htod_copy(&vec![3.0f32; n]).unwrap();
    let mut out0 = c0.alloc_zeros::<f32>(n).unwrap();
    c1.default_stream()
        .launch(&k1, cfg, (1.0f32, &x1, &mut out0))
        .unwrap();
    assert!(out0.to_host_vec().unwrap().iter().all(|&v| v == 3.0));

    // Direct copies both ways, ordered after the writers on other streams.
    for _ in 0..10 {
        s0.launch(&k0, cfg, (1.0f32, &ones, &mut w0)).unwrap();
    }
    let mut d1 = c1.alloc_zeros::<f32>(n).unwrap();
    d1.copy_from_device(&w0).unwrap();
    assert!(d1.to_host_vec().unwrap().iter().all(|&v| v == 20.0));
    let mut d0 = c0.alloc_zeros::<f32>(n).unwrap();
    c0.default_stream().memcpy_dtod_async(&mut d0, &d1).unwrap();
    assert!(d0.to_host_vec().unwrap().iter().all(|&v| v == 20.0));
}

#[cfg(feature = "nccl")]
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_with_two_ranks_matches_the_host() {
    use gpukernel_runtime::collective::{self, Communicator, ReduceOp};
    multicast_off();
    let (c0, c1) = two_gpus();
    let ctxs = [c0, c1];
    let comms = Communicator::for_contexts(&ctxs).unwrap();
    let n = 1 << 22;
    // Each rank's input, made once: the host reference below indexes them n times.
    let inputs: Vec<Vec<f32>> = (0..2)
        .map(|r| (0..n).map(|i| (r + 1 + i % 7) as f32).collect())
        .collect();
    let streams: Vec<_> = ctxs.iter().map(|c| c.new_stream().unwrap()).collect();
    let sends: Vec<_> = (0..2)
        .map(|r| ctxs[r].htod_copy(&inputs[r]).unwrap())
        .collect();
    let mut sums: Vec<_> = ctxs
        .iter()
        .map(|c| c.alloc_zeros::<f32>(n).unwrap())
        .collect();
    let mut gathered: Vec<_> = ctxs
        .iter()
        .map(|c| c.alloc_zeros::<f32>(2 * n).unwrap())
        .collect();
    let mut scattered: Vec<_> = ctxs
        .iter()
        .map(|c| c.alloc_zeros::<f32>(n / 2).unwrap())
        .collect();
    let mut bcast: Vec<_> = (0..2)
        .map(|r| ctxs[r].htod_copy(&inputs[r]).unwrap())
        .collect();
    collective::group(|g| {
        for (r, (((sum, gat), sc), bc)) in sums
            .iter_mut()
            .zip(gathered.iter_mut())
            .zip(scattered.iter_mut())
            .zip(bcast.iter_mut())
            .enumerate()
        {
            g.all_reduce(&comms[r], &streams[r], &sends[r], sum, ReduceOp::Sum)?;
            g.all_gather(&comms[r], &streams[r], &sends[r], gat)?;
            g.reduce_scatter(&comms[r], &streams[r], &sends[r], sc, ReduceOp::Sum)?;
            g.broadcast_in_place(&comms[r], &streams[r], bc, 1)?;
        }
        Ok(())
    })
    .unwrap();
    let sum: Vec<f32> = inputs[0]
        .iter()
        .zip(&inputs[1])
        .map(|(a, b)| a + b)
        .collect();
    let all: Vec<f32> = inputs.concat();
    for r in 0..2 {
        assert!(sums[r].to_host_vec().unwrap() == sum, "all-reduce rank {r}");
        assert!(
            gathered[r].to_host_vec().unwrap() == all,
            "all-gather rank {r}"
        );
        assert!(
            scattered[r].to_host_vec().unwrap() == sum[r * n / 2..(r + 1) * n / 2],
            "reduce-scatter rank {r}"
        );
        assert!(
            bcast[r].to_host_vec().unwrap() == inputs[1],
            "broadcast rank {r}"
        );
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn one_link_loads_on_both_gpus() {
    let (c0, c1) = two_gpus();
    let mut linker = gpukernel_runtime::link::Linker::new(&c0).unwrap();
    linker.add_ptx(common::PTX, "test_kernels.ptx");
    let ms = linker.link_and_load_on(&[c0.clone(), c1.clone()]).unwrap();
    for (m, c) in ms.iter().zip([&c0, &c1]) {
        let k = common::kernel(m, saxpy).unwrap();
        let x = c.htod_copy(&vec![1.0f32; 256]).unwrap();
        let mut y = c.alloc_zeros::<f32>(256).unwrap();
        c.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(256).unwrap(),
                (4.0f32, &x, &mut y),
            )
            .unwrap();
        assert_eq!(y.to_host_vec().unwrap(), vec![4.0f32; 256]);
    }
}

/// One kind of collective per group, each checked against the host (`which`: 0 all-reduce,
/// 1 all-gather, 2 reduce-scatter, 3 broadcast from rank 1). The host reference is computed
/// from inputs made once: an earlier version rebuilt both n-element inputs for every element
/// of the reference (O(n²), n = 2^20), which looked like an NCCL hang on two GPUs while NCCL
/// had finished.
#[cfg(feature = "nccl")]
fn one_collective_on_two_ranks(which: usize) {
    use gpukernel_runtime::collective::{self, Communicator, ReduceOp};
    multicast_off();
    let (c0, c1) = two_gpus();
    let ctxs = [c0, c1];
    let comms = Communicator::for_contexts(&ctxs).unwrap();
    let n = 1 << 20;
    // Each rank's input, made once: the host reference below indexes them n times.
    let inputs: Vec<Vec<f32>> = (0..2)
        .map(|r| (0..n).map(|i| (r + 1 + i % 7) as f32).collect())
        .collect();
    let streams: Vec<_> = ctxs.iter().map(|c| c.new_stream().unwrap()).collect();
    let sends: Vec<_> = (0..2)
        .map(|r| ctxs[r].htod_copy(&inputs[r]).unwrap())
        .collect();
    let out_len = [n, 2 * n, n / 2, n][which];
    let mut outs: Vec<_> = (0..2)
        .map(|r| {
            if which == 3 {
                ctxs[r].htod_copy(&inputs[r]).unwrap()
            } else {
                ctxs[r].alloc_zeros::<f32>(out_len).unwrap()
            }
        })
        .collect();
    collective::group(|g| {
        for (r, out) in outs.iter_mut().enumerate() {
            match which {
                0 => g.all_reduce(&comms[r], &streams[r], &sends[r], out, ReduceOp::Sum)?,
                1 => g.all_gather(&comms[r], &streams[r], &sends[r], out)?,
                2 => g.reduce_scatter(&comms[r], &streams[r], &sends[r], out, ReduceOp::Sum)?,
                _ => g.broadcast_in_place(&comms[r], &streams[r], out, 1)?,
            }
        }
        Ok(())
    })
    .unwrap();
    let sum: Vec<f32> = inputs[0]
        .iter()
        .zip(&inputs[1])
        .map(|(a, b)| a + b)
        .collect();
    for (r, out) in outs.iter().enumerate() {
        let got = out.to_host_vec().unwrap();
        let want: Vec<f32> = match which {
            0 => sum.clone(),
            1 => inputs.concat(),
            2 => sum[r * n / 2..(r + 1) * n / 2].to_vec(),
            _ => inputs[1].clone(),
        };
        assert!(got == want, "collective {which} on rank {r}");
    }
}

#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_all_reduce_alone_on_two_ranks() {
    one_collective_on_two_ranks(0);
}

#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_all_gather_alone_on_two_ranks() {
    one_collective_on_two_ranks(1);
}

#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_reduce_scatter_alone_on_two_ranks() {
    one_collective_on_two_ranks(2);
}

#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_broadcast_alone_on_two_ranks() {
    one_collective_on_two_ranks(3);
}

/// [`nccl_all_reduce_alone_on_two_ranks`] after enabling peer access both ways through the
/// runtime (as `bench_multi` has done by the time it reduces).
#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_all_reduce_after_peer_access_on_two_ranks() {
    let (c0, c1) = two_gpus();
    c0.enable_peer_access(&c1).unwrap();
    c1.enable_peer_access(&c0).unwrap();
    one_collective_on_two_ranks(0);
}

/// An all-reduce captured on each rank's stream (one thread per rank), as a child graph node
/// between two kernel nodes whose arguments change at every replay: 100 replays of 2^20
/// floats, each replay's result kept and checked against the host.
#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_all_reduce_in_a_graph_replayed_100_times() {
    multicast_off();
    let (c0, c1) = two_gpus();
    collective_graphs::all_reduce_child_graph_replays(&[c0, c1], 1 << 20, 100);
}

/// Kernel, all-reduce, kernel in one stream capture per rank, replayed 100 times (the send
/// buffer grows at each replay), checked after the last.
#[test]
#[cfg(feature = "nccl")]
#[cfg_attr(not(feature = "gpu"), ignore = "needs 2 GPUs (feature gpu)")]
fn nccl_captured_step_replayed_100_times() {
    multicast_off();
    let (c0, c1) = two_gpus();
    collective_graphs::captured_step_replays(&[c0, c1], 1 << 20, 100);
}
