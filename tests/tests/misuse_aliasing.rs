//! One allocation lent to one launch twice, one of the two written: every typed path (stream
//! launch, graph kernel node, captured launch, `GraphExec::set_kernel_args`) refuses it with
//! `Error::AliasedArguments` naming both parameters, before anything runs. `GraphBufferMut`
//! (and `Capture::buffer_mut`'s handle) is `Copy`, so the borrow checker alone cannot.
//!
//! The kernels here are `#[kernel]`s of this file, run by the simulator from a PTX that
//! declares their entries and fingerprints (the simulator needs nothing else); the saxpy case
//! runs on every test device (the GPU too with the `gpu` feature).

use gpukernel_device::prelude::*;
use gpukernel_device::{DisjointSlice, Kernel, thread};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use gpukernel_tests::{devices, plain_kernels};

/// `out[i] = x[i] + 1` and `seen[i] = x[i]`: with `x` and `out` one buffer, `x` would change
/// under the kernel.
#[kernel(same_len(x, out))]
pub fn copy_seen(x: &[u32], mut out: DisjointSlice<u32>, mut seen: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = x[i.get()] + 1;
    }
    if let Some(s) = seen.get_mut(&i) {
        *s = x[i.get()];
    }
}

/// Writes `a[i] = 1` and `b[i] = 2`: with `a` and `b` one buffer, each thread would hold two
/// `&mut` to one element.
#[kernel]
pub fn two_outputs(mut a: DisjointSlice<u32>, mut b: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(v) = a.get_mut(&i) {
        *v = 1;
    }
    if let Some(v) = b.get_mut(&i) {
        *v = 2;
    }
}

/// `out[i] = a[i] + b[i]`: reading one buffer twice is fine.
#[kernel]
pub fn add_inputs(a: &[u32], b: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = a[i.get()] + b[i.get()];
    }
}

const N: usize = 64;

fn module(ctx: &Context) -> Module {
    let entry = |name: &str, params: usize, sig: u64| {
        let list: Vec<String> = (0..params).map(|i| format!(".param .u64 p{i}")).collect();
        format!(
            ".visible .entry {name}({}) {{ ret; }}\n.visible .global .align 8 .u64 __gpukernel_sig_{name} = {sig};\n",
            list.join(", ")
        )
    };
    let ptx = format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n{}{}{}",
        entry(copy_seen::NAME, 6, copy_seen::SIGNATURE),
        entry(two_outputs::NAME, 4, two_outputs::SIGNATURE),
        entry(add_inputs::NAME, 6, add_inputs::SIGNATURE),
    );
    ctx.load_module(ptx.as_bytes()).unwrap()
}

fn sim() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = module(&ctx);
    (ctx, m)
}

/// The error names the kernel and both parameters (by name where the kernel declares it, else
/// by position), and says which one is written.
fn assert_aliased(e: &Error, kernel: &str, first: &str, second: &str) {
    assert!(matches!(e, Error::AliasedArguments { .. }), "{e:?}");
    let s = e.to_string();
    for part in [kernel, first, second, "written", "hint:"] {
        assert!(s.contains(part), "`{part}` missing from: {s}");
    }
}

#[test]
fn a_stream_launch_refuses_one_buffer_as_input_and_output() {
    let (ctx, m) = sim();
    let k = m.kernel(copy_seen).unwrap();
    let s = ctx.default_stream();
    let mut out = ctx.htod_copy(&[7u32; N]).unwrap();
    let mut seen = ctx.alloc_zeros::<u32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let graph = ctx.new_graph("lender").unwrap();
        let ob = graph.buffer_mut(&mut out);
        let e = s.launch(&k, cfg, (ob, ob, &mut seen)).unwrap_err();
        // `x` and `out` are named by `same_len(x, out)`.
        assert_aliased(
            &e,
            "copy_seen",
            "`x: &[u32]` (argument 0)",
            "`out: DisjointSlice<u32>` (argument 1)",
        );
        // The read-only handle of the same buffer is the same memory.
        let e = s.launch(&k, cfg, (ob.read(), ob, &mut seen)).unwrap_err();
        assert_aliased(&e, "copy_seen", "argument 0", "argument 1");
    }
    // Nothing ran.
    assert_eq!(out.to_host_vec().unwrap(), [7; N]);
    assert_eq!(seen.to_host_vec().unwrap(), [0; N]);
}

#[test]
fn a_stream_launch_refuses_one_buffer_for_two_disjoint_slices() {
    let (ctx, m) = sim();
    let k = m.kernel(two_outputs).unwrap();
    let s = ctx.default_stream();
    let mut out = ctx.alloc_zeros::<u32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let graph = ctx.new_graph("lender").unwrap();
        let ob = graph.buffer_mut(&mut out);
        let e = s.launch(&k, cfg, (ob, ob)).unwrap_err();
        assert_aliased(
            &e,
            "two_outputs",
            "argument 0 (`DisjointSlice<u32>`)",
            "argument 1 (`DisjointSlice<u32>`)",
        );
    }
    assert_eq!(out.to_host_vec().unwrap(), [0; N]);
    // Disjoint halves of one allocation are two buffers as far as a launch is concerned.
    let (lo, hi) = out.split_at_mut(N / 2).unwrap();
    s.launch(&k, LaunchConfig::for_elements(N / 2).unwrap(), (lo, hi))
        .unwrap();
    let got = out.to_host_vec().unwrap();
    assert_eq!(
        (got[0], got[N / 2 - 1], got[N / 2], got[N - 1]),
        (1, 1, 2, 2)
    );
}

#[test]
fn reading_one_buffer_twice_is_allowed() {
    let (ctx, m) = sim();
    let k = m.kernel(add_inputs).unwrap();
    let x = ctx.htod_copy(&[5u32; N]).unwrap();
    let mut out = ctx.alloc_zeros::<u32>(N).unwrap();
    ctx.default_stream()
        .launch(
            &k,
            LaunchConfig::for_elements(N).unwrap(),
            (&x, &x, &mut out),
        )
        .unwrap();
    assert_eq!(out.to_host_vec().unwrap(), [10; N]);
}

#[test]
fn a_graph_node_refuses_aliased_arguments_and_adds_nothing() {
    let (ctx, m) = sim();
    let k = m.kernel(copy_seen).unwrap();
    let k2 = m.kernel(two_outputs).unwrap();
    let mut out = ctx.htod_copy(&[7u32; N]).unwrap();
    let mut seen = ctx.alloc_zeros::<u32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let graph = ctx.new_graph("aliased node").unwrap();
        let (ob, sb) = (graph.buffer_mut(&mut out), graph.buffer_mut(&mut seen));
        let e = graph.add_kernel(&[], &k, cfg, (ob, ob, sb)).unwrap_err();
        assert_aliased(&e, "copy_seen", "argument 0", "argument 1");
        let e = graph.add_kernel(&[], &k2, cfg, (sb, sb)).unwrap_err();
        assert_aliased(&e, "two_outputs", "argument 0", "argument 1");
        assert!(graph.is_empty());
        graph
            .instantiate()
            .unwrap()
            .launch(&ctx.default_stream())
            .unwrap();
    }
    assert_eq!(out.to_host_vec().unwrap(), [7; N]);
}

#[test]
fn a_captured_launch_refuses_aliased_arguments() {
    let (ctx, m) = sim();
    let k = m.kernel(copy_seen).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut out = ctx.htod_copy(&[7u32; N]).unwrap();
    let mut seen = ctx.alloc_zeros::<u32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    let e = stream
        .capture("aliased capture", |c| {
            let (ob, sb) = (c.buffer_mut(&mut out), c.buffer_mut(&mut seen));
            c.launch(&k, cfg, (ob, ob, sb))
        })
        .unwrap_err();
    assert_aliased(&e, "copy_seen", "argument 0", "argument 1");
    // The stream is usable, and nothing ran.
    stream.synchronize().unwrap();
    assert_eq!(out.to_host_vec().unwrap(), [7; N]);
}

#[test]
fn set_kernel_args_refuses_aliased_arguments_and_keeps_the_old_ones() {
    let (ctx, m) = sim();
    let k = m.kernel(copy_seen).unwrap();
    let x = ctx.htod_copy(&[3u32; N]).unwrap();
    let mut out = ctx.htod_copy(&[7u32; N]).unwrap();
    let mut seen = ctx.alloc_zeros::<u32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let graph = ctx.new_graph("update").unwrap();
        let (xb, ob, sb) = (
            graph.buffer(&x),
            graph.buffer_mut(&mut out),
            graph.buffer_mut(&mut seen),
        );
        let node = graph.add_kernel(&[], &k, cfg, (xb, ob, sb)).unwrap();
        let exec = graph.instantiate().unwrap();
        let e = exec
            .set_kernel_args(node, &k, cfg, (ob, ob, sb))
            .unwrap_err();
        assert_aliased(&e, "copy_seen", "argument 0", "argument 1");
        let e = exec
            .set_kernel_args(node, &k, cfg, (xb, sb, sb))
            .unwrap_err();
        assert_aliased(&e, "copy_seen", "argument 1", "argument 2");
        exec.launch(&ctx.default_stream()).unwrap();
    }
    // The node kept its arguments: out = x + 1, seen = x.
    assert_eq!(out.to_host_vec().unwrap(), [4; N]);
    assert_eq!(seen.to_host_vec().unwrap(), [3; N]);
}

/// The reproduction with a kernel of the examples' PTX, on every test device: saxpy's
/// `x: &[f32]` and `y: DisjointSlice<f32>` given one buffer, through a stream launch and a
/// graph node.
#[test]
fn saxpy_with_x_and_y_one_buffer_is_refused_on_every_device() {
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let saxpy = module.kernel(ffi_examples_kernels::saxpy).unwrap();
        let mut y = ctx.htod_copy(&[1.0f32; N]).unwrap();
        let cfg = LaunchConfig::for_elements(N).unwrap();
        {
            let graph = ctx.new_graph("saxpy").unwrap();
            let yb = graph.buffer_mut(&mut y);
            let e = ctx
                .default_stream()
                .launch(&saxpy, cfg, (2.0f32, yb, yb))
                .unwrap_err();
            assert!(matches!(e, Error::AliasedArguments { .. }), "{name}: {e}");
            let e = graph
                .add_kernel(&[], &saxpy, cfg, (2.0f32, yb, yb))
                .unwrap_err();
            assert!(matches!(e, Error::AliasedArguments { .. }), "{name}: {e}");
        }
        assert_eq!(y.to_host_vec().unwrap(), [1.0; N], "{name}");
    }
}
