//! The algorithms of one context given a stream or buffers of another (two simulated
//! devices, no peer access): each call is refused with a named error, never run on memory the
//! kernels cannot reach. Runs its own `main` (see Cargo.toml): the variables are set before
//! any thread.

use gpukernel_algorithms::{Algorithms, Sum};
use gpukernel_runtime::{Device, Error};

fn refused<T: std::fmt::Debug>(what: &str, r: gpukernel_runtime::Result<T>) {
    match r {
        Err(e @ (Error::ContextMismatch { .. } | Error::InvalidPointer { .. })) => {
            println!("{what}: refused: {e}")
        }
        other => panic!("{what}: expected a refusal naming the context, got {other:?}"),
    }
}

fn main() {
    // SAFETY: no other thread exists yet (this is the test's own `main`).
    unsafe {
        std::env::set_var("GPUKERNEL_SIM_DEVICES", "2");
        std::env::set_var("GPUKERNEL_BACKEND", "sim");
    }
    let ctx0 = Device::simulated(0).unwrap().primary_context().unwrap();
    let ctx1 = Device::simulated(1).unwrap().primary_context().unwrap();
    let algs = Algorithms::new(&ctx0).unwrap();
    let (s0, s1) = (ctx0.default_stream(), ctx1.default_stream());
    let x0 = s0.htod_copy(&[1u32, 2, 3]).unwrap();
    let x1 = s1.htod_copy(&[1u32, 2, 3]).unwrap();
    let bytes1 = s1.htod_copy(b"abc").unwrap();
    refused(
        "reduce on another context's stream",
        algs.reduce_to_host(&s1, &x1, Sum),
    );
    refused(
        "reduce of another context's input",
        algs.reduce_to_host(&s0, &x1, Sum),
    );
    let mut out1 = s1.alloc_zeros::<u32>(3).unwrap();
    refused(
        "scan into another context's output",
        algs.inclusive_scan(&s0, &x0, Sum, &mut out1),
    );
    let bytes0 = s0.htod_copy(b"abc").unwrap();
    let mut bins0 = s0.alloc_zeros::<u32>(256).unwrap();
    let mut bins1 = s1.alloc_zeros::<u32>(256).unwrap();
    refused(
        "histogram into another context's bins",
        algs.histogram256(&s0, &bytes0, &mut bins1),
    );
    refused(
        "histogram of another context's bytes",
        algs.histogram256(&s0, &bytes1, &mut bins0),
    );
    println!("adv4_contexts: ok");
}
