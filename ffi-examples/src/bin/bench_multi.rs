//! Benchmark of two GPUs: the peer copy bandwidth of `copy_from_device` / `memcpy_dtod_async`
//! against raw `cuMemcpyPeerAsync` on the same buffers, and (feature `nccl`) the all-reduce bus
//! bandwidth of 1 GiB through `collective` against NCCL's C API called directly
//! (`ncclGroupStart`, `ncclAllReduce` per rank, `ncclGroupEnd`) on the same buffers, in the
//! same process; then an 8 MiB all-reduce per step, 1,000 steps, as 1,000 launches of a graph
//! holding the captured all-reduce against 1,000 direct calls (one thread per rank for both,
//! as NCCL asks of graphs). Results are checked before timing; each figure is the median of
//! event-timed trials, ours and the reference alternating. Prints ratios (ours / reference;
//! target >= 0.95; graph vs direct: the direct time over the graph's); never asserts on time.
//!
//! Needs two CUDA devices: with fewer it prints "needs 2 GPUs" and exits with status 2 (the
//! GPU bundle reports that as skipped, not passed). Sets `NCCL_NVLS_ENABLE=0` when unset
//! (NVLink multicast stays off on shared machines).

use std::process::ExitCode;

use cudarc::driver::sys;
use ffi_examples::bench::{BoxError, median};
use gpukernel_runtime::{Context, Device, Event, Stream};

const COPY_BYTES: usize = 256 << 20;
#[cfg(feature = "nccl")]
const REDUCE_BYTES: usize = 1 << 30;
const TRIALS: usize = 15;
fn main() -> ExitCode {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
    let count = Device::count().unwrap_or(0);
    if count < 2 {
        println!("bench_multi: SKIPPED: needs 2 GPUs, found {count} (not a pass)");
        return ExitCode::from(2);
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_multi: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The raw `CUcontext` of a context (current after `bind_to_thread`).
fn raw_context(ctx: &Context) -> Result<sys::CUcontext, BoxError> {
    ctx.bind_to_thread()?;
    let mut raw: sys::CUcontext = core::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let r = unsafe { sys::cuCtxGetCurrent(&mut raw) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuCtxGetCurrent: {r:?}").into());
    }
    Ok(raw)
}

/// Milliseconds of `f`'s work on `s`, event-timed.
fn timed(
    s: &Stream,
    start: &Event,
    end: &Event,
    f: &mut dyn FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    s.record_event(start)?;
    f()?;
    s.record_event(end)?;
    end.synchronize()?;
    Ok(start.elapsed_ms(end)? as f64)
}

fn run() -> Result<bool, BoxError> {
    let c0 = Device::get(0)?.primary_context()?;
    let c1 = Device::get(1)?.primary_context()?;
    println!(
        "bench_multi: {} and {}",
        c0.device().name()?,
        c1.device().name()?
    );
    let ok = peer_copies(&c0, &c1)?;
    #[cfg(feature = "nccl")]
    let ok = all_reduce(&c0, &c1)? && ok;
    #[cfg(feature = "nccl")]
    let ok = graph_all_reduce(&c0, &c1)? && ok;
    #[cfg(not(feature = "nccl"))]
    println!("all-reduce: not measured (built without the `nccl` feature)");
    Ok(ok)
}

fn peer_copies(c0: &Context, c1: &Context) -> Result<bool, BoxError> {
    let n = COPY_BYTES / 4;
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let src = c0.htod_copy(&data)?;
    let mut dst = c1.alloc_zeros::<u32>(n)?;
    let gb = |ms: f64| COPY_BYTES as f64 / (ms * 1e-3) / 1e9;

    // Through host memory first (no peer access yet): wall time of the blocking copy.
    dst.copy_from_device(&src)?;
    if dst.to_host_vec()? != data {
        println!("staged copy: WRONG RESULT");
        return Ok(false);
    }
    let mut staged = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        dst.copy_from_device(&src)?;
        staged.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "copy GPU0 -> GPU1, {} MiB, staged through host memory (no peer access): {:.1} GB/s",
        COPY_BYTES >> 20,
        gb(median(staged))
    );

    let (can01, can10) = (c0.can_access_peer(c1)?, c1.can_access_peer(c0)?);
    println!("peer access: 0 -> 1 {can01}, 1 -> 0 {can10}");
    if !(can01 || can10) {
        println!("direct peer copy: not possible between these devices");
        return Ok(true);
    }
    if can10 {
        c1.enable_peer_access(c0)?;
    }
    if can01 {
        c0.enable_peer_access(c1)?;
    }
    let s = c1.new_stream()?;
    let mut fresh = c1.alloc_zeros::<u32>(n)?;
    s.memcpy_dtod_async(&mut fresh, &src)?;
    if fresh.to_host_vec()? != data {
        println!("direct copy: WRONG RESULT");
        return Ok(false);
    }
    let (r0, r1) = (raw_context(c0)?, raw_context(c1)?);
    let (start, end) = (c1.new_event()?, c1.new_event()?);
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        ours.push(timed(&s, &start, &end, &mut || {
            s.memcpy_dtod_async(&mut dst, &src)?;
            Ok(())
        })?);
        let (d, sp) = (dst.as_raw(), src.as_raw());
        raw.push(timed(&s, &start, &end, &mut || {
            // SAFETY: both buffers are live, of these contexts, COPY_BYTES long; the stream
            // is ordered after the earlier copies (same stream).
            let r = unsafe { sys::cuMemcpyPeerAsync(d, r1, sp, r0, COPY_BYTES, s.raw()) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(format!("cuMemcpyPeerAsync: {r:?}").into());
            }
            Ok(())
        })?);
    }
    let (o, r) = (gb(median(ours)), gb(median(raw)));
    println!(
        "copy GPU0 -> GPU1, {} MiB, direct: ours {o:.1} GB/s, raw cuMemcpyPeerAsync {r:.1} GB/s, ratio {:.3} (target >= 0.95)",
        COPY_BYTES >> 20,
        o / r
    );
    Ok(true)
}

#[cfg(feature = "nccl")]
fn all_reduce(c0: &Context, c1: &Context) -> Result<bool, BoxError> {
    use cudarc::nccl::{result as nccl, sys as ncclsys};
    use gpukernel_runtime::collective::{self, Communicator, ReduceOp};

    let (major, minor, patch) = collective::nccl_version()?;
    let ctxs = [c0.clone(), c1.clone()];
    let comms = Communicator::for_contexts(&ctxs)?;
    let n = REDUCE_BYTES / 4;
    let streams = [c0.new_stream()?, c1.new_stream()?];
    let sends = [
        c0.htod_copy(&vec![1.0f32; n])?,
        c1.htod_copy(&vec![2.0f32; n])?,
    ];
    let mut recvs = [c0.alloc_zeros::<f32>(n)?, c1.alloc_zeros::<f32>(n)?];
    let ours_once = |recvs: &mut [gpukernel_runtime::DeviceBuffer<f32>; 2]| {
        collective::group(|g| {
            let [a, b] = recvs;
            g.all_reduce(&comms[0], &streams[0], &sends[0], a, ReduceOp::Sum)?;
            g.all_reduce(&comms[1], &streams[1], &sends[1], b, ReduceOp::Sum)
        })
    };
    ours_once(&mut recvs)?;
    for r in &recvs {
        if r.slice(n - (1 << 20)..)?
            .to_host_vec()?
            .iter()
            .any(|&v| v != 3.0)
        {
            println!("all-reduce: WRONG RESULT");
            return Ok(false);
        }
    }
    // The reference: NCCL's own communicators and calls on the same buffers and streams.
    let devices = [0i32, 1];
    let mut raw_comms = [core::ptr::null_mut(); 2];
    // SAFETY: room for two communicators; the device list is valid.
    unsafe { nccl::comm_init_all(raw_comms.as_mut_ptr(), 2, devices.as_ptr()) }
        .map_err(|e| format!("ncclCommInitAll: {:?}", e.0))?;
    let raw_once = |recvs: &mut [gpukernel_runtime::DeviceBuffer<f32>; 2]| -> Result<(), BoxError> {
        nccl::group_start().map_err(|e| format!("ncclGroupStart: {:?}", e.0))?;
        for r in 0..2 {
            // SAFETY: live buffers of `n` floats on rank r's device; the stream is rank r's.
            unsafe {
                nccl::all_reduce(
                    sends[r].as_raw() as *const _,
                    recvs[r].as_raw() as *mut _,
                    n,
                    ncclsys::ncclDataType_t::ncclFloat32,
                    ncclsys::ncclRedOp_t::ncclSum,
                    raw_comms[r],
                    streams[r].raw() as _,
                )
            }
            .map_err(|e| format!("ncclAllReduce: {:?}", e.0))?;
        }
        nccl::group_end().map_err(|e| format!("ncclGroupEnd: {:?}", e.0))?;
        Ok(())
    };
    let events: Vec<(Event, Event)> = ctxs
        .iter()
        .map(|c| Ok((c.new_event()?, c.new_event()?)))
        .collect::<Result<_, BoxError>>()?;
    let trial = |f: &mut dyn FnMut() -> Result<(), BoxError>| -> Result<f64, BoxError> {
        for (s, (start, _)) in streams.iter().zip(&events) {
            s.record_event(start)?;
        }
        f()?;
        let mut ms: f64 = 0.0;
        for (s, (start, end)) in streams.iter().zip(&events) {
            s.record_event(end)?;
            end.synchronize()?;
            ms = ms.max(start.elapsed_ms(end)? as f64);
        }
        Ok(ms)
    };
    for _ in 0..3 {
        trial(&mut || Ok(ours_once(&mut recvs)?))?;
        trial(&mut || raw_once(&mut recvs))?;
    }
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        ours.push(trial(&mut || Ok(ours_once(&mut recvs)?))?);
        raw.push(trial(&mut || raw_once(&mut recvs))?);
    }
    for c in raw_comms {
        // SAFETY: made above, destroyed once.
        let _ = unsafe { nccl::comm_destroy(c) };
    }
    // Bus bandwidth of an all-reduce over n ranks: 2 (n - 1) / n times the algorithm's.
    let bus = |ms: f64| REDUCE_BYTES as f64 / (ms * 1e-3) / 1e9 * 2.0 * (2.0 - 1.0) / 2.0;
    let (o, r) = (bus(median(ours)), bus(median(raw)));
    println!(
        "all-reduce 1 GiB f32 sum, 2 ranks, NCCL {major}.{minor}.{patch}: bus bandwidth ours {o:.1} GB/s, NCCL C API {r:.1} GB/s, ratio {:.3} (target >= 0.95)",
        o / r
    );
    Ok(true)
}

/// Steps timed per trial in [`graph_all_reduce`].
#[cfg(feature = "nccl")]
const GRAPH_STEPS: usize = 1000;
/// Bytes each step all-reduces in [`graph_all_reduce`].
#[cfg(feature = "nccl")]
const GRAPH_STEP_BYTES: usize = 8 << 20;

/// 1,000 steps of an 8 MiB all-reduce: a graph holding the captured all-reduce launched 1,000
/// times against 1,000 direct `all_reduce` calls, one thread per rank, trials alternating
/// (both ranks start each trial together). Prints the median time per step of each and the
/// ratio direct / graph (above 1: the graph is faster).
#[cfg(feature = "nccl")]
fn graph_all_reduce(c0: &Context, c1: &Context) -> Result<bool, BoxError> {
    use gpukernel_runtime::collective::{Communicator, ReduceOp};
    use std::sync::Barrier;

    let ctxs = [c0.clone(), c1.clone()];
    let comms = Communicator::for_contexts(&ctxs)?;
    let n = GRAPH_STEP_BYTES / 4;
    let barrier = Barrier::new(2);
    // Per rank: (graph ms per trial, direct ms per trial, results right).
    type RankTimes = (Vec<f64>, Vec<f64>, bool);
    let per_rank = |rank: usize, comm: Communicator| -> Result<RankTimes, String> {
        let run = || -> Result<RankTimes, BoxError> {
            let ctx = &ctxs[rank];
            let s = ctx.new_stream()?;
            let (start, end) = (ctx.new_event()?, ctx.new_event()?);
            let send = ctx.htod_copy(&vec![(rank + 1) as f32; n])?;
            let mut by_graph = ctx.alloc_zeros::<f32>(n)?;
            let mut direct = ctx.alloc_zeros::<f32>(n)?;
            let (mut graph_ms, mut direct_ms) = (Vec::new(), Vec::new());
            {
                let graph = s.capture("all-reduce step", |c| {
                    comm.capture_all_reduce(
                        c,
                        c.buffer(&send),
                        c.buffer_mut(&mut by_graph),
                        ReduceOp::Sum,
                    )
                })?;
                let exec = graph.instantiate()?;
                for trial in 0..TRIALS + 1 {
                    barrier.wait();
                    let g = timed(&s, &start, &end, &mut || {
                        for _ in 0..GRAPH_STEPS {
                            exec.launch(&s)?;
                        }
                        Ok(())
                    })?;
                    barrier.wait();
                    let d = timed(&s, &start, &end, &mut || {
                        for _ in 0..GRAPH_STEPS {
                            comm.all_reduce(&s, &send, &mut direct, ReduceOp::Sum)?;
                        }
                        Ok(())
                    })?;
                    if trial > 0 {
                        graph_ms.push(g);
                        direct_ms.push(d);
                    }
                }
            }
            comm.async_error()?;
            let right = |b: &gpukernel_runtime::DeviceBuffer<f32>| -> Result<bool, BoxError> {
                Ok(b.to_host_vec()?.iter().all(|&v| v == 3.0))
            };
            Ok((graph_ms, direct_ms, right(&by_graph)? && right(&direct)?))
        };
        run().map_err(|e| format!("rank {rank}: {e}"))
    };
    let results: Vec<Result<RankTimes, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .enumerate()
            .map(|(rank, comm)| {
                let per_rank = &per_rank;
                scope.spawn(move || per_rank(rank, comm))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into())))
            .collect()
    });
    let mut ranks = Vec::new();
    for r in results {
        ranks.push(r?);
    }
    if ranks.iter().any(|(_, _, right)| !right) {
        println!("graph all-reduce: WRONG RESULT");
        return Ok(false);
    }
    // A trial lasts as long as its slower rank.
    let slowest = |pick: fn(&RankTimes) -> &Vec<f64>| -> Vec<f64> {
        (0..TRIALS)
            .map(|t| ranks.iter().map(|r| pick(r)[t]).fold(0.0, f64::max))
            .collect()
    };
    let per_step_us = |ms: f64| ms * 1e3 / GRAPH_STEPS as f64;
    let g = per_step_us(median(slowest(|r| &r.0)));
    let d = per_step_us(median(slowest(|r| &r.1)));
    println!(
        "all-reduce {} MiB f32 sum, 2 ranks, {GRAPH_STEPS} steps: graph (captured all-reduce) {g:.1} us/step, direct calls {d:.1} us/step, ratio direct/graph {:.3}",
        GRAPH_STEP_BYTES >> 20,
        d / g
    );
    Ok(true)
}
