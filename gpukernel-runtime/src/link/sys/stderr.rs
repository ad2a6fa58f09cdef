//! What a library call writes to the process's standard error, captured: nvJitLink 13.0 reports
//! a symbol defined twice (`error   : Multiple definition of 'f' in 'b', first defined in 'a'`)
//! only there when it links without LTO, and completes the link anyway; its error log stays
//! empty. The linker needs that line to refuse the link.
//!
//! File descriptor 2 is the whole process's: while a capture runs, whatever any thread writes
//! to standard error goes to a temporary file; it is written back to the real standard error
//! afterwards, so nothing is lost, only delayed. Captures are serialized by a lock.

/// Runs `f` with file descriptor 2 redirected to a temporary file, and returns its result
/// and what was written there (also written back to the real standard error). Where the
/// redirection cannot be set up, `f` runs as it is and nothing is captured.
#[cfg(unix)]
pub(super) fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::sync::{Mutex, PoisonError};

    static LOCK: Mutex<()> = Mutex::new(());
    let _lock = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let Ok(mut file) = tempfile::tempfile() else {
        return (f(), String::new());
    };
    let _ = std::io::stderr().flush();
    // SAFETY: `fflush(NULL)` flushes every C stdio output stream; no pointer is dereferenced.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    // SAFETY: duplicating a descriptor number has no memory effects; a failure is checked.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return (f(), String::new());
    }
    // SAFETY: `file` is open for the call; dup2 only rebinds descriptor 2.
    if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        // SAFETY: `saved` is a descriptor this function opened and closes once.
        unsafe { libc::close(saved) };
        return (f(), String::new());
    }
    /// Puts the real standard error back, even if `f` unwinds.
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: as above; `self.0` is the saved descriptor, restored then closed once.
            unsafe {
                libc::fflush(std::ptr::null_mut());
                libc::dup2(self.0, 2);
                libc::close(self.0);
            }
        }
    }
    let restore = Restore(saved);
    let out = f();
    drop(restore);
    let mut bytes = Vec::new();
    if file.rewind().is_ok() {
        let _ = file.read_to_end(&mut bytes);
    }
    let _ = std::io::stderr().write_all(&bytes);
    (out, String::from_utf8_lossy(&bytes).into_owned())
}

/// Elsewhere nothing is captured.
#[cfg(not(unix))]
pub(super) fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    (f(), String::new())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn what_a_call_writes_to_fd_2_is_captured_and_passed_on() {
        let (value, text) = capture(|| {
            let line = b"(a line the stderr capture test writes to descriptor 2)\n";
            // SAFETY: writes `line.len()` bytes from a live buffer to descriptor 2.
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            7
        });
        assert_eq!(value, 7);
        assert!(text.contains("capture test writes"), "{text:?}");
        // Descriptor 2 is the real one again: a second capture sees only its own writes.
        let ((), text) = capture(|| {});
        assert!(text.is_empty(), "{text:?}");
    }
}
