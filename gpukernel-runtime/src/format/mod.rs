//! Reading the bytes the runtime is handed: module images, link inputs and cache entries.
//!
//! Every parser of untrusted bytes lives here, as pure functions over byte slices and text:
//! `kind` tells images and link inputs apart and checks their shape before a compiler or the
//! driver sees them, `ptx` is the one PTX reader, `elf` and `archive` read cubins, objects and
//! static libraries through the `object` crate, `fatbin` reads fat binary headers (no crate
//! reads those), `cache_entry` encodes and decodes the linker's on-disk cache entries, and
//! `log` reads the compilers', linkers' and JIT's logs (undefined and duplicate symbols,
//! missing architectures), and `lto` the records of sources linked in at build time.
//!
//! A malformed input is an `Err` with a sentence saying what is wrong, never a panic: the
//! callers put that sentence into the crate's errors. Nothing here knows contexts, the driver,
//! modules or the linker.

pub(crate) mod archive;
pub(crate) mod cache_entry;
pub(crate) mod elf;
pub(crate) mod fatbin;
pub mod fuzz;
mod kind;
pub(crate) mod log;
pub(crate) mod lto;
pub(crate) mod ptx;
pub(crate) mod version;

pub use kind::{ImageKind, InputKind};
pub(crate) use kind::{carries_ltoir, check_input, defined_symbols, detect_image};

/// The bytes without trailing NULs (C strings handed over with their terminator).
pub(crate) fn trim_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &bytes[..end]
}

#[cfg(test)]
mod tests {
    use super::trim_nul;

    #[test]
    fn trailing_nuls_are_trimmed() {
        assert_eq!(trim_nul(b"ab\0\0"), b"ab");
        assert_eq!(trim_nul(b"a\0b"), b"a\0b");
        assert_eq!(trim_nul(b"\0\0"), b"");
        assert_eq!(trim_nul(b""), b"");
    }
}
