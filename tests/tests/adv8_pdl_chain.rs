//! Probe: two programmatic dependent launches in a row. A (writes `y` after a long spin, lets
//! dependents start at once), B (programmatic dependent; touches only `z`, so it keeps its
//! contract towards A without waiting), C (programmatic dependent; reads `y` into `w` without
//! waiting, which keeps its contract towards B, the kernel before it, which never touches `y`).
//! If C may start before A completes (B let it start by exiting), C reads `y` before A wrote
//! it: the contract of `LaunchConfig::programmatic_dependent` must then cover every kernel
//! the chain of programmatic launches does not wait for, not only the one before. Every
//! device: the simulator here, and with the `gpu` feature the GPU too.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::{adv_pdl_early, adv_pdl_naive, adv_pdl_overwrite};
use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::devices;

#[test]
fn a_programmatic_launch_after_a_programmatic_one_and_the_kernel_before_both() {
    let n = 132 * 256;
    for (name, ctx) in devices() {
        if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
            println!("{name}: not compute capability 9.0");
            continue;
        }
        let md = ctx.load_module(PTX.as_bytes()).unwrap();
        let (a, b, c) = (
            md.kernel(adv_pdl_early).unwrap(),
            md.kernel(adv_pdl_overwrite).unwrap(),
            md.kernel(adv_pdl_naive).unwrap(),
        );
        let iters = if ctx.is_simulator() { 10 } else { 2_000_000 };
        let s = ctx.new_stream().unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        // SAFETY: as the contract reads for the kernel before each: `adv_pdl_overwrite`
        // touches only `z`, which `adv_pdl_early` does not; `adv_pdl_naive` touches `y` and
        // `w`, which `adv_pdl_overwrite` does not. What this probes is whether that is enough.
        let dependent = unsafe { cfg.programmatic_dependent() };
        let mut early_total = 0;
        for round in 0..3 {
            let mut y = s.alloc_zeros::<u32>(n).unwrap();
            let mut z = s.alloc_zeros::<u32>(n).unwrap();
            let mut w = s.alloc_zeros::<u32>(n).unwrap();
            s.launch(&a, cfg, (iters, &mut y)).unwrap();
            s.launch(&b, dependent, (&mut z,)).unwrap();
            s.launch(&c, dependent, (&y, &mut w)).unwrap();
            let got = w.to_host_vec().unwrap();
            let early = got.iter().filter(|&&v| v != 1).count();
            early_total += early;
            println!(
                "PROBE pdl_chain [{name}] round {round}: {early} of {n} elements of w read before the first kernel wrote them"
            );
            assert!(z.to_host_vec().unwrap().iter().all(|&v| v == 7));
        }
        println!(
            "PROBE pdl_chain [{name}] {} {early_total} early reads in 3 rounds",
            if early_total == 0 { "OK" } else { "HOLE" }
        );
    }
}
