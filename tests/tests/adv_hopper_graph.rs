//! Soundness probe: `GraphExec::set_kernel_args` takes a whole `LaunchConfig`, attributes
//! included, and validates the new attributes; the simulator replaces the node's attributes,
//! the CUDA backend (`cuGraphExecKernelNodeSetParams`) keeps the old ones. Prints `PROBE
//! <name> HOLE|OK`; with `GPUKERNEL_ADV_STRICT=1` a HOLE fails the test.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::adv_cluster_size;
use gpukernel_runtime::{Context, LaunchConfig, Module};
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
    if hole && std::env::var_os("GPUKERNEL_ADV_STRICT").is_some() {
        panic!("PROBE {probe} [{device}] HOLE {detail}");
    }
}

/// Builds a node with `built`, replaces its arguments with `set`, launches, and returns what
/// the kernel saw as its cluster size (or the error).
fn cluster_size_after_set(
    ctx: &Context,
    md: &Module,
    built: LaunchConfig,
    set: LaunchConfig,
) -> Result<Vec<u32>, String> {
    let k = md.kernel(adv_cluster_size).map_err(|e| e.to_string())?;
    let mut out = ctx.alloc_zeros::<u32>(4 * 32).map_err(|e| e.to_string())?;
    {
        let g = ctx.new_graph("cluster_size").map_err(|e| e.to_string())?;
        let o = g.buffer_mut(&mut out);
        let node = g
            .add_kernel(&[], &k, built, (o,))
            .map_err(|e| e.to_string())?;
        let exec = g.instantiate().map_err(|e| e.to_string())?;
        exec.set_kernel_args(node, &k, set, (o,))
            .map_err(|e| format!("set_kernel_args: {e}"))?;
        let s = ctx.new_stream().map_err(|e| e.to_string())?;
        exec.launch(&s).map_err(|e| format!("launch: {e}"))?;
        s.synchronize().map_err(|e| format!("sync: {e}"))?;
    }
    let mut v = out.to_host_vec().map_err(|e| e.to_string())?;
    v.dedup();
    Ok(v)
}

#[test]
fn set_kernel_args_changes_cluster_attributes() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let plain = LaunchConfig::new(4, 32);
        let clustered = LaunchConfig::new(4, 32).with_cluster(2);
        // Built with clusters of 2, replaced by a configuration without clusters.
        let r = cluster_size_after_set(&ctx, &md, clustered, plain);
        report(
            "graph_set_args_drops_cluster",
            &name,
            r != Ok(vec![1]),
            &format!("the config given says no cluster; the kernel saw cluster sizes {r:?}"),
        );
        let r = cluster_size_after_set(&ctx, &md, plain, clustered);
        report(
            "graph_set_args_adds_cluster",
            &name,
            r != Ok(vec![2]),
            &format!("the config given says clusters of 2; the kernel saw cluster sizes {r:?}"),
        );
        // Programmatic dependent launch is refused by `add_kernel`; by `set_kernel_args`?
        let r = cluster_size_after_set(&ctx, &md, plain, plain.programmatic_dependent());
        report(
            "graph_set_args_accepts_pdl",
            &name,
            r.is_ok(),
            &format!("add_kernel refuses programmatic_dependent; set_kernel_args answered {r:?}"),
        );
    }
}
