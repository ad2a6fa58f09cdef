//! Kernels written by hand as `SimEntry` functions (what `#[kernel]` generates), run on the
//! simulator.

use core::ffi::c_void;
use std::time::Instant;

use gpukernel_device::shared::{dynamic_shared, shared_array};
use gpukernel_device::thread::{self, lane_id};
use gpukernel_device::warp::{self, FULL_MASK};
use gpukernel_device::{atomic, sync};

use super::{SimError, SimLaunch, launch};

/// Reads parameter `i` of the ABI parameter array.
///
/// # Safety
/// Parameter `i` must exist and hold a `T`.
unsafe fn arg<T: Copy>(params: *const *mut c_void, i: usize) -> T {
    // SAFETY: forwarded.
    unsafe { (*params.add(i)).cast::<T>().read() }
}

/// Runs `entry` with the given configuration; `args` are the values of the ABI parameters,
/// each as a `u64` (pointers, lengths) or `f32` bits.
fn run(
    kernel: &'static str,
    entry: gpukernel_device::SimEntry,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared_bytes: u32,
    args: &mut [u64],
) -> Result<(), SimError> {
    let params: Vec<*mut c_void> = args.iter_mut().map(|a| (a as *mut u64).cast()).collect();
    launch(&SimLaunch {
        kernel,
        entry,
        grid,
        block,
        dynamic_shared_bytes,
        params: &params,
        cluster: [1, 1, 1],
        cooperative: false,
        explicit_cluster: false,
    })
}

fn ptr_arg<T>(v: &mut [T]) -> u64 {
    v.as_mut_ptr() as u64
}

// -- 3D indices --------------------------------------------------------------------------

unsafe fn indices_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (out pointer, len).
    let (out, len) = unsafe { (arg::<*mut [u32; 8]>(p, 0), arg::<usize>(p, 1)) };
    // The linear index over the whole 3D launch (`thread::index()` is the 1D form).
    let i = thread::linear_block_idx() as usize * thread::threads_per_block() as usize
        + thread::linear_thread_idx() as usize;
    assert!(i < len);
    let t = thread::thread_idx();
    let b = thread::block_idx();
    let record = [t.x, t.y, t.z, b.x, b.y, b.z, thread::warp_id(), lane_id()];
    // SAFETY: `i` is unique to this thread and in bounds.
    unsafe { out.add(i).write(record) };
}

#[test]
fn indices_in_three_dimensions() {
    let (grid, block) = ([2u32, 3, 2], [4u32, 2, 5]);
    let per_block = 40usize;
    let n = 12 * per_block;
    let mut out = vec![[u32::MAX; 8]; n];
    let mut args = [ptr_arg(&mut out), n as u64];
    run("indices", indices_entry, grid, block, 0, &mut args).unwrap();
    for (i, r) in out.iter().enumerate() {
        let (b, t) = (i / per_block, i % per_block);
        let expect = [
            (t % 4) as u32,
            (t / 4 % 2) as u32,
            (t / 8) as u32,
            (b % 2) as u32,
            (b / 2 % 3) as u32,
            (b / 6) as u32,
            (t / 32) as u32,
            (t % 32) as u32,
        ];
        assert_eq!(*r, expect, "linear index {i}");
    }
}

// -- shared memory and barriers -------------------------------------------------------------

const RED_BLOCK: usize = 256;

unsafe fn block_sum_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (input ptr, len, out ptr, len).
    let (x, n, out) = unsafe {
        (
            arg::<*const f32>(p, 0),
            arg::<usize>(p, 1),
            arg::<*mut f32>(p, 2),
        )
    };
    let tile = shared_array!(f32, RED_BLOCK);
    let t = thread::thread_idx_x() as usize;
    let i = thread::global_index_x();
    let v = if i < n {
        // SAFETY: in bounds (i < n).
        unsafe { x.add(i).read() }
    } else {
        0.0
    };
    // SAFETY: each thread writes its own slot, then the barrier separates writes and reads.
    unsafe { tile.write(t, v) };
    let mut stride = RED_BLOCK / 2;
    while stride > 0 {
        sync::sync_threads();
        if t < stride {
            // SAFETY: slots t and t + stride are only touched by thread t in this round.
            unsafe { tile.write(t, tile.read(t) + tile.read(t + stride)) };
        }
        stride /= 2;
    }
    if t == 0 {
        // SAFETY: one writer per block slot; slot 0 was last written by thread 0.
        unsafe { out.add(thread::block_idx_x() as usize).write(tile.read(0)) };
    }
}

#[test]
fn shared_memory_reduction_with_barriers() {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let blocks = n.div_ceil(RED_BLOCK);
    let mut out = vec![f32::NAN; blocks];
    let mut xs = x.clone();
    let mut args = [ptr_arg(&mut xs), n as u64, ptr_arg(&mut out), blocks as u64];
    run(
        "block_sum",
        block_sum_entry,
        [blocks as u32, 1, 1],
        [RED_BLOCK as u32, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    for (b, got) in out.iter().enumerate() {
        let expect: f32 = x[b * RED_BLOCK..((b + 1) * RED_BLOCK).min(n)].iter().sum();
        assert_eq!(*got, expect, "block {b}");
    }
}

unsafe fn reverse_dynamic_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (data ptr, len).
    let data = unsafe { arg::<*mut u32>(p, 0) };
    let buf = dynamic_shared::<u32>();
    let t = thread::thread_idx_x() as usize;
    let n = thread::block_dim_x() as usize;
    assert_eq!(buf.len(), n);
    let base = thread::block_idx_x() as usize * n;
    // SAFETY: one element per thread; the barrier separates the write and the read.
    unsafe {
        // Shared memory starts zeroed in every block of the simulator.
        assert_eq!(buf.read(t), 0);
        buf.write(t, data.add(base + t).read());
        sync::sync_threads();
        data.add(base + t).write(buf.read(n - 1 - t));
    }
}

#[test]
fn dynamic_shared_memory_is_per_block() {
    let (blocks, threads) = (16usize, 96usize);
    let mut data: Vec<u32> = (0..(blocks * threads) as u32).collect();
    let mut args = [ptr_arg(&mut data), data.len() as u64];
    run(
        "reverse",
        reverse_dynamic_entry,
        [blocks as u32, 1, 1],
        [threads as u32, 1, 1],
        (threads * 4) as u32,
        &mut args,
    )
    .unwrap();
    for b in 0..blocks {
        for t in 0..threads {
            assert_eq!(
                data[b * threads + t] as usize,
                b * threads + threads - 1 - t
            );
        }
    }
}

unsafe fn barrier_votes_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (out ptr).
    let out = unsafe { arg::<*mut u32>(p, 0) };
    let t = thread::linear_thread_idx();
    let count = sync::sync_threads_count(t.is_multiple_of(3));
    let all = sync::sync_threads_and(t < 1000);
    let none = sync::sync_threads_or(t > 1000);
    let any = sync::sync_threads_or(t == 5);
    if t == 0 {
        // SAFETY: one writer per block.
        unsafe {
            let o = out.add(thread::linear_block_idx() as usize * 4);
            o.write(count);
            o.add(1).write(all as u32);
            o.add(2).write(none as u32);
            o.add(3).write(any as u32);
        }
    }
}

#[test]
fn barrier_reductions() {
    let mut out = vec![u32::MAX; 8];
    let mut args = [ptr_arg(&mut out)];
    run(
        "votes",
        barrier_votes_entry,
        [2, 1, 1],
        [10, 10, 1],
        0,
        &mut args,
    )
    .unwrap();
    assert_eq!(out, [34, 1, 0, 1, 34, 1, 0, 1]);
}

// -- atomics -----------------------------------------------------------------------------

unsafe fn atomics_entry(p: *const *mut c_void) {
    // SAFETY: the test passes pointers to a u32 counter, an f32 sum, an i64 max, a u64 xor.
    unsafe {
        let (count, sum, max, xor) = (
            arg::<*mut u32>(p, 0),
            arg::<*mut f32>(p, 1),
            arg::<*mut i64>(p, 2),
            arg::<*mut u64>(p, 3),
        );
        let i = thread::index().get();
        atomic::add(count, 1u32);
        atomic::add(sum, 0.5f32);
        atomic::max(max, i as i64);
        atomic::xor(xor, 1u64 << (i % 64));
        // A CAS loop: increments once more per thread.
        let mut cur = *count.cast_const();
        loop {
            let seen = atomic::compare_exchange(count, cur, cur + 1);
            if seen == cur {
                break;
            }
            cur = seen;
        }
    }
}

#[test]
fn atomics_across_blocks() {
    let (blocks, threads) = (64u32, 128u32);
    let (mut count, mut sum, mut max, mut xor) = (0u32, 0.0f32, -1i64, 0u64);
    let mut args = [
        &raw mut count as u64,
        &raw mut sum as u64,
        &raw mut max as u64,
        &raw mut xor as u64,
    ];
    run(
        "atomics",
        atomics_entry,
        [blocks, 1, 1],
        [threads, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    let n = blocks * threads;
    assert_eq!(count, 2 * n);
    assert_eq!(sum, n as f32 * 0.5);
    assert_eq!(max, n as i64 - 1);
    // n is a multiple of 128, so every bit was flipped an even number of times.
    assert_eq!(xor, 0);
}

// -- warp operations ---------------------------------------------------------------------

/// Per thread: [down-reduction total, ballot, xor-1 neighbour, up-1 neighbour, broadcast of
/// lane 3, all(lane < 40), any(lane == 7), 64-bit shuffle check].
unsafe fn warp_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (out ptr).
    let out = unsafe { arg::<*mut [u32; 8]>(p, 0) };
    let t = thread::linear_thread_idx();
    let lane = lane_id();
    let mask = warp::active_mask();
    let lanes = mask.count_ones();
    let mut v = t;
    let mut offset = 16;
    while offset > 0 {
        // In a partial warp a source past the last lane is undefined on the GPU: skip it.
        let other = warp::shfl_down_sync(mask, v, offset);
        if lane + offset < lanes {
            v += other;
        }
        offset /= 2;
    }
    let total = warp::shfl_sync(mask, v, 0);
    let ballot = warp::ballot_sync(mask, lane % 2 == 1);
    let x = warp::shfl_xor_sync(mask, t as i32, 1) as u32;
    let up = warp::shfl_up_sync(mask, t as f32, 1) as u32;
    let b3 = warp::shfl_sync(mask, t, 3);
    let all = warp::all_sync(mask, lane < 40) as u32;
    let any = warp::any_sync(mask, lane == 7) as u32;
    let wide = warp::shfl_down_sync(mask, (t as u64) << 40 | 7, 1);
    let wide_ok = (wide == ((t as u64 + 1) << 40 | 7)) as u32;
    sync::sync_warp(mask);
    // SAFETY: one element per thread.
    unsafe {
        out.add(t as usize)
            .write([total, ballot, x, up, b3, all, any, wide_ok])
    };
}

#[test]
fn warp_ops_full_and_partial_warps() {
    let threads = 48usize; // warp 0 full, warp 1 has 16 lanes
    let mut out = vec![[u32::MAX; 8]; threads];
    let mut args = [ptr_arg(&mut out)];
    run(
        "warp",
        warp_entry,
        [1, 1, 1],
        [threads as u32, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    for (t, got) in out.iter().enumerate() {
        let (warp, lane) = (t / 32, t % 32);
        let lanes = (threads - warp * 32).min(32);
        let base = warp * 32;
        let total: usize = (base..base + lanes).sum();
        let ballot = (0..lanes)
            .filter(|l| l % 2 == 1)
            .fold(0u32, |b, l| b | 1 << l);
        let x = if (lane ^ 1) < lanes { t ^ 1 } else { t };
        let up = if lane >= 1 { t - 1 } else { t };
        let wide_ok = (lane + 1 < lanes) as u32;
        let expect = [
            total as u32,
            ballot,
            x as u32,
            up as u32,
            (base + 3) as u32,
            1,
            1,
            wide_ok,
        ];
        assert_eq!(*got, expect, "thread {t}");
    }
}

unsafe fn half_warp_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (out ptr).
    let out = unsafe { arg::<*mut u32>(p, 0) };
    let lane = lane_id();
    // Two independent half-warp groups, each with its own mask.
    let mask = if lane < 16 { 0x0000_ffff } else { 0xffff_0000 };
    let v = warp::shfl_xor_sync(mask, lane, 8);
    let b = warp::ballot_sync(mask, true);
    // SAFETY: one element per thread.
    unsafe { out.add(lane as usize).write(v | b << 8) };
}

#[test]
fn warp_ops_with_partial_masks() {
    let mut out = vec![0u32; 32];
    let mut args = [ptr_arg(&mut out)];
    run(
        "half_warp",
        half_warp_entry,
        [1, 1, 1],
        [32, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    for (lane, v) in out.iter().enumerate() {
        let mask: u32 = if lane < 16 { 0xffff } else { 0xffff_0000 };
        assert_eq!(*v, (lane as u32 ^ 8) | mask << 8, "lane {lane}");
    }
}

// -- failures ----------------------------------------------------------------------------

unsafe fn oob_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (ptr, len) of a readable slice.
    let data = unsafe { std::slice::from_raw_parts(arg::<*const f32>(p, 0), arg::<usize>(p, 1)) };
    let i = thread::global_index_x();
    let v = data[i];
    std::hint::black_box(v);
}

#[test]
fn out_of_bounds_index_is_an_error_naming_the_thread() {
    let mut data = vec![0.0f32; 100];
    let mut args = [ptr_arg(&mut data), 100];
    let e = run("oob", oob_entry, [2, 1, 1], [64, 1, 1], 0, &mut args).unwrap_err();
    assert_eq!(e.kernel, "oob");
    assert_eq!(e.block, [1, 0, 0]);
    assert_eq!(e.thread, [36, 0, 0]);
    assert!(e.message.contains("index out of bounds"), "{e}");
    assert!(
        e.message.contains("tests.rs"),
        "the location is reported: {e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("kernel `oob`") && text.contains("thread (36, 0, 0)"),
        "{text}"
    );
}

unsafe fn divergent_barrier_entry(_: *const *mut c_void) {
    if thread::thread_idx_x() < 16 {
        return;
    }
    sync::sync_threads();
}

#[test]
fn barrier_divergence_is_an_error_not_a_hang() {
    let e = run(
        "diverge",
        divergent_barrier_entry,
        [4, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("barrier divergence"), "{e}");
    assert_eq!(e.thread, [16, 0, 0]);
}

unsafe fn panic_while_others_wait_entry(_: *const *mut c_void) {
    if thread::thread_idx_x() == 40 {
        panic!("thread 40 gives up");
    }
    sync::sync_threads();
    sync::sync_threads();
}

#[test]
fn a_panic_while_others_wait_at_a_barrier_ends_the_launch() {
    let e = run(
        "panic_wait",
        panic_while_others_wait_entry,
        [3, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("thread 40 gives up"), "{e}");
    assert_eq!(e.thread, [40, 0, 0]);
    // The simulator is still usable afterwards.
    run(
        "panic_wait_ok",
        divergent_barrier_entry_ok,
        [3, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap();
}

unsafe fn divergent_barrier_entry_ok(_: *const *mut c_void) {
    sync::sync_threads();
}

unsafe fn divergent_warp_entry(_: *const *mut c_void) {
    if lane_id() == 0 {
        let _ = warp::shfl_sync(FULL_MASK, 1u32, 5);
    }
}

#[test]
fn warp_divergence_is_an_error_not_a_hang() {
    let e = run(
        "warp_diverge",
        divergent_warp_entry,
        [1, 1, 1],
        [32, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("warp divergence"), "{e}");
    assert!(e.message.contains("has finished"), "{e}");
}

// The identical branches are the point: two distinct barrier calls.
#[allow(clippy::if_same_then_else)]
unsafe fn barriers_from_divergent_code_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (out pointer, len).
    let out = unsafe { arg::<*mut u32>(p, 0) };
    let tile = shared_array!(u32, 64);
    let t = thread::thread_idx_x() as usize;
    // SAFETY: each thread writes its own slot before the barrier.
    unsafe { tile.write(t, t as u32 * 3) };
    // Even and odd threads reach different `sync_threads` calls: defined for the
    // non-aligned barrier, which the safe `sync_threads` is.
    if t.is_multiple_of(2) {
        sync::sync_threads();
    } else {
        sync::sync_threads();
    }
    // SAFETY: every slot was written before the barrier; `out` has a slot per thread.
    unsafe { out.add(t).write(tile.read(63 - t)) };
}

#[test]
fn sync_threads_from_divergent_code_is_one_barrier() {
    let mut out = vec![0u32; 64];
    let mut args = [ptr_arg(&mut out), 64];
    run(
        "divergent_sync",
        barriers_from_divergent_code_entry,
        [1, 1, 1],
        [64, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    let want: Vec<u32> = (0..64).map(|t| (63 - t) * 3).collect();
    assert_eq!(out, want);
}

// As above: two distinct calls.
#[allow(clippy::if_same_then_else)]
unsafe fn aligned_barrier_from_divergent_code_entry(_: *const *mut c_void) {
    // SAFETY: deliberately violated: the simulator must report it.
    unsafe {
        if thread::thread_idx_x() < 32 {
            sync::sync_threads_aligned();
        } else {
            sync::sync_threads_aligned();
        }
    }
}

unsafe fn aligned_barrier_uniform_entry(_: *const *mut c_void) {
    for _ in 0..3 {
        // SAFETY: every thread calls it, from this one place, three times.
        unsafe { sync::sync_threads_aligned() };
    }
}

#[test]
fn aligned_barriers_must_be_one_call_site() {
    let e = run(
        "aligned_diverge",
        aligned_barrier_from_divergent_code_entry,
        [1, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("aligned barrier divergence"), "{e}");
    assert!(
        e.message.contains("sim/tests.rs"),
        "names the call sites: {e}"
    );
    assert_eq!(e.thread, [32, 0, 0]);
    run(
        "aligned_ok",
        aligned_barrier_uniform_entry,
        [2, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap();
}

unsafe fn mixed_barrier_kinds_entry(_: *const *mut c_void) {
    if thread::thread_idx_x() < 40 {
        sync::sync_threads();
    } else {
        let _ = sync::sync_threads_count(true);
    }
}

#[test]
fn mixing_a_barrier_with_its_reductions_is_an_error() {
    let e = run(
        "mixed_kinds",
        mixed_barrier_kinds_entry,
        [1, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("barrier divergence"), "{e}");
    assert!(
        e.message.contains("sync_threads_count") && e.message.contains("waits at sync_threads"),
        "{e}"
    );
    assert_eq!(e.thread, [40, 0, 0]);
}

unsafe fn lane_outside_mask_entry(p: *const *mut c_void) {
    // SAFETY: the test passes which operation to misuse.
    let which = unsafe { arg::<u64>(p, 0) };
    let lane = lane_id();
    // Lane 7 leaves itself out of the mask; the other lanes name the full warp.
    let mask = if lane == 7 { !(1u32 << 7) } else { FULL_MASK };
    match which {
        0 => drop(warp::shfl_sync(mask, lane, 0)),
        1 => drop(warp::ballot_sync(mask, true)),
        2 => sync::sync_warp(mask),
        // SAFETY: deliberately violated: the simulator must still report it.
        _ => drop(unsafe { warp::shfl_xor_sync_unchecked(mask, lane, 1) }),
    }
}

#[test]
fn a_warp_mask_without_the_calling_lane_is_an_error() {
    for (which, op) in [
        (0u64, "warp::shfl_sync"),
        (1, "warp::ballot_sync"),
        (2, "sync::sync_warp"),
        (3, "warp::shfl_sync"),
    ] {
        let e = run(
            "lane_outside_mask",
            lane_outside_mask_entry,
            [1, 1, 1],
            [64, 1, 1],
            0,
            &mut [which],
        )
        .unwrap_err();
        assert_eq!(e.kernel, "lane_outside_mask");
        assert_eq!((e.block, e.thread), ([0, 0, 0], [7, 0, 0]), "{e}");
        assert!(
            e.message.contains(op)
                && e.message.contains("lane 7")
                && e.message.contains("not in the mask"),
            "{which}: {e}"
        );
    }
}

#[test]
fn invalid_configurations_are_errors() {
    let e = run(
        "cfg",
        divergent_barrier_entry_ok,
        [1, 1, 1],
        [1025, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("1025 threads"), "{e}");
    let e = run(
        "cfg",
        divergent_barrier_entry_ok,
        [0, 1, 1],
        [32, 1, 1],
        0,
        &mut [],
    )
    .unwrap_err();
    assert!(e.message.contains("zero dimension"), "{e}");
}

#[test]
fn intrinsics_outside_a_launch_panic() {
    let r = std::panic::catch_unwind(thread::thread_idx_x);
    assert!(r.is_err());
}

unsafe fn foreign_failure_entry(_: *const *mut c_void) {
    let i = thread::index().get();
    if i == 77 {
        gpukernel_device::host::record_foreign_failure("mul_f32_f32", 9);
    }
    // Later failures of the same launch do not replace the first (they are counted).
    sync::sync_threads();
    if i == 78 {
        gpukernel_device::host::record_foreign_failure("other", 1);
    }
}

#[test]
fn foreign_failures_are_recorded_and_taken() {
    run(
        "ffi",
        foreign_failure_entry,
        [2, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap();
    // A second launch's failure does not shadow the pending one either.
    run(
        "ffi",
        foreign_failure_entry,
        [2, 1, 1],
        [64, 1, 1],
        0,
        &mut [],
    )
    .unwrap();
    let (name, status, thread, count) = super::take_foreign_failure().expect("recorded");
    assert_eq!((name.as_str(), status, thread), ("mul_f32_f32", 9, 77));
    // Two failures in each of the two launches: the first kept, all four counted.
    assert_eq!(count, 4, "every failure is counted");
    assert!(
        super::take_foreign_failure().is_none(),
        "taking clears the record"
    );
    // Launches from another OS thread keep their own record.
    std::thread::scope(|s| {
        s.spawn(|| {
            run(
                "ffi",
                foreign_failure_entry,
                [2, 1, 1],
                [64, 1, 1],
                0,
                &mut [],
            )
            .unwrap()
        });
    });
    assert!(super::take_foreign_failure().is_none());
}

// -- performance sanity (printed, not asserted) ---------------------------------------------

unsafe fn saxpy_entry(p: *const *mut c_void) {
    // SAFETY: the test passes (a, x ptr, x len, y ptr, y len).
    unsafe {
        let a = arg::<f32>(p, 0);
        let (x, n, y) = (
            arg::<*const f32>(p, 1),
            arg::<usize>(p, 2),
            arg::<*mut f32>(p, 3),
        );
        let i = thread::global_index_x();
        if i < n {
            *y.add(i) = a * *x.add(i) + *y.add(i);
        }
    }
}

#[test]
fn performance_sanity() {
    let n = 1usize << 20;
    let x = vec![1.0f32; n];
    let mut y = vec![2.0f32; n];
    let mut a = [
        3.0f32.to_bits() as u64,
        x.as_ptr() as u64,
        n as u64,
        ptr_arg(&mut y),
        n as u64,
    ];
    let start = Instant::now();
    run(
        "saxpy",
        saxpy_entry,
        [(n / 256) as u32, 1, 1],
        [256, 1, 1],
        0,
        &mut a,
    )
    .unwrap();
    let saxpy = start.elapsed();
    assert!(y.iter().all(|&v| v == 5.0));

    let xs: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let blocks = n / RED_BLOCK;
    let mut out = vec![0.0f32; blocks];
    let mut xs2 = xs.clone();
    let mut args = [
        ptr_arg(&mut xs2),
        n as u64,
        ptr_arg(&mut out),
        blocks as u64,
    ];
    let start = Instant::now();
    run(
        "block_sum",
        block_sum_entry,
        [blocks as u32, 1, 1],
        [RED_BLOCK as u32, 1, 1],
        0,
        &mut args,
    )
    .unwrap();
    let reduce = start.elapsed();
    let total: f64 = out.iter().map(|&v| v as f64).sum();
    let expect: f64 = xs.iter().map(|&v| v as f64).sum();
    assert_eq!(total, expect);
    println!("simulator: saxpy 2^20 in {saxpy:?}, block reduction 2^20 in {reduce:?}");
}

// -- environment ---------------------------------------------------------------------------

#[test]
fn bad_environment_values_are_errors_naming_the_variable() {
    use super::SimConfig;
    use std::ffi::OsStr;
    let ok = SimConfig::from_values(Some(OsStr::new("3")), Some(OsStr::new(" 256 "))).unwrap();
    assert_eq!((ok.workers, ok.stack_bytes), (3, 256 * 1024));
    let ok = SimConfig::from_values(None, None).unwrap();
    assert_eq!(ok.stack_bytes, super::DEFAULT_STACK_KIB * 1024);
    // `usize::MAX` KiB used to overflow into a panic when the stack was allocated.
    for (threads, stack, name) in [
        (
            None,
            Some("18446744073709551615"),
            "GPUKERNEL_SIM_STACK_KIB",
        ),
        (None, Some("1048577"), "GPUKERNEL_SIM_STACK_KIB"),
        (None, Some("0"), "GPUKERNEL_SIM_STACK_KIB"),
        (None, Some("-1"), "GPUKERNEL_SIM_STACK_KIB"),
        (None, Some("128k"), "GPUKERNEL_SIM_STACK_KIB"),
        (Some("18446744073709551615"), None, "GPUKERNEL_SIM_THREADS"),
        (Some("0"), None, "GPUKERNEL_SIM_THREADS"),
    ] {
        let e = SimConfig::from_values(threads.map(OsStr::new), stack.map(OsStr::new))
            .err()
            .unwrap_or_else(|| panic!("{threads:?} {stack:?} accepted"));
        assert!(e.contains(name), "{e}");
        assert!(e.contains("must be an integer from 1 to"), "{e}");
    }
}

// -- mixed warp operations ------------------------------------------------------------------

unsafe fn mixed_warp_entry(p: *const *mut c_void) {
    // SAFETY: the test passes one `u32` slot per thread.
    let out = unsafe { arg::<*mut u32>(p, 0) };
    let lane = lane_id();
    // Lanes 0..16 shuffle and lanes 16..32 vote, all under the full mask: on the GPU neither
    // instruction ever completes.
    let v = if lane < 16 {
        warp::shfl_sync(FULL_MASK, lane, 0)
    } else {
        warp::ballot_sync(FULL_MASK, true)
    };
    // SAFETY: one slot per thread.
    unsafe { out.add(lane as usize).write(v) };
}

#[test]
fn mixed_warp_operations_under_one_mask_are_an_error() {
    let mut out = vec![0u32; 32];
    let e = run(
        "mixed_warp",
        mixed_warp_entry,
        [1, 1, 1],
        [32, 1, 1],
        0,
        &mut [ptr_arg(&mut out)],
    )
    .unwrap_err();
    assert!(e.message.contains("mixed warp operations"), "{e}");
    assert!(e.message.contains("warp::shfl_sync"), "{e}");
    assert!(e.message.contains("warp::ballot_sync"), "{e}");
    assert!(
        e.message.contains("lane 0") && e.message.contains("lane 16"),
        "{e}"
    );
}

unsafe fn same_kind_warp_entry(p: *const *mut c_void) {
    // SAFETY: the test passes one `u32` slot per thread.
    let out = unsafe { arg::<*mut u32>(p, 0) };
    let lane = lane_id();
    // Two shuffle call sites, and two votes, under one mask each: one instruction kind.
    let v = if lane < 16 {
        warp::shfl_sync(FULL_MASK, lane, 3)
    } else {
        warp::shfl_down_sync(FULL_MASK, lane, 1)
    };
    let w = if lane.is_multiple_of(2) {
        warp::ballot_sync(FULL_MASK, lane < 4)
    } else {
        warp::ballot_sync(FULL_MASK, false)
    };
    // SAFETY: one slot per thread.
    unsafe { out.add(lane as usize).write(v + w) };
}

#[test]
fn warp_operations_of_one_kind_from_several_call_sites_complete() {
    let mut out = vec![0u32; 32];
    run(
        "same_kind",
        same_kind_warp_entry,
        [1, 1, 1],
        [32, 1, 1],
        0,
        &mut [ptr_arg(&mut out)],
    )
    .unwrap();
    // Lane 0..16 read lane 3; lanes 16..31 their next lane; lane 31 keeps its own. The
    // ballot has the even lanes below 4.
    assert_eq!(out[0], 3 + 0b101);
    assert_eq!(out[1], 3 + 0b101);
    assert_eq!(out[16], 17 + 0b101);
    assert_eq!(out[31], 31 + 0b101);
}
