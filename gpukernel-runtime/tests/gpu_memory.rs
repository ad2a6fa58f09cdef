//! Device memory on a CUDA device (feature `gpu`).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{gpu, saxpy};
use gpukernel_runtime::{DeviceBuffer, Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn roundtrips_views_and_memset() {
    let ctx = gpu();
    let src: Vec<u32> = (0..10_000).collect();
    let mut b = ctx.htod_copy(&src).unwrap();
    assert_eq!(b.to_host_vec().unwrap(), src);
    assert_eq!(b.as_raw() % 256, 0);

    let z = ctx.alloc_zeros::<u64>(1000).unwrap();
    assert_eq!(z.to_host_vec().unwrap(), vec![0; 1000]);

    assert_eq!(
        b.slice(10..13).unwrap().to_host_vec().unwrap(),
        [10, 11, 12]
    );
    b.slice_mut(0..2).unwrap().copy_from_host(&[7, 8]).unwrap();
    b.slice_mut(9_998..).unwrap().memset_d8(0x01).unwrap();
    let h = b.to_host_vec().unwrap();
    assert_eq!(&h[..3], [7, 8, 2]);
    assert_eq!(&h[9_998..], [0x0101_0101, 0x0101_0101]);

    let mut c = ctx.alloc_zeros::<u32>(10_000).unwrap();
    c.copy_from_device(&b).unwrap();
    assert_eq!(c.to_host_vec().unwrap(), h);

    let e = b.copy_to_host(&mut [0u32; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                destination: 3,
                source_len: 10_000,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(b.slice(5..10_001), Err(Error::OutOfBounds { .. })));
    let empty = ctx.alloc_zeros::<f32>(0).unwrap();
    assert!(empty.to_host_vec().unwrap().is_empty());
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn pinned_memory_and_async_copies() {
    let ctx = gpu();
    let s = ctx.new_stream().unwrap();
    let n = 1 << 20;
    let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let pinned = ctx.pinned_from_slice(&src).unwrap();
    let mut d = s.alloc_zeros::<f32>(n).unwrap();
    s.memcpy_htod_async(&mut d, &pinned).unwrap();
    let mut back = ctx.alloc_pinned::<f32>(n).unwrap();
    s.memcpy_dtoh_async(&mut back, &d).unwrap();
    // `as_slice` waits for the copy.
    assert_eq!(back.as_slice().unwrap(), &src[..]);
    let mut d2 = s.alloc_zeros::<f32>(n).unwrap();
    s.memcpy_dtod_async(&mut d2, &d).unwrap();
    s.memset_d8_async(&mut d, 0).unwrap();
    let mut host = vec![0f32; n];
    s.memcpy_dtoh(&mut host, &d2).unwrap();
    assert_eq!(host, src);
    assert_eq!(d.to_host_vec().unwrap(), vec![0.0; n]);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn work_on_two_streams_is_ordered_by_the_buffers() {
    let ctx = gpu();
    let module = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&module, saxpy).unwrap();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let n = 1 << 24;
    let x = s1.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut y = s1.alloc_zeros::<f32>(n).unwrap();
    for _ in 0..50 {
        s1.launch(
            &k,
            LaunchConfig::for_elements(n).unwrap(),
            (1.0f32, &x, &mut y),
        )
        .unwrap();
    }
    // s2 must wait for the 50 launches on s1 before reading y.
    let mut z = s2.alloc_zeros::<f32>(n).unwrap();
    s2.memcpy_dtod_async(&mut z, &y).unwrap();
    s2.launch(
        &k,
        LaunchConfig::for_elements(n).unwrap(),
        (1.0f32, &x, &mut z),
    )
    .unwrap();
    let mut host = vec![0f32; 16];
    s2.memcpy_dtoh(&mut host, &z.slice(n - 16..).unwrap())
        .unwrap();
    assert_eq!(host, vec![51.0; 16]);
    drop(y); // freed in stream order after both streams' uses
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
}

/// Launches that take the lock-free path of the ordering (the same stream again, reading an
/// input written on another stream) are still waited for: by a write of that input on a third
/// stream, and by the free of a buffer they used.
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn launches_without_the_ordering_lock_are_still_waited_for() {
    let ctx = gpu();
    let module = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&module, saxpy).unwrap();
    let (s0, s1, s2) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let n = 1 << 24;
    let cfg = LaunchConfig::for_elements(n).unwrap();
    let mut x = s0.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut y = s1.alloc_zeros::<f32>(n).unwrap();
    // The first launch on s1 waits for s0's copy; the 49 others go without the lock.
    for _ in 0..50 {
        s1.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap();
    }
    // Overwriting x on s2 must wait for all 50 reads on s1 (else y would see 2s).
    let twos = s2.htod_copy(&vec![2.0f32; n]).unwrap();
    s2.launch(&k, cfg, (1.0f32, &twos, &mut x)).unwrap();
    // And a buffer read only by the lock-free launches, freed now, is freed after them.
    let w = s0.htod_copy(&vec![1.0f32; n]).unwrap();
    let mut v = s1.alloc_zeros::<f32>(n).unwrap();
    for _ in 0..20 {
        s1.launch(&k, cfg, (1.0f32, &w, &mut v)).unwrap();
    }
    drop(w);
    let mut reuse = s0.htod_copy(&vec![5.0f32; n]).unwrap();
    s0.launch(&k, cfg, (0.0f32, &twos, &mut reuse)).unwrap();
    let (hy, hx, hv) = (
        y.to_host_vec().unwrap(),
        x.to_host_vec().unwrap(),
        v.to_host_vec().unwrap(),
    );
    assert!(hy.iter().all(|&e| e == 50.0), "y: {:?}", &hy[..4]);
    assert!(hx.iter().all(|&e| e == 3.0), "x: {:?}", &hx[..4]);
    assert!(hv.iter().all(|&e| e == 20.0), "v: {:?}", &hv[..4]);
    assert!(reuse.to_host_vec().unwrap().iter().all(|&e| e == 5.0));
    s0.synchronize().unwrap();
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn foreign_pointer_finalizer_runs_exactly_once() {
    let ctx = gpu();
    let module = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&module, saxpy).unwrap();
    // "Someone else's" allocation: a buffer we hand over as the owner.
    let n = 4096;
    let other = ctx.htod_copy(&vec![2.0f32; n]).unwrap();
    let ptr = other.device_ptr();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    // SAFETY: `other` is a live device allocation of n f32s in `ctx`, moved into the finalizer
    // (so it outlives the wrapper) and not used elsewhere.
    let mut wrapped = unsafe {
        DeviceBuffer::<f32>::from_raw_parts_with_finalizer(&ctx, ptr, n, move || {
            drop(other);
            counter.fetch_add(1, Ordering::SeqCst);
        })
    }
    .unwrap();
    let x = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    ctx.default_stream()
        .launch(
            &k,
            LaunchConfig::for_elements(n).unwrap(),
            (3.0f32, &x, &mut wrapped),
        )
        .unwrap();
    assert_eq!(wrapped.to_host_vec().unwrap(), vec![5.0; n]);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    drop(wrapped);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // SAFETY: rejected before use.
    let e = unsafe {
        DeviceBuffer::<f64>::from_raw_parts_with_owner(
            &ctx,
            gpukernel_runtime::DevicePtr::from_addr(ptr.addr() + 4),
            1,
            (),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::InvalidPointer { .. }), "{e}");
}
