//! A kernel fault (feature `gpu`). Alone in its test binary: a fault leaves the process's
//! context unusable.

mod common;

use common::{gpu, write_null};
use gpukernel_runtime::{Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn kernel_fault_names_the_launch() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = m.kernel(write_null).unwrap();
    let probe = ctx.alloc_zeros::<u32>(4).unwrap();
    ctx.synchronize().unwrap();
    let s = ctx.new_stream().unwrap();
    s.launch(&k, LaunchConfig::new(1, 1), ()).unwrap();
    let e = s.synchronize().unwrap_err();
    println!("{e}");
    match &e {
        Error::KernelFault {
            call,
            error,
            last_launch,
        } => {
            assert_eq!(*call, "cuStreamSynchronize");
            assert_eq!(error.name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
            assert_eq!(error.code(), 700);
            assert!(!error.description().is_empty());
            assert_eq!(last_launch.as_deref(), Some("write_null"));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("last launch: `write_null`"), "{e}");
    // The fault is sticky: later calls report it too, still naming the launch.
    match probe.to_host_vec().unwrap_err() {
        Error::KernelFault { error, last_launch, .. } => {
            assert_eq!(error.code(), 700);
            assert_eq!(last_launch.as_deref(), Some("write_null"));
        }
        other => panic!("unexpected {other}"),
    }
}
