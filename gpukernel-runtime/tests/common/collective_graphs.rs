//! Collectives captured into CUDA graphs, replayed many times: shared by the simulator's
//! several-device test (`sim_multi.rs`) and the two-GPU test (`gpu_peer.rs`). One thread per
//! rank captures, instantiates and launches that rank's graph, as NCCL asks of graphs with
//! collectives (a launch may wait for the other ranks' launches).

use gpukernel_runtime::collective::{Communicator, ReduceOp};
use gpukernel_runtime::{Context, LaunchConfig, Result};

use crate::common::{PTX, kernel, saxpy};

/// Rank r's base input: r + 1 + i % 5 (small integers: every sum below is exact in f32).
pub fn base(rank: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| (rank + 1 + i % 5) as f32).collect()
}

/// Runs `f(rank, comm)` on one thread per rank and returns the ranks' results in rank order.
fn per_rank<R: Send>(
    comms: Vec<Communicator>,
    f: impl Fn(usize, &Communicator) -> Result<R> + Sync,
) -> Vec<R> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .enumerate()
            .map(|(rank, comm)| {
                let f = &f;
                scope.spawn(move || f(rank, &comm))
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(rank, h)| match h.join() {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => panic!("rank {rank}: {e}"),
                Err(_) => panic!("rank {rank} panicked"),
            })
            .collect()
    })
}

/// A graph built node by node around a captured all-reduce (a child graph node), replayed
/// `replays` times with new inputs each time: node `fill` makes the send buffer
/// `(k + 1) * base(rank)` at replay `k` (its scalar changed with `set_kernel_args`), the
/// captured all-reduce sums it over the ranks, and node `keep` adds the result to buffer `k`
/// of `replays` outputs (its output changed the same way). Every output is checked against
/// the host afterwards.
pub fn all_reduce_child_graph_replays(ctxs: &[Context], n: usize, replays: usize) {
    let ranks = ctxs.len();
    let comms = Communicator::for_contexts(ctxs).unwrap();
    let bases: Vec<Vec<f32>> = (0..ranks).map(|r| base(r, n)).collect();
    let total: Vec<f32> = (0..n).map(|i| bases.iter().map(|b| b[i]).sum()).collect();
    let results = per_rank(comms, |rank, comm| -> Result<Vec<Vec<f32>>> {
        let ctx = &ctxs[rank];
        let module = ctx.load_module(PTX.as_bytes())?;
        let k = kernel(&module, saxpy)?;
        let cfg = LaunchConfig::for_elements(n)?;
        let stream = ctx.new_stream()?;
        let base = ctx.htod_copy(&bases[rank])?;
        let mut send = ctx.alloc_zeros::<f32>(n)?;
        let mut recv = ctx.alloc_zeros::<f32>(n)?;
        let mut outs = (0..replays)
            .map(|_| ctx.alloc_zeros::<f32>(n))
            .collect::<Result<Vec<_>>>()?;
        {
            let graph = ctx.new_graph("replayed all-reduce")?;
            let bb = graph.buffer(&base);
            let (sb, rb) = (graph.buffer_mut(&mut send), graph.buffer_mut(&mut recv));
            let ob: Vec<_> = outs.iter_mut().map(|o| graph.buffer_mut(o)).collect();
            graph.add_memset_zeros(&[], sb)?;
            let fill = graph.add_kernel(&[], &k, cfg, (1.0f32, bb, sb))?;
            let captured = stream.capture("all-reduce", |c| {
                comm.capture_all_reduce(c, sb.read(), rb, ReduceOp::Sum)
            })?;
            assert_eq!(captured.len(), 1, "one node per captured collective");
            // After `fill` (it writes what the all-reduce reads), before `keep`.
            graph.add_child(&[], &captured)?;
            let keep = graph.add_kernel(&[], &k, cfg, (1.0f32, rb.read(), ob[0]))?;
            let exec = graph.instantiate()?;
            for (replay, out) in ob.iter().enumerate() {
                exec.set_kernel_args(fill, &k, cfg, ((replay + 1) as f32, bb, sb))?;
                exec.set_kernel_args(keep, &k, cfg, (1.0f32, rb.read(), *out))?;
                exec.launch(&stream)?;
            }
            stream.synchronize()?;
        }
        comm.async_error()?;
        outs.iter().map(|o| o.to_host_vec()).collect()
    });
    for (rank, outs) in results.iter().enumerate() {
        for (replay, got) in outs.iter().enumerate() {
            let scale = (replay + 1) as f32;
            if let Some(i) = (0..n).find(|&i| got[i] != scale * total[i]) {
                panic!(
                    "rank {rank}, replay {replay}: element {i} is {}, expected {}",
                    got[i],
                    scale * total[i]
                );
            }
        }
    }
}

/// One stream capture holding a kernel, an all-reduce and a kernel, replayed `replays`
/// times: `send += 1`, `recv = Σ send`, `acc += recv` at each replay, so each replay's
/// all-reduce sees new inputs; `recv` and `acc` are checked after the last.
pub fn captured_step_replays(ctxs: &[Context], n: usize, replays: usize) {
    let ranks = ctxs.len();
    let comms = Communicator::for_contexts(ctxs).unwrap();
    let bases: Vec<Vec<f32>> = (0..ranks).map(|r| base(r, n)).collect();
    let total: Vec<f32> = (0..n).map(|i| bases.iter().map(|b| b[i]).sum()).collect();
    let results = per_rank(comms, |rank, comm| -> Result<(Vec<f32>, Vec<f32>)> {
        let ctx = &ctxs[rank];
        let module = ctx.load_module(PTX.as_bytes())?;
        let k = kernel(&module, saxpy)?;
        let cfg = LaunchConfig::for_elements(n)?;
        let stream = ctx.new_stream()?;
        let ones = ctx.htod_copy(&vec![1.0f32; n])?;
        let mut send = ctx.htod_copy(&bases[rank])?;
        let mut recv = ctx.alloc_zeros::<f32>(n)?;
        let mut acc = ctx.alloc_zeros::<f32>(n)?;
        {
            let graph = stream.capture("step", |c| {
                let (sb, rb, ab) = (
                    c.buffer_mut(&mut send),
                    c.buffer_mut(&mut recv),
                    c.buffer_mut(&mut acc),
                );
                c.launch(&k, cfg, (1.0f32, c.buffer(&ones), sb))?;
                comm.capture_all_reduce(c, sb.read(), rb, ReduceOp::Sum)?;
                c.launch(&k, cfg, (1.0f32, rb.read(), ab))
            })?;
            assert_eq!(graph.len(), 3);
            let exec = graph.instantiate()?;
            for _ in 0..replays {
                exec.launch(&stream)?;
            }
            stream.synchronize()?;
        }
        comm.async_error()?;
        Ok((recv.to_host_vec()?, acc.to_host_vec()?))
    });
    let (r, ranks_f) = (replays as f32, ranks as f32);
    for (rank, (recv, acc)) in results.iter().enumerate() {
        for i in 0..n {
            // Replay k (1-based): send_r = base_r + k, so recv = total + ranks * k.
            let last = total[i] + ranks_f * r;
            let sum = r * total[i] + ranks_f * r * (r + 1.0) / 2.0;
            assert!(
                recv[i] == last && acc[i] == sum,
                "rank {rank}, element {i}: recv {} (expected {last}), acc {} (expected {sum})",
                recv[i],
                acc[i]
            );
        }
    }
}
