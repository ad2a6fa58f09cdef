//! Replays the fuzz targets' corpus (`fuzz/corpus/<target>/`: seeds from the test fixtures and
//! every input a fuzzer once found failing) through the same entry points the targets call, so
//! that each regression input is checked by every test run, without the nightly toolchain.

use std::path::{Path, PathBuf};

use gpukernel_runtime::__fuzz;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no inputs", dir.display());
    files
}

fn replay(target: &str, run: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
        // Every prefix too: truncation is the commonest corruption.
        for len in (0..bytes.len()).step_by(bytes.len() / 64 + 1) {
            let outcome = std::panic::catch_unwind(|| run(&bytes[..len]));
            assert!(
                outcome.is_ok(),
                "{target}: {} cut to {len} bytes fails",
                path.display()
            );
        }
    }
}

#[test]
fn kind() {
    replay("kind", __fuzz::kind);
}

#[test]
fn ptx() {
    replay("ptx", __fuzz::ptx);
}

#[test]
fn binary() {
    replay("binary", __fuzz::binary);
}

#[test]
fn cache_entry() {
    replay("cache_entry", __fuzz::cache_entry);
}
