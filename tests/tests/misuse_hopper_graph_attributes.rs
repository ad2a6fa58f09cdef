//! An instantiated graph keeps the launch attributes its kernel nodes were built with
//! (`cuGraphExecKernelNodeSetParams` does not change them): `GraphExec::set_kernel_args` with
//! other attributes is refused with `GraphNodeAttributesChanged` on every device, instead of
//! the simulator applying them while CUDA silently keeps the old ones. Every device: the
//! simulator here, and with the `gpu` feature the GPU as well.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::adv_cluster_size;
use gpukernel_runtime::{Context, Error, LaunchConfig, Module, Result};
use gpukernel_tests::devices;

fn hopper_module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0");
        return None;
    }
    Some(ctx.load_module(PTX.as_bytes()).unwrap())
}

/// Builds a node with `built`, replaces its arguments with `set`, launches, and returns what
/// the kernel saw as its cluster size (or the error).
fn cluster_size_after_set(
    ctx: &Context,
    md: &Module,
    built: LaunchConfig,
    set: LaunchConfig,
) -> Result<Vec<u32>> {
    let k = md.kernel(adv_cluster_size)?;
    let mut out = ctx.alloc_zeros::<u32>(4 * 32)?;
    {
        let g = ctx.new_graph("cluster_size")?;
        let o = g.buffer_mut(&mut out);
        let node = g.add_kernel(&[], &k, built, (o,))?;
        let exec = g.instantiate()?;
        exec.set_kernel_args(node, &k, set, (o,))?;
        let s = ctx.new_stream()?;
        exec.launch(&s)?;
        s.synchronize()?;
    }
    let mut v = out.to_host_vec()?;
    v.dedup();
    Ok(v)
}

fn refused(r: &Result<Vec<u32>>) -> bool {
    matches!(r, Err(Error::GraphNodeAttributesChanged { .. }))
}

#[test]
fn set_kernel_args_refuses_attribute_changes() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let plain = LaunchConfig::new(4, 32);
        let clustered = LaunchConfig::new(4, 32).with_cluster(2);
        // The same attributes: accepted, and the node keeps its clusters.
        let r = cluster_size_after_set(&ctx, &md, clustered, clustered);
        assert_eq!(r.unwrap(), vec![2], "{name}");
        let r = cluster_size_after_set(&ctx, &md, plain, plain);
        assert_eq!(r.unwrap(), vec![1], "{name}");
        // Dropping, adding or changing clusters, or adding a cooperative launch: refused.
        let r = cluster_size_after_set(&ctx, &md, clustered, plain);
        assert!(refused(&r), "{name}: {r:?}");
        let r = cluster_size_after_set(&ctx, &md, plain, clustered);
        assert!(refused(&r), "{name}: {r:?}");
        let r = cluster_size_after_set(&ctx, &md, clustered, plain.with_cluster(4));
        assert!(refused(&r), "{name}: {r:?}");
        let r = cluster_size_after_set(&ctx, &md, plain, plain.cooperative());
        assert!(refused(&r), "{name}: {r:?}");
        // Making a plain node programmatic: its edges cannot change after instantiation.
        // SAFETY: refused before anything runs.
        let pdl = unsafe { plain.programmatic_dependent() };
        let r = cluster_size_after_set(&ctx, &md, plain, pdl);
        assert!(refused(&r), "{name}: {r:?}");
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("set_kernel_args") && msg.contains("adv_cluster_size"),
            "{msg}"
        );
    }
}
