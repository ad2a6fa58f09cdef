//! The read-only 2D input `Slice2D<T>`: a shape checked against its buffer once, when the host
//! makes the view (`view_2d`), so the kernel's reads check only the row and the column. Its
//! misuses: a shape larger than the memory, a pitch shorter than a row, a read outside the shape
//! (inside the buffer's padding or past the last row), each refused or trapped.

use ffi_examples_kernels::grid::{read_view_2d, row_sums_view_2d, transpose_view_2d};
use gpukernel_runtime::{Device, Error, LaunchConfig, LaunchDims};
use gpukernel_tests::{Rng, devices, plain_kernels};

/// `rows × cols` values stored with a row pitch of `pitch`, the padding set to `pad`.
fn pitched(m: &[f32], rows: usize, cols: usize, pitch: usize, pad: f32) -> Vec<f32> {
    let mut out = vec![pad; rows * pitch];
    for r in 0..rows {
        out[r * pitch..r * pitch + cols].copy_from_slice(&m[r * cols..(r + 1) * cols]);
    }
    out
}

#[test]
fn transpose_reads_a_pitched_view_and_never_its_padding() {
    let mut rng = Rng::from_env("slice_2d_transpose");
    // `m` is 37 × 45 with rows 50 apart (NaN in between: read, it would show in the output);
    // the output is 45 rows of 37, pitch 40, its padding -1.
    let (rows, cols, pitch_in, pitch_out) = (37usize, 45usize, 50usize, 40usize);
    let m = rng.vec_f32(rows * cols);
    let stored = pitched(&m, rows, cols, pitch_in, f32::NAN);
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(transpose_view_2d).unwrap();
        assert_eq!(k.launch_dims(), LaunchDims::Two);
        let dm = ctx.htod_copy(&stored).unwrap();
        let mut out = ctx.htod_copy(&vec![-1.0f32; cols * pitch_out]).unwrap();
        let input = dm.view_2d(cols, rows, pitch_in).unwrap();
        // 16 × 8 blocks: the grid overhangs both axes.
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::new((3, 6), (16, 8)),
                (input, out.view_2d_mut(rows, cols, pitch_out).unwrap()),
            )
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for y in 0..cols {
            for x in 0..pitch_out {
                let want = if x < rows { m[x * cols + y] } else { -1.0 };
                assert_eq!(got[y * pitch_out + x], want, "{name}: row {y}, column {x}");
            }
        }
    }
}

#[test]
fn rows_of_a_view_are_its_columns_only() {
    let (rows, cols, pitch) = (5usize, 3usize, 4usize);
    let m: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    // The padding is 1000: a row that reached into it would sum to more than 1000.
    let stored = pitched(&m, rows, cols, pitch, 1000.0);
    let want: Vec<f32> = m.chunks(cols).map(|r| r.iter().sum()).collect();
    for (name, ctx) in devices() {
        let module = plain_kernels(&ctx);
        let k = module.kernel(row_sums_view_2d).unwrap();
        let dm = ctx.htod_copy(&stored).unwrap();
        // One thread more than rows: `row(5)` is `None`, and its slot keeps its -1.
        let mut out = ctx.htod_copy(&vec![-1.0f32; rows + 1]).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::new(1, 32),
                (dm.view_2d(cols, rows, pitch).unwrap(), &mut out),
            )
            .unwrap();
        let got = out.to_host_vec().unwrap();
        assert_eq!(got[..rows], want[..], "{name}");
        assert_eq!(got[rows], -1.0, "{name}");
    }
}

#[test]
fn a_shape_larger_than_its_memory_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let buf = ctx.alloc_zeros::<f32>(100).unwrap();
    // 10 rows of 10: exactly the buffer; one more row, or one more column, is too much.
    assert!(buf.view_2d(10, 10, 10).is_ok());
    let e = buf.view_2d(10, 11, 10).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidShape {
                operation: "DeviceBuffer::view_2d",
                len: 100,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("needs 110 elements"), "{e}");
    // The last row needs no padding after it: 9 rows 11 apart and 1 of 10.
    assert!(buf.view_2d(10, 10, 11).is_err());
    assert!(buf.view_2d(1, 10, 11).is_ok());
    // A pitch shorter than a row would make rows overlap.
    let e = buf.view_2d(10, 5, 9).unwrap_err();
    assert!(e.to_string().contains("pitch shorter than a row"), "{e}");
    // A shape whose element count overflows.
    let e = buf.view_2d(2, usize::MAX, usize::MAX).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    // A view of part of the buffer is checked against that part, not the buffer behind it.
    let tail = buf.slice(60..).unwrap();
    assert!(tail.view_2d(8, 5, 8).is_ok());
    let e = tail.view_2d(8, 6, 8).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidShape {
                operation: "DeviceView::view_2d",
                len: 40,
                ..
            }
        ),
        "{e:?}"
    );
    let mut buf = buf;
    let part = buf.slice_mut(..50).unwrap();
    let e = part.view_2d(10, 6, 10).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidShape {
                operation: "DeviceViewMut::view_2d",
                len: 50,
                ..
            }
        ),
        "{e:?}"
    );
}

/// `read_view_2d` at `(r, c)` on a 4 × 5 view with rows 8 apart, in a buffer of 40: the
/// simulator's outcome.
fn read_at(r: u32, c: u32) -> Result<Vec<f32>, Error> {
    let ctx = Device::simulator().primary_context().unwrap();
    let module = plain_kernels(&ctx);
    let k = module.kernel(read_view_2d).unwrap();
    let data: Vec<f32> = (0..40).map(|i| i as f32).collect();
    let dm = ctx.htod_copy(&data).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(2).unwrap();
    ctx.default_stream().launch(
        &k,
        LaunchConfig::new(1, 2),
        (dm.view_2d(5, 4, 8).unwrap(), r, c, &mut out),
    )?;
    out.to_host_vec()
}

#[test]
fn reads_inside_the_shape_see_the_pitch() {
    assert_eq!(read_at(0, 0).unwrap(), [0.0, 0.0]);
    assert_eq!(read_at(3, 4).unwrap(), [28.0, 28.0]);
    assert_eq!(read_at(2, 1).unwrap(), [17.0, 17.0]);
}

#[test]
fn reads_outside_the_shape_trap_even_inside_the_buffer() {
    // Column 5 of row 0 is element 5 of the buffer (padding), row 4 is elements 32..37: both
    // in the buffer, both outside the view.
    for (r, c, what) in [
        (0, 5, "the len is 5 but the index is 5"),
        (4, 0, "the len is 4 but the index is 4"),
    ] {
        match read_at(r, c) {
            Err(Error::SimulatorFault {
                kernel, message, ..
            }) => {
                assert_eq!(kernel, "read_view_2d");
                assert!(message.contains(what), "({r}, {c}): {message}");
            }
            other => panic!("({r}, {c}): expected a fault, got {other:?}"),
        }
    }
}
