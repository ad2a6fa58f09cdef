//! Vulkan interop on a real Vulkan device (feature `gpu`; needs the Vulkan loader): the
//! example's round trip, the named refusals, and a leak loop of 10,000 import/map/free cycles.
#![allow(
    clippy::undocumented_unsafe_blocks,
    reason = "ash calls; see the example"
)]

#[allow(dead_code, reason = "the example's `main` is not called here")]
#[path = "../examples/vulkan_interop.rs"]
mod example;

use example::{Vk, expected, round_trip};
use gpukernel_runtime::external::{
    ExternalMemory, ExternalMemoryHandle, ExternalSemaphore, ExternalSemaphoreHandle, SemaphoreKind,
};
use gpukernel_runtime::{Context, Device, Error};

fn gpu() -> Context {
    Device::get(0)
        .expect("the `gpu` feature is on but CUDA device 0 is not usable")
        .primary_context()
        .unwrap()
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU and Vulkan (feature gpu)")]
fn vulkan_fills_a_kernel_transforms_vulkan_reads_back() {
    let ctx = gpu();
    let vk = Vk::new(ctx.device_uuid().unwrap()).unwrap();
    for n in [1 << 16, 1000] {
        let got = round_trip(&ctx, &vk, n).unwrap();
        let bad: Vec<usize> = (0..n)
            .filter(|&i| got[i] != expected(i, n))
            .take(5)
            .collect();
        assert!(
            bad.is_empty(),
            "n = {n}: wrong at {bad:?}: {:?}",
            bad.iter().map(|&i| got[i]).collect::<Vec<_>>()
        );
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU and Vulkan (feature gpu)")]
fn external_bad_input_is_named() {
    let ctx = gpu();
    let vk = Vk::new(ctx.device_uuid().unwrap()).unwrap();
    let b = vk.buffer(4096, true).unwrap();
    // SAFETY: an export of `b.size` bytes of this GPU.
    let mem = unsafe {
        ExternalMemory::import(
            &ctx,
            ExternalMemoryHandle::OpaqueFd(vk.memory_fd(&b).unwrap()),
            b.size,
            true,
        )
    }
    .unwrap();
    // Ranges past the end, and misaligned offsets.
    let n = (b.size / 4) as usize;
    for (off, len) in [(0, n + 1), (b.size - 4, 2), (2, 1), (u64::MAX - 3, 1)] {
        let e = mem.map::<f32>(off, len).unwrap_err();
        assert!(matches!(e, Error::ShareRange { .. }), "{e}");
    }
    let whole = mem.map::<f32>(0, n).unwrap();
    assert_eq!(whole.len(), n);
    // Lent once at a time: bytes `whole` holds are refused while it lives (two buffers of one
    // memory would alias), and mapped again once it is dropped.
    for (off, len) in [(0, n), (64, 4), ((n as u64 - 1) * 4, 1)] {
        let e = mem.map::<u32>(off, len).unwrap_err();
        assert!(matches!(e, Error::RangeAlreadyMapped { .. }), "{e}");
    }
    drop(whole);
    // Disjoint ranges live at once, at offsets finer than the driver's mapping granularity
    // (every buffer is a range of the import's one mapping): each writes its own bytes.
    let mut head = mem.map::<u32>(0, n / 2).unwrap();
    let mut tail = mem.map::<f32>((n / 2 * 4) as u64, n - n / 2).unwrap();
    assert!(matches!(
        mem.map::<u8>((n / 2 * 4 - 1) as u64, 2),
        Err(Error::RangeAlreadyMapped { .. })
    ));
    head.copy_from_host(&vec![7u32; n / 2]).unwrap();
    tail.copy_from_host(&vec![1.5f32; n - n / 2]).unwrap();
    let mut odd = Vec::new();
    drop(head);
    for (off, len) in [(4u64, 1usize), (12, 3), (1000, 6)] {
        let mut b = mem.map::<u8>(off, len).unwrap();
        b.copy_from_host(&vec![off as u8; len]).unwrap();
        odd.push(b);
    }
    drop((tail, odd));
    let whole = mem.map::<u32>(0, n).unwrap();
    let got = whole.to_host_vec().unwrap();
    let mut want: Vec<u32> = vec![7; n / 2];
    want.extend(std::iter::repeat_n(1.5f32.to_bits(), n - n / 2));
    let bytes: &mut [u8] = bytes_of_mut(&mut want);
    for (off, len) in [(4usize, 1usize), (12, 3), (1000, 6)] {
        bytes[off..off + len].fill(off as u8);
    }
    assert_eq!(
        got, want,
        "the disjoint buffers' writes, read through the whole import"
    );
    drop(whole);
    let whole = mem.map::<f32>(0, n).unwrap();
    // Windows handles on this platform.
    // SAFETY: refused before the driver sees it.
    let e =
        unsafe { ExternalMemory::import(&ctx, ExternalMemoryHandle::OpaqueWin32(1), 4096, true) }
            .unwrap_err();
    assert!(matches!(e, Error::UnsupportedHandleType { .. }), "{e}");
    // SAFETY: as above.
    let e = unsafe {
        ExternalSemaphore::import(
            &ctx,
            ExternalSemaphoreHandle::D3D12Fence(1),
            SemaphoreKind::Timeline,
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::UnsupportedHandleType { .. }), "{e}");
    // A descriptor that is not exported memory: the driver refuses it, by call name.
    let file = tempfile::tempfile().unwrap();
    // SAFETY: a wrong handle on purpose: the driver checks it and refuses.
    let e = unsafe {
        ExternalMemory::import(
            &ctx,
            ExternalMemoryHandle::OpaqueFd(file.into()),
            4096,
            true,
        )
    }
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Driver {
                call: "cuImportExternalMemory",
                ..
            }
        ),
        "{e}"
    );
    println!("a plain file as external memory: {e}");
    // A semaphore used as the other kind.
    let (bin, bin_fd) = vk.semaphore(false).unwrap();
    let (tl, tl_fd) = vk.semaphore(true).unwrap();
    // SAFETY: exports of a binary and a timeline semaphore.
    let (bs, ts) = unsafe {
        (
            ExternalSemaphore::import(
                &ctx,
                ExternalSemaphoreHandle::OpaqueFd(bin_fd),
                SemaphoreKind::Binary,
            )
            .unwrap(),
            ExternalSemaphore::import(
                &ctx,
                ExternalSemaphoreHandle::OpaqueFd(tl_fd),
                SemaphoreKind::Timeline,
            )
            .unwrap(),
        )
    };
    let s = ctx.new_stream().unwrap();
    for e in [
        bs.signal_value(&s, 3).unwrap_err(),
        bs.wait_value(&s, 1).unwrap_err(),
        ts.signal(&s).unwrap_err(),
        ts.wait(&s).unwrap_err(),
    ] {
        assert!(matches!(e, Error::SemaphoreKind { .. }), "{e}");
    }
    // A timeline signalled and waited on by value works both ways on one stream.
    ts.signal_value(&s, 7).unwrap();
    ts.wait_value(&s, 7).unwrap();
    s.synchronize().unwrap();
    drop((bs, ts, whole, mem));
    unsafe {
        vk.device.destroy_semaphore(bin, None);
        vk.device.destroy_semaphore(tl, None);
    }
    vk.free(b);
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU and Vulkan (feature gpu)")]
fn ten_thousand_import_map_free_cycles_keep_memory_flat() {
    let ctx = gpu();
    let vk = Vk::new(ctx.device_uuid().unwrap()).unwrap();
    let b = vk.buffer(1 << 20, true).unwrap();
    let n = (b.size / 4) as usize;
    let cycle = || {
        // SAFETY: an export of `b.size` bytes of this GPU, unused by Vulkan meanwhile.
        let mem = unsafe {
            ExternalMemory::import(
                &ctx,
                ExternalMemoryHandle::OpaqueFd(vk.memory_fd(&b).unwrap()),
                b.size,
                true,
            )
        }
        .unwrap();
        let mut y = mem.map::<f32>(0, n).unwrap();
        y.memset_zeros().unwrap();
        drop(mem); // the mapping keeps the import alive until it is freed
        drop(y);
    };
    cycle();
    ctx.synchronize().unwrap();
    let (before, total) = ctx.memory_info().unwrap();
    let fds_before = open_fds();
    let t = std::time::Instant::now();
    for _ in 0..10_000 {
        cycle();
    }
    ctx.synchronize().unwrap();
    let (after, _) = ctx.memory_info().unwrap();
    let fds_after = open_fds();
    println!(
        "external memory leak loop: 10000 import/map/free cycles of {} KiB in {:.2} s; open fds {fds_before} -> {fds_after}; free device memory before {} MiB, after {} MiB (total {} MiB), change {} KiB",
        b.size / 1024,
        t.elapsed().as_secs_f64(),
        before >> 20,
        after >> 20,
        total >> 20,
        (after as i64 - before as i64) / 1024
    );
    // One leaked mapping per cycle would be 10000 MiB; allow the driver's own bookkeeping.
    assert!(
        after + (16 << 20) >= before,
        "device memory fell from {before} to {after} bytes"
    );
    assert!(
        fds_after <= fds_before + 16,
        "descriptors leaked: {fds_before} -> {fds_after}"
    );
    vk.free(b);
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The bytes of `v` (u32s: any byte pattern is one).
fn bytes_of_mut(v: &mut [u32]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirement; the length covers `v` exactly.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}
