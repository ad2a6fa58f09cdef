//! Named barriers with a thread count (`gpukernel_device::named_barrier`): turns taken round a
//! ring of barriers and a producer/consumer hand-off run in order on the simulator and (with
//! the `gpu` feature) on an H100/H200; their misuse (a barrier number or count the PTX ISA
//! leaves undefined, a phase whose threads disagree on the count, a phase that never
//! completes) is refused or reported by the simulator, naming the barrier.

use ffi_examples_attention_kernels::PTX;
use ffi_examples_attention_kernels::turns::{
    named_barrier_count, named_barrier_hand_off, named_barrier_missing_arrival,
    named_barrier_mixed_counts, named_barrier_turns,
};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use gpukernel_tests::devices;

/// The module on `ctx`, or `None` where the sm_90a PTX cannot load.
fn module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0, the sm_90a kernels are not run there");
        return None;
    }
    Some(ctx.load_module(PTX.as_bytes()).unwrap())
}

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
fn groups_take_turns_round_a_ring_of_named_barriers() {
    for (name, ctx) in devices() {
        let Some(md) = module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(named_barrier_turns).unwrap();
        for (groups, rounds) in [(2u32, 5u32), (3, 7), (4, 64)] {
            let n = (groups * rounds) as usize;
            let mut log = ctx.htod_copy(&vec![u32::MAX; n]).unwrap();
            ctx.default_stream()
                .launch(&k, LaunchConfig::new(1, 128 * groups), (rounds, &mut log))
                .and_then(|()| ctx.default_stream().synchronize())
                .unwrap();
            let want: Vec<u32> = (0..n as u32).map(|i| i % groups).collect();
            assert_eq!(
                log.to_host_vec().unwrap(),
                want,
                "{groups} groups, {rounds} rounds on {name}"
            );
        }
    }
}

#[test]
fn a_named_barrier_hands_data_from_one_warp_to_others() {
    for (name, ctx) in devices() {
        let Some(md) = module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(named_barrier_hand_off).unwrap();
        let rounds = 9u32;
        for id in [1u32, 15] {
            let mut out = ctx.alloc_zeros::<u32>(128).unwrap();
            ctx.default_stream()
                .launch(&k, LaunchConfig::new(1, 128), (id, rounds, &mut out))
                .and_then(|()| ctx.default_stream().synchronize())
                .unwrap();
            let got = out.to_host_vec().unwrap();
            for (t, &x) in got.iter().enumerate() {
                let want = if t < 32 {
                    0
                } else {
                    (0..rounds).map(|r| 32 * r + (t as u32 % 32)).sum()
                };
                assert_eq!(x, want, "thread {t}, barrier {id} on {name}");
            }
        }
    }
}

#[test]
fn barrier_numbers_and_counts_the_isa_leaves_undefined_are_refused() {
    let (ctx, md) = sim();
    let s = ctx.default_stream();
    let hand_off = md.kernel(named_barrier_hand_off).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(128).unwrap();
    for id in [0u32, 16] {
        let msg =
            fault_message(s.launch(&hand_off, LaunchConfig::new(1, 128), (id, 1u32, &mut out)));
        assert!(
            msg.contains(&format!("barrier number {id}")) && msg.contains("1 to 15"),
            "{msg}"
        );
    }
    let count = md.kernel(named_barrier_count).unwrap();
    for c in [0u32, 48, 96] {
        let msg = fault_message(s.launch(&count, LaunchConfig::new(1, 64), (c, &mut out)));
        assert!(
            msg.contains(&format!("barrier 1 with count {c}"))
                && msg.contains("multiple of 32")
                && msg.contains("64 threads"),
            "{msg}"
        );
    }
    // The block's own size rounded up to whole warps is a valid count: the partial warp
    // arrives as a whole one.
    s.launch(&count, LaunchConfig::new(1, 40), (64u32, &mut out))
        .and_then(|()| s.synchronize())
        .unwrap();
}

#[test]
fn a_phase_whose_threads_pass_different_counts_is_reported() {
    let (ctx, md) = sim();
    let k = md.kernel(named_barrier_mixed_counts).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(128).unwrap();
    let msg = fault_message(ctx.default_stream().launch(
        &k,
        LaunchConfig::new(1, 128),
        (&mut out,),
    ));
    assert!(
        msg.contains("named barrier 1")
            && msg.contains("every thread of a phase must pass one count"),
        "{msg}"
    );
}

#[test]
fn a_named_barrier_phase_that_never_completes_is_reported() {
    let (ctx, md) = sim();
    let k = md.kernel(named_barrier_missing_arrival).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(64).unwrap();
    let msg = fault_message(
        ctx.default_stream()
            .launch(&k, LaunchConfig::new(1, 64), (&mut out,)),
    );
    assert!(
        msg.contains("NamedBarrier::sync") && msg.contains("can never complete"),
        "{msg}"
    );
}
