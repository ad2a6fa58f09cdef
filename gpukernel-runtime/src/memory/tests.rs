//! Unit tests of buffers, views, pinned memory and copies on the simulator.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::Device;
use crate::stream::Stream;

fn sim() -> Context {
    Device::simulator().primary_context().unwrap()
}

#[test]
fn roundtrip_and_zeroed_alloc() {
    let ctx = sim();
    let src: Vec<u32> = (0..1000).collect();
    let b = ctx.htod_copy(&src).unwrap();
    assert_eq!(b.len(), 1000);
    assert_eq!(b.to_host_vec().unwrap(), src);
    assert_eq!(b.as_raw() % DEVICE_ALIGN as u64, 0);
    let z = ctx.alloc_zeros::<f64>(33).unwrap();
    assert_eq!(z.to_host_vec().unwrap(), vec![0.0; 33]);
    let empty = ctx.alloc_zeros::<f32>(0).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.to_host_vec().unwrap(), Vec::<f32>::new());
}

#[test]
fn lengths_are_checked() {
    let ctx = sim();
    let mut b = ctx.alloc_zeros::<u8>(4).unwrap();
    let e = b.copy_to_host(&mut [0u8; 3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "copy_to_host: length mismatch, destination has 3 elements, source has 4"
    );
    assert!(matches!(
        b.copy_from_host(&[1u8; 5]),
        Err(Error::LengthMismatch { .. })
    ));
    let other = ctx.alloc_zeros::<u8>(5).unwrap();
    assert!(matches!(
        b.copy_from_device(&other),
        Err(Error::LengthMismatch { .. })
    ));
    let e = DeviceBuffer::<u64>::alloc_zeros_checked(&ctx, usize::MAX / 4).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    fn alloc_zeros_checked(ctx: &Context, len: usize) -> Result<Self> {
        ctx.alloc_zeros(len)
    }
}

#[test]
fn views_slice_copy_and_memset() {
    let ctx = sim();
    let mut b = ctx.htod_copy(&[0u16, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    let v = b.slice(2..5).unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v.to_host_vec().unwrap(), [2, 3, 4]);
    assert_eq!(v.slice(1..).unwrap().to_host_vec().unwrap(), [3, 4]);
    assert_eq!(v.device_ptr().addr(), b.as_raw() + 4);
    let e = b.slice(3..9).unwrap_err();
    assert_eq!(
        e.to_string(),
        "DeviceBuffer::slice: range 3..9 is out of bounds for 8 elements"
    );
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = b.slice(5..2);
    assert!(reversed.is_err());
    {
        let mut m = b.slice_mut(..=1).unwrap();
        m.copy_from_host(&[10, 11]).unwrap();
        m.memset_d8(0xff).unwrap();
    }
    {
        let (mut lo, mut hi) = b.split_at_mut(4).unwrap();
        hi.copy_from_device(&lo.slice(..).unwrap()).unwrap();
        lo.memset_zeros().unwrap();
        assert!(hi.slice_mut(5..).is_err());
    }
    assert_eq!(b.to_host_vec().unwrap(), [0, 0, 0, 0, 0xffff, 0xffff, 2, 3]);
    assert_eq!(
        b.split_at_mut(9).unwrap_err().to_string(),
        "DeviceBuffer::split_at_mut: range 0..9 is out of bounds for 8 elements"
    );
    let mut v = b.slice_mut(2..).unwrap();
    assert_eq!(
        v.split_at_mut(7).unwrap_err().to_string(),
        "DeviceViewMut::split_at_mut: range 0..7 is out of bounds for 6 elements"
    );
}

#[test]
fn device_to_device_copies() {
    let ctx = sim();
    let a = ctx.htod_copy(&[1i32, 2, 3]).unwrap();
    let mut b = ctx.alloc_zeros::<i32>(3).unwrap();
    b.copy_from_device(&a).unwrap();
    let s = ctx.new_stream().unwrap();
    let mut c = s.alloc_zeros::<i32>(2).unwrap();
    s.memcpy_dtod_async(&mut c, &b.slice(1..).unwrap()).unwrap();
    let mut out = [0; 2];
    s.memcpy_dtoh(&mut out, &c).unwrap();
    assert_eq!(out, [2, 3]);
}

#[test]
fn pinned_buffers_and_async_copies() {
    let ctx = sim();
    let s = ctx.new_stream().unwrap();
    let src = ctx.pinned_from_slice(&[1.5f32, 2.5, 3.5]).unwrap();
    let mut d = s.alloc_zeros::<f32>(3).unwrap();
    s.memcpy_htod_async(&mut d, &src).unwrap();
    let mut back = ctx.alloc_pinned::<f32>(3).unwrap();
    s.memcpy_dtoh_async(&mut back, &d).unwrap();
    assert_eq!(back.as_slice().unwrap(), [1.5, 2.5, 3.5]);
    back.as_mut_slice().unwrap()[0] = 9.0;
    assert_eq!(back.as_slice().unwrap()[0], 9.0);
    let mut short = ctx.alloc_pinned::<f32>(2).unwrap();
    assert!(matches!(
        s.memcpy_dtoh_async(&mut short, &d),
        Err(Error::LengthMismatch { .. })
    ));
    s.memset_d8_async(&mut d, 0).unwrap();
    assert_eq!(d.to_host_vec().unwrap(), [0.0; 3]);
}

#[test]
fn foreign_memory_finalizer_runs_exactly_once() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let ctx = sim();
    let mut host = vec![5u32; 16].into_boxed_slice();
    let addr = host.as_mut_ptr() as u64;
    {
        // SAFETY: the simulator's device memory is host memory; `host` outlives the buffer
        // (it is moved into the finalizer) and is only accessed through it.
        let mut b = unsafe {
            DeviceBuffer::<u32>::from_raw_parts_with_finalizer(
                &ctx,
                DevicePtr::from_addr(addr),
                16,
                move || {
                    assert_eq!(host[0], 7);
                    drop(host);
                    RUNS.fetch_add(1, Ordering::SeqCst);
                },
            )
        }
        .unwrap();
        assert_eq!(b.to_host_vec().unwrap(), vec![5; 16]);
        b.slice_mut(0..1).unwrap().copy_from_host(&[7]).unwrap();
        assert_eq!(RUNS.load(Ordering::SeqCst), 0);
    }
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[test]
fn foreign_memory_owner_is_dropped_once_and_bad_pointers_are_errors() {
    struct Owner(Arc<AtomicUsize>, #[allow(dead_code)] Vec<u64>);
    impl Drop for Owner {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let ctx = sim();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut v = vec![1u64, 2, 3];
    let addr = v.as_mut_ptr() as u64;
    let owner = Owner(drops.clone(), v);
    // SAFETY: `owner` keeps the vector alive; host memory is device memory here.
    let b = unsafe {
        DeviceBuffer::<u64>::from_raw_parts_with_owner(&ctx, DevicePtr::from_addr(addr), 3, owner)
    }
    .unwrap();
    assert_eq!(b.to_host_vec().unwrap(), [1, 2, 3]);
    drop(b);
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    // SAFETY: rejected before use.
    let e = unsafe {
        DeviceBuffer::<u64>::from_raw_parts_with_finalizer(&ctx, DevicePtr::from_addr(12), 1, || {})
    }
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("not aligned for 8-byte-aligned elements"),
        "{e}"
    );
    // SAFETY: rejected before use.
    let e = unsafe {
        DeviceBuffer::<u64>::from_raw_parts_with_finalizer(&ctx, DevicePtr::null(), 1, || {})
    }
    .unwrap_err();
    assert!(e.to_string().contains("null"), "{e}");
}

#[test]
fn simulator_out_of_memory_is_an_error_not_an_abort() {
    let ctx = sim();
    // Fits the address-space check (≤ isize::MAX bytes) but no host can provide it.
    let huge = 1usize << 62;
    let e = ctx.alloc_zeros::<u8>(huge).unwrap_err();
    assert!(
        matches!(e, Error::OutOfMemory { operation: "alloc", bytes, .. } if bytes == huge),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("alloc: out of memory allocating {huge} bytes on the simulator")
    );
    // SAFETY: fails before anything is allocated.
    let e = unsafe { ctx.default_stream().alloc::<u32>(huge / 4) }.unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    let e = ctx.alloc_pinned::<u16>(huge / 2).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfMemory {
                operation: "alloc_pinned",
                ..
            }
        ),
        "{e}"
    );
    // Still usable afterwards.
    assert_eq!(
        ctx.alloc_zeros::<u8>(3).unwrap().to_host_vec().unwrap(),
        [0; 3]
    );
}

/// Empty and zero-sized-element buffers never have a null address: a kernel rebuilds
/// `&[T]` from (pointer, length), and `&[()]` may have a non-zero length.
fn empty_and_zero_sized_buffers_are_not_null(ctx: &Context) {
    let units = ctx.alloc_zeros::<()>(5).unwrap();
    assert_eq!(units.len(), 5);
    assert!(!units.device_ptr().is_null());
    assert_eq!(units.to_host_vec().unwrap(), [(); 5]);
    assert!(!units.slice(2..).unwrap().device_ptr().is_null());
    let units = ctx.htod_copy(&[(); 7]).unwrap();
    assert!(!units.device_ptr().is_null());
    let empty = ctx.alloc_zeros::<f64>(0).unwrap();
    assert!(!empty.device_ptr().is_null());
    assert_eq!(empty.as_raw() % align_of::<f64>() as u64, 0);
    assert_eq!(empty.to_host_vec().unwrap(), Vec::<f64>::new());
}

#[test]
fn empty_and_zero_sized_buffers_are_not_null_on_the_simulator() {
    empty_and_zero_sized_buffers_are_not_null(&sim());
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn empty_and_zero_sized_buffers_are_not_null_on_the_gpu() {
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    empty_and_zero_sized_buffers_are_not_null(&ctx);
}

#[test]
fn tracker_single_stream_is_a_no_op_and_streams_join() {
    let ctx = sim();
    let s1 = ctx.new_stream().unwrap();
    let s2 = ctx.new_stream().unwrap();
    let b = s1.alloc_zeros::<u8>(4).unwrap();
    assert!(b.stream().same_as(&s1));
    b.raw_parts().track("test", "b", &s2.enqueuing()).unwrap();
    assert!(b.stream().same_as(&s1));
}

#[test]
fn reading_on_another_stream_orders_once_then_is_free() {
    let ctx = sim();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let x = s1.alloc_zeros::<f32>(64).unwrap();
    assert_eq!(x.tracker.waits(), 0);
    // The first read on s2 waits for the write on s1 (the zeroing); later reads do not.
    for _ in 0..10 {
        x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap();
    }
    assert_eq!(x.tracker.waits(), 1);
    // Reads on a third stream wait for the writer only, never for the other readers.
    let s3 = ctx.new_stream().unwrap();
    for _ in 0..10 {
        x.raw_parts().track("test", "x", &s3.enqueuing()).unwrap();
    }
    assert_eq!(x.tracker.waits(), 2);
}

#[test]
fn a_write_waits_for_every_conflicting_use_once() {
    let ctx = sim();
    let (s1, s2, s3) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let mut x = s1.alloc_zeros::<u32>(64).unwrap();
    x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap(); // waits for s1's write
    assert_eq!(x.tracker.waits(), 1);
    // A whole-buffer write on s3 must follow s1's write and s2's read.
    x.raw_parts_mut()
        .track("test", "x", &s3.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 3);
    // Exclusive use forgot the others: reading on s3 again is free, on s1 waits for s3.
    x.raw_parts().track("test", "x", &s3.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 3);
    x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 4);
    assert!(x.stream().same_as(&s3));
}

/// The halves of `split_at_mut`, written on two streams, never wait for each other (so their
/// work overlaps); the whole buffer's next read waits for both.
fn disjoint_halves_on_two_streams_do_not_wait_for_each_other(ctx: &Context) {
    let home = ctx.new_stream().unwrap();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut x = home.alloc_zeros::<f32>(1024).unwrap();
    {
        let (mut lo, mut hi) = x.split_at_mut(512).unwrap();
        for _ in 0..5 {
            lo.raw_parts_mut()
                .track("test", "lo", &s1.enqueuing())
                .unwrap();
            hi.raw_parts_mut()
                .track("test", "hi", &s2.enqueuing())
                .unwrap();
        }
    }
    // Each half's stream waited once for the zeroing on `home`, never for the other half.
    assert_eq!(x.tracker.waits(), 2);
    // A read of the whole buffer waits for both halves.
    x.raw_parts().track("test", "x", &home.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 4);
    assert_eq!(x.to_host_vec().unwrap(), vec![0.0; 1024]);
}

#[test]
fn disjoint_halves_on_two_streams_overlap_on_the_simulator() {
    disjoint_halves_on_two_streams_do_not_wait_for_each_other(&sim());
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn disjoint_halves_on_two_streams_overlap_on_the_gpu() {
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    disjoint_halves_on_two_streams_do_not_wait_for_each_other(&ctx);
}

#[test]
#[ignore = "timing probe, run by hand"]
fn tracker_cost_probe() {
    let ctx = sim();
    let (w, s, o) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let x = w.alloc_zeros::<f32>(256).unwrap();
    let mut y = w.alloc_zeros::<f32>(256).unwrap();
    x.raw_parts().track("t", "x", &s.enqueuing()).unwrap();
    x.raw_parts().track("t", "x", &o.enqueuing()).unwrap();
    y.raw_parts_mut().track("t", "y", &s.enqueuing()).unwrap();
    let n = 2_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        x.raw_parts().track("t", "x", &s.enqueuing()).unwrap();
    }
    let read = t.elapsed().as_nanos() as f64 / n as f64;
    let t = std::time::Instant::now();
    for _ in 0..n {
        y.raw_parts_mut().track("t", "y", &s.enqueuing()).unwrap();
    }
    let excl = t.elapsed().as_nanos() as f64 / n as f64;
    println!("read (3 streams): {read:.1} ns, exclusive alone: {excl:.1} ns");
}

#[test]
fn the_same_stream_again_waits_only_for_what_is_new() {
    let ctx = sim();
    let (s1, s2, s3) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let mut x = s1.alloc_zeros::<f32>(1024).unwrap();
    x.raw_parts().track("test", "x", &s3.enqueuing()).unwrap(); // waits for the zeroing on s1
    assert_eq!(x.tracker.waits(), 1);
    {
        let (mut lo, _) = x.split_at_mut(512).unwrap();
        // Writes on s2, repeated: the first waits for s1's zeroing and s3's read, the others
        // follow s2's own work.
        for _ in 0..5 {
            lo.raw_parts_mut()
                .track("test", "lo", &s2.enqueuing())
                .unwrap();
        }
        assert_eq!(x.tracker.waits(), 3);
    }
    // Reads on s2 of the bytes it wrote: nothing new to wait for; of the whole buffer (more
    // bytes): nothing new either (s3 only read).
    let lo = x.slice(..512).unwrap();
    lo.raw_parts().track("test", "lo", &s2.enqueuing()).unwrap();
    x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 3);
    // s3 reads again: it must now wait for s2's writes, however often s2 used the buffer.
    x.raw_parts().track("test", "x", &s3.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 4);
    // s2 writes again after s3's read: a new conflict, waited for.
    let (mut lo, _) = x.split_at_mut(512).unwrap();
    lo.raw_parts_mut()
        .track("test", "lo", &s2.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 5);
}

// --- the lock-free grant: what it must still order -------------------------------------------

/// Reads on `s1` that took the lock-free path (after its first, ordered one) are still waited
/// for by a later write on another stream, however many there were.
#[test]
fn uses_without_the_lock_are_waited_for_by_a_later_writer() {
    let ctx = sim();
    let (s0, s1, s2) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let mut x = s0.alloc_zeros::<f32>(64).unwrap();
    // s2 reads first (waits for the zeroing), then s1 reads 10 times: one wait, nine free.
    x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap();
    for _ in 0..10 {
        x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    }
    assert_eq!(x.tracker.waits(), 2);
    // A write on s2 must follow s1's reads (the free ones included) and s0's zeroing, which
    // s2 already follows: one new wait.
    x.raw_parts_mut()
        .track("test", "x", &s2.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 3);
}

/// A grant is for its stream only: the same read on another stream is ordered.
#[test]
fn a_grant_covers_only_its_own_stream() {
    let ctx = sim();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let x = s1.alloc_zeros::<u32>(64).unwrap();
    for _ in 0..3 {
        x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    }
    assert_eq!(x.tracker.waits(), 0);
    x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 1);
}

/// A grant for reads does not cover a write by its stream, nor a grant for some bytes more
/// bytes: both are ordered after the other streams' uses they conflict with.
#[test]
fn a_grant_covers_no_stronger_access_and_no_more_bytes() {
    let ctx = sim();
    let (s0, s1, s2) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let mut x = s0.alloc_zeros::<f32>(1024).unwrap();
    {
        let (mut lo, hi) = x.split_at_mut(512).unwrap();
        // s1 writes the low half (waits for the zeroing), s2 reads the high half (waits too).
        lo.raw_parts_mut()
            .track("test", "lo", &s1.enqueuing())
            .unwrap();
        hi.raw_parts().track("test", "hi", &s2.enqueuing()).unwrap();
        assert_eq!(x_waits(&lo), 2);
        // s2 again on the high half: granted.
        hi.raw_parts().track("test", "hi", &s2.enqueuing()).unwrap();
        assert_eq!(x_waits(&lo), 2);
    }
    // s2 reads the whole buffer: more bytes than granted, and s1 wrote the low half.
    x.raw_parts().track("test", "x", &s2.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 3);
    // s2 writes the whole buffer: a stronger access than granted; s1 is followed already
    // (its write was waited for), s0 too: nothing new to wait for, but not skipped either.
    let (mut lo, _) = x.split_at_mut(512).unwrap();
    lo.raw_parts_mut()
        .track("test", "lo", &s2.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 3);
    // s1 now reads the low half: it must wait for s2's write.
    x.slice(..512)
        .unwrap()
        .raw_parts()
        .track("test", "x", &s1.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 4);
}

fn x_waits(v: &DeviceViewMut<'_, f32>) -> u64 {
    v.raw_parts().tracker.waits()
}

/// Freeing after lock-free uses on a stream other than the buffer's home: the free's stream
/// is ordered after them.
#[test]
fn the_free_waits_for_uses_without_the_lock() {
    let ctx = sim();
    let (home, s1) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut x = home.alloc_zeros::<f32>(64).unwrap();
    for _ in 0..5 {
        x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    }
    assert_eq!(x.tracker.waits(), 1);
    let free_on = x.tracker.join_for_drop().unwrap();
    assert!(free_on.same_as(&home));
    assert_eq!(x.tracker.waits(), 2);
}

/// Exclusive use at home, alone on the buffer, is granted; by another stream it is not, and
/// it moves the home there.
#[test]
fn exclusive_use_is_granted_at_home_only() {
    let ctx = sim();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut x = s1.alloc_zeros::<u32>(16).unwrap();
    for _ in 0..3 {
        x.raw_parts_mut()
            .track("test", "x", &s1.enqueuing())
            .unwrap();
    }
    assert_eq!(x.tracker.waits(), 0);
    x.raw_parts_mut()
        .track("test", "x", &s2.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 1);
    assert!(x.stream().same_as(&s2));
    // s1 again: waits for s2's exclusive use.
    x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 2);
}

/// Readers on several threads and streams at once, most of them lock-free, then a writer:
/// it waits once for every reading stream.
#[test]
fn concurrent_readers_then_a_writer() {
    let ctx = sim();
    let home = ctx.new_stream().unwrap();
    let streams: Vec<Stream> = (0..4).map(|_| ctx.new_stream().unwrap()).collect();
    let mut x = home.alloc_zeros::<f32>(256).unwrap();
    std::thread::scope(|scope| {
        for s in &streams {
            let x = &x;
            scope.spawn(move || {
                for _ in 0..2000 {
                    x.raw_parts().track("test", "x", &s.enqueuing()).unwrap();
                }
            });
        }
    });
    // Each reading stream waited for the zeroing once (its first use), never for the others.
    assert_eq!(x.tracker.waits(), 4);
    x.raw_parts_mut()
        .track("test", "x", &home.enqueuing())
        .unwrap();
    assert_eq!(x.tracker.waits(), 8);
}

/// A grant for the low half does not cover a read reaching into the high half, which another
/// stream wrote.
#[test]
fn a_grant_for_the_low_half_does_not_cover_the_high_half() {
    let ctx = sim();
    let (home, s1, s2) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let mut x = home.alloc_zeros::<f32>(1024).unwrap();
    {
        let (mut lo, mut hi) = x.split_at_mut(512).unwrap();
        hi.raw_parts_mut()
            .track("test", "hi", &s2.enqueuing())
            .unwrap();
        lo.raw_parts_mut()
            .track("test", "lo", &s1.enqueuing())
            .unwrap();
        lo.raw_parts_mut()
            .track("test", "lo", &s1.enqueuing())
            .unwrap();
        assert_eq!(x_waits(&lo), 2);
    }
    x.raw_parts().track("test", "x", &s1.enqueuing()).unwrap();
    assert_eq!(x.tracker.waits(), 3);
}
