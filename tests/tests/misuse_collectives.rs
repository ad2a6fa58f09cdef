//! Simulated collectives: NCCL's integer `ncclAvg` at rank counts that overflow the element
//! type (no panic, NCCL's result), and a failed rank ending the collective at once for the
//! others (a named error, not the simulator's 30 s patience per rank).

use std::time::{Duration, Instant};

use gpukernel_runtime::collective::{self, CollectiveType, Communicator, ReduceOp, UniqueId};
use gpukernel_runtime::{Context, Device, DeviceBuffer, Error};

/// Well under the simulator's patience (30 s unless `GPUKERNEL_SIM_PATIENCE_MS` says otherwise).
const AT_ONCE: Duration = Duration::from_secs(5);

/// `ranks` ranks of one communicator on one simulated context, all driven by this thread.
fn comms(ctx: &Context, ranks: usize) -> Vec<Communicator> {
    let id = UniqueId::new(ctx).unwrap();
    (0..ranks)
        .map(|r| Communicator::init_rank(ctx, &id, r, ranks).unwrap())
        .collect()
}

/// All-reduces `value(rank)` with `Avg` over `ranks` ranks (three elements each), in one group;
/// returns every rank's result.
fn avg<T: CollectiveType + std::fmt::Debug>(
    ranks: usize,
    value: impl Fn(usize) -> T,
) -> Vec<Vec<T>> {
    let ctx = Device::simulator().primary_context().unwrap();
    let comms = comms(&ctx, ranks);
    let stream = ctx.default_stream();
    let sends: Vec<DeviceBuffer<T>> = (0..ranks)
        .map(|r| ctx.htod_copy(&[value(r); 3]).unwrap())
        .collect();
    let mut recvs: Vec<DeviceBuffer<T>> = (0..ranks)
        .map(|_| ctx.htod_copy(&[value(0); 3]).unwrap())
        .collect();
    collective::group(|g| {
        for ((c, s), r) in comms.iter().zip(&sends).zip(recvs.iter_mut()) {
            g.all_reduce(c, &stream, s, r, ReduceOp::Avg)?;
        }
        Ok(())
    })
    .unwrap();
    recvs.iter().map(|r| r.to_host_vec().unwrap()).collect()
}

/// NCCL's `FuncSumPostDiv`, written out as NCCL does it: the sum wraps in the type's bits; a
/// signed sum's magnitude (as unsigned) is divided, then the sign put back.
fn nccl_avg(values: &[u64], bits: u32, signed: bool) -> u64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let sum = values.iter().fold(0u64, |a, v| a.wrapping_add(*v)) & mask;
    let n = values.len() as u64;
    let neg = signed && sum >> (bits - 1) == 1;
    let abs = if neg { sum.wrapping_neg() & mask } else { sum };
    let q = abs / n;
    if neg { q.wrapping_neg() & mask } else { q }
}

macro_rules! check_avg {
    ($t:ty, $ut:ty, $signed:expr, $ranks:expr, $value:expr) => {{
        let ranks: usize = $ranks;
        let value = $value;
        let got = avg::<$t>(ranks, value);
        let raw: Vec<u64> = (0..ranks).map(|r| value(r) as $ut as u64).collect();
        let want = nccl_avg(&raw, <$t>::BITS, $signed) as $ut as $t;
        for (r, g) in got.iter().enumerate() {
            assert_eq!(
                g,
                &[want; 3],
                "{} Avg over {ranks} ranks, rank {r}",
                stringify!($t)
            );
        }
        want
    }};
}

#[test]
fn integer_avg_is_ncclavg_at_rank_counts_that_overflow_the_type() {
    // The cases: 256 ranks of u8 (`256 as u8` is 0: a division by zero), and 128 ranks
    // of -1i8 (`128 as i8` is -128: the average came out as 1).
    assert_eq!(check_avg!(u8, u8, false, 256, |_| 1u8), 0);
    assert_eq!(check_avg!(u8, u8, false, 256, |_| 255u8), 0);
    assert_eq!(check_avg!(i8, u8, true, 128, |_| -1i8), -1);
    // 128 ranks of 1i8: the sum wraps to -128, whose average is -1 (as on NCCL).
    assert_eq!(check_avg!(i8, u8, true, 128, |_| 1i8), -1);
    // 255 ranks of 2u8: the sum wraps to 254, divided by 255.
    assert_eq!(check_avg!(u8, u8, false, 255, |_| 2u8), 0);
    assert_eq!(check_avg!(i8, u8, true, 300, |r| (r % 7) as i8 - 3), 0);
    check_avg!(u8, u8, false, 257, |r| r as u8);
    check_avg!(i8, u8, true, 129, |r| r as i8);
    // Wider types: sums that wrap, negative sums truncated toward zero.
    assert_eq!(
        check_avg!(i32, u32, true, 3, |_| i32::MAX),
        (i32::MAX as u32).wrapping_mul(3) as i32 / 3
    );
    assert_eq!(check_avg!(i32, u32, true, 4, |r| -(r as i32) - 1), -2);
    check_avg!(u32, u32, false, 5, |_| u32::MAX - 1);
    check_avg!(i64, u64, true, 3, |_| i64::MIN + 1);
    check_avg!(u64, u64, false, 7, |r| u64::MAX - r as u64);
    // i64::MIN over one rank stays i64::MIN (its magnitude does not fit an i64).
    assert_eq!(check_avg!(i64, u64, true, 1, |_| i64::MIN), i64::MIN);
}

#[test]
fn a_panic_inside_a_group_ends_it_at_once() {
    let ctx = Device::simulator().primary_context().unwrap();
    let comms = comms(&ctx, 4);
    let stream = ctx.default_stream();
    let send = ctx.htod_copy(&[1u32; 8]).unwrap();
    let mut recvs: Vec<DeviceBuffer<u32>> = (0..4).map(|_| ctx.alloc_zeros(8).unwrap()).collect();
    let t = Instant::now();
    let r: std::thread::Result<gpukernel_runtime::Result<()>> =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            collective::group(|g| {
                let mut it = recvs.iter_mut();
                for c in &comms[..2] {
                    g.all_reduce(c, &stream, &send, it.next().unwrap(), ReduceOp::Sum)?;
                }
                panic!("the program fails between its ranks' calls");
            })
        }));
    assert!(r.is_err());
    assert!(
        t.elapsed() < AT_ONCE,
        "the group's end waited {:?}",
        t.elapsed()
    );
}

#[test]
fn a_rank_whose_thread_panics_fails_the_others_at_once() {
    let ctx = Device::simulator().primary_context().unwrap();
    let mut comms = comms(&ctx, 3);
    let failing = comms.pop().unwrap();
    let t = Instant::now();
    let results: Vec<gpukernel_runtime::Result<()>> = std::thread::scope(|s| {
        let waiting: Vec<_> = comms
            .into_iter()
            .map(|c| {
                let ctx = ctx.clone();
                s.spawn(move || {
                    let mut v = ctx.htod_copy(&[1.0f32; 4]).unwrap();
                    c.all_reduce_in_place(&ctx.default_stream(), &mut v, ReduceOp::Sum)
                })
            })
            .collect();
        let failed = s.spawn(move || {
            let _rank = failing;
            std::thread::sleep(Duration::from_millis(100));
            panic!("rank 2 fails before its all-reduce");
        });
        assert!(failed.join().is_err());
        waiting.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(t.elapsed() < AT_ONCE, "the ranks waited {:?}", t.elapsed());
    for r in results {
        match r {
            Err(e @ Error::CollectiveRankFailed { rank: 2, .. }) => {
                assert!(e.to_string().contains("panicked"), "{e}");
            }
            other => panic!("expected rank 2's failure, got {other:?}"),
        }
    }
}

#[test]
fn a_rank_dropped_before_joining_fails_the_others_at_once() {
    let ctx = Device::simulator().primary_context().unwrap();
    let mut comms = comms(&ctx, 2);
    let gone = comms.pop().unwrap();
    let first = comms.pop().unwrap();
    let t = Instant::now();
    let r = std::thread::scope(|s| {
        let ctx = &ctx;
        let h = s.spawn(move || {
            let mut v = ctx.htod_copy(&[1i32; 4]).unwrap();
            first.all_reduce_in_place(&ctx.default_stream(), &mut v, ReduceOp::Max)
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(gone);
        h.join().unwrap()
    });
    assert!(t.elapsed() < AT_ONCE, "rank 0 waited {:?}", t.elapsed());
    match r {
        Err(e @ Error::CollectiveRankFailed { rank: 1, .. }) => {
            assert!(e.to_string().contains("dropped"), "{e}");
        }
        other => panic!("expected rank 1's failure, got {other:?}"),
    }
}
