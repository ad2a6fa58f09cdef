//! Devices, contexts, streams and events on a CUDA device (feature `gpu`).

mod common;

use common::gpu;
use gpukernel_runtime::{Backend, Device, Error, LaunchConfig};

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn device_count_and_properties() {
    let n = Device::count().unwrap();
    assert!(n >= 1, "no CUDA device");
    let d = Device::get(0).unwrap();
    assert_eq!(d.backend(), Backend::Cuda);
    assert_eq!(d.ordinal(), Some(0));
    let p = d.properties().unwrap();
    println!("{p:#?}");
    assert!(!p.name.is_empty());
    assert!(p.compute_capability >= (7, 0), "{:?}", p.compute_capability);
    assert!(p.multiprocessor_count > 0);
    assert!(p.total_memory > 1 << 30);
    assert_eq!(p.warp_size, 32);
    assert!(p.max_threads_per_block >= 1024);
    assert_eq!(d.compute_capability().unwrap(), p.compute_capability);
    match Device::get(n) {
        Err(Error::NoDevice { ordinal, count }) => assert_eq!((ordinal, count), (n, n)),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(Device::auto().unwrap(), d);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn one_primary_context_per_device() {
    let a = gpu();
    let b = Device::get(0).unwrap().primary_context().unwrap();
    let sa = a.default_stream();
    assert!(sa.same_as(&b.default_stream()));
    assert!(!a.is_simulator());
    a.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn streams_with_priorities_and_events() {
    let ctx = gpu();
    let (least, greatest) = ctx.stream_priority_range().unwrap();
    assert!(greatest <= least);
    let hi = ctx.new_stream_with_priority(greatest).unwrap();
    let lo = ctx.new_stream_with_priority(least).unwrap();
    assert_eq!(hi.priority().unwrap(), greatest);
    assert_eq!(lo.priority().unwrap(), least);

    let module = ctx.load_module(common::PTX.as_bytes()).unwrap();
    let k = common::kernel(&module, common::saxpy).unwrap();
    let n = 1 << 24;
    let x = hi.alloc_zeros::<f32>(n).unwrap();
    let mut y = hi.alloc_zeros::<f32>(n).unwrap();
    let (start, end) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
    start.record(&hi).unwrap();
    for _ in 0..20 {
        hi.launch(
            &k,
            LaunchConfig::for_elements(n).unwrap(),
            (1.0f32, &x, &mut y),
        )
        .unwrap();
    }
    end.record(&hi).unwrap();
    lo.wait_event(&end).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms > 0.0, "{ms}");
    assert!(end.query().unwrap());
    lo.synchronize().unwrap();
    assert!(lo.query().unwrap());
    hi.synchronize().unwrap();

    let untimed = ctx.new_event_with_flags(false, true).unwrap();
    untimed.record(&hi).unwrap();
    untimed.synchronize().unwrap();
    let e = start.elapsed_ms(&untimed).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Driver {
                call: "cuEventElapsedTime",
                ..
            }
        ),
        "{e}"
    );
}
