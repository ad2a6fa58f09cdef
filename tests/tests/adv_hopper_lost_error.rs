//! Soundness probe: dropping a `GridBarrierWord` or a `TensorMap2D` synchronizes the context
//! and discards the result, so a foreign call's failure pending in the context is taken and
//! lost: the next observation point reports success. Prints `PROBE <name> HOLE|OK`; with
//! `GPUKERNEL_ADV_STRICT=1` a HOLE fails the test.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::divide_checked;
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{
    Context, Device, GridBarrierWord, Kernel, LaunchConfig, Module, Swizzle, TensorMap2D,
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

fn report(probe: &str, hole: bool, detail: &str) {
    let verdict = if hole { "HOLE" } else { "OK" };
    println!("PROBE {probe} [simulator] {verdict} {detail}");
    if hole && std::env::var_os("GPUKERNEL_ADV_STRICT").is_some() {
        panic!("PROBE {probe} HOLE {detail}");
    }
}

/// Launches `divide_checked` with a zero divisor (a foreign failure), runs `between`, then
/// synchronizes the stream: the failure must be reported there.
fn failure_survives(ctx: &Context, md: &Module, between: impl FnOnce()) -> String {
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
    format!("{:?}", s.synchronize())
}

#[test]
fn dropping_hopper_helpers_loses_foreign_failures() {
    let ctx = Device::simulator().primary_context().unwrap();
    let md = link(&ctx);
    // Control: nothing in between.
    let control = failure_survives(&ctx, &md, || {});
    report(
        "control_failure_reported",
        control == "Ok(())",
        &format!("stream sync answered {control}"),
    );
    let bar = GridBarrierWord::new(&ctx).unwrap();
    let r = failure_survives(&ctx, &md, move || drop(bar));
    report(
        "drop_grid_barrier_word_loses_failure",
        r == "Ok(())",
        &format!("after dropping a GridBarrierWord the stream sync answered {r}"),
    );
    let mem = ctx.alloc_zeros::<f32>(32 * 32).unwrap();
    let map = TensorMap2D::new(&ctx, &mem, [32, 32], 32, [32, 32], Swizzle::None).unwrap();
    let r = failure_survives(&ctx, &md, move || drop(map));
    report(
        "drop_tensor_map_loses_failure",
        r == "Ok(())",
        &format!("after dropping a TensorMap2D the stream sync answered {r}"),
    );
    // Creating one synchronizes the default stream too: the failure is reported by `new`,
    // as the error of an unrelated call.
    let mut from_new = String::new();
    let r = failure_survives(&ctx, &md, || {
        from_new = format!("{:?}", GridBarrierWord::new(&ctx).map(drop));
    });
    report(
        "grid_barrier_word_new_takes_failure",
        r == "Ok(())",
        &format!("GridBarrierWord::new answered {from_new}; the stream sync then {r}"),
    );
}
