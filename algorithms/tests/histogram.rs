//! The 256-bin byte histogram against the host: odd sizes, misaligned views, all-equal bytes
//! (every atomic on one bin), on the simulator (and CUDA device 0 with the `gpu` feature).

use gpukernel_algorithms::Algorithms;
use gpukernel_runtime::{Device, Error};

mod common;
use common::devices;

fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn histogram256_matches_the_host() {
    for (dev, ctx) in devices() {
        let algs = Algorithms::new(&ctx).expect("load the algorithms");
        let stream = ctx.default_stream();
        let mut cases: Vec<Vec<u8>> = [0usize, 1, 15, 17, 4096 + 3, 300_001]
            .iter()
            .map(|&n| bytes(n, n as u64 + 5))
            .collect();
        cases.push(vec![7u8; 70_000]);
        for data in cases {
            let d = stream.htod_copy(&data).expect("copy in");
            // Stale counts in the bins: the call must start from zero.
            let mut bins = stream.htod_copy(&[1u32; 256]).expect("copy in");
            for skip in [0usize, 3] {
                if skip > data.len() {
                    continue;
                }
                let mut want = vec![0u32; 256];
                for &b in &data[skip..] {
                    want[b as usize] += 1;
                }
                algs.histogram256(&stream, d.slice(skip..).expect("view"), &mut bins)
                    .expect("histogram");
                assert_eq!(
                    bins.to_host_vec().expect("copy out"),
                    want,
                    "{dev}: {} bytes from {skip}",
                    data.len()
                );
            }
        }
    }
}

#[test]
fn histogram256_refuses_bins_of_another_length() {
    let ctx = Device::simulator()
        .primary_context()
        .expect("simulator context");
    let algs = Algorithms::new(&ctx).expect("load the algorithms");
    let stream = ctx.default_stream();
    let d = stream.htod_copy(&[1u8, 2, 3]).expect("copy in");
    let mut bins = stream.alloc_zeros::<u32>(255).expect("alloc");
    match algs.histogram256(&stream, &d, &mut bins) {
        Err(Error::LengthMismatch {
            destination: 255,
            source_len: 256,
            operation,
        }) => {
            assert!(operation.contains("histogram256"), "{operation}")
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
}
