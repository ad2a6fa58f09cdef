//! A user's operator that panics on some inputs (`CheckedSum`: `checked_add` that overflows),
//! through the reduce and the scans with decoupled look-back, on the simulator: the panic must
//! come back as an error of the call or of the next synchronization, never a hang nor a
//! result. On a GPU the panic is a trap, which ends the whole grid; in the simulator the tiles
//! after the failing one waited for its status forever (their blocks run on other threads).

use gpukernel_algorithms::{Algorithms, UserKernels};
use gpukernel_algorithms_example_op::{CheckedSumAlgorithms, PTX};

use gpukernel_runtime::Device;

/// Runs `f` on another thread: its result, or `None` when it is still running after `secs`.
fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
}

#[test]
fn an_operator_that_panics_fails_the_call_without_a_hang() {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let dev = "simulator";
    {
        for what in ["reduce", "inclusive", "exclusive"] {
            let ctx = ctx.clone();
            let r = within(120, move || {
                let algs = Algorithms::new(&ctx).expect("load the algorithms");
                let module = ctx.load_module(PTX.as_bytes()).expect("load");
                let kernels =
                    UserKernels::<CheckedSumAlgorithms>::load(&module).expect("the kernels");
                let stream = ctx.default_stream();
                // Many tiles; the sum overflows in the last one, so every earlier tile
                // completes and the later ones wait on the failing tile.
                let n = 40_000usize;
                let mut xs = vec![1u32; n];
                xs[n - 100] = u32::MAX - 10;
                let x = stream.htod_copy(&xs).expect("copy in");
                let mut y = stream.alloc_zeros::<u32>(n).expect("alloc");
                let r = match what {
                    "reduce" => algs.reduce_user(&stream, &kernels, &x, &mut y),
                    "inclusive" => algs.inclusive_scan_user(&stream, &kernels, &x, &mut y),
                    _ => algs.exclusive_scan_user(&stream, &kernels, &x, &mut y),
                };
                r.and_then(|()| stream.synchronize())
                    .map_err(|e| e.to_string())
            });
            match r {
                Some(Err(e)) => println!("{dev} {what}: refused: {e}"),
                Some(Ok(())) => panic!("{dev} {what}: an overflowing CheckedSum gave a result"),
                None => panic!("{dev} {what}: hangs after the operator panicked"),
            }
        }
    }
}

/// A reduce whose operator panicked stops part way, its ticket counted by the blocks that
/// finished: the `Algorithms` replaces its scratch, so the next reduces (the user's operator
/// and a built-in one, on the same `Algorithms`) are exact.
#[test]
fn a_failed_reduce_does_not_spoil_the_next_ones() {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let r = within(120, move || {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let module = ctx.load_module(PTX.as_bytes()).expect("load");
        let kernels = UserKernels::<CheckedSumAlgorithms>::load(&module).expect("the kernels");
        let stream = ctx.default_stream();
        let n = 40_000usize;
        let good = vec![1u32; n];
        let mut bad = good.clone();
        bad[n / 2] = u32::MAX - 10; // overflows in one block only
        let (good, bad) = (
            stream.htod_copy(&good).expect("copy in"),
            stream.htod_copy(&bad).expect("copy in"),
        );
        let mut out = stream.alloc_zeros::<u32>(1).expect("alloc");
        for round in 0..3 {
            let failed = algs
                .reduce_user(&stream, &kernels, &bad, &mut out)
                .and_then(|()| stream.synchronize());
            assert!(failed.is_err(), "round {round}: an overflow gave a result");
            algs.reduce_user(&stream, &kernels, &good, &mut out)
                .expect("a valid reduce");
            assert_eq!(out.to_host_vec().expect("out"), [n as u32], "round {round}");
            let sum = algs
                .reduce_to_host(&stream, &good, gpukernel_algorithms::Sum)
                .expect("a built-in reduce");
            assert_eq!(sum, n as u32, "round {round}");
        }
    });
    assert!(r.is_some(), "hangs after the operator panicked");
}
