//! Conditional nodes on the simulator, with a hand-written kernel that sets a condition the
//! way a `#[kernel]` taking `gpukernel_device::graph::ConditionalHandle` does.
#![allow(non_camel_case_types)]

use core::ffi::c_void;

use gpukernel_device::graph::ConditionalHandle as DeviceHandle;
use gpukernel_device::{__private, DisjointSlice, Kernel, SafeKernel, SimEntry, sync, thread};

use crate::error::Error;
use crate::launch::tests::{saxpy, sim};
use crate::{Context, Device, LaunchConfig, Module};

const PTX: &str = "
    .version 7.8
    .target sm_90
    .address_size 64
    .extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);
    .visible .entry halve_until(.param .u64 x, .param .u64 xn, .param .f32 tol, .param .u64 c) { ret; }
    .visible .global .align 8 .u64 __gpukernel_sig_halve_until = 7710162562058289201;
";

/// `halve_until(x: DisjointSlice<f32>, tol: f32, again: ConditionalHandle)`: halves each
/// element and sets `again` to whether any is still above `tol` (one block).
#[derive(Clone, Copy)]
struct halve_until;
// SAFETY: NAME is the PTX entry above, Params its parameters, SIM_ENTRY reads them in order.
unsafe impl Kernel for halve_until {
    const NAME: &'static str = "halve_until";
    type Params = (DisjointSlice<'static, f32>, f32, DeviceHandle);
    const SIGNATURE: u64 = 7710162562058289201;
    const SIM_ENTRY: SimEntry = halve_until_entry;
}
// SAFETY: writes only its own element; the handle is set by the first thread only.
unsafe impl SafeKernel for halve_until {}
unsafe fn halve_until_entry(p: *const *mut c_void) {
    // SAFETY: the typed launch passes (ptr, len, f32, handle) for a live buffer and a handle
    // of the running graph.
    unsafe {
        let arg = |i: usize| *p.add(i);
        let mut x = __private::disjoint_from_raw::<f32>(
            arg(0).cast::<u64>().read() as *mut f32,
            arg(1).cast::<u64>().read() as usize,
        );
        let tol = arg(2).cast::<f32>().read();
        let again = arg(3).cast::<DeviceHandle>().read();
        let mut above = false;
        if let Some(xi) = x.get_mut(thread::index()) {
            *xi *= 0.5;
            above = *xi > tol;
        }
        again.set_by_first_thread(sync::sync_threads_or(above));
    }
}

fn setup() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.load_module(PTX.as_bytes()).unwrap();
    (ctx, m)
}

/// The values after halving until none is above `tol` (at least once: the body of the
/// `while` runs first because the handle's default is `true`).
fn converged(x: &[f32], tol: f32) -> (Vec<f32>, u32) {
    let mut v = x.to_vec();
    let mut rounds = 0;
    loop {
        rounds += 1;
        v.iter_mut().for_each(|e| *e *= 0.5);
        if v.iter().all(|&e| e <= tol) {
            return (v, rounds);
        }
    }
}

#[test]
fn a_while_node_loops_until_the_kernel_clears_its_condition() {
    let (ctx, m) = setup();
    let k = m.kernel(halve_until).unwrap();
    let start: Vec<f32> = (0..200).map(|i| (i * 37 % 1000) as f32).collect();
    let mut x = ctx.htod_copy(&start).unwrap();
    {
        let g = ctx.new_graph("solver").unwrap();
        let again = g.conditional_handle(true).unwrap();
        let xb = g.buffer_mut(&mut x);
        let cfg = LaunchConfig::for_elements(start.len()).unwrap();
        assert_eq!(
            cfg.grid.x, 1,
            "one block: the condition is the block's vote"
        );
        g.add_while(&[], again, |body| {
            body.add_kernel(&[], &k, cfg, (xb, 1.0f32, again))?;
            Ok(())
        })
        .unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&ctx.default_stream()).unwrap();
        ctx.default_stream().synchronize().unwrap();
    }
    let (want, rounds) = converged(&start, 1.0);
    assert_eq!(rounds, 10, "999 / 2^10 < 1");
    assert_eq!(x.to_host_vec().unwrap(), want);
}

#[test]
fn the_condition_is_reset_at_each_launch_and_an_if_body_runs_only_when_set() {
    let (ctx, m) = setup();
    let halve = m.kernel(halve_until).unwrap();
    let (_, lm) = sim();
    let add = lm.kernel(saxpy).unwrap();
    let ones = ctx.htod_copy(&[1.0f32; 4]).unwrap();
    let mut x = ctx.htod_copy(&[8.0f32, 2.0, 0.0, 0.0]).unwrap();
    let mut hits = ctx.alloc_zeros::<f32>(4).unwrap();
    {
        let g = ctx.new_graph("branch").unwrap();
        let above = g.conditional_handle(false).unwrap();
        let (xb, hb) = (g.buffer_mut(&mut x), g.buffer_mut(&mut hits));
        let cfg = LaunchConfig::for_elements(4).unwrap();
        // x halves; `above` says whether any element is still above 1.
        let h = g.add_kernel(&[], &halve, cfg, (xb, 1.0f32, above)).unwrap();
        g.add_if(&[h], above, |body| {
            body.add_kernel(&[], &add, cfg, (1.0f32, &ones, hb))?;
            Ok(())
        })
        .unwrap();
        let exec = g.instantiate().unwrap();
        // 8 → 4 (above), 4 → 2 (above), 2 → 1 (not above), 1 → 0.5 (not above).
        for _ in 0..4 {
            exec.launch(&ctx.default_stream()).unwrap();
        }
        ctx.default_stream().synchronize().unwrap();
    }
    assert_eq!(hits.to_host_vec().unwrap(), vec![2.0f32; 4]);
    assert_eq!(x.to_host_vec().unwrap(), vec![0.5f32, 0.125, 0.0, 0.0]);
}

#[test]
fn nodes_setting_one_handle_are_ordered() {
    let (ctx, m) = setup();
    let k = m.kernel(halve_until).unwrap();
    let mut a = ctx.alloc_zeros::<f32>(4).unwrap();
    let mut b = ctx.alloc_zeros::<f32>(4).unwrap();
    let g = ctx.new_graph("two setters").unwrap();
    let c = g.conditional_handle(false).unwrap();
    let cfg = LaunchConfig::for_elements(4).unwrap();
    let (ab, bb) = (g.buffer_mut(&mut a), g.buffer_mut(&mut b));
    g.add_kernel(&[], &k, cfg, (ab, 1.0f32, c)).unwrap();
    let second = g.add_kernel(&[], &k, cfg, (bb, 1.0f32, c)).unwrap();
    let st = g.inner.lock();
    assert_eq!(
        st.nodes[second.index()].deps,
        vec![0],
        "disjoint buffers, one handle"
    );
}

#[test]
fn a_conditional_handle_is_refused_outside_its_graph() {
    let (ctx, m) = setup();
    let k = m.kernel(halve_until).unwrap();
    let mut x = ctx.alloc_zeros::<f32>(4).unwrap();
    let cfg = LaunchConfig::for_elements(4).unwrap();
    let g = ctx.new_graph("owner").unwrap();
    let c = g.conditional_handle(true).unwrap();
    // A plain launch: no graph reads it.
    let e = ctx
        .default_stream()
        .launch(&k, cfg, (&mut x, 1.0f32, c))
        .unwrap_err();
    assert!(
        matches!(&e, Error::ConditionalHandleMisused { operation: "Stream::launch", graph, .. } if graph == "owner"),
        "{e}"
    );
    // A node of another graph.
    let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
    let other = ctx.new_graph("other").unwrap();
    let e = other
        .add_kernel(&[], &k, cfg, (other.buffer_mut(&mut y), 1.0f32, c))
        .unwrap_err();
    assert!(matches!(e, Error::ConditionalHandleMisused { .. }), "{e}");
    let e = other.add_while(&[], c, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::ConditionalHandleMisused { .. }), "{e}");
    // A capture.
    let s = ctx.new_stream().unwrap();
    let mut z = ctx.alloc_zeros::<f32>(4).unwrap();
    let e = s
        .capture("cap", |cap| {
            cap.launch(&k, cfg, (cap.buffer_mut(&mut z), 1.0f32, c))
        })
        .unwrap_err();
    assert!(matches!(e, Error::ConditionalHandleMisused { .. }), "{e}");
    assert!(!s.is_capturing());
}

#[test]
fn a_body_refuses_host_work_and_cannot_be_instantiated_alone() {
    let (ctx, _m) = setup();
    let mut x = ctx.alloc_zeros::<f32>(4).unwrap();
    let host = [1.0f32; 4];
    let g = ctx.new_graph("outer").unwrap();
    let c = g.conditional_handle(false).unwrap();
    let xb = g.buffer_mut(&mut x);
    let e = g
        .add_if(&[], c, |body| {
            let e = body.add_host(&[], || {}).unwrap_err();
            assert!(matches!(
                e,
                Error::ConditionalBody {
                    operation: "Graph::add_host",
                    ..
                }
            ));
            let e = body.instantiate().unwrap_err();
            assert!(matches!(
                e,
                Error::ConditionalBody {
                    operation: "Graph::instantiate",
                    ..
                }
            ));
            body.add_memset_zeros(&[], xb)?;
            body.add_memcpy_htod(&[], xb, &host).map(drop)
        })
        .unwrap_err();
    assert!(
        matches!(&e, Error::ConditionalBody { operation: "Graph::add_memcpy_htod", graph, .. } if graph == "outer (if body)"),
        "{e}"
    );
    // The node stays, with the memset its body holds: the graph still runs (the condition is
    // false, so the body does not).
    assert_eq!(g.len(), 1);
    let exec = g.instantiate().unwrap();
    exec.launch(&ctx.default_stream()).unwrap();
}
