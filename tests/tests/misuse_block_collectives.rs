//! A block collective (`gpukernel_device::block`) that some threads of the block skip: the
//! simulator reports the threads that never reach its barrier as an error naming the kernel,
//! block and thread (on the GPU, where a barrier does not wait for threads that returned, the
//! collective's counting barrier traps: `adv4_block_collectives`), and the next launch of a
//! correct kernel in the same context still runs.
//!
//! The kernels are `#[kernel]`s of this file, run by the simulator from a PTX that declares
//! their entries and fingerprints.

use gpukernel_device::ops::Sum;
use gpukernel_device::prelude::*;
use gpukernel_device::{Kernel, block, thread};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};

/// The first four warps sum the block's values; the other four skip the collective (whole warps,
/// so the warp shuffles inside it match and the barrier is what finds the missing threads).
#[kernel]
pub fn partial_block_reduce(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if thread::thread_idx_x() < 128 {
        let v = block::reduce(x.get(i.get()).copied().unwrap_or(0), Sum);
        out.set(&i, v);
    }
}

/// Every thread sums the block's values.
#[kernel]
pub fn whole_block_reduce(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    let v = block::reduce(x.get(i.get()).copied().unwrap_or(0), Sum);
    out.set(&i, v);
}

fn module(ctx: &Context) -> Module {
    let entry = |name: &str, params: usize, sig: u64| {
        let list: Vec<String> = (0..params).map(|i| format!(".param .u64 p{i}")).collect();
        format!(
            ".visible .entry {name}({}) {{ ret; }}\n.visible .global .align 8 .u64 __gpukernel_sig_{name} = {sig};\n",
            list.join(", ")
        )
    };
    let ptx = format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n{}{}",
        entry(
            partial_block_reduce::NAME,
            4,
            partial_block_reduce::SIGNATURE
        ),
        entry(whole_block_reduce::NAME, 4, whole_block_reduce::SIGNATURE),
    );
    ctx.load_module(ptx.as_bytes()).unwrap()
}

#[test]
fn a_block_collective_skipped_by_some_threads_is_reported_not_run() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = module(&ctx);
    let s = ctx.default_stream();
    let x = s.htod_copy(&[1u32; 256]).unwrap();
    let mut out = s.alloc_zeros::<u32>(256).unwrap();
    let k = m.kernel(partial_block_reduce).unwrap();
    match s.launch(&k, LaunchConfig::new(1, 256), (&x, &mut out)) {
        Err(Error::SimulatorFault {
            kernel, message, ..
        }) => {
            assert_eq!(kernel, partial_block_reduce::NAME);
            assert!(message.contains("barrier"), "{message}");
        }
        other => panic!("expected SimulatorFault, got {other:?}"),
    }
    // The same collective reached by every thread.
    let k = m.kernel(whole_block_reduce).unwrap();
    s.launch(&k, LaunchConfig::new(1, 256), (&x, &mut out))
        .unwrap();
    assert_eq!(out.to_host_vec().unwrap(), vec![256u32; 256]);
}
