//! Foreign definitions on the simulator live in a namespace of their own: a device function
//! named `write` (`cuda/sim_faults.cu`) neither replaces the C library's `write`, through which
//! every print and file write of this process goes, nor is replaced by it. Before, the
//! definition interposed on libc's `write` in the whole test process, which crashed at its
//! first print.

use std::io::Write as _;

use gpukernel_tests::sim_faults::foreign_write;

#[test]
fn a_device_function_named_write_leaves_the_host_write_alone() {
    // The device function is the one called: `x + 1`, not libc's `write(41, ...)`.
    assert_eq!(foreign_write(41), 42);
    assert_eq!(foreign_write(-1), 0);

    // The process's own `write` still writes: to stdout and to a file.
    let mut out = std::io::stdout();
    writeln!(out, "printed through the C library's write").unwrap();
    out.flush().unwrap();
    let path = std::env::temp_dir().join(format!("gk-host-write-{}", std::process::id()));
    std::fs::write(&path, b"written by the host").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"written by the host");
    let _ = std::fs::remove_file(&path);
}
