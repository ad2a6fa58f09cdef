//! Small kernels on [`NamedBarrier`]s, the hand-offs the warp-specialised attention relies
//! on, for the tests (simulator and GPU) and for the simulator's reports of their misuse.

use gpukernel_device::named_barrier::NamedBarrier;
use gpukernel_device::prelude::*;
use gpukernel_device::shared::shared_array;
use gpukernel_device::{sync, thread};

/// Groups of 128 threads take turns round a ring of named barriers (group `i` waits at
/// barrier `1 + i` with the arrival of group `i − 1`, as the attention's consumers do): in
/// each of `rounds` rounds, each group in turn appends its number to a log in shared memory;
/// thread 0 copies the log (`rounds · groups` entries) to `log`. Launch one block of `128 ·
/// groups` threads, 2 to 4 groups, `rounds` at most 64; the log is `0, 1, .., groups − 1`
/// repeated when the turns hold.
#[kernel]
pub fn named_barrier_turns(rounds: u32, log: DisjointSlice<u32>) {
    let groups = thread::block_dim_x() / 128;
    assert!((2..=4).contains(&groups) && thread::block_dim_x() == 128 * groups && rounds <= 64);
    let entries = shared_array!(u32, 256);
    let next = shared_array!(u32, 1);
    let t = thread::thread_idx_x();
    let (g, lane0) = (t / 128, t.is_multiple_of(128));
    let mine = NamedBarrier::new(1 + g, 256);
    let after = NamedBarrier::new(1 + (g + 1) % groups, 256);
    if t == 0 {
        // SAFETY: one thread, before the block barrier that publishes it.
        unsafe { next.write(0, 0) };
    }
    sync::sync_threads();
    if g == groups - 1 {
        after.arrive();
    }
    for _ in 0..rounds {
        mine.sync();
        if lane0 {
            // SAFETY: one thread of the group whose turn it is: no one else touches the log
            // until this group arrives at the next barrier (which orders these writes
            // before the next group's reads).
            unsafe {
                let n = next.read(0);
                entries.write(n as usize, g);
                next.write(0, n + 1);
            }
        }
        after.arrive();
    }
    // The first group's barrier has the last group's last arrival left: take it.
    if g == 0 {
        mine.sync();
    }
    sync::sync_threads();
    if t == 0 {
        for i in 0..(rounds * groups) as usize {
            // SAFETY: after the block barrier no one writes the log; thread 0 alone writes
            // `log`, each element once.
            unsafe { log.write(i, entries.read(i)) };
        }
    }
}

/// Warp 0 writes `32 · round + lane` to a shared slot and arrives at barrier `id`; warps 1–3
/// wait there (count 128) and add what they read into `out` (one element per thread), for
/// `rounds` rounds; a block barrier between rounds keeps the writer from running ahead.
/// Launch one block of 128 threads; barrier numbers other than 1 to 15 trap.
#[kernel]
pub fn named_barrier_hand_off(id: u32, rounds: u32, mut out: DisjointSlice<u32>) {
    assert!(thread::block_dim_x() == 128);
    let slot = shared_array!(u32, 32);
    let ready = NamedBarrier::new(id, 128);
    let t = thread::thread_idx_x();
    let mut sum = 0u32;
    for round in 0..rounds {
        if t < 32 {
            // SAFETY: own slot; read by the other warps only after the barrier.
            unsafe { slot.write(t as usize, 32 * round + t) };
            ready.arrive();
        } else {
            ready.sync();
            // SAFETY: written before the writers' arrival, not rewritten before the block
            // barrier below.
            sum += unsafe { slot.read((t % 32) as usize) };
        }
        sync::sync_threads();
    }
    out.set(thread::index(), sum);
}

/// Every thread waits at barrier 1 with count `count`: a count that is no multiple of 32, or
/// above the block's threads, traps at its check.
#[kernel]
pub fn named_barrier_count(count: u32, mut out: DisjointSlice<u32>) {
    NamedBarrier::new(1, count).sync();
    out.set(thread::index(), 1);
}

/// Misuse: the first warp waits at barrier 1 with count 64, the others with count 96 (a
/// phase whose threads disagree on its count; launch 128 threads).
#[kernel]
pub fn named_barrier_mixed_counts(mut out: DisjointSlice<u32>) {
    let t = thread::thread_idx_x();
    NamedBarrier::new(1, if t < 32 { 64 } else { 96 }).sync();
    out.set(thread::index(), 1);
}

/// Misuse: the first warp waits at barrier 2 for 64 threads; no one else arrives.
#[kernel]
pub fn named_barrier_missing_arrival(mut out: DisjointSlice<u32>) {
    if thread::thread_idx_x() < 32 {
        NamedBarrier::new(2, 64).sync();
    }
    out.set(thread::index(), 1);
}

/// Misuse (safe): launch with 96 threads. Every lane of warp 0 and lanes 0–15 of warps 1 and 2
/// wait at barrier 3 for 64 threads; the other lanes of warps 1 and 2 go on and exit. The GPU
/// counts a warp's arrival as 32 threads once its lanes that have not exited all arrived, so
/// two warps complete the phase and the third waits alone in the next one, forever.
#[kernel]
pub fn named_barrier_partial_warps(mut out: DisjointSlice<u32>) {
    let t = thread::thread_idx_x();
    if t < 32 || t % 32 < 16 {
        NamedBarrier::new(3, 64).sync();
    }
    out.set(thread::index(), 1);
}

/// Correct on the GPU: launch with 64 threads. Lanes 16–31 of warp 0 exit at once; the others
/// meet at barrier 4 for 64 threads, which warp 0's remaining lanes complete for their warp.
#[kernel]
pub fn named_barrier_exited_lanes(mut out: DisjointSlice<u32>) {
    let t = thread::thread_idx_x();
    if (16..32).contains(&t) {
        return;
    }
    NamedBarrier::new(4, 64).sync();
    out.set(thread::index(), 1);
}

/// Misuse (safe): one warp (launch with 32 threads) split between two barriers: lanes 0–15
/// wait at named barrier 5 for 32 threads, lanes 16–31 at `sync_threads`. Each lane waits for
/// its warp's other live lanes at its own barrier: neither completes, on the GPU a hang.
#[kernel]
pub fn named_barrier_split_warp(mut out: DisjointSlice<u32>) {
    if thread::thread_idx_x() < 16 {
        NamedBarrier::new(5, 32).sync();
    } else {
        sync::sync_threads();
    }
    out.set(thread::index(), 1);
}
