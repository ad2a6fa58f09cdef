//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the test that
//! replays their corpus: each runs one family of parsers on arbitrary bytes and checks what
//! must hold of their answers. A parser that panics, hangs or runs out of memory here is a bug.
//!
//! Not public API: hidden from the documentation, exempt from semantic versioning, and may
//! change in any release.

use super::cache_entry::{self, Entry, Key};
use super::elf::{self, Header};
use super::fatbin::Fatbin;
use super::ptx::Ptx;
use super::{ImageKind, InputKind, archive, check_input, defined_symbols, detect_image};

/// Image kind detection and every input kind's shape check.
pub fn kind(data: &[u8]) {
    let image = detect_image(data);
    for kind in InputKind::ALL {
        let input = check_input(kind, data);
        // A module image and a link input of the same kind are checked alike.
        match (kind, &image) {
            (InputKind::Cubin, Ok(ImageKind::Cubin))
            | (InputKind::Fatbin, Ok(ImageKind::Fatbin)) => {
                assert_eq!(
                    input,
                    Ok(()),
                    "{kind}: detected as an image but rejected as input"
                );
            }
            _ => {}
        }
        let _ = defined_symbols(kind, data);
    }
}

/// The PTX reader: every question the runtime asks of a PTX text, on any text.
pub fn ptx(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let module = Ptx::parse(&text);
    let entries = module.entries();
    let _ = module.extern_functions();
    let _ = module.definitions();
    let all: Vec<&str> = entries.iter().map(String::as_str).collect();
    assert!(module.select_entries(&all).is_ok(), "selecting every entry");
    if let Some(first) = all.first() {
        assert!(
            module.select_entries(&[first]).is_ok(),
            "selecting `{first}`"
        );
    }
    let missing = "__no_such_kernel__";
    if !all.contains(&missing) {
        assert_eq!(
            module.select_entries(&[missing]),
            Err(vec![missing.to_string()])
        );
    }
}

/// The ELF, `ar` and fatbin readers.
pub fn binary(data: &[u8]) {
    if let Ok(header) = Header::read(data) {
        let _ = (header.machine(), header.flags(), header.abi_version());
        if header.check_sections().is_ok() {
            let _ = header.symbols();
        }
    }
    let _ = elf::cubin_functions(data);
    let _ = elf::global_definitions(data);
    let _ = elf::cubin_arch(data);
    let _ = archive::check(data);
    if let Ok(fatbin) = Fatbin::read(data) {
        // Each entry has a header of at least 32 bytes.
        assert!(fatbin.entries().len() <= data.len() / 32);
    }
}

/// Cache entry decoding, with the key the entry names (so that the checks past the key are
/// reached) and with another key.
pub fn cache_entry(data: &[u8]) {
    let named: Key = data
        .get(cache_entry::KEY_AT..cache_entry::KEY_AT + 32)
        .and_then(|k| k.try_into().ok())
        .unwrap_or([0; 32]);
    let other: Key = named.map(|b| !b);
    assert!(cache_entry::decode(data, &other).is_err());
    if let Ok(entry) = cache_entry::decode(data, &named) {
        // What decodes encodes to an entry that decodes to the same.
        let again = cache_entry::encode(&entry, &named);
        assert_eq!(cache_entry::decode(&again, &named), Ok(entry));
    }
    // And an encoded entry of these bytes always decodes.
    let entry = Entry {
        cubin: data.to_vec(),
        info_log: String::from_utf8_lossy(data).into_owned(),
    };
    assert_eq!(
        cache_entry::decode(&cache_entry::encode(&entry, &named), &named),
        Ok(entry)
    );
}
