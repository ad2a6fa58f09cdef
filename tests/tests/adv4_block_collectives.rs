//! Block collectives over 3-D blocks and block collectives that whole warps of the block
//! leave (they return before it), on every test device.
//!
//! The kernels are `gpukernel-tests-misuse-kernels`' `collectives_misuse` module.

use gpukernel_runtime::{Context, Error, LaunchConfig, Module};
use gpukernel_tests::devices;
use gpukernel_tests_misuse_kernels::{PTX, collectives_misuse as k};

fn module(ctx: &Context) -> Module {
    ctx.load_module(PTX.as_bytes()).expect("load the kernels")
}

/// With a GPU, runs the test `name` of this binary again in a child process and reports its
/// result (true: the caller, the parent, is done): a trap leaves the CUDA context unusable for
/// the rest of its process, so the tests that make one run alone.
fn in_child_process(name: &str) -> bool {
    if !cfg!(feature = "gpu") || std::env::var_os("GPUKERNEL_ADV4_CHILD").is_some() {
        return false;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("GPUKERNEL_ADV4_CHILD", "1")
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} failed in its child process");
    true
}

#[test]
fn block_collectives_over_3d_blocks_follow_the_linear_thread_order() {
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let kernel = m.kernel(k::block_collectives_3d).unwrap();
        let s = ctx.default_stream();
        for (block, src) in [
            ((5u32, 7u32, 3u32), 37u32),
            ((8, 8, 16), 1000),
            ((32, 1, 2), 0),
        ] {
            let threads = (block.0 * block.1 * block.2) as usize;
            let grid = 2u32;
            let total = threads * grid as usize;
            let mut o: Vec<_> = (0..4)
                .map(|_| s.alloc_zeros::<u32>(total).unwrap())
                .collect();
            let [o0, o1, o2, o3] = &mut o[..] else {
                unreachable!()
            };
            // SAFETY: each buffer holds one element per thread of the grid.
            unsafe {
                s.launch_unchecked(
                    &kernel,
                    LaunchConfig::new(grid, block),
                    (src, &mut *o0, &mut *o1, &mut *o2, &mut *o3),
                )
            }
            .unwrap_or_else(|e| panic!("{dev} {block:?}: {e}"));
            let (mut sums, mut incl, mut excl, mut bc) = (vec![], vec![], vec![], vec![]);
            for _ in 0..grid {
                let total_b: u32 = (1..=threads as u32).sum();
                let mut acc = 0u32;
                for t in 0..threads as u32 {
                    sums.push(total_b);
                    excl.push(5 + acc);
                    acc += t + 1;
                    incl.push(acc);
                    bc.push((src + 1) * 3);
                }
            }
            let what = format!("{dev}: block {block:?}");
            assert_eq!(o0.to_host_vec().unwrap(), sums, "{what}: reduce");
            assert_eq!(o1.to_host_vec().unwrap(), incl, "{what}: inclusive_scan");
            assert_eq!(o2.to_host_vec().unwrap(), excl, "{what}: exclusive_scan");
            assert_eq!(o3.to_host_vec().unwrap(), bc, "{what}: broadcast");
        }
    }
}

/// Warps 4..8 of each 256-thread block return before `block::reduce`; warps 0..4 call it. The
/// contract: an error, or a hang (documented), never a value read from slots no thread of
/// this launch wrote (here, whatever an earlier kernel left in shared memory).
#[test]
fn a_block_collective_left_by_returned_warps_is_an_error_not_a_stale_value() {
    if in_child_process("a_block_collective_left_by_returned_warps_is_an_error_not_a_stale_value") {
        return;
    }
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let fill = m.kernel(k::fill_shared).unwrap();
        let partial = m.kernel(k::partial_block_sum).unwrap();
        let s = ctx.default_stream();
        let blocks = 264u32;
        let n = 256 * blocks as usize;
        let mut scratch = s.alloc_zeros::<u32>(n).unwrap();
        s.launch(
            &fill,
            LaunchConfig::new(blocks, 256),
            (0x4000_0000u32, &mut scratch),
        )
        .unwrap();
        let x = s.htod_copy(&vec![1u32; n]).unwrap();
        let mut out = s.alloc_zeros::<u32>(n).unwrap();
        let result = s
            .launch(
                &partial,
                LaunchConfig::new(blocks, 256),
                (4u32, &x, &mut out),
            )
            .and_then(|()| out.to_host_vec());
        match result {
            Err(e) => eprintln!("{dev}: refused: {e}"),
            Ok(got) => {
                let wrong: Vec<_> = got
                    .iter()
                    .enumerate()
                    .filter(|&(i, &v)| i % 256 < 128 && v != 128)
                    .take(4)
                    .collect();
                panic!(
                    "{dev}: returned warps left the collective without an error; first values \
                     {:?}, wrong ones {wrong:?}",
                    &got[..4]
                );
            }
        }
    }
}

/// What a counting barrier reports when whole warps returned before it (on the simulator: the
/// barrier-divergence error).
#[test]
fn a_counting_barrier_counts_the_threads_that_reach_it() {
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let k = m.kernel(k::partial_barrier_count).unwrap();
        let s = ctx.default_stream();
        let mut out = s.alloc_zeros::<u32>(256).unwrap();
        let r = s
            .launch(&k, LaunchConfig::new(1, 256), (4u32, &mut out))
            .and_then(|()| out.to_host_vec());
        match r {
            Ok(v) => println!("PROBE barrier_count {dev}: {:?}", &v[..4]),
            Err(Error::SimulatorFault { message, .. }) => {
                println!("PROBE barrier_count {dev}: simulator fault: {message}")
            }
            Err(e) => panic!("{dev}: {e}"),
        }
    }
}

/// Lanes 16..32 of each warp return before `warp::reduce`. The contract: an error, or a hang
/// (documented), never a value made of lanes that did not take part.
#[test]
fn a_warp_collective_left_by_returned_lanes_is_an_error_not_a_stale_value() {
    if in_child_process("a_warp_collective_left_by_returned_lanes_is_an_error_not_a_stale_value") {
        return;
    }
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let k = m.kernel(k::partial_warp_sum).unwrap();
        let s = ctx.default_stream();
        let n = 256;
        let x = s.htod_copy(&vec![1u32; n]).unwrap();
        let mut out = s.alloc_zeros::<u32>(n).unwrap();
        let r = s
            .launch(&k, LaunchConfig::new(1, 256), (16u32, &x, &mut out))
            .and_then(|()| out.to_host_vec());
        match r {
            Err(e) => eprintln!("{dev}: refused: {e}"),
            Ok(v) => panic!(
                "{dev}: returned lanes left the warp collective without an error: {:?}",
                &v[..20]
            ),
        }
    }
}
