//! The device library's block radix rank and exchange (`block::radix_rank`,
//! `block::scatter_to_striped`), the pieces of the radix sort, against host references: digits
//! of 1, 4 and 8 bits, blocks of one to twelve warps (more bins than threads and fewer), items
//! of 32 and 64 bits; on the simulator (and CUDA device 0 with the `gpu` feature).

use gpukernel_algorithms_kernels::{PTX, sort as ks};
use gpukernel_runtime::{Context, LaunchConfig, Module};

mod common;
use common::{devices, values};

fn module(ctx: &Context) -> Module {
    ctx.load_module(PTX.as_bytes())
        .expect("load the algorithms' kernels")
}

/// Per block of `per_block` items in flat (warp-striped) order: each item's stable rank by
/// digit, and each bin's count and start.
fn reference(digits: &[u32], per_block: usize, bins: usize) -> (Vec<u32>, Vec<Vec<(u32, u32)>>) {
    let mut ranks = vec![0; digits.len()];
    let mut per_bin = Vec::new();
    for (b, block) in digits.chunks(per_block).enumerate() {
        let mut count = vec![0u32; bins];
        for &d in block {
            count[d as usize] += 1;
        }
        let mut start = vec![0u32; bins];
        for d in 1..bins {
            start[d] = start[d - 1] + count[d - 1];
        }
        let mut next = start.clone();
        for (i, &d) in block.iter().enumerate() {
            ranks[b * per_block + i] = next[d as usize];
            next[d as usize] += 1;
        }
        per_bin.push(count.into_iter().zip(start).collect());
    }
    (ranks, per_bin)
}

#[test]
fn radix_rank_matches_the_host() {
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let stream = ctx.default_stream();
        let k84 = m.kernel(ks::check_radix_rank_8x4).expect("8x4");
        let k43 = m.kernel(ks::check_radix_rank_4x3).expect("4x3");
        let k11 = m.kernel(ks::check_radix_rank_1x1).expect("1x1");
        for threads in [32usize, 64, 160, 256, 384] {
            let grid = 3usize;
            for (bits, items) in [(8u32, 4usize), (4, 3), (1, 1)] {
                let bins = 1usize << bits;
                let n = grid * threads * items;
                // Skewed digits: many repeats in a warp, some bins empty.
                let digits: Vec<u32> = values(n, threads as u64 * 7 + bits as u64, 1 << 20, |v| {
                    let v = v.unsigned_abs() as u32;
                    if v.is_multiple_of(3) {
                        (v >> 4) % 3 % bins as u32
                    } else {
                        (v >> 2) % bins as u32
                    }
                });
                let d = stream.htod_copy(&digits).expect("copy in");
                let mut ranks = stream.alloc_zeros::<u32>(n).expect("alloc");
                let mut counts = stream.alloc_zeros::<u32>(grid * threads).expect("alloc");
                let mut starts = stream.alloc_zeros::<u32>(grid * threads).expect("alloc");
                let cfg = LaunchConfig::new(grid as u32, threads as u32);
                let args = (&d, &mut ranks, &mut counts, &mut starts);
                match bits {
                    8 => stream.launch(&k84, cfg, args),
                    4 => stream.launch(&k43, cfg, args),
                    _ => stream.launch(&k11, cfg, args),
                }
                .unwrap_or_else(|e| panic!("{dev}: launch: {e}"));
                let (want, per_bin) = reference(&digits, threads * items, bins);
                let what = format!("{dev}: {threads} threads, {bits} bits × {items}");
                assert_eq!(ranks.to_host_vec().expect("ranks"), want, "{what}: ranks");
                let (c, s) = (
                    counts.to_host_vec().expect("c"),
                    starts.to_host_vec().expect("s"),
                );
                for b in 0..grid {
                    for t in 0..threads {
                        let got = (c[b * threads + t], s[b * threads + t]);
                        let want = per_bin[b].get(t).copied().unwrap_or((0, 0));
                        assert_eq!(got, want, "{what}: block {b} bin {t}");
                    }
                }
            }
        }
    }
}

/// A permutation of `0..len` per block (xorshift shuffle).
fn permutation(len: usize, blocks: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    let mut out = Vec::new();
    for _ in 0..blocks {
        let mut p: Vec<u32> = (0..len as u32).collect();
        for i in (1..len).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            p.swap(i, (s % (i as u64 + 1)) as usize);
        }
        out.extend(p);
    }
    out
}

#[test]
fn scatter_to_striped_moves_every_item_to_its_rank() {
    for (dev, ctx) in devices() {
        let m = module(&ctx);
        let stream = ctx.default_stream();
        let ku = m.kernel(ks::check_exchange_u32).expect("u32");
        let kf = m.kernel(ks::check_exchange_f64).expect("f64");
        for threads in [32usize, 96, 256] {
            let grid = 2usize;
            for items in [5usize, 3] {
                let per = threads * items;
                let n = grid * per;
                let ranks = permutation(per, grid, threads as u64 + items as u64);
                // Thread t's item j is element `ITEMS t + j` of its block.
                let mut want_pos = vec![0usize; n];
                for (i, &r) in ranks.iter().enumerate() {
                    let (b, r) = (i / per, r as usize);
                    // Place r holds it; place r = t' + threads j' is out[t' + threads j'].
                    want_pos[i] = b * per + r;
                }
                let r = stream.htod_copy(&ranks).expect("ranks");
                let what = format!("{dev}: {threads} threads × {items}");
                if items == 5 {
                    let x: Vec<u32> = (0..n as u32)
                        .map(|v| v.wrapping_mul(2_654_435_761))
                        .collect();
                    let dx = stream.htod_copy(&x).expect("x");
                    let mut out = stream.alloc_zeros::<u32>(n).expect("out");
                    stream
                        .launch(
                            &ku,
                            LaunchConfig::new(grid as u32, threads as u32),
                            (&dx, &r, &mut out),
                        )
                        .expect("launch");
                    let got = out.to_host_vec().expect("out");
                    for i in 0..n {
                        assert_eq!(got[want_pos[i]], x[i], "{what}: item {i}");
                    }
                } else {
                    let x: Vec<f64> = (0..n).map(|v| v as f64 * -1.25e300 + 0.5).collect();
                    let dx = stream.htod_copy(&x).expect("x");
                    let mut out = stream.alloc_zeros::<f64>(n).expect("out");
                    stream
                        .launch(
                            &kf,
                            LaunchConfig::new(grid as u32, threads as u32),
                            (&dx, &r, &mut out),
                        )
                        .expect("launch");
                    let got = out.to_host_vec().expect("out");
                    for i in 0..n {
                        assert_eq!(
                            got[want_pos[i]].to_bits(),
                            x[i].to_bits(),
                            "{what}: item {i}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn radix_rank_refuses_a_block_of_partial_warps() {
    let (_, ctx) = devices().remove(0);
    let m = module(&ctx);
    let stream = ctx.default_stream();
    let k = m.kernel(ks::check_radix_rank_1x1).expect("1x1");
    let d = stream.htod_copy(&[0u32; 40]).expect("copy");
    let mut r = stream.alloc_zeros::<u32>(40).expect("alloc");
    let mut c = stream.alloc_zeros::<u32>(40).expect("alloc");
    let mut s = stream.alloc_zeros::<u32>(40).expect("alloc");
    let got = stream
        .launch(&k, LaunchConfig::new(1, 40), (&d, &mut r, &mut c, &mut s))
        .and_then(|_| stream.synchronize());
    let err = got
        .expect_err("a block of 40 threads must be refused")
        .to_string();
    assert!(err.contains("whole warps"), "{err}");
}
