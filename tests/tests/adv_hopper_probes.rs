//! Probes of the Hopper launch features found by attacking them. Each prints `PROBE <name>
//! HOLE|OK <detail>` and fails on a HOLE. Every device: the simulator here, and with the `gpu`
//! feature the GPU as well (the GPU's side of the grid-barrier probe hangs by design and is
//! run alone).

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::{adv_cluster_block_exits, adv_grid_sync_block_exits};
use gpukernel_runtime::{Context, Device, GridBarrierWord, LaunchConfig, Module};
use gpukernel_tests::devices;

fn hopper_module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0");
        return None;
    }
    Some(ctx.load_module(PTX.as_bytes()).unwrap())
}

fn report(probe: &str, device: &str, hole: bool, detail: &str) {
    let verdict = if hole { "HOLE" } else { "OK" };
    println!("PROBE {probe} [{device}] {verdict} {detail}");
    if hole {
        panic!("PROBE {probe} [{device}] HOLE {detail}");
    }
}

/// Simulator fidelity: a block exits before `grid::sync` while the others wait. The GPU's
/// barrier (counting blocks in the word) waits forever; the simulator should report it as it
/// reports other barriers that cannot complete.
#[test]
fn grid_sync_with_an_exited_block_sim() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = md.kernel(adv_grid_sync_block_exits).unwrap();
    let bar = GridBarrierWord::new(&ctx).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(4 * 32).unwrap();
    let s = ctx.default_stream();
    // SAFETY: the simulator only (the contract is broken on purpose).
    let r = unsafe {
        s.launch_unchecked(
            &k,
            LaunchConfig::new(4, 32).cooperative(),
            (bar.param(), &mut out),
        )
    };
    let r = r.and_then(|()| s.synchronize());
    let hole = r.is_ok();
    report(
        "grid_sync_with_an_exited_block",
        "simulator",
        hole,
        &format!("the simulator answered {r:?} (the GPU waits forever)"),
    );
}

/// `cluster::sync` (safe) with the block of rank 1 of each cluster exited: `exit` releases
/// `barrier.cluster` on the GPU (PTX ISA), and the simulator agrees.
#[test]
fn cluster_sync_with_an_exited_block() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(adv_cluster_block_exits).unwrap();
        let mut out = ctx.alloc_zeros::<u32>(4 * 64).unwrap();
        let s = ctx.default_stream();
        let r = s
            .launch(&k, LaunchConfig::new(4, 64).with_cluster(2), (&mut out,))
            .and_then(|()| s.synchronize());
        let got = out.to_host_vec();
        let want: Vec<u32> = (0..4 * 64).map(|i| ((i / 64) % 2 == 0) as u32).collect();
        let ok = r.is_ok() && got.as_ref().ok() == Some(&want);
        report(
            "cluster_sync_with_an_exited_block",
            &name,
            !ok,
            &format!(
                "launch {r:?}, output as expected: {}",
                got.ok() == Some(want)
            ),
        );
    }
}

/// Cluster shapes at their limits are errors at the launch.
#[test]
fn cluster_shapes_at_limits() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = md.kernel(adv_cluster_block_exits).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(4 * 64).unwrap();
    let s = ctx.default_stream();
    for c in [
        (0, 1, 1),
        (3, 1, 1),
        (u32::MAX, 1, 1),
        (1, 0, 1),
        (4, 1, 4),
        (16, 1, 1),
    ] {
        let grid = if c.0 == 16 { 16 } else { 4 };
        let r = s.launch(&k, LaunchConfig::new(grid, 64).with_cluster(c), (&mut out,));
        let refused = r.is_err();
        report(
            "cluster_shape_limits",
            "simulator",
            !refused,
            &format!("cluster {c:?} grid {grid}: {r:?}"),
        );
    }
}

/// Simulator fidelity: a TMA load to a shared destination aligned to 16 bytes only (the
/// hardware needs 128; `tma::load`'s contract says so). The simulator copies it silently.
#[test]
fn tma_load_misaligned_destination() {
    use ffi_examples_hopper_kernels::adv::adv_tma_misaligned;
    use gpukernel_runtime::{Swizzle, TensorMap2D};
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(adv_tma_misaligned).unwrap();
        let src: Vec<f32> = (0..32 * 32).map(|i| i as f32).collect();
        let m = ctx.htod_copy(&src).unwrap();
        let map = TensorMap2D::new(&ctx, &m, [32, 32], 32, [16, 16], Swizzle::None).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(256).unwrap();
        let s = ctx.default_stream();
        // SAFETY: the alignment contract is broken on purpose (a probe).
        let r =
            unsafe { s.launch_unchecked(&k, LaunchConfig::new(1, 256), (map.param(), &mut out)) }
                .and_then(|()| s.synchronize());
        report(
            "tma_load_misaligned_destination",
            &name,
            r.is_ok(),
            &format!(
                "a 16-byte-aligned TMA destination: {:?}",
                r.map_err(|e| e.to_string())
            ),
        );
    }
}

/// Simulator fidelity (safe code): a launch with explicit clusters of 1 × 1 × 1 block sets
/// `%is_explicit_cluster` on the GPU; the simulator derives it from the cluster's size.
#[test]
fn is_explicit_with_clusters_of_one() {
    use ffi_examples_hopper_kernels::adv::adv_is_explicit;
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(adv_is_explicit).unwrap();
        let mut out = ctx.alloc_zeros::<u32>(2 * 32).unwrap();
        let s = ctx.default_stream();
        s.launch(&k, LaunchConfig::new(2, 32).with_cluster(1), (&mut out,))
            .unwrap();
        let explicit_one = out.to_host_vec().unwrap()[0];
        s.launch(&k, LaunchConfig::new(2, 32), (&mut out,)).unwrap();
        let implicit = out.to_host_vec().unwrap()[0];
        // PTX: %is_explicit_cluster is true when the launch named cluster dimensions.
        report(
            "is_explicit_with_clusters_of_one",
            &name,
            explicit_one != 1 || implicit != 0,
            &format!("with_cluster(1): is_explicit = {explicit_one}; no cluster: {implicit}"),
        );
    }
}

/// Simulator fidelity: reading a peer block's shared memory after that block exited (UB on
/// the GPU: its shared memory may belong to another block by then). The simulator keeps the
/// memory and answers the old value.
#[test]
fn dsmem_after_the_peer_exited_sim() {
    use ffi_examples_hopper_kernels::adv::adv_dsmem_after_exit;
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = md.kernel(adv_dsmem_after_exit).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(2 * 32).unwrap();
    let s = ctx.default_stream();
    // SAFETY: the simulator only (the contract is broken on purpose).
    let r = unsafe {
        s.launch_unchecked(
            &k,
            LaunchConfig::new(2, 32).with_cluster(2),
            (2_000_000u32, &mut out),
        )
    }
    .and_then(|()| s.synchronize());
    report(
        "dsmem_after_the_peer_exited",
        "simulator",
        r.is_ok(),
        &format!(
            "{:?}; block 0 read {:?}",
            r.map_err(|e| e.to_string()),
            out.to_host_vec().map(|v| v[0])
        ),
    );
}

/// The GPU side of `grid_sync_with_an_exited_block_sim`: run it alone under `timeout`; a hang
/// (the process killed) confirms that the simulator's success was wrong.
#[cfg(feature = "gpu")]
#[test]
#[ignore = "hangs the GPU by design: run alone under `timeout`"]
fn grid_sync_with_an_exited_block_gpu() {
    for (name, ctx) in devices() {
        if ctx.is_simulator() {
            continue;
        }
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(adv_grid_sync_block_exits).unwrap();
        let bar = GridBarrierWord::new(&ctx).unwrap();
        let mut out = ctx.alloc_zeros::<u32>(4 * 32).unwrap();
        let s = ctx.default_stream();
        println!(
            "PROBE grid_sync_with_an_exited_block [{name}] launching; a hang here means the GPU waits forever"
        );
        // SAFETY: the contract is broken on purpose (a probe run under `timeout`).
        let r = unsafe {
            s.launch_unchecked(
                &k,
                LaunchConfig::new(4, 32).cooperative(),
                (bar.param(), &mut out),
            )
        }
        .and_then(|()| s.synchronize());
        println!("PROBE grid_sync_with_an_exited_block [{name}] returned {r:?}");
    }
}

/// A cooperative grid one block larger than what fits at once is an error at the launch.
#[test]
fn cooperative_grid_one_too_large() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = ctx.load_module(PTX.as_bytes()).unwrap();
    let k = md.kernel(adv_grid_sync_block_exits).unwrap();
    let max = LaunchConfig::max_cooperative_blocks(&k, 1024, 0).unwrap();
    let bar = GridBarrierWord::new(&ctx).unwrap();
    let mut out = ctx.alloc_zeros::<u32>((max as usize + 1) * 1024).unwrap();
    let s = ctx.default_stream();
    // SAFETY: refused before it runs (checked below); had it run, block 1's exit would break
    // the barrier's contract, which the simulator accepts (see above).
    let r = unsafe {
        s.launch_unchecked(
            &k,
            LaunchConfig::new(max + 1, 1024).cooperative(),
            (bar.param(), &mut out),
        )
    };
    let refused = matches!(
        r,
        Err(gpukernel_runtime::Error::CooperativeGridTooLarge { .. })
    );
    report(
        "cooperative_grid_one_too_large",
        "simulator",
        !refused,
        &format!(
            "{} blocks of 1024 (max {max}): {:?}",
            max + 1,
            r.map_err(|e| e.to_string())
        ),
    );
}
