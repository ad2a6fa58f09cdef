//! Two programmatic dependent launches in a row. A (writes `y` after a long spin, lets
//! dependents start at once), B (programmatic dependent; touches only `z`, so it needs no
//! `grid::wait_dependencies` towards A), C (programmatic dependent; reads `y` into `w`).
//! B exits at once, which lets C start while A still runs: C overlaps A, not only B. With C
//! reading `y` without waiting (which the contract allowed while it named only the kernel
//! before, B), every element of `w` was read before A wrote it on an H100. The contract of
//! `LaunchConfig::programmatic_dependent` now covers every kernel back to the last one
//! launched without the attribute; the second case checks that C's `wait_dependencies`
//! then waits for A as well. Every device: the simulator here, and with the `gpu` feature
//! the GPU too.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::{
    adv_pdl_early, adv_pdl_naive, adv_pdl_overwrite, adv_pdl_waiting,
};
use gpukernel_runtime::{LaunchConfig, Module, Stream};
use gpukernel_tests::devices;

/// Runs A, B, C (C reads `y` waiting or not) three times; returns how many elements of `w`
/// C read before A wrote them.
fn chain(md: &Module, s: &Stream, iters: u32, c_waits: bool) -> usize {
    let n = 132 * 256;
    let (a, b) = (
        md.kernel(adv_pdl_early).unwrap(),
        md.kernel(adv_pdl_overwrite).unwrap(),
    );
    let cfg = LaunchConfig::for_elements(n).unwrap();
    // SAFETY: `adv_pdl_overwrite` touches only `z`, which no kernel before it touches;
    // `adv_pdl_waiting` calls `grid::wait_dependencies` before it touches memory. The case
    // without it breaks the contract on purpose (a probe of why the contract names every
    // kernel back to the last plain launch).
    let dependent = unsafe { cfg.programmatic_dependent() };
    let mut early = 0;
    for _ in 0..3 {
        let mut y = s.alloc_zeros::<u32>(n).unwrap();
        let mut z = s.alloc_zeros::<u32>(n).unwrap();
        let mut w = s.alloc_zeros::<u32>(n).unwrap();
        s.launch(&a, cfg, (iters, &mut y)).unwrap();
        s.launch(&b, dependent, (&mut z,)).unwrap();
        if c_waits {
            let c = md.kernel(adv_pdl_waiting).unwrap();
            s.launch(&c, dependent, (&y, &mut w)).unwrap();
        } else {
            let c = md.kernel(adv_pdl_naive).unwrap();
            s.launch(&c, dependent, (&y, &mut w)).unwrap();
        }
        early += w.to_host_vec().unwrap().iter().filter(|&&v| v != 1).count();
        assert!(z.to_host_vec().unwrap().iter().all(|&v| v == 7));
    }
    early
}

#[test]
fn a_programmatic_launch_after_a_programmatic_one_overlaps_the_kernel_before_both() {
    for (name, ctx) in devices() {
        if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
            println!("{name}: not compute capability 9.0");
            continue;
        }
        let md = ctx.load_module(PTX.as_bytes()).unwrap();
        let iters = if ctx.is_simulator() { 10 } else { 2_000_000 };
        let s = ctx.new_stream().unwrap();
        // Not asserted: C breaks the contract on purpose; on the simulator kernels run one
        // after another, on an H100 C read all of `y` before A wrote it.
        let early = chain(&md, &s, iters, false);
        println!("PROBE pdl_chain_no_wait [{name}] {early} early reads in 3 rounds");
        // Kept: C waits, so it reads A's results, although B let it start while A ran.
        let early = chain(&md, &s, iters, true);
        println!(
            "PROBE pdl_chain_wait [{name}] {} {early} early reads in 3 rounds",
            if early == 0 { "OK" } else { "HOLE" }
        );
        assert_eq!(
            early, 0,
            "{name}: wait_dependencies in the third kernel did not wait for the first"
        );
    }
}
