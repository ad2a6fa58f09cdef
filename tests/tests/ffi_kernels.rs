//! Rust kernels calling foreign CUDA C (`functions.cu`) on every test device: the simulator
//! (which runs `functions.cu` compiled for the host) and, with the `gpu` feature, the GPU
//! (NVRTC + cuLink). Results are checked against the host and compared between devices.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::ffi::{
    Float2, add_through_pointer, axpy_with_c_abi, divide_checked, dot_with, multiply_vectors,
    sum_rows, swap_and_scale,
};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Error, Kernel, LaunchConfig, Module};
use gpukernel_tests::{Rng, assert_close, devices};

const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");

fn link(ctx: &Context, kernels: &[&str]) -> Module {
    Linker::new(ctx)
        .and_then(|mut l| {
            l.add_ptx_kernels(PTX, "kernels.ptx", kernels)
                .add_cuda_source(FUNCTIONS_CU, "functions.cu")
                .header("gpukernel_abi.h", ABI_H)
                .link_and_load()
        })
        .unwrap_or_else(|e| panic!("linking with functions.cu failed: {e}"))
}

#[test]
fn c_abi_foreign_call_on_every_device() {
    // `axpy_c` is a plain C function (`extern "C" fn` in `declare_device!`): no status, the
    // value returned directly.
    let mut rng = Rng::from_env("ffi_c_abi");
    let n = 4_099;
    let (x, y) = (rng.vec_f32(n), rng.vec_f32(n));
    let a = 1.75f32;
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    for (name, ctx) in devices() {
        let module = link(&ctx, &[axpy_with_c_abi::NAME]);
        let (dx, dy) = (ctx.htod_copy(&x).unwrap(), ctx.htod_copy(&y).unwrap());
        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        ctx.default_stream()
            .launch(
                &module.kernel(axpy_with_c_abi).unwrap(),
                LaunchConfig::for_elements(n).unwrap(),
                (a, &dx, &dy, &mut out),
            )
            .unwrap();
        assert_close(
            &format!("axpy_with_c_abi on {name}"),
            &out.to_host_vec().unwrap(),
            &want,
            1e-6,
        );
    }
}

#[test]
fn foreign_scalar_pointer_and_struct_calls_on_every_device() {
    let mut rng = Rng::from_env("ffi_kernels");
    let n = 10_007;
    let a = rng.vec_f32(n);
    let b: Vec<f32> = rng.vec_f32(n).into_iter().map(|v| v + 3.0).collect(); // never 0
    let names = [
        multiply_vectors::NAME,
        sum_rows::NAME,
        dot_with::NAME,
        swap_and_scale::NAME,
        add_through_pointer::NAME,
        divide_checked::NAME,
    ];
    let mut per_device: Vec<(String, Vec<f32>)> = Vec::new();
    for (name, ctx) in devices() {
        let module = link(&ctx, &names);
        let stream = ctx.default_stream();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        let mut all = Vec::new();

        stream
            .launch(
                &module.kernel(multiply_vectors).unwrap(),
                cfg,
                (&da, &db, &mut out),
            )
            .unwrap();
        let got = out.to_host_vec().unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        assert_close(&format!("multiply_vectors on {name}"), &got, &want, 0.0);
        all.extend(got);

        // Pointer passing: each thread hands `sum_reduce` a pointer into `a` and a length.
        let width = 7usize;
        let rows = n / width;
        let mut sums = ctx.alloc_zeros::<f32>(rows).unwrap();
        let k = module.kernel(sum_rows).unwrap();
        stream
            .launch(
                &k,
                LaunchConfig::for_elements(rows).unwrap(),
                (&da, width as u32, &mut sums),
            )
            .unwrap();
        let got = sums.to_host_vec().unwrap();
        let want: Vec<f32> = a.chunks_exact(width).map(|r| r.iter().sum()).collect();
        assert_close(&format!("sum_rows on {name}"), &got, &want, 1e-5);
        all.extend(got);

        // A #[repr(C)] struct by value to a kernel and to the foreign function, and returned.
        let pairs: Vec<Float2> = a.iter().zip(&b).map(|(&x, &y)| Float2 { x, y }).collect();
        let dp = ctx.htod_copy(&pairs).unwrap();
        let w = Float2 { x: 0.5, y: -2.0 };
        stream
            .launch(&module.kernel(dot_with).unwrap(), cfg, (&dp, w, &mut out))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        let want: Vec<f32> = pairs.iter().map(|p| p.x * w.x + p.y * w.y).collect();
        assert_close(&format!("dot_with on {name}"), &got, &want, 1e-6);
        all.extend(got);
        let mut swapped = ctx.alloc_zeros::<Float2>(n).unwrap();
        stream
            .launch(
                &module.kernel(swap_and_scale).unwrap(),
                cfg,
                (&dp, 3.0f32, &mut swapped),
            )
            .unwrap();
        for (i, (g, p)) in swapped
            .to_host_vec()
            .unwrap()
            .iter()
            .zip(&pairs)
            .enumerate()
        {
            assert_eq!(
                *g,
                Float2 {
                    x: p.y * 3.0,
                    y: p.x * 3.0
                },
                "swap_and_scale[{i}] on {name}"
            );
        }

        // A `()`-returning foreign function writing through a pointer.
        stream
            .launch(
                &module.kernel(add_through_pointer).unwrap(),
                cfg,
                (&da, 1.5f32, &mut out),
            )
            .unwrap();
        let want: Vec<f32> = a.iter().map(|x| x + 1.5).collect();
        assert_close(
            &format!("add_through_pointer on {name}"),
            &out.to_host_vec().unwrap(),
            &want,
            0.0,
        );

        stream
            .launch(
                &module.kernel(divide_checked).unwrap(),
                cfg,
                (&da, &db, &mut out),
            )
            .unwrap();
        stream
            .synchronize()
            .unwrap_or_else(|e| panic!("no foreign failure expected on {name}: {e}"));
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
        assert_close(
            &format!("divide_checked on {name}"),
            &out.to_host_vec().unwrap(),
            &want,
            1e-6,
        );
        per_device.push((name, all));
    }
    for w in per_device.windows(2) {
        assert_close(
            &format!("foreign calls {} vs {}", w[0].0, w[1].0),
            &w[1].1,
            &w[0].1,
            1e-5,
        );
    }
}

#[test]
fn a_non_zero_foreign_status_is_an_error_at_synchronization_on_every_device() {
    for (name, ctx) in devices() {
        let module = link(&ctx, &[divide_checked::NAME]);
        let n = 1000;
        let a = vec![1.0f32; n];
        let mut b = vec![2.0f32; n];
        b[321] = 0.0; // checked_div returns status 22 for a zero divisor
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        // A stream of its own: a failure is reported to whoever observes that stream's work.
        let stream = ctx.new_stream().unwrap();
        let mut out = stream.alloc_zeros::<f32>(n).unwrap();
        let divide = module.kernel(divide_checked).unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        stream.launch(&divide, cfg, (&da, &db, &mut out)).unwrap();
        match stream.synchronize() {
            Err(Error::ForeignCallFailed {
                function,
                status,
                thread,
                ..
            }) => {
                assert_eq!(
                    (function.as_str(), status, thread),
                    ("checked_div", 22, 321),
                    "on {name}"
                );
            }
            other => panic!("expected ForeignCallFailed on {name}, got {other:?}"),
        }
        // The record is cleared: the next synchronization is clean, and the other threads'
        // results are intact.
        stream.synchronize().unwrap();
        let got = out.to_host_vec().unwrap();
        assert_eq!(got[320], 0.5, "on {name}");
        assert_eq!(got[321], 0.0, "the failed call returns zero, on {name}");

        // The README's pattern, no explicit synchronization: the host read reports it.
        stream.launch(&divide, cfg, (&da, &db, &mut out)).unwrap();
        match out.to_host_vec() {
            Err(Error::ForeignCallFailed {
                function, kernel, ..
            }) => {
                assert_eq!(function, "checked_div", "on {name}");
                assert_eq!(kernel.as_deref(), Some("divide_checked"), "on {name}");
            }
            other => panic!("expected ForeignCallFailed at to_host_vec on {name}, got {other:?}"),
        }
        out.to_host_vec().unwrap();
    }
}
