//! Sharing device memory between two real processes (feature `gpu`): the test binary runs
//! itself again as the child (`GPUKERNEL_SHARE_CHILD` names the socket). The parent allocates
//! a legacy-IPC buffer and a VMM buffer, sends their handles (bytes, and a POSIX fd over
//! `SCM_RIGHTS`) and an IPC event; the child writes sub-ranges with a kernel and records the
//! event; the parent waits on the event and checks. Then the leak loops, and the refusals.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ffi_examples_kernels::saxpy;
use gpukernel_runtime::ipc::{IpcEventHandle, IpcMemHandle, ShareKind, VmmHandle};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig};
use gpukernel_tests::plain_kernels;

const CHILD_ENV: &str = "GPUKERNEL_SHARE_CHILD";
const N: usize = 1 << 20;
const LO: usize = 4096;
const HI: usize = LO + 100_000;
const A: f32 = 3.0;

fn gpu() -> Context {
    Device::get(0)
        .expect("the `gpu` feature is on but CUDA device 0 is not usable")
        .primary_context()
        .unwrap()
}

fn read_exact<const K: usize>(s: &mut UnixStream) -> [u8; K] {
    let mut b = [0u8; K];
    s.read_exact(&mut b).unwrap();
    b
}

fn mib(free_before: usize, free_after: usize) -> String {
    format!(
        "free before {} MiB, after {} MiB, change {} KiB",
        free_before >> 20,
        free_after >> 20,
        (free_after as i64 - free_before as i64) / 1024
    )
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn two_processes_share_buffers_and_an_event() {
    let ctx = gpu();
    let y0: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut legacy = ctx.alloc_shareable::<f32>(N, ShareKind::Ipc).unwrap();
    let mut vmm = ctx.alloc_shareable::<f32>(N, ShareKind::PosixFd).unwrap();
    legacy.copy_from_host(&y0).unwrap();
    vmm.copy_from_host(&y0).unwrap();
    ctx.synchronize().unwrap();
    let event = ctx.new_ipc_event().unwrap();
    // A handle whose memory is freed before the child opens it.
    let gone = ctx.alloc_shareable::<f32>(1024, ShareKind::Ipc).unwrap();
    let gone_handle = gone.ipc_handle(..).unwrap();
    drop(gone);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("share.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(_) if Instant::now() < deadline && child.try_wait().unwrap().is_none() => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "the child never connected ({e}):\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    };
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    // ANCHOR: export
    conn.write_all(&legacy.ipc_handle(LO..HI).unwrap().to_bytes())
        .unwrap();
    conn.write_all(&event.ipc_handle().unwrap().to_bytes())
        .unwrap();
    conn.write_all(&gone_handle.to_bytes()).unwrap();
    vmm.export_vmm(LO..HI).unwrap().send(&conn).unwrap();
    // ANCHOR_END: export

    // The child recorded the event after its kernels: wait for it on the device, then read.
    assert_eq!(read_exact::<1>(&mut conn), *b"R");
    let s = ctx.default_stream();
    s.wait_event(&event).unwrap();
    let (got_legacy, got_vmm) = (legacy.to_host_vec().unwrap(), vmm.to_host_vec().unwrap());
    conn.write_all(b"A").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("--- child ---\n{stdout}\n{stderr}\n--- end of child ---");
    assert!(out.status.success(), "the child failed: {}", out.status);
    for (what, got) in [("legacy IPC", &got_legacy), ("VMM fd", &got_vmm)] {
        for (i, (&g, &y)) in got.iter().zip(&y0).enumerate() {
            let want = if (LO..HI).contains(&i) {
                A * 1.0 + y
            } else {
                y
            };
            assert_eq!(g, want, "{what}: element {i}");
        }
    }
    println!(
        "two processes: the child's kernel wrote elements {LO}..{HI} of both buffers; the rest is untouched"
    );
}

/// The child's side, run by the test above (ignored otherwise: alone it has no parent).
#[test]
#[ignore = "the child process of two_processes_share_buffers_and_an_event, which runs it"]
fn child_process() {
    let path = std::env::var_os(CHILD_ENV)
        .expect("child_process runs only as the child of two_processes_share_buffers_and_an_event");
    let ctx = gpu();
    let mut conn = UnixStream::connect(path).unwrap();
    let mem =
        IpcMemHandle::<f32>::from_bytes(&read_exact::<{ IpcMemHandle::<f32>::BYTES }>(&mut conn))
            .unwrap();
    let ev =
        IpcEventHandle::from_bytes(&read_exact::<{ IpcEventHandle::BYTES }>(&mut conn)).unwrap();
    let gone =
        IpcMemHandle::<f32>::from_bytes(&read_exact::<{ IpcMemHandle::<f32>::BYTES }>(&mut conn))
            .unwrap();
    let vmm = VmmHandle::<f32>::recv(&conn).unwrap();
    assert_eq!((mem.len(), vmm.len()), (HI - LO, HI - LO));

    // ANCHOR: open
    // SAFETY: the parent keeps both allocations alive and reads them only after the event.
    let (mut a, mut b) = unsafe { (mem.open(&ctx).unwrap(), vmm.open(&ctx).unwrap()) };
    let event = ev.open(&ctx).unwrap();
    let module = plain_kernels(&ctx);
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&vec![1.0f32; HI - LO]).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = LaunchConfig::for_elements(HI - LO).unwrap();
    s.launch(&k, cfg, (A, &x, &mut a)).unwrap();
    s.launch(&k, cfg, (A, &x, &mut b)).unwrap();
    event.record(&s).unwrap();
    // ANCHOR_END: open
    conn.write_all(b"R").unwrap();
    assert_eq!(read_exact::<1>(&mut conn), *b"A");
    drop((a, b));

    // Refusals: memory its exporter freed, and a forged handle.
    // SAFETY: refused by the driver.
    let e = unsafe { gone.open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::ShareHandleRejected { .. }), "{e}");
    println!("child: a handle of freed memory: {e}");
    let mut forged = mem.to_bytes();
    forged[16..80].fill(0x5a);
    let forged = IpcMemHandle::<f32>::from_bytes(&forged).unwrap();
    // SAFETY: refused by the driver.
    let e = unsafe { forged.open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::ShareHandleRejected { .. }), "{e}");
    println!("child: a forged handle: {e}");

    // Leak loop: 10,000 IPC open/close cycles.
    // SAFETY: as above (nothing runs on it).
    drop(unsafe { mem.open(&ctx) }.unwrap());
    ctx.synchronize().unwrap();
    let (before, _) = ctx.memory_info().unwrap();
    let t = Instant::now();
    for _ in 0..10_000 {
        // SAFETY: as above.
        drop(unsafe { mem.open(&ctx) }.unwrap());
    }
    let (after, _) = ctx.memory_info().unwrap();
    println!(
        "child: IPC leak loop: 10000 open/close cycles in {:.2} s; {}",
        t.elapsed().as_secs_f64(),
        mib(before, after)
    );
    assert!(
        after + (16 << 20) >= before,
        "device memory fell from {before} to {after}"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn vmm_export_import_cycles_keep_memory_flat() {
    let ctx = gpu();
    let mut buf = ctx
        .alloc_shareable::<u32>(1 << 18, ShareKind::PosixFd)
        .unwrap();
    buf.copy_from_host(&(0..1 << 18).collect::<Vec<u32>>())
        .unwrap();
    // The same allocation imported in this process, through a sub-range: offsets are right.
    let h = buf.export_vmm(1000..2000).unwrap();
    // SAFETY: nothing else uses the range meanwhile.
    let view = unsafe { h.open(&ctx) }.unwrap();
    assert_eq!(
        view.to_host_vec().unwrap(),
        (1000..2000).collect::<Vec<u32>>()
    );
    drop(view);
    let cycle = || {
        let h = buf.export_vmm(..).unwrap();
        // SAFETY: as above.
        let b = unsafe { h.open(&ctx) }.unwrap();
        drop(b);
    };
    cycle();
    ctx.synchronize().unwrap();
    let (before, _) = ctx.memory_info().unwrap();
    let fds = |()| {
        std::fs::read_dir("/proc/self/fd")
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let fds_before = fds(());
    let t = Instant::now();
    for _ in 0..10_000 {
        cycle();
    }
    let (after, _) = ctx.memory_info().unwrap();
    let fds_after = fds(());
    println!(
        "VMM leak loop: 10000 export/import/map/unmap cycles of 1 MiB in {:.2} s; open fds {fds_before} -> {fds_after}; {}",
        t.elapsed().as_secs_f64(),
        mib(before, after)
    );
    assert!(fds_after <= fds_before + 16, "descriptors leaked");
    assert!(
        after + (16 << 20) >= before,
        "device memory fell from {before} to {after}"
    );
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn exporting_what_is_not_shareable_says_so() {
    let ctx = gpu();
    let pooled = ctx.htod_copy(&[1.0f32; 64]).unwrap();
    let e = pooled.ipc_handle(..).unwrap_err();
    assert!(matches!(e, Error::NotExportable { .. }), "{e}");
    println!("pooled buffer: {e}");
    let e = pooled.export_vmm(..).unwrap_err();
    assert!(matches!(e, Error::NotExportable { .. }), "{e}");
    let legacy = ctx.alloc_shareable::<f32>(64, ShareKind::Ipc).unwrap();
    assert!(matches!(
        legacy.export_vmm(..),
        Err(Error::NotExportable { .. })
    ));
    let vmm = ctx.alloc_shareable::<f32>(64, ShareKind::PosixFd).unwrap();
    assert!(matches!(
        vmm.ipc_handle(..),
        Err(Error::NotExportable { .. })
    ));
    assert!(matches!(
        legacy.ipc_handle(10..100),
        Err(Error::OutOfBounds { .. })
    ));
    let e = ctx.new_event().unwrap().ipc_handle().unwrap_err();
    assert!(matches!(e, Error::NotExportable { .. }), "{e}");
    // Legacy handles open only in another process.
    // SAFETY: refused by the driver.
    let e = unsafe { legacy.ipc_handle(..).unwrap().open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::ShareHandleRejected { .. }), "{e}");
    println!("own legacy handle: {e}");
    // A descriptor that is not a VMM export, and meta bytes claiming more than the allocation.
    let h = vmm.export_vmm(..).unwrap();
    let meta = h.meta_bytes();
    // An export opens only as its element type: an `f32` export is no `u32` nor `[u8; 4]`
    // handle (one size), through either handle kind.
    for e in [
        VmmHandle::<u32>::from_parts(h.fd().try_clone_to_owned().unwrap(), &meta).unwrap_err(),
        VmmHandle::<[u8; 4]>::from_parts(h.fd().try_clone_to_owned().unwrap(), &meta).unwrap_err(),
        IpcMemHandle::<u32>::from_bytes(&legacy.ipc_handle(..).unwrap().to_bytes()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
        assert!(e.to_string().contains("another element type"), "{e}");
    }
    let bytes = ctx.alloc_shareable::<u8>(64, ShareKind::PosixFd).unwrap();
    let hb = bytes.export_vmm(..).unwrap();
    let e = VmmHandle::<bool>::from_parts(hb.fd().try_clone_to_owned().unwrap(), &hb.meta_bytes())
        .unwrap_err();
    assert!(e.to_string().contains("opened as bool"), "{e}");
    println!("a u8 export as bool: {e}");
    let file = tempfile::tempfile().unwrap();
    let not_vmm = VmmHandle::<f32>::from_parts(file.into(), &meta).unwrap();
    // SAFETY: refused by the driver.
    let e = unsafe { not_vmm.open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::ShareHandleRejected { .. }), "{e}");
    println!("a plain file as a VMM handle: {e}");
    let mut big = meta;
    let claimed = u64::from_le_bytes(big[16..24].try_into().unwrap()) * 4;
    big[16..24].copy_from_slice(&claimed.to_le_bytes());
    let dup = h.fd().try_clone_to_owned().unwrap();
    let too_big = VmmHandle::<f32>::from_parts(dup, &big).unwrap();
    // SAFETY: refused by the driver.
    let e = unsafe { too_big.open(&ctx) }.unwrap_err();
    println!("a VMM handle claiming {claimed} bytes: {e}");
    assert!(matches!(e, Error::Driver { .. }), "{e}");
    let mut odd = meta;
    odd[16..24].copy_from_slice(&(4096u64 + 4).to_le_bytes());
    odd[32..40].copy_from_slice(&1u64.to_le_bytes());
    let odd = VmmHandle::<f32>::from_parts(h.fd().try_clone_to_owned().unwrap(), &odd).unwrap();
    // SAFETY: refused before the driver.
    let e = unsafe { odd.open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
}
