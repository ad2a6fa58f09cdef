//! Several devices on the simulator (`GPUKERNEL_SIM_DEVICES=4`): device enumeration, peer
//! access, copies between devices (direct and staged through host memory), kernels reading a
//! peer's memory, one link loaded on every device, and the collectives' results, all without
//! a GPU. Runs its own `main` (see Cargo.toml): the variables are set before any thread.

#[path = "common/collective_graphs.rs"]
mod collective_graphs;
mod common;

use common::saxpy;
use gpukernel_runtime::collective::{self, Communicator, ReduceOp, UniqueId};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Device, Error, LaunchConfig};

const DEVICES: usize = 4;

fn contexts() -> Vec<Context> {
    Device::all()
        .unwrap()
        .iter()
        .map(|d| d.primary_context().unwrap())
        .collect()
}

fn devices_are_enumerated_and_distinct() {
    let all = Device::all().unwrap();
    assert_eq!(all.len(), DEVICES);
    for (i, d) in all.iter().enumerate() {
        assert!(d.is_simulator());
        assert_eq!(d.index(), i);
        assert_eq!(d.ordinal(), None);
    }
    assert_eq!(all[0], Device::simulator());
    assert_eq!(format!("{}", all[0]), "the simulator");
    assert_eq!(format!("{}", all[2]), "the simulator's device 2");
    match Device::simulated(DEVICES) {
        Err(Error::NoDevice { ordinal, count }) => assert_eq!((ordinal, count), (DEVICES, DEVICES)),
        other => panic!("unexpected {other:?}"),
    }
    let ctxs = contexts();
    // One context per device, cached: a second lookup is the same context.
    let again = all[1].primary_context().unwrap();
    let b = again.htod_copy(&[1u32]).unwrap();
    assert_eq!(b.to_host_vec().unwrap(), vec![1]);
    assert_eq!(ctxs[1].device(), again.device());
    assert_ne!(ctxs[0].device(), ctxs[1].device());
}

fn kernels_use_a_peer_buffer_only_with_peer_access() {
    let ctxs = contexts();
    let (c0, c3) = (&ctxs[0], &ctxs[3]);
    assert!(c3.can_access_peer(c0).unwrap());
    let m3 = c3.load_module(common::PTX.as_bytes()).unwrap();
    let k3 = common::kernel(&m3, saxpy).unwrap();
    let x0 = c0.htod_copy(&vec![2.0f32; 1000]).unwrap();
    let mut y3 = c3.htod_copy(&vec![1.0f32; 1000]).unwrap();
    let cfg = LaunchConfig::for_elements(1000).unwrap();
    let e = c3
        .default_stream()
        .launch(&k3, cfg, (3.0f32, &x0, &mut y3))
        .unwrap_err();
    match &e {
        Error::ContextMismatch { hint: Some(h), .. } => {
            assert!(h.contains("enable_peer_access"), "{e}")
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("the simulator's device 3"), "{e}");
    assert!(!c3.peer_access_enabled(c0));
    c3.enable_peer_access(c0).unwrap();
    c3.enable_peer_access(c0).unwrap(); // twice is fine
    assert!(c3.peer_access_enabled(c0));
    assert!(!c0.peer_access_enabled(c3), "one direction only");
    c3.default_stream()
        .launch(&k3, cfg, (3.0f32, &x0, &mut y3))
        .unwrap();
    assert_eq!(y3.to_host_vec().unwrap(), vec![7.0f32; 1000]);
    // The output may be the peer's memory too.
    let x3 = c3.htod_copy(&vec![1.0f32; 1000]).unwrap();
    let mut y0 = c0.alloc_zeros::<f32>(1000).unwrap();
    c3.default_stream()
        .launch(&k3, cfg, (5.0f32, &x3, &mut y0))
        .unwrap();
    assert_eq!(y0.to_host_vec().unwrap(), vec![5.0f32; 1000]);
}

fn copies_between_devices_direct_and_staged() {
    let ctxs = contexts();
    // Devices 1 and 2: no peer access yet, so the copy goes through host memory, in chunks
    // (40 MiB is more than two 16 MiB staging buffers).
    let n = 10 << 20;
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let src = ctxs[1].htod_copy(&data).unwrap();
    let mut dst = ctxs[2].alloc_zeros::<u32>(n).unwrap();
    dst.copy_from_device(&src).unwrap();
    assert!(dst.to_host_vec().unwrap() == data);
    // On a stream of the source's device, into a view of the destination.
    let mut back = ctxs[1].alloc_zeros::<u32>(n).unwrap();
    {
        let mut v = back.slice_mut(5..n).unwrap();
        ctxs[2]
            .new_stream()
            .unwrap()
            .memcpy_dtod_async(&mut v, &dst.slice(..n - 5).unwrap())
            .unwrap();
    }
    let got = back.to_host_vec().unwrap();
    assert_eq!(&got[..5], &[0; 5]);
    assert!(got[5..] == data[..n - 5]);
    // Direct once peer access is on (either direction).
    ctxs[2].enable_peer_access(&ctxs[1]).unwrap();
    let mut direct = ctxs[1].alloc_zeros::<u32>(n).unwrap();
    direct.copy_from_device(&dst).unwrap();
    assert!(direct.to_host_vec().unwrap() == data);
    // A stream of a third device is refused, naming it.
    let mut small = ctxs[1].alloc_zeros::<u32>(4).unwrap();
    let e = ctxs[0]
        .default_stream()
        .memcpy_dtod_async(&mut small, &dst.slice(..4).unwrap())
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // Lengths are checked first.
    let e = small.copy_from_device(&dst).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
}

fn one_link_loads_on_every_device() {
    let ctxs = contexts();
    let mut linker = Linker::new(&ctxs[0]).unwrap();
    linker.add_ptx(common::PTX, "test_kernels.ptx");
    let modules = linker.link_and_load_on(&ctxs).unwrap();
    assert_eq!(modules.len(), DEVICES);
    for (i, (m, c)) in modules.iter().zip(&ctxs).enumerate() {
        assert_eq!(m.context().device(), c.device());
        let k = common::kernel(m, saxpy).unwrap();
        let x = c.htod_copy(&vec![1.0f32; 64]).unwrap();
        let mut y = c.alloc_zeros::<f32>(64).unwrap();
        c.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(64).unwrap(),
                (i as f32, &x, &mut y),
            )
            .unwrap();
        assert_eq!(y.to_host_vec().unwrap(), vec![i as f32; 64]);
    }
    let image = linker.link().unwrap();
    assert!(image.load(&ctxs[3]).is_ok());
    assert!(matches!(
        linker.link_and_load_on(&[]).unwrap_err(),
        Error::Unsupported { .. }
    ));
}

/// Rank r's input: r + 1 + i % 5 (exact in f32).
fn input(rank: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| (rank + 1 + i % 5) as f32).collect()
}

fn collectives_compute_the_reference_results() {
    let ctxs = contexts();
    let comms = Communicator::for_contexts(&ctxs).unwrap();
    assert_eq!(comms[2].rank(), 2);
    assert_eq!(comms[2].size(), DEVICES);
    let n = 1000;
    let streams: Vec<_> = ctxs.iter().map(|c| c.new_stream().unwrap()).collect();
    let sends: Vec<_> = ctxs
        .iter()
        .enumerate()
        .map(|(r, c)| c.htod_copy(&input(r, n)).unwrap())
        .collect();

    // all-reduce: sum, max and average.
    for (op, f) in [
        (
            ReduceOp::Sum,
            (|v: &[f32]| v.iter().sum::<f32>()) as fn(&[f32]) -> f32,
        ),
        (ReduceOp::Max, |v: &[f32]| {
            v.iter().cloned().fold(f32::MIN, f32::max)
        }),
        (ReduceOp::Avg, |v: &[f32]| {
            v.iter().sum::<f32>() / v.len() as f32
        }),
    ] {
        let mut recvs: Vec<_> = ctxs
            .iter()
            .map(|c| c.alloc_zeros::<f32>(n).unwrap())
            .collect();
        collective::group(|g| {
            for (r, recv) in recvs.iter_mut().enumerate() {
                g.all_reduce(&comms[r], &streams[r], &sends[r], recv, op)?;
            }
            Ok(())
        })
        .unwrap();
        let inputs: Vec<Vec<f32>> = (0..DEVICES).map(|r| input(r, n)).collect();
        let want: Vec<f32> = (0..n)
            .map(|i| f(&inputs.iter().map(|v| v[i]).collect::<Vec<_>>()))
            .collect();
        for r in &recvs {
            assert_eq!(r.to_host_vec().unwrap(), want, "{op:?}");
        }
    }

    // In place, integers, wrapping.
    let mut ints: Vec<_> = ctxs
        .iter()
        .enumerate()
        .map(|(r, c)| c.htod_copy(&[i32::MAX, r as i32, -(r as i32)]).unwrap())
        .collect();
    collective::group(|g| {
        for (r, b) in ints.iter_mut().enumerate() {
            g.all_reduce_in_place(&comms[r], &streams[r], b, ReduceOp::Sum)?;
        }
        Ok(())
    })
    .unwrap();
    let s = (0..DEVICES as i32).sum::<i32>();
    let wrapped = (0..DEVICES).fold(0i32, |a, _| a.wrapping_add(i32::MAX));
    assert_eq!(ints[3].to_host_vec().unwrap(), vec![wrapped, s, -s]);

    // broadcast from rank 2 (in place) and all-gather.
    let mut bufs: Vec<_> = ctxs
        .iter()
        .enumerate()
        .map(|(r, c)| c.htod_copy(&input(r, n)).unwrap())
        .collect();
    let mut gathered: Vec<_> = ctxs
        .iter()
        .map(|c| c.alloc_zeros::<f32>(n * DEVICES).unwrap())
        .collect();
    collective::group(|g| {
        for (r, (b, out)) in bufs.iter_mut().zip(gathered.iter_mut()).enumerate() {
            g.all_gather(&comms[r], &streams[r], &sends[r], out)?;
            g.broadcast_in_place(&comms[r], &streams[r], b, 2)?;
        }
        Ok(())
    })
    .unwrap();
    let all: Vec<f32> = (0..DEVICES).flat_map(|r| input(r, n)).collect();
    for r in 0..DEVICES {
        assert_eq!(bufs[r].to_host_vec().unwrap(), input(2, n));
        assert_eq!(gathered[r].to_host_vec().unwrap(), all);
    }

    // reduce-scatter: rank r gets block r of the sum.
    let big: Vec<_> = ctxs
        .iter()
        .enumerate()
        .map(|(r, c)| c.htod_copy(&input(r, n * DEVICES)).unwrap())
        .collect();
    let mut parts: Vec<_> = ctxs
        .iter()
        .map(|c| c.alloc_zeros::<f32>(n).unwrap())
        .collect();
    collective::group(|g| {
        for (r, p) in parts.iter_mut().enumerate() {
            g.reduce_scatter(&comms[r], &streams[r], &big[r], p, ReduceOp::Sum)?;
        }
        Ok(())
    })
    .unwrap();
    let inputs: Vec<Vec<f32>> = (0..DEVICES).map(|r| input(r, n * DEVICES)).collect();
    for (r, p) in parts.iter().enumerate() {
        let want: Vec<f32> = (r * n..(r + 1) * n)
            .map(|i| inputs.iter().map(|v| v[i]).sum())
            .collect();
        assert_eq!(p.to_host_vec().unwrap(), want);
    }
}

fn collectives_check_their_arguments() {
    let ctxs = contexts();
    let comms = Communicator::for_contexts(&ctxs[..2]).unwrap();
    let s0 = ctxs[0].default_stream();
    let x = ctxs[0].alloc_zeros::<f32>(10).unwrap();
    let mut y = ctxs[0].alloc_zeros::<f32>(11).unwrap();
    let e = comms[0]
        .all_reduce(&s0, &x, &mut y, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let e = comms[0].all_gather(&s0, &x, &mut y).unwrap_err();
    assert!(e.to_string().contains("2 ranks × 10 sent need 20"), "{e}");
    let e = comms[0]
        .reduce_scatter(&s0, &x, &mut y, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidCollective { .. }), "{e}");
    let mut z = ctxs[0].alloc_zeros::<f32>(10).unwrap();
    let e = comms[0].broadcast_in_place(&s0, &mut z, 2).unwrap_err();
    assert!(e.to_string().contains("root 2 is not a rank of 2"), "{e}");
    // The stream must be the rank's device.
    let e = comms[1]
        .all_reduce_in_place(&s0, &mut z, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // One rank per device.
    let e = Communicator::for_contexts(&[ctxs[0].clone(), ctxs[0].clone()]).unwrap_err();
    assert!(e.to_string().contains("one rank per device"), "{e}");
    assert!(Communicator::for_contexts(&[]).is_err());
    // A rank called alone (no group, no other thread) is reported, not a hang.
    let e = comms[0]
        .all_reduce_in_place(&s0, &mut z, ReduceOp::Sum)
        .unwrap_err();
    match e {
        Error::CollectiveIncomplete { rank, missing, .. } => {
            assert_eq!((rank, missing), (0, vec![1]))
        }
        e => panic!("unexpected {e}"),
    }
    // Ranks that disagree are reported to every rank.
    let comms = Communicator::for_contexts(&ctxs[..2]).unwrap();
    let s1 = ctxs[1].default_stream();
    let mut a = ctxs[0].alloc_zeros::<f32>(10).unwrap();
    let mut b = ctxs[1].alloc_zeros::<f32>(10).unwrap();
    let e = collective::group(|g| {
        g.all_reduce_in_place(&comms[0], &s0, &mut a, ReduceOp::Sum)?;
        g.all_reduce_in_place(&comms[1], &s1, &mut b, ReduceOp::Max)
    })
    .unwrap_err();
    assert!(e.to_string().contains("the ranks disagree"), "{e}");
    // Inside a group, a direct call or a nested group is refused: NCCL would run it at the
    // outer group's end, after the buffer it borrowed may be gone.
    let e = collective::group(|_| {
        let mut tmp = ctxs[0].alloc_zeros::<f32>(4)?;
        comms[0].all_reduce_in_place(&s0, &mut tmp, ReduceOp::Sum)
    })
    .unwrap_err();
    assert!(e.to_string().contains("through the group"), "{e}");
    let e = collective::group(|_| collective::group(|_| Ok(()))).unwrap_err();
    assert!(e.to_string().contains("groups do not nest"), "{e}");
    // After a refused group the thread is outside any group again.
    collective::group(|g| {
        g.all_reduce_in_place(&comms[0], &s0, &mut a, ReduceOp::Sum)?;
        g.all_reduce_in_place(&comms[1], &s1, &mut b, ReduceOp::Sum)
    })
    .unwrap();
}

fn ranks_in_threads_join_through_a_unique_id() {
    let id = UniqueId::new(&Device::simulator().primary_context().unwrap()).unwrap();
    let hex = id.to_hex();
    assert!(hex.starts_with("sim:"));
    assert_eq!(UniqueId::from_hex(&hex).unwrap(), id);
    assert!(UniqueId::from_hex("abc").is_err());
    let n = 4096;
    let handles: Vec<_> = (0..3)
        .map(|rank| {
            let hex = hex.clone();
            std::thread::spawn(move || -> gpukernel_runtime::Result<Vec<f32>> {
                let id = UniqueId::from_hex(&hex)?;
                let ctx = Device::simulated(rank)?.primary_context()?;
                let comm = Communicator::init_rank(&ctx, &id, rank, 3)?;
                let mut buf = ctx.htod_copy(&input(rank, n))?;
                // No group: each thread drives one rank, and waits for the others.
                comm.all_reduce_in_place(&ctx.default_stream(), &mut buf, ReduceOp::Sum)?;
                comm.broadcast_in_place(&ctx.default_stream(), &mut buf, 1)?;
                buf.to_host_vec()
            })
        })
        .collect();
    let inputs: Vec<Vec<f32>> = (0..3).map(|r| input(r, n)).collect();
    let want: Vec<f32> = (0..n).map(|i| inputs.iter().map(|v| v[i]).sum()).collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), want);
    }
    // A rank taken twice, or another size, is refused.
    let ctx = Device::simulator().primary_context().unwrap();
    let id = UniqueId::new(&ctx).unwrap();
    let _r0 = Communicator::init_rank(&ctx, &id, 0, 2).unwrap();
    assert!(Communicator::init_rank(&ctx, &id, 0, 2).is_err());
    assert!(Communicator::init_rank(&ctx, &id, 1, 3).is_err());
    assert!(Communicator::init_rank(&ctx, &id, 2, 2).is_err());
}

fn collectives_replay_inside_graphs() {
    let ctxs = contexts();
    // Two and three ranks, 100 replays each, checked replay by replay.
    collective_graphs::all_reduce_child_graph_replays(&ctxs[..2], 1000, 100);
    collective_graphs::all_reduce_child_graph_replays(&ctxs[..3], 257, 20);
    collective_graphs::captured_step_replays(&ctxs[..2], 1000, 100);
}

fn captured_collectives_check_their_use() {
    let ctxs = contexts();
    let comms = Communicator::for_contexts(&ctxs[..2]).unwrap();
    let s0 = ctxs[0].new_stream().unwrap();
    let mut a = ctxs[0].alloc_zeros::<f32>(8).unwrap();
    // The capturing stream must be the rank's device.
    let e = s0
        .capture("wrong rank", |c| {
            comms[1].capture_all_reduce_in_place(c, c.buffer_mut(&mut a), ReduceOp::Sum)
        })
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // Lengths are checked as for a direct call.
    let x = ctxs[0].alloc_zeros::<f32>(4).unwrap();
    let e = s0
        .capture("lengths", |c| {
            comms[0].capture_all_reduce(c, c.buffer(&x), c.buffer_mut(&mut a), ReduceOp::Sum)
        })
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    // Not inside a group: NCCL wants one thread per rank's graph.
    let e = collective::group(|_| {
        s0.capture("grouped", |c| {
            comms[0].capture_all_reduce_in_place(c, c.buffer_mut(&mut a), ReduceOp::Sum)
        })
        .map(drop)
    })
    .unwrap_err();
    assert!(e.to_string().contains("inside `collective::group`"), "{e}");
    // A rank whose graph runs without the other rank's: the launch ends after the simulator's
    // patience, and the communicator reports the incomplete collective (NCCL's asynchronous
    // error), once.
    {
        let graph = s0
            .capture("alone", |c| {
                comms[0].capture_all_reduce_in_place(c, c.buffer_mut(&mut a), ReduceOp::Sum)
            })
            .unwrap();
        graph.instantiate().unwrap().launch(&s0).unwrap();
    }
    match comms[0].async_error().unwrap_err() {
        Error::CollectiveIncomplete { rank, missing, .. } => {
            assert_eq!((rank, missing), (0, vec![1]))
        }
        e => panic!("unexpected {e}"),
    }
    comms[0].async_error().unwrap();
}

fn main() {
    // SAFETY: no other thread exists yet (this is the test's own `main`).
    unsafe {
        std::env::set_var("GPUKERNEL_SIM_DEVICES", DEVICES.to_string());
        std::env::set_var("GPUKERNEL_BACKEND", "sim");
        std::env::set_var("GPUKERNEL_SIM_PATIENCE_MS", "300");
    }
    let tests: &[(&str, fn())] = &[
        (
            "devices_are_enumerated_and_distinct",
            devices_are_enumerated_and_distinct,
        ),
        (
            "kernels_use_a_peer_buffer_only_with_peer_access",
            kernels_use_a_peer_buffer_only_with_peer_access,
        ),
        (
            "copies_between_devices_direct_and_staged",
            copies_between_devices_direct_and_staged,
        ),
        (
            "one_link_loads_on_every_device",
            one_link_loads_on_every_device,
        ),
        (
            "collectives_compute_the_reference_results",
            collectives_compute_the_reference_results,
        ),
        (
            "collectives_check_their_arguments",
            collectives_check_their_arguments,
        ),
        (
            "ranks_in_threads_join_through_a_unique_id",
            ranks_in_threads_join_through_a_unique_id,
        ),
        (
            "collectives_replay_inside_graphs",
            collectives_replay_inside_graphs,
        ),
        (
            "captured_collectives_check_their_use",
            captured_collectives_check_their_use,
        ),
    ];
    // libtest's `--list` (one `name: test` line each) and `--exact`, so that a runner can
    // run each test alone, as the GPU bundle's run.sh does.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return;
    }
    let exact = args.iter().any(|a| a == "--exact");
    let filter: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, test) in tests {
        let chosen = filter.iter().any(|f| {
            if exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        });
        if !filter.is_empty() && !chosen {
            continue;
        }
        ran += 1;
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    println!(
        "\nsim_multi: {} passed, {} failed",
        ran - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
