//! The scans' status words: a launch of a scan kernel over a status array that is not fresh
//! (one a scan used before: its tile counter left at that scan's tile count) wrote nothing and
//! reported success, and one whose counter is not zero waits forever. So the kernels are
//! `unsafe` to launch (their `# Safety` asks for a zeroed status array of their own), and
//! `Algorithms` gives each call fresh words: calls back to back and on two streams at once
//! stay exact.

use std::marker::PhantomData;

use gpukernel_algorithms::{Algorithms, Sum};
use gpukernel_algorithms_kernels as k;
use gpukernel_runtime::SafeKernel;

mod common;
use common::devices;

/// Whether `K` is a `SafeKernel`, found without naming the bound in a generic (a method of
/// `Probe<K>` where it is one, of `&Probe<K>` otherwise).
struct Probe<K>(PhantomData<K>);
trait Safe {
    fn safe(&self) -> bool {
        true
    }
}
impl<K: SafeKernel> Safe for Probe<K> {}
trait NotSafe {
    fn safe(&self) -> bool {
        false
    }
}
impl<K> NotSafe for &Probe<K> {}

#[test]
// The probe's form is the same for every kernel: `&Probe` is what picks `NotSafe` where `Safe`
// does not apply.
#[allow(clippy::needless_borrow)]
fn the_scan_kernels_are_unsafe_to_launch_directly() {
    let safe = [
        (&Probe::<k::scan_inclusive_sum_u32>(PhantomData)).safe(),
        (&Probe::<k::scan_exclusive_sum_u32>(PhantomData)).safe(),
        (&Probe::<k::scan_inclusive_sum_i32>(PhantomData)).safe(),
        (&Probe::<k::scan_exclusive_sum_i32>(PhantomData)).safe(),
        (&Probe::<k::scan_inclusive_sum_f32>(PhantomData)).safe(),
        (&Probe::<k::scan_exclusive_sum_f32>(PhantomData)).safe(),
    ];
    assert_eq!(safe, [false; 6], "a scan kernel is a SafeKernel");
    // The probe itself: the reduce and histogram kernels are safe.
    assert!((&Probe::<k::histogram256_u8>(PhantomData)).safe());
    assert!((&Probe::<k::reduce_sum_u32>(PhantomData)).safe());
}

#[test]
fn scans_back_to_back_and_on_two_streams_are_exact() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load");
        let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let n = 3 * 4096 + 17;
        let x = s1.htod_copy(&vec![1u32; n]).unwrap();
        let want: Vec<u32> = (1..=n as u32).collect();
        let mut outs: Vec<_> = (0..4).map(|_| s1.alloc_zeros::<u32>(n).unwrap()).collect();
        for (i, o) in outs.iter_mut().enumerate() {
            let s = if i % 2 == 0 { &s1 } else { &s2 };
            algs.inclusive_scan(s, &x, Sum, o).unwrap();
        }
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o.to_host_vec().unwrap(), want, "{dev}: scan {i}");
        }
    }
}
