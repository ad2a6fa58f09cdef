//! Stream capture on a CUDA device (feature `gpu`): the twins of the capture tests in
//! `src/graph/tests.rs`.

mod common;

use common::{gpu, saxpy};
use gpukernel_runtime::{Error, LaunchConfig};

const N: usize = 100_003;

fn refused(e: Error) -> &'static str {
    match e {
        Error::StreamCapturing { operation } => operation,
        e => panic!("unexpected {e}"),
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn capture_records_launches_and_copies_and_refuses_synchronization() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let x = ctx.htod_copy(&vec![1.0f32; N]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut z = ctx.htod_copy(&vec![5.0f32; N]).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(N).unwrap();
    let s = ctx.new_stream().unwrap();
    let s2 = s.clone();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let g = s
            .capture("captured", |c| {
                let (yb, zb) = (c.buffer_mut(&mut y), c.buffer_mut(&mut z));
                c.memset_zeros(yb)?;
                c.launch(&k, cfg, (2.0f32, &x, yb))?;
                assert_eq!(
                    refused(s2.synchronize().unwrap_err()),
                    "Stream::synchronize"
                );
                assert_eq!(refused(s2.query().unwrap_err()), "Stream::query");
                let e = s2.launch(&k, cfg, (1.0f32, &x, &mut other)).unwrap_err();
                assert_eq!(refused(e), "Stream::launch");
                let mut host = vec![0.0f32; N];
                let e = s2.memcpy_dtoh(&mut host, &other).unwrap_err();
                assert_eq!(refused(e), "a stream-ordered use of a buffer");
                c.launch(&k, cfg, (1.0f32, &x, yb))?;
                c.memcpy_dtod(zb, yb)
            })
            .unwrap();
        assert_eq!(g.len(), 4);
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![3.0f32; N]);
    assert_eq!(z.to_host_vec().unwrap(), vec![3.0f32; N]);
    s.launch(&k, cfg, (1.0f32, &x, &mut other)).unwrap();
    assert_eq!(other.to_host_vec().unwrap(), vec![1.0f32; N]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_capture_reads_a_buffer_written_on_another_stream() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let writer = ctx.new_stream().unwrap();
    let reader = ctx.new_stream().unwrap();
    let mut x = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    // Pending on `writer` when the graph launches on `reader`: the launch must wait for it.
    writer.launch(&k, cfg, (0.0f32, &y, &mut x)).unwrap();
    writer.memcpy_htod(&mut x, &vec![4.0f32; N]).unwrap();
    writer.launch(&k, cfg, (0.0f32, &y, &mut x)).unwrap();
    {
        let g = reader
            .capture("reads x", |c| {
                c.launch(&k, cfg, (0.5f32, &x, c.buffer_mut(&mut y)))
            })
            .unwrap();
        let exec = g.instantiate().unwrap();
        exec.launch(&reader).unwrap();
        reader.synchronize().unwrap();
    }
    assert_eq!(y.to_host_vec().unwrap(), vec![2.0f32; N]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn a_failed_capture_leaves_the_stream_usable() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(8).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(8).unwrap();
    let e = s
        .capture("fails", |c| {
            c.launch(&k, cfg, (1.0f32, &x, c.buffer_mut(&mut y)))?;
            Err(Error::StreamCapturing { operation: "user" })
        })
        .unwrap_err();
    assert!(matches!(e, Error::StreamCapturing { operation: "user" }));
    s.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap();
    s.synchronize().unwrap();
    assert_eq!(y.to_host_vec().unwrap(), vec![1.0f32; 8]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn capture_records_pageable_and_pinned_host_copies() {
    let ctx = gpu();
    let m = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&m, saxpy).unwrap();
    let host_x: Vec<f32> = (0..N).map(|i| (i % 97) as f32).collect();
    let pinned_z = ctx.pinned_from_slice(&vec![7.0f32; N]).unwrap();
    let mut pinned_y = ctx.alloc_pinned::<f32>(N).unwrap();
    let mut host_z = vec![0.0f32; N];
    let mut x = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut z = ctx.alloc_zeros::<f32>(N).unwrap();
    let mut other = ctx.alloc_zeros::<f32>(N).unwrap();
    let s = ctx.new_stream().unwrap();
    let s2 = s.clone();
    let cfg = LaunchConfig::for_elements(N).unwrap();
    {
        let (zin, yout) = (
            pinned_z.as_slice().unwrap(),
            pinned_y.as_mut_slice().unwrap(),
        );
        let g = s
            .capture("host copies", |c| {
                let (xb, yb, zb) = (
                    c.buffer_mut(&mut x),
                    c.buffer_mut(&mut y),
                    c.buffer_mut(&mut z),
                );
                c.memcpy_htod(xb, &host_x)?; // pageable
                c.memcpy_htod(zb, zin)?; // pinned
                c.launch(&k, cfg, (2.0f32, xb.read(), yb))?;
                // An ordinary copy borrows its host memory only for the call: refused, and
                // the capture goes on.
                let e = s2.memcpy_htod(&mut other, &host_x).unwrap_err();
                assert!(matches!(e, Error::StreamCapturing { .. }), "{e}");
                c.memcpy_dtoh(yout, yb)?; // pinned
                c.memcpy_dtoh(&mut host_z, zb) // pageable
            })
            .unwrap();
        assert_eq!(g.len(), 5);
        let exec = g.instantiate().unwrap();
        exec.launch(&s).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    }
    let want: Vec<f32> = host_x.iter().map(|v| 4.0 * v).collect();
    assert_eq!(pinned_y.as_slice().unwrap(), want.as_slice());
    assert_eq!(host_z, vec![7.0f32; N]);
    // The stream is usable after the capture.
    s.memcpy_htod(&mut other, &host_x).unwrap();
    assert_eq!(other.to_host_vec().unwrap(), host_x);
}
