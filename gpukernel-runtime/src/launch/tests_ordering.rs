//! Stream ordering with several threads: a launch's memory uses are ordered before its work
//! is enqueued, and another thread may order a stream after that stream in between (see
//! `memory/tracker.rs`, "Work in flight"). A test hook pauses a launch there.

use std::cell::RefCell;
use std::sync::mpsc;

use super::tests::{saxpy, sim};
use super::*;
use crate::DeviceSlice;

thread_local! {
    /// Run by this thread's typed launches after their arguments are ordered, before the
    /// backend has the work.
    static BEFORE_ENQUEUE: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// The hook's call site in `launch_unchecked`.
pub(super) fn before_enqueue() {
    BEFORE_ENQUEUE.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f();
        }
    });
}

/// Makes this thread's next typed launches say when they are between their ordering and
/// their enqueue, and wait there to be let go: returns the two ends for the other thread.
fn pause_before_enqueue() -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    BEFORE_ENQUEUE.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            paused_tx.send(()).unwrap();
            resume_rx.recv().unwrap();
        }));
    });
    (paused_rx, resume_tx)
}

/// Thread A writes the low half of `x` on `s1` and is paused before its enqueue; meanwhile the
/// main thread reads the high half on `s2`, which orders `s2` after `s1` (the zeroing there).
/// That wait was recorded before A's write existed, so it does not cover it: a later read of
/// the low half on `s2` must wait for `s1` again. (Before, `s2` was marked as having seen
/// every use on `s1` recorded so far, A's write included, and the read ran ahead of it.)
fn a_write_in_flight_on_another_thread_is_waited_for_later(write_under_the_lock: bool) {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let (s1, s2, s3) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let ones = s1.htod_copy(&[1.0f32; 64]).unwrap();
    let mut x = s1.alloc_zeros::<f32>(128).unwrap();
    let mut out = s2.alloc_zeros::<f32>(64).unwrap();
    let cfg = LaunchConfig::for_elements(64).unwrap();
    if write_under_the_lock {
        // Another stream's read withdraws `s1`'s grant: A's write takes the tracker's lock
        // and is recorded with a clock of its own (else it passes the grant, unrecorded).
        let mut other = s3.alloc_zeros::<f32>(64).unwrap();
        s3.launch(&k, cfg, (1.0f32, &x.slice(64..).unwrap(), &mut other))
            .unwrap();
        s3.synchronize().unwrap();
    }
    {
        let (lo, hi) = x.split_at_mut(64).unwrap();
        std::thread::scope(|scope| {
            let (paused, resume) =
                std::sync::mpsc::channel::<(mpsc::Receiver<()>, mpsc::Sender<()>)>();
            let (k, ones) = (&k, &ones);
            let (s1, s2) = (&s1, &s2);
            let a = scope.spawn(move || {
                paused.send(pause_before_enqueue()).unwrap();
                s1.launch(k, cfg, (1.0f32, ones, lo)).unwrap();
            });
            let (paused, resume_a) = resume.recv().unwrap();
            paused.recv().unwrap(); // A's write is ordered, not enqueued
            s2.launch(k, cfg, (1.0f32, &hi, &mut out)).unwrap();
            resume_a.send(()).unwrap();
            a.join().unwrap();
        });
    }
    let before = x.raw_parts().tracker.waits();
    s2.launch(&k, cfg, (1.0f32, x.slice(..64).unwrap(), &mut out))
        .unwrap();
    assert_eq!(
        x.raw_parts().tracker.waits(),
        before + 1,
        "the read of the low half on s2 must wait for the write enqueued on s1 after s2's last wait"
    );
    // Then nothing is in flight: the next read of it is free.
    s2.launch(&k, cfg, (1.0f32, x.slice(..64).unwrap(), &mut out))
        .unwrap();
    assert_eq!(x.raw_parts().tracker.waits(), before + 1);
    assert_eq!(x.to_host_vec().unwrap()[..64], [1.0f32; 64]);
}

#[test]
fn a_write_in_flight_under_the_grant_is_waited_for_later() {
    a_write_in_flight_on_another_thread_is_waited_for_later(false);
}

#[test]
fn a_write_in_flight_under_the_lock_is_waited_for_later() {
    a_write_in_flight_on_another_thread_is_waited_for_later(true);
}

/// An ordering step waits briefly for another thread's enqueue on the stream it orders after
/// (`Stream::settle_enqueuing`): it sees the moment the guard drops, and gives up after its
/// limit while one is held.
#[test]
fn settling_waits_for_the_enqueue_in_flight_and_gives_up_after_its_limit() {
    use std::time::Duration;
    let (ctx, _module) = sim();
    let s = ctx.new_stream().unwrap();
    assert!(s.settle_enqueuing(Duration::ZERO));
    let held = s.enqueuing();
    assert!(s.enqueuing_now());
    assert!(!s.settle_enqueuing(Duration::from_millis(1)));
    drop(held);
    assert!(!s.enqueuing_now());
    let s2 = &s;
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let held = s2.enqueuing();
            started_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // Most often still held when the settling below starts.
            std::thread::sleep(Duration::from_millis(5));
            drop(held);
        });
        started_rx.recv().unwrap();
        assert!(s.enqueuing_now());
        assert!(!s.settle_enqueuing(Duration::from_millis(1)));
        go_tx.send(()).unwrap();
        assert!(s.settle_enqueuing(Duration::from_secs(60)));
    });
}
