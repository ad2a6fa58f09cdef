//! The `cargo:` lines a build script prints, held back while [`Builder::build_or_exit`] runs
//! so that a failing build shows its error alone (cargo prints a failed build script's whole
//! stdout before its stderr); `GPUKERNEL_BUILD_VERBOSE=1` prints them on failure too.
//!
//! [`Builder::build_or_exit`]: crate::Builder::build_or_exit

use std::cell::RefCell;

thread_local! {
    static HELD: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Prints `line` (`cargo:...`), or holds it while [`capture`] runs.
pub(crate) fn emit(line: String) {
    let held = HELD.with(|h| match h.borrow_mut().as_mut() {
        Some(lines) => {
            lines.push(line.clone());
            true
        }
        None => false,
    });
    if !held {
        println!("{line}");
    }
}

/// Runs `f` holding back the directives it emits; returns its result and them.
pub(crate) fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let outer = HELD.with(|h| h.borrow_mut().replace(Vec::new()));
    let result = f();
    let lines = HELD
        .with(|h| std::mem::replace(&mut *h.borrow_mut(), outer))
        .unwrap_or_default();
    (result, lines)
}

/// Whether `GPUKERNEL_BUILD_VERBOSE` asks for every directive and command line.
pub(crate) fn verbose() -> bool {
    std::env::var_os("GPUKERNEL_BUILD_VERBOSE").is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_directives_are_returned_not_printed() {
        let ((), lines) = capture(|| {
            emit("cargo:rerun-if-changed=a".into());
            emit("cargo:rerun-if-changed=b".into());
        });
        assert_eq!(
            lines,
            ["cargo:rerun-if-changed=a", "cargo:rerun-if-changed=b"]
        );
    }
}
