//! A `while` node looping on the device until a Rust kernel clears its condition, on every
//! test device (the simulator, and the GPU with the `gpu` feature): the example kernel
//! `halve_until` (ffi-examples-kernels) sets `gpukernel_device::graph::ConditionalHandle`,
//! which on the GPU is the driver-provided `cudaGraphSetConditional`.

use ffi_examples_kernels::graph::halve_until;
use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_device::Kernel;
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, LaunchConfig, Module};
use gpukernel_tests::{Rng, devices};

fn link(ctx: &Context, names: &[&str]) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| l.add_ptx_kernels(PTX, "kernels.ptx", names).link_and_load())
        .unwrap_or_else(|e| panic!("linking {names:?} failed: {e}"))
}

/// The values after halving until none is above `tol`, and the number of rounds (at least
/// one: the handle's default is `true`).
fn reference(x: &[f32], tol: f32) -> (Vec<f32>, usize) {
    let mut v = x.to_vec();
    for round in 1.. {
        v.iter_mut().for_each(|e| *e *= 0.5);
        if v.iter().all(|&e| e <= tol) {
            return (v, round);
        }
    }
    unreachable!()
}

#[test]
fn the_ptx_calls_the_driver_provided_setter() {
    let decl = PTX
        .lines()
        .position(|l| l.trim() == ".extern .func cudaGraphSetConditional")
        .expect("the kernels' PTX declares cudaGraphSetConditional");
    let params: Vec<&str> = PTX.lines().skip(decl + 1).take(4).collect();
    assert!(params[1].contains(".param .b64"), "{params:?}");
    assert!(params[2].contains(".param .b32"), "{params:?}");
}

#[test]
fn a_while_node_loops_on_the_device_until_the_kernel_clears_its_condition() {
    let mut rng = Rng::from_env("halve_until");
    let n = 1000;
    let start: Vec<f32> = (0..n).map(|_| rng.f32().abs() * 1.0e6).collect();
    let (want, rounds) = reference(&start, 1.0);
    println!("{rounds} rounds");
    let mut results = Vec::new();
    for (name, ctx) in devices() {
        let m = link(&ctx, &[halve_until::NAME, saxpy::NAME]);
        let halve = m.kernel(halve_until).unwrap();
        let add = m.kernel(saxpy).unwrap();
        let ones = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
        let mut x = ctx.alloc_zeros::<f32>(n).unwrap();
        let mut count = ctx.alloc_zeros::<f32>(n).unwrap();
        let mut host = vec![0.0f32; n];
        {
            let g = ctx.new_graph("halve until converged").unwrap();
            let again = g.conditional_handle(true).unwrap();
            let (xb, cb) = (g.buffer_mut(&mut x), g.buffer_mut(&mut count));
            // One block: its threads vote on the condition.
            let cfg = LaunchConfig::new(1, 1024);
            let up = g.add_memcpy_htod(&[], xb, &start).unwrap();
            let zero = g.add_memset_zeros(&[], cb).unwrap();
            let lp = g
                .add_while(&[up, zero], again, |body| {
                    let h = body.add_kernel(&[], &halve, cfg, (xb, 1.0f32, again))?;
                    // Counts the rounds: count += 1 after each halving.
                    body.add_kernel(&[h], &add, cfg, (1.0f32, &ones, cb))?;
                    Ok(())
                })
                .unwrap();
            g.add_memcpy_dtoh(&[lp], &mut host, xb).unwrap();
            let exec = g.instantiate().unwrap();
            let s = ctx.new_stream().unwrap();
            // Twice: the handle is reset to its default at each launch, the input re-copied.
            exec.launch(&s).unwrap();
            exec.launch(&s).unwrap();
            s.synchronize().unwrap();
        }
        assert_eq!(host, want, "{name}: the loop's result");
        assert_eq!(x.to_host_vec().unwrap(), want, "{name}");
        assert_eq!(
            count.to_host_vec().unwrap(),
            vec![rounds as f32; n],
            "{name}: one body run per round"
        );
        results.push(host);
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
