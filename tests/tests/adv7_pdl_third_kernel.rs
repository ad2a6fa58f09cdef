//! Probe: does a kernel launched plainly after a programmatic dependent launch wait for the
//! kernel before that one? Stream A (writes `y` after a long spin, lets dependents start at
//! once), B (programmatic dependent; touches only `z`, so it keeps its contract without
//! waiting), C (plain; copies `y` to `w`). The stream ordering of gpukernel assumes C runs after
//! A completes (no wait is added on one stream); if C read `y` before A wrote it, `w` would hold
//! zeros. Every device: the simulator here, and with the `gpu` feature the GPU too.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::{adv_pdl_early, adv_pdl_naive, adv_pdl_overwrite};
use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::devices;

#[test]
fn a_plain_launch_after_a_programmatic_one_sees_the_kernel_before_it() {
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
        // SAFETY: `adv_pdl_overwrite` touches only `z`, which the kernel before it neither
        // reads nor writes: it needs no `grid::wait_dependencies`.
        let dependent = unsafe { cfg.programmatic_dependent() };
        for round in 0..3 {
            let mut y = s.alloc_zeros::<u32>(n).unwrap();
            let mut z = s.alloc_zeros::<u32>(n).unwrap();
            let mut w = s.alloc_zeros::<u32>(n).unwrap();
            s.launch(&a, cfg, (iters, &mut y)).unwrap();
            s.launch(&b, dependent, (&mut z,)).unwrap();
            s.launch(&c, cfg, (&y, &mut w)).unwrap();
            let got = w.to_host_vec().unwrap();
            let early = got.iter().filter(|&&v| v != 1).count();
            println!(
                "PROBE pdl_third_kernel [{name}] round {round}: {early} of {n} elements of w read before the first kernel wrote them"
            );
            assert_eq!(
                early, 0,
                "{name}: a plain launch after a programmatic one ran before the kernel before it finished"
            );
            assert!(z.to_host_vec().unwrap().iter().all(|&v| v == 7));
        }
    }
}
