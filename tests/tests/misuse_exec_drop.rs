//! `GraphExec`'s drop waits for its launches before the borrows of `'a` end, also when it is
//! dropped inside a `Stream::capture` closure of the stream it was launched on (where that
//! stream's own wait is refused): the host slice a memcpy node writes is not written after
//! the exec is gone.
//!
//! GPU-only in effect (the simulator runs every launch to completion as it is enqueued): run
//! with `--features gpu`. On the simulator it only checks that nothing errs.

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::{devices, plain_kernels};

#[test]
fn dropping_a_launched_exec_inside_a_capture_waits_for_it() {
    for (name, ctx) in devices() {
        let n: usize = if ctx.is_simulator() { 1024 } else { 1 << 26 };
        let module = plain_kernels(&ctx);
        let k = module.kernel(saxpy).unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let s = ctx.new_stream().unwrap();
        let x = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(n).unwrap();
        let small = ctx.htod_copy(&[7u32; 16]).unwrap();
        let mut host = vec![0u32; 16];
        {
            let g = ctx.new_graph("long then copy").unwrap();
            let (xb, yb) = (g.buffer(&x), g.buffer_mut(&mut y));
            let mut last = g.add_kernel(&[], &k, cfg, (1.0f32, xb, yb)).unwrap();
            for _ in 0..40 {
                last = g.add_kernel(&[last], &k, cfg, (1.0f32, xb, yb)).unwrap();
            }
            g.add_memcpy_dtoh(&[last], &mut host, g.buffer(&small))
                .unwrap();
            let exec = g.instantiate().unwrap();
            exec.launch(&s).unwrap();
            // The exec is dropped while `s` is capturing: its wait is refused.
            let _ = s.capture("drop the exec", move |_c| {
                drop(exec);
                Ok(())
            });
        }
        // `host`'s borrow by the graph has ended: nothing may write it any more.
        let early = host[0];
        s.synchronize().unwrap();
        let late = host[0];
        println!("{name}: host[0] right after the exec's drop = {early}, after a sync = {late}");
        assert!(
            early == late,
            "on {name}: host memory changed from {early} to {late} after the graph's borrow of it ended"
        );
    }
}
