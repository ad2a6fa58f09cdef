//! Safe 2D / 3D outputs and grid-stride loops on every test device, and the typed launch's
//! refusal of configurations in which two threads would share an output element.

use ffi_examples_kernels::grid::{
    add_2d_grid_stride, coordinates_3d, saxpy_grid_stride, transpose_2d,
};
use ffi_examples_kernels::saxpy;
use gpukernel_runtime::{Error, LaunchConfig, LaunchDims};
use gpukernel_tests::{Rng, assert_close, devices, plain_kernels};

#[test]
fn transpose_writes_each_element_of_a_pitched_output_once() {
    let mut rng = Rng::from_env("transpose_2d");
    // `m` is rows × cols; the output is cols rows of `rows` elements, with a pitch of 40.
    let (rows, cols, pitch) = (37usize, 45usize, 40usize);
    let m = rng.vec_f32(rows * cols);
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(transpose_2d).unwrap();
        assert_eq!(k.launch_dims(), LaunchDims::Two);
        let dm = ctx.htod_copy(&m).unwrap();
        let mut out = ctx.htod_copy(&vec![-1.0f32; cols * pitch]).unwrap();
        let view = out.view_2d_mut(rows, cols, pitch).unwrap();
        // 16 × 8 blocks: the grid overhangs both axes.
        let cfg = LaunchConfig::new((3, 6), (16, 8));
        ctx.default_stream()
            .launch(&k, cfg, (&dm, cols as u32, view))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for y in 0..cols {
            for x in 0..pitch {
                let want = if x < rows { m[x * cols + y] } else { -1.0 };
                assert_eq!(got[y * pitch + x], want, "{name}: row {y}, column {x}");
            }
        }
    }
}

#[test]
fn grid_stride_loops_cover_every_element_with_a_small_grid() {
    let mut rng = Rng::from_env("grid_stride");
    let (rows, cols) = (70usize, 130usize);
    let a = rng.vec_f32(rows * cols);
    let b = rng.vec_f32(rows * cols);
    let want: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
    let n = 10_001;
    let x = rng.vec_f32(n);
    let y0 = rng.vec_f32(n);
    let want_saxpy: Vec<f32> = x
        .iter()
        .zip(&y0)
        .map(|(x, y)| 3.0f32.mul_add(*x, *y))
        .collect();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let stream = ctx.default_stream();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let mut out = ctx.alloc_zeros::<f32>(rows * cols).unwrap();
        let k = module.kernel(add_2d_grid_stride).unwrap();
        // 2 × 3 blocks of 8 × 4 threads: 16 × 12 threads for 130 × 70 elements.
        let view = out.view_2d_mut(cols, rows, cols).unwrap();
        stream
            .launch(&k, LaunchConfig::new((2, 3), (8, 4)), (&da, &db, view))
            .unwrap();
        assert_close(
            &format!("2D grid stride on {name}"),
            &out.to_host_vec().unwrap(),
            &want,
            0.0,
        );

        let k = module.kernel(saxpy_grid_stride).unwrap();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut dy = ctx.htod_copy(&y0).unwrap();
        stream
            .launch(&k, LaunchConfig::new(3, 64), (3.0f32, &dx, &mut dy))
            .unwrap();
        assert_close(
            &format!("grid-stride saxpy on {name}"),
            &dy.to_host_vec().unwrap(),
            &want_saxpy,
            1e-6,
        );
    }
}

#[test]
fn three_dimensional_outputs_accept_any_launch() {
    let (cols, rows, depth, pitch) = (9usize, 7usize, 5usize, 11usize);
    let len = (depth * rows - 1) * pitch + cols;
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(coordinates_3d).unwrap();
        assert_eq!(k.launch_dims(), LaunchDims::Three);
        let mut out = ctx.htod_copy(&vec![u32::MAX; len]).unwrap();
        let view = out.view_3d_mut(cols, rows, depth, pitch).unwrap();
        ctx.default_stream()
            .launch(&k, LaunchConfig::new((2, 1, 2), (4, 4, 2)), (view,))
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for (i, &v) in got.iter().enumerate() {
            let (x, y, z) = (i % pitch, (i / pitch) % rows, i / (pitch * rows));
            let want = if x < cols {
                (x + 1000 * y + 1_000_000 * z) as u32
            } else {
                u32::MAX
            };
            assert_eq!(v, want, "{name}: element {i}");
        }
    }
}

/// The error a refused configuration gives, with its fields.
fn refused(e: Error) -> (String, &'static str, &'static str, u32) {
    match e {
        Error::LaunchDimensionsNotAllowed {
            kernel,
            output,
            dimension,
            value,
            ..
        } => (kernel, output, dimension, value),
        other => panic!("expected LaunchDimensionsNotAllowed, got {other}"),
    }
}

#[test]
fn every_typed_launch_path_refuses_shared_indices() {
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let stream = ctx.default_stream();
        let saxpy = module.kernel(saxpy).unwrap();
        assert_eq!(saxpy.launch_dims(), LaunchDims::One);
        let x = ctx.htod_copy(&[1.0f32; 64]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(64).unwrap();

        // `Stream::launch`: a 2D grid, and 2D blocks, of a kernel taking a `DisjointSlice`.
        let e = stream
            .launch(&saxpy, LaunchConfig::new((1, 2), 32), (2.0f32, &x, &mut y))
            .unwrap_err();
        let msg = e.to_string();
        assert_eq!(
            refused(e),
            ("saxpy".into(), "DisjointSlice", "grid.y", 2),
            "{name}"
        );
        assert!(msg.contains("must be one-dimensional"), "{msg}");
        // The message says what to write instead (a project written for a release that did
        // not refuse this meets it first).
        assert!(
            msg.contains("hint: a kernel launched on a 2D grid takes `DisjointSlice2D<T>`")
                && msg.contains("`thread::index_2d()`")
                && msg.contains("view_2d_mut")
                && msg.contains("`unsafe fn` taking `*mut T`"),
            "{msg}"
        );
        let e = stream
            .launch(&saxpy, LaunchConfig::new(1, (8, 8)), (2.0f32, &x, &mut y))
            .unwrap_err();
        assert_eq!(refused(e).2, "block.y");

        // The `unsafe` unchecked form checks it too.
        // SAFETY: refused before anything runs.
        let e = unsafe {
            stream.launch_unchecked(
                &saxpy,
                LaunchConfig::new((1, 1, 2), 32),
                (2.0f32, &x, &mut y),
            )
        }
        .unwrap_err();
        assert_eq!(refused(e).2, "grid.z");

        // A `DisjointSlice2D` kernel: any x and y, but z must be 1.
        let t = module.kernel(transpose_2d).unwrap();
        let m = ctx.alloc_zeros::<f32>(64).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(64).unwrap();
        let view = out.view_2d_mut(8, 8, 8).unwrap();
        let e = stream
            .launch(&t, LaunchConfig::new(1, (8, 8, 2)), (&m, 8u32, view))
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("`DisjointSlice3D<T>` and writes at `thread::index_3d()`"),
            "{msg}"
        );
        assert_eq!(
            refused(e),
            ("transpose_2d".into(), "DisjointSlice2D", "block.z", 2)
        );

        // Graph kernel nodes.
        let graph = ctx.new_graph("dims").unwrap();
        let (xb, yb) = (graph.buffer(&x), graph.buffer_mut(&mut y));
        let e = graph
            .add_kernel(&[], &saxpy, LaunchConfig::new((2, 2), 32), (2.0f32, xb, yb))
            .unwrap_err();
        assert_eq!(refused(e).2, "grid.y");
        // A valid node, whose arguments a 2D configuration may not replace.
        let node = graph
            .add_kernel(&[], &saxpy, LaunchConfig::new(2, 32), (2.0f32, xb, yb))
            .unwrap();
        let exec = graph.instantiate().unwrap();
        let e = exec
            .set_kernel_args(
                node,
                &saxpy,
                LaunchConfig::new(2, (16, 2)),
                (2.0f32, xb, yb),
            )
            .unwrap_err();
        assert_eq!(refused(e).2, "block.y");
        drop(exec);
        drop(graph);

        // Stream capture.
        let capturing = ctx.new_stream().unwrap();
        let e = capturing
            .capture("dims", |s| {
                let yb = s.buffer_mut(&mut y);
                s.launch(&saxpy, LaunchConfig::new((1, 3), 32), (2.0f32, &x, yb))
            })
            .unwrap_err();
        assert_eq!(refused(e).2, "grid.y");

        // Nothing ran.
        assert!(y.to_host_vec().unwrap().iter().all(|&v| v == 0.0), "{name}");
    }
}
