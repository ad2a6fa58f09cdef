//! Host-side tests of the sharing formats and refusals (no device needed).

use super::*;
use crate::Device;

fn sim() -> Context {
    Device::simulator().primary_context().unwrap()
}

fn mem_handle(offset: u64, len: u64, alloc_bytes: u64) -> IpcMemHandle<f32> {
    IpcMemHandle {
        raw: [7; 64],
        offset,
        len,
        alloc_bytes,
        _t: PhantomData,
    }
}

#[test]
fn ipc_memory_handles_round_trip_through_bytes() {
    let h = mem_handle(16, 10, 256);
    let b = h.to_bytes();
    let back = IpcMemHandle::<f32>::from_bytes(&b).unwrap();
    assert_eq!(
        (back.raw, back.offset, back.len, back.alloc_bytes),
        (h.raw, 16, 10, 256)
    );
    assert_eq!(back.len(), 10);
}

#[test]
fn bad_ipc_bytes_are_named_errors() {
    let b = mem_handle(16, 10, 256).to_bytes();
    // Wrong length, magic, version, element type.
    for (bytes, want) in [
        (b[..50].to_vec(), "50 bytes, expected 112"),
        (
            {
                let mut x = b;
                x[0] = b'X';
                x.to_vec()
            },
            "wrong magic",
        ),
        (
            {
                let mut x = b;
                x[8] = 9;
                x.to_vec()
            },
            "format version 9",
        ),
    ] {
        let e = IpcMemHandle::<f32>::from_bytes(&bytes).unwrap_err();
        assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
        assert!(e.to_string().contains(want), "{e}");
    }
    let e = IpcMemHandle::<f64>::from_bytes(&b).unwrap_err();
    assert!(
        e.to_string().contains("exported for 4-byte elements"),
        "{e}"
    );
    // The same size, another type: refused by the type tag.
    for e in [
        IpcMemHandle::<u32>::from_bytes(&b).unwrap_err(),
        IpcMemHandle::<i32>::from_bytes(&b).unwrap_err(),
        IpcMemHandle::<[u8; 4]>::from_bytes(&b).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
        assert!(e.to_string().contains("another element type"), "{e}");
    }
    // A range past the allocation, and a misaligned offset.
    for (off, len) in [(0, 65), (250, 2), (2, 1)] {
        let e = IpcMemHandle::<f32>::from_bytes(&mem_handle(off, len, 256).to_bytes()).unwrap_err();
        assert!(matches!(e, Error::ShareRange { .. }), "{e}");
    }
    let e =
        IpcMemHandle::<f32>::from_bytes(&mem_handle(u64::MAX - 1, 4, 256).to_bytes()).unwrap_err();
    assert!(matches!(e, Error::ShareRange { .. }), "{e}");
    let e = IpcEventHandle::from_bytes(&b).unwrap_err();
    assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
}

#[test]
fn sharing_is_refused_on_the_simulator_by_name() {
    let ctx = sim();
    let e = ctx.alloc_shareable::<f32>(16, ShareKind::Ipc).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotOnSimulator {
                operation: "Context::alloc_shareable"
            }
        ),
        "{e}"
    );
    assert!(matches!(
        ctx.new_ipc_event(),
        Err(Error::NotOnSimulator { .. })
    ));
    assert!(matches!(
        ctx.memory_info(),
        Err(Error::NotOnSimulator { .. })
    ));
    let buf = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    assert!(matches!(
        buf.ipc_handle(..),
        Err(Error::NotOnSimulator { .. })
    ));
    assert!(matches!(
        buf.export_vmm(..),
        Err(Error::NotOnSimulator { .. })
    ));
    // SAFETY: refused before anything is opened.
    let e = unsafe { mem_handle(0, 4, 256).open(&ctx) }.unwrap_err();
    assert!(matches!(e, Error::NotOnSimulator { .. }), "{e}");
    let ev = ctx.new_event().unwrap();
    assert!(matches!(ev.ipc_handle(), Err(Error::NotOnSimulator { .. })));
    use crate::external::*;
    // SAFETY: refused before anything is imported.
    let e = unsafe { ExternalMemory::import(&ctx, ExternalMemoryHandle::OpaqueWin32(1), 64, true) }
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotOnSimulator {
                operation: "ExternalMemory::import"
            }
        ),
        "{e}"
    );
    // SAFETY: as above.
    let e = unsafe {
        ExternalSemaphore::import(
            &ctx,
            ExternalSemaphoreHandle::OpaqueWin32(1),
            SemaphoreKind::Binary,
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::NotOnSimulator { .. }), "{e}");
}

#[cfg(unix)]
#[test]
fn descriptors_cross_a_unix_socket() {
    use std::io::{Read, Seek, Write};
    use std::os::unix::net::UnixStream;
    let (a, b) = UnixStream::pair().unwrap();
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"shared through SCM_RIGHTS").unwrap();
    use std::os::fd::AsFd;
    send_with_fds(&a, b"meta", &[file.as_fd()]).unwrap();
    let mut buf = [0u8; 16];
    let (n, fds) = recv_with_fds(&b, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"meta");
    assert_eq!(fds.len(), 1);
    let mut got = std::fs::File::from(fds.into_iter().next().unwrap());
    got.rewind().unwrap();
    let mut s = String::new();
    got.read_to_string(&mut s).unwrap();
    assert_eq!(s, "shared through SCM_RIGHTS");
    // Refusals: no data, too many descriptors; a message cut short.
    assert!(send_with_fds(&a, b"", &[]).is_err());
    let many: Vec<_> = (0..=MAX_FDS).map(|_| file.as_fd()).collect();
    assert_eq!(
        send_with_fds(&a, b"x", &many).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    // On a stream socket a longer message is read in parts; the descriptors come first.
    send_with_fds(&a, b"longer than four", &[file.as_fd()]).unwrap();
    let mut four = [0u8; 4];
    let (n, fds) = recv_with_fds(&b, &mut four).unwrap();
    assert_eq!((&four[..n], fds.len()), (&b"long"[..], 1));
    let (n, fds) = recv_with_fds(&b, &mut buf).unwrap();
    assert_eq!((&buf[..n], fds.len()), (&b"er than four"[..], 0));
    // A VMM handle's meta bytes are checked like IPC bytes.
    send_with_fds(&a, &[0u8; 48], &[file.as_fd()]).unwrap();
    let e = VmmHandle::<f32>::recv(&b).unwrap_err();
    assert!(e.to_string().contains("wrong magic"), "{e}");
    drop(a);
    let (n, fds) = recv_with_fds(&b, &mut buf).unwrap();
    assert_eq!((n, fds.len()), (0, 0));
}

#[test]
fn vmm_meta_bytes_are_checked() {
    let mut m = [0u8; 48];
    m[..8].copy_from_slice(b"GKVMMEXP");
    m[8..12].copy_from_slice(&2u32.to_le_bytes());
    m[40..48].copy_from_slice(&element_tag::<f32>().to_le_bytes());
    m[12..16].copy_from_slice(&4u32.to_le_bytes());
    m[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes());
    m[24..32].copy_from_slice(&64u64.to_le_bytes());
    m[32..40].copy_from_slice(&100u64.to_le_bytes());
    assert_eq!(vmm::parse_meta::<f32>(&m).unwrap(), (2 << 20, 64, 100));
    assert!(matches!(
        vmm::parse_meta::<u16>(&m),
        Err(Error::InvalidShareHandle { .. })
    ));
    m[32..40].copy_from_slice(&(1u64 << 20).to_le_bytes());
    assert!(matches!(
        vmm::parse_meta::<f32>(&m),
        Err(Error::ShareRange { .. })
    ));
}

#[test]
fn a_vmm_export_opens_only_as_its_element_type() {
    // One byte each: a `u8` export is not a `bool` buffer (its bytes may be any value).
    let mut m = [0u8; 48];
    m[..8].copy_from_slice(b"GKVMMEXP");
    m[8..12].copy_from_slice(&2u32.to_le_bytes());
    m[12..16].copy_from_slice(&1u32.to_le_bytes());
    m[16..24].copy_from_slice(&(2u64 << 20).to_le_bytes());
    m[32..40].copy_from_slice(&100u64.to_le_bytes());
    m[40..48].copy_from_slice(&element_tag::<u8>().to_le_bytes());
    assert_eq!(vmm::parse_meta::<u8>(&m).unwrap(), (2 << 20, 0, 100));
    let e = vmm::parse_meta::<bool>(&m).unwrap_err();
    assert!(matches!(e, Error::InvalidShareHandle { .. }), "{e}");
    assert!(e.to_string().contains("another element type"), "{e}");
    assert!(e.to_string().contains("bool"), "{e}");
    // Meta bytes of the previous format (40 bytes, version 1) are refused by name.
    let mut old = [0u8; 40];
    old.copy_from_slice(&m[..40]);
    old[8..12].copy_from_slice(&1u32.to_le_bytes());
    let e = vmm::parse_meta::<u8>(&old).unwrap_err();
    assert!(e.to_string().contains("40 bytes, expected 48"), "{e}");
}

#[test]
fn element_tags_tell_types_of_one_size_apart() {
    let tags = [
        element_tag::<u8>(),
        element_tag::<i8>(),
        element_tag::<bool>(),
        element_tag::<u32>(),
        element_tag::<i32>(),
        element_tag::<f32>(),
        element_tag::<[u16; 2]>(),
        element_tag::<[u8; 4]>(),
    ];
    for (i, a) in tags.iter().enumerate() {
        for b in &tags[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(element_tag::<f32>(), element_tag::<f32>());
}
