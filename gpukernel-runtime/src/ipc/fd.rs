//! Passing file descriptors between processes over a Unix socket (`SCM_RIGHTS`): how a VMM
//! export ([`VmmHandle`](super::VmmHandle)) or any other descriptor (a Vulkan memory fd)
//! reaches another process.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The most descriptors one message carries (the kernel's `SCM_MAX_FD` is 253).
pub const MAX_FDS: usize = 16;

/// Sends `data` (at least one byte) and `fds` in one message over `socket`. The descriptors
/// stay open here; the receiver gets its own duplicates.
///
/// An error of kind `InvalidInput` for empty `data` or more than [`MAX_FDS`] descriptors; the
/// system's error otherwise (a short send is an error too: the descriptors went with the part
/// that was sent).
pub fn send_with_fds(socket: &UnixStream, data: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    if data.is_empty() || fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "send_with_fds: {} data bytes and {} descriptors (need at least 1 byte, at most {MAX_FDS} descriptors)",
                data.len(),
                fds.len()
            ),
        ));
    }
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let fd_bytes = std::mem::size_of_val(raw.as_slice());
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    // u64 elements: the control buffer must be aligned for `cmsghdr`.
    let mut control = vec![0u64; space.div_ceil(8).max(1)];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: all-zero is a valid `msghdr`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !raw.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds `space` bytes, enough for one header and the fds;
        // CMSG_FIRSTHDR of a message with a non-empty control buffer is non-null.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            core::ptr::copy_nonoverlapping(
                raw.as_ptr(),
                libc::CMSG_DATA(c).cast::<RawFd>(),
                raw.len(),
            );
        }
    }
    // SAFETY: `msg` points at live buffers for the call.
    let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != data.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("send_with_fds: sent {n} of {} bytes", data.len()),
        ));
    }
    Ok(())
}

/// Receives at most `buf.len()` bytes and the descriptors sent with them (owned here, closed
/// when dropped). Returns the byte count (0 when the peer closed) and the descriptors. On a
/// stream socket a longer message is read in parts (its descriptors arrive with the first);
/// a datagram or sequenced-packet socket reports a cut message as an error (`MSG_TRUNC`), and
/// every socket reports cut descriptors (`MSG_CTRUNC`; those that did arrive are closed).
pub fn recv_with_fds(socket: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let fd_bytes = MAX_FDS * size_of::<RawFd>();
    // SAFETY: pure computation.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid `msghdr`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points at live buffers; CLOEXEC so descriptors do not leak into children.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled the control buffer and set `msg_controllen`; the CMSG macros
    // walk it within those bounds; each SCM_RIGHTS payload is an array of fds now ours.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let payload = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = payload / size_of::<RawFd>();
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "recv_with_fds: the message was cut (buffer of {} bytes, at most {MAX_FDS} descriptors)",
                buf.len()
            ),
        ));
    }
    Ok((n as usize, fds))
}
