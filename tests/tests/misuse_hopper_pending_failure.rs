//! A foreign call's failure belongs to the launch that made it: creating or dropping the
//! Hopper helpers (`GridBarrierWord`, `TensorMap2D`) waits for the context's work but leaves
//! the failure pending, so the next observation point (here the stream's synchronization)
//! reports it, and `new` does not report it as its own error.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::divide_checked;
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{
    Context, Device, Error, GridBarrierWord, Kernel, LaunchConfig, Module, Swizzle, TensorMap2D,
};

const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");
const N: usize = 256;

fn link(ctx: &Context) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", &[divide_checked::NAME])
                .add_cuda_source(FUNCTIONS_CU, "functions.cu")
                .header("gpukernel_abi.h", ABI_H)
                .link_and_load()
        })
        .unwrap()
}

/// Launches `divide_checked` with a zero divisor (a foreign failure), runs `between`, then
/// synchronizes the stream: the failure must be reported there.
fn failure_survives(
    ctx: &Context,
    md: &Module,
    between: impl FnOnce(),
) -> gpukernel_runtime::Result<()> {
    let a = ctx.htod_copy(&[1.0f32; N]).unwrap();
    let mut b = vec![2.0f32; N];
    b[97] = 0.0;
    let b = ctx.htod_copy(&b).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(N).unwrap();
    let s = ctx.default_stream();
    let k = md.kernel(divide_checked).unwrap();
    s.launch(
        &k,
        LaunchConfig::for_elements(N).unwrap(),
        (&a, &b, &mut out),
    )
    .unwrap();
    between();
    s.synchronize()
}

fn is_foreign_failure(r: &gpukernel_runtime::Result<()>) -> bool {
    matches!(r, Err(Error::ForeignCallFailed { .. }))
}

#[test]
fn stream_sync_reports_the_failure() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = link(&ctx);
    let r = failure_survives(&ctx, &md, || {});
    assert!(is_foreign_failure(&r), "{r:?}");
}

#[test]
fn dropping_a_grid_barrier_word_keeps_the_failure() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = link(&ctx);
    let bar = GridBarrierWord::new(&ctx).unwrap();
    let r = failure_survives(&ctx, &md, move || drop(bar));
    assert!(is_foreign_failure(&r), "{r:?}");
}

#[test]
fn dropping_a_tensor_map_keeps_the_failure() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = link(&ctx);
    let mem = ctx.alloc_zeros::<f32>(32 * 32).unwrap();
    let map = TensorMap2D::new(&ctx, &mem, [32, 32], 32, [32, 32], Swizzle::None).unwrap();
    let r = failure_survives(&ctx, &md, move || drop(map));
    assert!(is_foreign_failure(&r), "{r:?}");
}

#[test]
fn creating_helpers_does_not_take_the_failure() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = link(&ctx);
    let mem = ctx.alloc_zeros::<f32>(32 * 32).unwrap();
    let mut created = Vec::new();
    let r = failure_survives(&ctx, &md, || {
        created.push(GridBarrierWord::new(&ctx).map(drop));
        created.push(TensorMap2D::new(&ctx, &mem, [32, 32], 32, [32, 32], Swizzle::None).map(drop));
    });
    assert!(created.iter().all(|c| c.is_ok()), "{created:?}");
    assert!(is_foreign_failure(&r), "{r:?}");
}
