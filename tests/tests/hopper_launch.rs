//! Hopper's launch features and the kernels that prove them (`ffi_examples_hopper_kernels`,
//! built for sm_90a), checked against the host on the simulator always and on the GPU with the
//! `gpu` feature (compute capability 9.0 only): cooperative launch with `grid::sync`, clusters
//! with distributed shared memory, TMA tile copies on `mbarrier`s, programmatic dependent
//! launch, and graph kernel nodes with cluster dimensions or cooperative launch. The launch
//! checks (cluster shape, cooperative grid size, tensor-map fields) are errors, never hangs.

use ffi_examples_hopper_kernels::{
    BoxGrid, HIST_BLOCK, MC_SLICE_ROWS, PTX, REDUCE_BLOCK, TILE, cluster_aligned_dynamic_exchange,
    cluster_publish, cluster_registers, histogram_cluster, histogram_global, mbarrier_ring,
    pdl_first, pdl_second, sum_cooperative, sum_final, sum_partials, tma_boxes_3d, tma_boxes_4d,
    tma_boxes_5d, tma_copy_tiles, tma_multicast_tiles, tma_swizzle_probe,
};
use gpukernel_runtime::{
    Context, DevicePtr, Error, GridBarrierWord, LaunchConfig, Module, Swizzle, TensorMap2D,
    TensorMapNd,
};
use gpukernel_tests::{Rng, assert_close, devices};

/// The module on `ctx`, or `None` (said) where the sm_90a PTX cannot load.
fn hopper_module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0, the sm_90a kernels are not run there");
        return None;
    }
    Some(
        ctx.load_module(PTX.as_bytes())
            .unwrap_or_else(|e| panic!("loading the sm_90a kernels on {name}: {e}")),
    )
}

fn host_sum(x: &[f32]) -> f32 {
    x.iter().map(|&v| v as f64).sum::<f64>() as f32
}

#[test]
fn cooperative_sum_matches_two_launches_and_the_host() {
    let mut rng = Rng::from_env("cooperative_sum");
    // Not a multiple of four: the vector loads' head and tail are used.
    let x = rng.vec_f32(200_003);
    let want = host_sum(&x);
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let coop = md.kernel(sum_cooperative).unwrap();
        let max = LaunchConfig::max_cooperative_blocks(&coop, REDUCE_BLOCK, 0).unwrap();
        assert!(max >= 1, "{name}: no block fits");
        // The simulator runs each block of a cooperative launch on its own OS thread.
        let blocks = if ctx.is_simulator() { max.min(12) } else { max };
        let s = ctx.default_stream();
        let dx = ctx.htod_copy(&x).unwrap();
        let partials = ctx.alloc_zeros::<f32>(blocks as usize).unwrap();
        let bar = GridBarrierWord::new(&ctx).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
        let cfg = LaunchConfig::new(blocks, REDUCE_BLOCK).cooperative();
        for _ in 0..2 {
            // SAFETY: a cooperative launch of blocks of REDUCE_BLOCK threads; `partials` has a
            // slot per block and only this stream's launches use it; `bar` is used by one launch
            // at a time (same stream).
            unsafe {
                s.launch_unchecked(
                    &coop,
                    cfg,
                    (
                        &dx,
                        DevicePtr::from_addr(partials.as_raw()),
                        bar.param(),
                        &mut out,
                    ),
                )
            }
            .unwrap();
            let got = out.to_host_vec().unwrap()[0];
            assert_close(&format!("cooperative sum on {name}"), &[got], &[want], 1e-4);
        }
        // The same sum in two launches.
        let first = md.kernel(sum_partials).unwrap();
        let fin = md.kernel(sum_final).unwrap();
        let mut out2 = ctx.alloc_zeros::<f32>(1).unwrap();
        // SAFETY: blocks of REDUCE_BLOCK threads; one slot per block, written by this launch.
        unsafe {
            s.launch_unchecked(
                &first,
                LaunchConfig::new(blocks, REDUCE_BLOCK),
                (&dx, DevicePtr::from_addr(partials.as_raw())),
            )
        }
        .unwrap();
        s.launch(
            &fin,
            LaunchConfig::new(1, REDUCE_BLOCK),
            (&partials, &mut out2),
        )
        .unwrap();
        let got2 = out2.to_host_vec().unwrap()[0];
        assert_close(&format!("two-launch sum on {name}"), &[got2], &[want], 1e-4);
    }
}

#[test]
fn a_cooperative_grid_larger_than_the_device_is_an_error() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let coop = md.kernel(sum_cooperative).unwrap();
        let max = LaunchConfig::max_cooperative_blocks(&coop, REDUCE_BLOCK, 0).unwrap();
        let x = ctx.alloc_zeros::<f32>(16).unwrap();
        let partials = ctx.alloc_zeros::<f32>(max as usize + 1).unwrap();
        let bar = GridBarrierWord::new(&ctx).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
        let cfg = LaunchConfig::new(max + 1, REDUCE_BLOCK).cooperative();
        // SAFETY: refused before the launch (checked below).
        let r = unsafe {
            ctx.default_stream().launch_unchecked(
                &coop,
                cfg,
                (
                    &x,
                    DevicePtr::from_addr(partials.as_raw()),
                    bar.param(),
                    &mut out,
                ),
            )
        };
        match r {
            Err(Error::CooperativeGridTooLarge { blocks, max: m, .. }) => {
                assert_eq!((blocks, m), (max as u64 + 1, max), "{name}")
            }
            other => panic!("{name}: expected CooperativeGridTooLarge, got {other:?}"),
        }
        let msg = r.unwrap_err().to_string();
        assert!(msg.contains("max_cooperative_blocks"), "{name}: {msg}");
    }
}

fn host_histogram(data: &[u32], bins: u32) -> Vec<u32> {
    let mut h = vec![0u32; bins as usize];
    for &v in data {
        h[(v % bins) as usize] += 1;
    }
    h
}

#[test]
fn cluster_histogram_on_distributed_shared_memory_matches_the_host() {
    let mut rng = Rng::from_env("cluster_histogram");
    let data: Vec<u32> = (0..60_000).map(|_| rng.next_u64() as u32).collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let (hc, hg) = (
            md.kernel(histogram_cluster).unwrap(),
            md.kernel(histogram_global).unwrap(),
        );
        let d = ctx.htod_copy(&data).unwrap();
        // Bins that do not split evenly over the cluster: the last block owns fewer.
        for (cluster, bins) in [(4u32, 1001u32), (2, 16_000)] {
            let want = host_histogram(&data, bins);
            let mut h = ctx.alloc_zeros::<u32>(bins as usize).unwrap();
            let cfg = LaunchConfig::new(2 * cluster, HIST_BLOCK).with_cluster(cluster);
            ctx.default_stream()
                .launch(&hc, cfg, (&d, bins, &mut h))
                .unwrap();
            assert_eq!(
                h.to_host_vec().unwrap(),
                want,
                "{name}: cluster histogram, {cluster} blocks per cluster, {bins} bins"
            );
            let mut g = ctx.alloc_zeros::<u32>(bins as usize).unwrap();
            ctx.default_stream()
                .launch(&hg, LaunchConfig::new(8, HIST_BLOCK), (&d, bins, &mut g))
                .unwrap();
            assert_eq!(g.to_host_vec().unwrap(), want, "{name}: global histogram");
        }
    }
}

#[test]
fn cluster_shapes_are_checked_before_the_launch() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let hc = md.kernel(histogram_cluster).unwrap();
        let d = ctx.alloc_zeros::<u32>(16).unwrap();
        let mut h = ctx.alloc_zeros::<u32>(16).unwrap();
        let s = ctx.default_stream();
        // 6 blocks are not a whole number of clusters of 4.
        let r = s.launch(
            &hc,
            LaunchConfig::new(6, HIST_BLOCK).with_cluster(4),
            (&d, 16u32, &mut h),
        );
        match r {
            Err(Error::ClusterShapeInvalid { reason, .. }) => {
                assert!(
                    reason.contains("whole number of clusters"),
                    "{name}: {reason}"
                )
            }
            other => panic!("{name}: expected ClusterShapeInvalid, got {other:?}"),
        }
        // 32 blocks per cluster: beyond any kernel's portable limit (8).
        let r = s.launch(
            &hc,
            LaunchConfig::new(32, HIST_BLOCK).with_cluster(32),
            (&d, 16u32, &mut h),
        );
        match r {
            Err(Error::ClusterShapeInvalid { reason, .. }) => {
                assert!(
                    reason.contains("cuOccupancyMaxPotentialClusterSize"),
                    "{name}: {reason}"
                )
            }
            other => panic!("{name}: expected ClusterShapeInvalid, got {other:?}"),
        }
    }
}

#[test]
fn tma_tile_copy_matches_the_host() {
    let mut rng = Rng::from_env("tma_tile_copy");
    // Neither side a multiple of the tile: the boxes at the edges are clipped.
    let (rows, cols, pitch) = (100usize, 72usize, 76usize);
    let src: Vec<f32> = rng.vec_f32(rows * pitch);
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(tma_copy_tiles).unwrap();
        let ds = ctx.htod_copy(&src).unwrap();
        let dd = ctx.htod_copy(&vec![-7.0f32; rows * pitch]).unwrap();
        let shape = [rows as u64, cols as u64];
        let ms =
            TensorMap2D::new(&ctx, &ds, shape, pitch as u64, [TILE, TILE], Swizzle::None).unwrap();
        let md_ =
            TensorMap2D::new(&ctx, &dd, shape, pitch as u64, [TILE, TILE], Swizzle::None).unwrap();
        assert_eq!(ms.box_bytes(), TILE * TILE * 4);
        let grid = ((cols as u32).div_ceil(TILE), (rows as u32).div_ceil(TILE));
        // SAFETY: maps of same-shaped f32 tensors with TILE × TILE boxes, no swizzle; blocks
        // of TILE threads covering `dd`, which nothing else uses during the launch.
        unsafe {
            ctx.default_stream().launch_unchecked(
                &k,
                LaunchConfig::new(grid, TILE),
                (ms.param(), md_.param(), 0.5f32),
            )
        }
        .unwrap();
        let got = dd.to_host_vec().unwrap();
        for r in 0..rows {
            for c in 0..pitch {
                let want = if c < cols {
                    src[r * pitch + c] + 0.5
                } else {
                    -7.0
                };
                assert_eq!(got[r * pitch + c], want, "{name}: element ({r}, {c})");
            }
        }
    }
}

#[test]
fn tma_128_byte_swizzle_is_the_hardware_pattern() {
    let src: Vec<f32> = (0..8 * 32).map(|i| i as f32).collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(tma_swizzle_probe).unwrap();
        let ds = ctx.htod_copy(&src).unwrap();
        let map = TensorMap2D::new(&ctx, &ds, [8, 32], 32, [8, 32], Swizzle::B128).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(256).unwrap();
        // SAFETY: a 2D f32 map with 8 × 32 boxes and the 128-byte swizzle; `out` has 256.
        unsafe {
            ctx.default_stream().launch_unchecked(
                &k,
                LaunchConfig::new(1, 256),
                (map.param(), &mut out),
            )
        }
        .unwrap();
        assert_eq!(out.to_host_vec().unwrap(), src, "{name}: unswizzled box");
    }
}

#[test]
fn tensor_maps_are_checked_on_the_host() {
    let ctx = gpukernel_runtime::Device::simulator()
        .primary_context()
        .unwrap();
    let m = ctx.alloc_zeros::<f32>(64 * 64).unwrap();
    let check = |shape: [u64; 2], pitch: u64, b: [u32; 2], sw: Swizzle, needle: &str| {
        match TensorMap2D::new(&ctx, &m, shape, pitch, b, sw) {
            Err(Error::TensorMapInvalid { problem, buffer }) => {
                assert!(problem.contains(needle), "{problem}");
                assert!(buffer.contains("f32"), "{buffer}");
            }
            other => panic!("expected TensorMapInvalid ({needle}), got {other:?}"),
        }
    };
    check([64, 63], 63, [8, 8], Swizzle::None, "multiple of 16 bytes");
    check([65, 64], 64, [8, 8], Swizzle::None, "does not fit");
    check(
        [64, 64],
        64,
        [8, 3],
        Swizzle::None,
        "a box row is box[1] = 3 elements",
    );
    check([64, 64], 64, [8, 64], Swizzle::B128, "swizzle span");
    check([0, 64], 64, [8, 8], Swizzle::None, "shape[0] = 0");
    check([64, 64], 64, [300, 8], Swizzle::None, "1 to 256");
    check([64, 64], 32, [8, 8], Swizzle::None, "shorter than a row");
    // A view starting 4 bytes in is not 16-byte aligned.
    let v = m.slice(1..).unwrap();
    match TensorMap2D::new(&ctx, &v, [8, 8], 8, [8, 8], Swizzle::None) {
        Err(Error::TensorMapInvalid { problem, .. }) => {
            assert!(problem.contains("16-byte aligned"), "{problem}")
        }
        other => panic!("expected TensorMapInvalid, got {other:?}"),
    }
    assert!(TensorMap2D::new(&ctx, &m, [64, 64], 64, [64, 32], Swizzle::B128).is_ok());
}

/// The offsets (in elements) of every element of a tensor of `shape` with `strides` (outermost
/// first).
fn tensor_offsets(shape: &[u64], strides: &[u64]) -> Vec<usize> {
    let mut out = vec![0usize];
    for (&n, &s) in shape.iter().zip(strides) {
        out = out
            .iter()
            .flat_map(|&o| (0..n).map(move |i| o + (i * s) as usize))
            .collect();
    }
    out
}

/// The arguments of `tma_boxes_{3,4,5}d`.
type BoxArgs = (
    gpukernel_runtime::TensorMap,
    gpukernel_runtime::TensorMap,
    BoxGrid,
    f32,
);

/// Runs one of `tma_boxes_{3,4,5}d` (`launch`) over a tensor of `shape` / `strides` in memory
/// of `len` f32 and checks every element of the memory: the tensor's are `src + 0.25` (each
/// went through shared memory in its box), the padding between them still -7.
fn check_box_round_trip<const R: usize>(
    name: &str,
    ctx: &Context,
    launch: impl FnOnce(LaunchConfig, BoxArgs),
    (shape, strides, len): ([u64; R], [u64; R], usize),
    box_shape: [u32; R],
) {
    let mut rng = gpukernel_tests::Rng::from_env("tma_boxes");
    let src: Vec<f32> = rng.vec_f32(len);
    let ds = ctx.htod_copy(&src).unwrap();
    let dd = ctx.htod_copy(&vec![-7.0f32; len]).unwrap();
    let ms = TensorMapNd::strided(ctx, &ds, shape, strides, box_shape, Swizzle::None).unwrap();
    let mdst = TensorMapNd::strided(ctx, &dd, shape, strides, box_shape, Swizzle::None).unwrap();
    assert_eq!(ms.shape(), shape);
    assert_eq!(ms.box_shape(), box_shape);
    let mut grid = BoxGrid::default();
    for i in 0..R {
        // Innermost first, as the kernel (and the hardware) counts.
        let d = R - 1 - i;
        grid.boxes[i] = box_shape[d];
        grid.counts[i] = (shape[d] as u32).div_ceil(box_shape[d]);
    }
    let blocks: u32 = grid.counts[..R].iter().product();
    launch(
        LaunchConfig::new(blocks, 64),
        (ms.param(), mdst.param(), grid, 0.25f32),
    );
    let got = dd.to_host_vec().unwrap();
    let mut want = vec![-7.0f32; len];
    for o in tensor_offsets(&shape, &strides) {
        want[o] = src[o] + 0.25;
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{name}: rank {R}, element {i} of the memory");
    }
}

#[test]
fn tma_boxes_of_3_4_and_5_dimensions_match_the_host() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let (k3, k4, k5) = (
            md.kernel(tma_boxes_3d).unwrap(),
            md.kernel(tma_boxes_4d).unwrap(),
            md.kernel(tma_boxes_5d).unwrap(),
        );
        let s = ctx.default_stream();
        // The three launches get maps of the kernel's rank over f32 tensors of one shape, no
        // swizzle, with the grid's boxes; one block per box; nothing else uses the destination
        // during the launch.
        let l3 = |cfg, args| {
            // SAFETY: see above, rank 3.
            unsafe { s.launch_unchecked(&k3, cfg, args) }.unwrap()
        };
        let l4 = |cfg, args| {
            // SAFETY: see above, rank 4.
            unsafe { s.launch_unchecked(&k4, cfg, args) }.unwrap()
        };
        let l5 = |cfg, args| {
            // SAFETY: see above, rank 5.
            unsafe { s.launch_unchecked(&k5, cfg, args) }.unwrap()
        };
        // Padded rows and planes; no extent a multiple of its box (clipped at every edge).
        check_box_round_trip(
            &name,
            &ctx,
            l3,
            ([5, 19, 40], [880, 44, 1], 5 * 880),
            [2, 8, 16],
        );
        check_box_round_trip(
            &name,
            &ctx,
            l4,
            ([3, 4, 6, 24], [784, 196, 28, 1], 3 * 784),
            [2, 3, 4, 8],
        );
        // Dense (`contiguous`'s strides).
        let shape = [2, 3, 3, 5, 12];
        let m = ctx.alloc_zeros::<f32>(540 * 2).unwrap();
        let dense = TensorMapNd::contiguous(&ctx, &m, shape, [1, 2, 2, 4, 8], Swizzle::None);
        assert_eq!(dense.unwrap().box_bytes(), 128 * 4);
        check_box_round_trip(
            &name,
            &ctx,
            l5,
            (shape, [540, 180, 60, 12, 1], 2 * 540),
            [1, 2, 2, 4, 8],
        );
    }
}

#[test]
fn tensor_maps_of_more_dimensions_are_checked_on_the_host() {
    let ctx = gpukernel_runtime::Device::simulator()
        .primary_context()
        .unwrap();
    let m = ctx.alloc_zeros::<f32>(4 * 16 * 16).unwrap();
    let check = |shape: [u64; 3], strides: [u64; 3], b: [u32; 3], sw: Swizzle, needle: &str| {
        match TensorMapNd::strided(&ctx, &m, shape, strides, b, sw) {
            Err(Error::TensorMapInvalid { problem, buffer }) => {
                assert!(problem.contains(needle), "{needle:?} not in: {problem}");
                assert!(buffer.contains("1024 elements of f32"), "{buffer}");
            }
            other => panic!("expected TensorMapInvalid ({needle}), got {other:?}"),
        }
    };
    let (ok_shape, ok_strides, ok_box) = ([4, 16, 16], [256, 16, 1], [2, 8, 8]);
    assert!(TensorMapNd::strided(&ctx, &m, ok_shape, ok_strides, ok_box, Swizzle::None).is_ok());
    // Each refusal names the dimension and the parameter.
    check(
        [4, 0, 16],
        ok_strides,
        ok_box,
        Swizzle::None,
        "shape[1] = 0",
    );
    check(
        [1 << 33, 1, 16],
        ok_strides,
        ok_box,
        Swizzle::None,
        "shape[0] = 8589934592",
    );
    check(
        ok_shape,
        [256, 16, 2],
        ok_box,
        Swizzle::None,
        "strides[2] = 2: the innermost",
    );
    check(
        ok_shape,
        [256, 13, 1],
        ok_box,
        Swizzle::None,
        "strides[1] = 13 elements = 52 bytes",
    );
    check(
        ok_shape,
        [0, 16, 1],
        ok_box,
        Swizzle::None,
        "strides[0] = 0 elements",
    );
    check(
        ok_shape,
        [128, 16, 1],
        ok_box,
        Swizzle::None,
        "strides[0] = 128 is shorter than shape[1] × strides[1] = 256",
    );
    check(
        [2, 16, 18],
        [288, 18, 1],
        ok_box,
        Swizzle::None,
        "strides[1] = 18 elements = 72 bytes",
    );
    check(
        [4, 16, 16],
        [256, 12, 1],
        ok_box,
        Swizzle::None,
        "strides[1] = 12 is shorter than a row of shape[2] = 16",
    );
    check(
        [5, 16, 16],
        ok_strides,
        ok_box,
        Swizzle::None,
        "does not fit",
    );
    check(ok_shape, ok_strides, [0, 8, 8], Swizzle::None, "box[0] = 0");
    check(
        ok_shape,
        ok_strides,
        [2, 300, 8],
        Swizzle::None,
        "box[1] = 300",
    );
    check(
        ok_shape,
        ok_strides,
        [2, 8, 3],
        Swizzle::None,
        "box[2] = 3 elements = 12 bytes",
    );
    check(
        ok_shape,
        ok_strides,
        [2, 8, 16],
        Swizzle::B32,
        "box[2] = 16 elements = 64 bytes, more than the 32-byte swizzle span",
    );
    // A view starting 8 bytes in.
    let v = m.slice(2..).unwrap();
    match TensorMapNd::strided(&ctx, &v, [2, 16, 16], ok_strides, ok_box, Swizzle::None) {
        Err(Error::TensorMapInvalid { problem, .. }) => {
            assert!(problem.contains("16-byte aligned"), "{problem}")
        }
        other => panic!("expected TensorMapInvalid, got {other:?}"),
    }
    // Ranks 1 and 5.
    assert!(TensorMapNd::contiguous(&ctx, &m, [1024], [256], Swizzle::None).is_ok());
    assert!(
        TensorMapNd::contiguous(&ctx, &m, [2, 2, 4, 4, 16], [1, 2, 2, 4, 16], Swizzle::B64).is_ok()
    );
}

#[test]
fn tma_multicast_fills_every_block_of_the_cluster() {
    let (clusters, max_size) = (3u32, 4u32);
    let rows = (clusters * max_size * MC_SLICE_ROWS) as usize;
    let src: Vec<f32> = (0..rows * 32).map(|i| i as f32).collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(tma_multicast_tiles).unwrap();
        let ds = ctx.htod_copy(&src).unwrap();
        let map = TensorMap2D::new(
            &ctx,
            &ds,
            [rows as u64, 32],
            32,
            [MC_SLICE_ROWS, 32],
            Swizzle::None,
        )
        .unwrap();
        for size in [2u32, 4] {
            let blocks = clusters * size;
            let tile = (size * 256) as usize;
            let mut out = ctx.alloc_zeros::<f32>(blocks as usize * tile).unwrap();
            // SAFETY: a 2D f32 map of 32 columns with 8 × 32 boxes; clusters of `size` ≤ 8
            // along x; `out` has blocks · size · 256 elements.
            unsafe {
                ctx.default_stream().launch_unchecked(
                    &k,
                    LaunchConfig::new(blocks, 64).with_cluster(size),
                    (map.param(), 5u32, &mut out),
                )
            }
            .unwrap();
            let got = out.to_host_vec().unwrap();
            for b in 0..blocks as usize {
                let c = b / size as usize;
                assert_eq!(
                    &got[b * tile..(b + 1) * tile],
                    &src[c * tile..(c + 1) * tile],
                    "{name}: clusters of {size}, block {b} holds its cluster's whole tile"
                );
            }
        }
    }
}

/// Dynamic shared memory starts at the same offset in every block, so a place aligned up from
/// it is the same place in every block of a cluster (what TMA multicast and remote `mbarrier`
/// arrivals address). The simulator once gave each block a heap buffer of its own alignment:
/// the aligned places differed, and a multicast GEMM's copies completed on a peer's word that
/// was not its barrier.
#[test]
fn aligned_dynamic_shared_memory_is_the_same_place_in_every_block() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(cluster_aligned_dynamic_exchange).unwrap();
        for (size, bytes) in [(2u32, 1028u32), (4, 5000), (8, 20000)] {
            let blocks = 2 * size;
            let mut out = ctx.alloc_zeros::<u32>((blocks * size) as usize).unwrap();
            ctx.default_stream()
                .launch(
                    &k,
                    LaunchConfig::new(blocks, 32)
                        .with_cluster(size)
                        .with_shared_mem_bytes(bytes),
                    (&mut out,),
                )
                .unwrap();
            let want: Vec<u32> = (0..blocks * size).map(|i| 1000 + i % size).collect();
            assert_eq!(
                out.to_host_vec().unwrap(),
                want,
                "{name}: clusters of {size}, {bytes} bytes of dynamic shared memory"
            );
        }
    }
}

/// Writes into a peer block's shared memory published by a remote `mbarrier` arrival that
/// releases at cluster scope (`Mbarrier::arrive_cluster_release`): each peer sees the value
/// once its barrier's phase completed.
#[test]
fn remote_mbarrier_arrivals_publish_writes_to_the_peer() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(cluster_publish).unwrap();
        for size in [2u32, 4, 8] {
            let blocks = 3 * size;
            let mut out = ctx.htod_copy(&vec![7u32; blocks as usize]).unwrap();
            ctx.default_stream()
                .launch(
                    &k,
                    LaunchConfig::new(blocks, 32).with_cluster(size),
                    (&mut out,),
                )
                .unwrap();
            let want: Vec<u32> = (0..blocks)
                .map(|b| match b % size {
                    0 => 7,
                    r => 1000 * (b / size + 1) + r,
                })
                .collect();
            assert_eq!(
                out.to_host_vec().unwrap(),
                want,
                "{name}: clusters of {size}"
            );
        }
    }
}

#[test]
fn mbarrier_ring_passes_every_round() {
    let rounds = 9u32;
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(mbarrier_ring).unwrap();
        let mut out = ctx.alloc_zeros::<u32>(64).unwrap();
        ctx.default_stream()
            .launch(&k, LaunchConfig::new(1, 64), (rounds, &mut out))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for lane in 0..32u32 {
            let want: u32 = (0..rounds).map(|k| k * 32 + lane).sum();
            assert_eq!(
                got[32 + lane as usize],
                want,
                "{name}: consumer lane {lane}"
            );
        }
        assert!(
            got[..32].iter().all(|&v| v == 0),
            "{name}: producers wrote nothing"
        );
    }
}

#[test]
fn programmatic_dependent_launch_sees_the_first_kernels_results() {
    let n = 1 << 16;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let (k1, k2) = (
            md.kernel(pdl_first).unwrap(),
            md.kernel(pdl_second).unwrap(),
        );
        let s = ctx.new_stream().unwrap();
        let dx = s.htod_copy(&x).unwrap();
        let mut y = s.alloc_zeros::<f32>(n).unwrap();
        let mut z = s.alloc_zeros::<f32>(n).unwrap();
        let cfg = LaunchConfig::for_elements(n).unwrap();
        // SAFETY: `pdl_second` calls `grid::wait_dependencies` before it reads `y` or writes
        // `z`, and `pdl_first` does not wait on `pdl_second`.
        let dependent = unsafe { cfg.programmatic_dependent() };
        for _ in 0..3 {
            s.launch(&k1, cfg, (3.0f32, &dx, &mut y)).unwrap();
            s.launch(&k2, dependent, (&y, &mut z)).unwrap();
        }
        let got = z.to_host_vec().unwrap();
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, 2.0 * (3.0 * i as f32 + 1.0), "{name}: element {i}");
        }
    }
}

#[test]
fn graph_programmatic_edges_let_the_dependent_kernel_see_the_first_kernels_results() {
    let n = 1 << 16;
    let x: Vec<f32> = (0..n).map(|i| (i % 997) as f32).collect();
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let (k1, k2) = (
            md.kernel(pdl_first).unwrap(),
            md.kernel(pdl_second).unwrap(),
        );
        let s = ctx.new_stream().unwrap();
        let dx = s.htod_copy(&x).unwrap();
        let mut y = s.alloc_zeros::<f32>(n).unwrap();
        let mut z = s.alloc_zeros::<f32>(n).unwrap();
        let mut w = s.alloc_zeros::<f32>(n).unwrap();
        {
            let g = ctx.new_graph("pdl pairs").unwrap();
            let (xb, yb, zb, wb) = (
                g.buffer(&dx),
                g.buffer_mut(&mut y),
                g.buffer_mut(&mut z),
                g.buffer_mut(&mut w),
            );
            let cfg = LaunchConfig::for_elements(n).unwrap();
            // SAFETY: `pdl_second` calls `grid::wait_dependencies` before it reads `y` or
            // writes `z` / `w`, and `pdl_first` does not wait on `pdl_second`.
            let dependent = unsafe { cfg.programmatic_dependent() };
            for round in 0..4 {
                let a = round as f32;
                let first = g.add_kernel(&[], &k1, cfg, (a, xb, yb)).unwrap();
                // Each round's z (then w) is 2 (a x + 1) of its own round's y: the next
                // round's first kernel, which rewrites y, waits for the reads of this one.
                let out = if round % 2 == 0 { zb } else { wb };
                g.add_kernel(&[first], &k2, dependent, (yb.read(), out))
                    .unwrap();
            }
            let exec = g.instantiate().unwrap();
            for _ in 0..3 {
                exec.launch(&s).unwrap();
            }
            s.synchronize().unwrap();
        }
        let (gz, gw) = (z.to_host_vec().unwrap(), w.to_host_vec().unwrap());
        for (i, &v) in x.iter().enumerate() {
            assert_eq!(gz[i], 2.0 * (2.0 * v + 1.0), "{name}: z[{i}]");
            assert_eq!(gw[i], 2.0 * (3.0 * v + 1.0), "{name}: w[{i}]");
        }
    }
}

#[test]
fn graph_kernel_nodes_with_clusters_and_cooperative_launch() {
    let mut rng = Rng::from_env("graph_hopper_nodes");
    let data: Vec<u32> = (0..20_000).map(|_| rng.next_u64() as u32).collect();
    let x = rng.vec_f32(50_001);
    let bins = 777u32;
    let want = host_histogram(&data, bins);
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let hc = md.kernel(histogram_cluster).unwrap();
        let coop = md.kernel(sum_cooperative).unwrap();
        let d = ctx.htod_copy(&data).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut h = ctx.alloc_zeros::<u32>(bins as usize).unwrap();
        let blocks = 4u32;
        let partials = ctx.alloc_zeros::<f32>(blocks as usize).unwrap();
        let bar = GridBarrierWord::new(&ctx).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
        {
            let g = ctx.new_graph("hopper nodes").unwrap();
            let hb = g.buffer_mut(&mut h);
            let zero = g.add_memset_zeros(&[], hb).unwrap();
            g.add_kernel(
                &[zero],
                &hc,
                LaunchConfig::new(4, HIST_BLOCK).with_cluster(2),
                (&d, bins, hb),
            )
            .unwrap();
            // SAFETY: cooperative, blocks of REDUCE_BLOCK threads, a slot per block; the
            // barrier serves one launch at a time (the graph runs on one stream).
            unsafe {
                g.add_kernel_unchecked(
                    &[],
                    &coop,
                    LaunchConfig::new(blocks, REDUCE_BLOCK).cooperative(),
                    (
                        &dx,
                        DevicePtr::from_addr(partials.as_raw()),
                        bar.param(),
                        &mut out,
                    ),
                )
            }
            .unwrap();
            // Refused like a launch: 3 blocks in clusters of 2.
            let r = g.add_kernel(
                &[],
                &hc,
                LaunchConfig::new(3, HIST_BLOCK).with_cluster(2),
                (&d, bins, hb),
            );
            assert!(
                matches!(r, Err(Error::ClusterShapeInvalid { .. })),
                "{name}: {r:?}"
            );
            let exec = g.instantiate().unwrap();
            let s = ctx.new_stream().unwrap();
            exec.launch(&s).unwrap();
            exec.launch(&s).unwrap();
            s.synchronize().unwrap();
        }
        assert_eq!(h.to_host_vec().unwrap(), want, "{name}: graph cluster node");
        let got = out.to_host_vec().unwrap()[0];
        assert_close(
            &format!("graph cooperative node on {name}"),
            &[got],
            &[host_sum(&x)],
            1e-4,
        );
    }
}

#[test]
fn cluster_registers_describe_the_launch() {
    let pack = |x: u32, y: u32, z: u32| x | y << 8 | z << 16;
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        let k = md.kernel(cluster_registers).unwrap();
        let (gx, gy) = (4u32, 2u32);
        for cluster in [Some((2u32, 2u32)), None] {
            let out = ctx.alloc_zeros::<[u32; 8]>((gx * gy) as usize).unwrap();
            let mut cfg = LaunchConfig::new((gx, gy), 32);
            if let Some(c) = cluster {
                cfg = cfg.with_cluster(c);
            }
            // SAFETY: one slot per block, used by this launch alone.
            unsafe {
                ctx.default_stream().launch_unchecked(
                    &k,
                    cfg,
                    (DevicePtr::from_addr(out.as_raw()),),
                )
            }
            .unwrap();
            let got = out.to_host_vec().unwrap();
            let (cx, cy) = cluster.unwrap_or((1, 1));
            for by in 0..gy {
                for bx in 0..gx {
                    let want = [
                        bx % cx + (by % cy) * cx,
                        cx * cy,
                        pack(cx, cy, 1),
                        pack(bx / cx, by / cy, 0),
                        pack(bx % cx, by % cy, 0),
                        pack(gx / cx, gy / cy, 1),
                        cluster.is_some() as u32,
                        0,
                    ];
                    assert_eq!(
                        got[(bx + by * gx) as usize],
                        want,
                        "{name}: block ({bx}, {by}), clusters {cluster:?}"
                    );
                }
            }
        }
    }
}
