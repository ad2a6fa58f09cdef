//! `block::radix_rank` and `block::scatter_to_striped` reached by some threads of the block
//! only (the others returned before): like the other block collectives they must stop the
//! kernel (a trap on a GPU, an error in the simulator), not rank or move items with lanes
//! that are gone, nor hand out places no thread of this launch wrote (whatever an earlier
//! kernel left in shared memory). A GPU barrier does not wait for returned threads, so before
//! the counting barrier the GPU gave values silently.
//!
//! The kernels are `gpukernel-tests-misuse-kernels`' `collectives_misuse` module.

use gpukernel_runtime::LaunchConfig;
use gpukernel_tests::devices;
use gpukernel_tests_misuse_kernels::{PTX, collectives_misuse as k};

/// With a GPU, runs the test `name` of this binary again in a child process (a trap leaves the
/// CUDA context unusable for the rest of its process); true: the caller, the parent, is done.
fn in_child_process(name: &str) -> bool {
    if !cfg!(feature = "gpu") || std::env::var_os("GPUKERNEL_ADV5_CHILD").is_some() {
        return false;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("GPUKERNEL_ADV5_CHILD", "1")
        .output()
        .expect("run the child");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} failed in its child process");
    true
}

#[test]
fn radix_rank_left_by_returned_warps_stops_the_kernel() {
    if in_child_process("radix_rank_left_by_returned_warps_stops_the_kernel") {
        return;
    }
    for (dev, ctx) in devices() {
        let m = ctx.load_module(PTX.as_bytes()).expect("load the kernels");
        let kernel = m.kernel(k::partial_radix_rank).expect("lookup");
        let s = ctx.default_stream();
        let digits: Vec<u32> = (0..256u32).map(|i| (i * 37) % 5).collect();
        let d = s.htod_copy(&digits).expect("copy in");
        let mut out = s.alloc_zeros::<u32>(256).expect("alloc");
        // Warps 2..8 of the block of 256 return: 64 threads reach the rank.
        let r = s
            .launch(&kernel, LaunchConfig::new(1, 256), (2u32, &d, &mut out))
            .and_then(|()| out.to_host_vec());
        match r {
            Err(e) => println!("PROBE radix_rank_returned OK {dev}: stopped: {e}"),
            Ok(v) => panic!(
                "PROBE radix_rank_returned HOLE {dev}: 64 of 256 threads ranked without an \
                 error: {:?}",
                &v[..64]
            ),
        }
    }
}

#[test]
fn scatter_to_striped_left_by_returned_lanes_stops_the_kernel() {
    if in_child_process("scatter_to_striped_left_by_returned_lanes_stops_the_kernel") {
        return;
    }
    for (dev, ctx) in devices() {
        let m = ctx.load_module(PTX.as_bytes()).expect("load the kernels");
        let kernel = m.kernel(k::partial_scatter).expect("lookup");
        let s = ctx.default_stream();
        let x = s
            .htod_copy(&(1000..1064u32).collect::<Vec<_>>())
            .expect("copy in");
        let mut out = s.alloc_zeros::<u32>(64).expect("alloc");
        // Lanes 16..32 of both warps return: half the places are written by no thread.
        let r = s
            .launch(&kernel, LaunchConfig::new(1, 64), (16u32, &x, &mut out))
            .and_then(|()| out.to_host_vec());
        match r {
            Err(e) => println!("PROBE scatter_returned OK {dev}: stopped: {e}"),
            Ok(v) => panic!(
                "PROBE scatter_returned HOLE {dev}: 32 of 64 threads exchanged without an \
                 error: {v:?}"
            ),
        }
    }
}
