//! Link inputs: their kinds, and the checks of their shape made before any compiler or driver
//! sees them (a malformed archive handed to the driver has aborted whole processes).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Error;

/// What a link input holds. [`InputKind::from_path`] maps file extensions to kinds the way
/// Numba does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// CUDA C++ source (`.cu`), compiled by NVRTC with `-rdc=true` before linking.
    Cuda,
    /// PTX assembly text (`.ptx`).
    Ptx,
    /// A device ELF image for one architecture (`.cubin`).
    Cubin,
    /// A fat binary: images and/or PTX for several architectures (`.fatbin`).
    Fatbin,
    /// A host object with embedded device code, e.g. `nvcc -c -rdc=true` output (`.o`).
    Object,
    /// A static library of such objects, e.g. `nvcc -lib -rdc=true` output (`.a`).
    Library,
    /// NVVM LTO-IR (`.ltoir`), linked by nvJitLink with link-time optimisation.
    LtoIr,
}

impl InputKind {
    /// Every kind, in the order the extensions are listed in error messages.
    pub const ALL: [InputKind; 7] = [
        InputKind::Cuda,
        InputKind::Ptx,
        InputKind::Cubin,
        InputKind::Fatbin,
        InputKind::Object,
        InputKind::Library,
        InputKind::LtoIr,
    ];

    /// The kind a file's extension names (`.cu`, `.ptx`, `.cubin`, `.fatbin`, `.o`, `.a`,
    /// `.ltoir`), or `None`.
    pub fn from_path(path: impl AsRef<Path>) -> Option<InputKind> {
        let ext = path.as_ref().extension()?.to_str()?;
        InputKind::ALL.into_iter().find(|k| k.extension() == ext)
    }

    /// The file extension of this kind, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            InputKind::Cuda => "cu",
            InputKind::Ptx => "ptx",
            InputKind::Cubin => "cubin",
            InputKind::Fatbin => "fatbin",
            InputKind::Object => "o",
            InputKind::Library => "a",
            InputKind::LtoIr => "ltoir",
        }
    }

    /// The list of supported extensions, for messages: `.cu, .ptx, ...`.
    pub(crate) fn supported_list() -> String {
        InputKind::ALL
            .iter()
            .map(|k| format!(".{}", k.extension()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::Cuda => "CUDA C++ source",
            InputKind::Ptx => "PTX",
            InputKind::Cubin => "cubin",
            InputKind::Fatbin => "fatbin",
            InputKind::Object => "object file",
            InputKind::Library => "static library",
            InputKind::LtoIr => "LTO-IR",
        })
    }
}

/// The fatbin magic number (little-endian at offset 0).
pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The magic of an `ar` archive.
const AR_MAGIC: &[u8] = b"!<arch>\n";
/// ELF machine number of CUDA device images.
pub(crate) const EM_CUDA: u16 = 190;
/// The magic of NVVM LTO-IR as NVRTC (`-dlto`) writes it (0x7F4E43ED, little-endian).
pub(crate) const LTOIR_MAGIC: [u8; 4] = [0xed, 0x43, 0x4e, 0x7f];

/// A checked input, ready for a backend.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub(crate) kind: InputKind,
    /// The name used in logs and errors: the path as given, or the caller's name.
    pub(crate) name: String,
    /// The file it came from, canonicalized (for deduplication and `#include` resolution).
    pub(crate) path: Option<PathBuf>,
    /// The exact bytes (PTX and CUDA sources without a trailing NUL).
    pub(crate) bytes: Arc<[u8]>,
}

/// Reads a file input; the kind comes from `kind` or else from the extension.
pub(crate) fn read_file(path: &Path, kind: Option<InputKind>) -> Result<Input, Error> {
    let kind = match kind {
        Some(kind) => kind,
        None => InputKind::from_path(path).ok_or_else(|| Error::UnsupportedLinkInput {
            path: path.to_path_buf(),
            extension: path
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_else(|| "(none)".into()),
            supported: InputKind::supported_list(),
        })?,
    };
    let bytes = std::fs::read(path).map_err(|source| Error::LinkInputRead {
        path: path.to_path_buf(),
        source,
    })?;
    let canonical = std::fs::canonicalize(path).ok();
    let input = Input {
        kind,
        name: path.display().to_string(),
        path: canonical,
        bytes: bytes.into(),
    };
    check_shape(&input)?;
    Ok(input)
}

/// Checks that an input's bytes have the shape its kind promises.
pub(crate) fn check_shape(input: &Input) -> Result<(), Error> {
    let bytes: &[u8] = &input.bytes;
    let mismatch = |found: String| Error::LinkInputMismatch {
        name: input.name.clone(),
        kind: input.kind,
        found,
    };
    if bytes.is_empty() {
        return Err(mismatch("it is empty".into()));
    }
    match input.kind {
        InputKind::Cuda | InputKind::Ptx => {
            if let Some(other) = sniff_binary(bytes) {
                return Err(mismatch(format!("its bytes are {other}")));
            }
            let text = std::str::from_utf8(bytes)
                .map_err(|e| mismatch(format!("it is not UTF-8 text ({e})")))?;
            let body = text.trim_end_matches('\0');
            if body.contains('\0') {
                return Err(mismatch("it contains a NUL byte inside the text".into()));
            }
            if input.kind == InputKind::Ptx && !body.contains(".version") {
                return Err(mismatch(
                    "it has no `.version` directive, so it is not PTX assembly".into(),
                ));
            }
        }
        InputKind::Cubin => {
            let elf = check_elf(bytes).map_err(&mismatch)?;
            if elf.machine != EM_CUDA {
                return Err(mismatch(format!(
                    "it is an ELF file for machine {} (a host object?), not a CUDA device \
                     image (machine {EM_CUDA}); link host objects as .o",
                    elf.machine
                )));
            }
        }
        InputKind::Object => {
            check_elf(bytes).map_err(&mismatch)?;
        }
        InputKind::Fatbin => check_fatbin(bytes).map_err(mismatch)?,
        InputKind::Library => check_archive(bytes).map_err(mismatch)?,
        InputKind::LtoIr => {
            if !bytes.starts_with(&LTOIR_MAGIC) {
                let what = match sniff_binary(bytes) {
                    Some(other) => format!("its bytes are {other}"),
                    None if looks_like_text(bytes) => "it is text".to_string(),
                    None => "it does not start with the LTO-IR magic 0x7f4e43ed".to_string(),
                };
                return Err(mismatch(format!(
                    "{what}, not LTO-IR (compile CUDA C++ to LTO-IR with NVRTC `-dlto`, or \
                     use `Linker::lto(true)` with the .cu itself)"
                )));
            }
        }
    }
    Ok(())
}

/// Names a binary format recognised by its magic, if any.
fn sniff_binary(bytes: &[u8]) -> Option<String> {
    if bytes.starts_with(b"\x7fELF") {
        return Some("an ELF file (a cubin or an object)".into());
    }
    if bytes.len() >= 4
        && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) == FATBIN_MAGIC
    {
        return Some(format!("a fatbin (magic {FATBIN_MAGIC:#010x})"));
    }
    if bytes.starts_with(AR_MAGIC) {
        return Some("an ar archive (a static library)".into());
    }
    if bytes.starts_with(&LTOIR_MAGIC) {
        return Some("LTO-IR".into());
    }
    None
}

fn looks_like_text(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    std::str::from_utf8(head).is_ok() && head.iter().all(|&b| b >= 0x20 || b"\n\r\t\0".contains(&b))
}

/// The ELF header fields the linker cares about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElfHeader {
    pub(crate) machine: u16,
    pub(crate) flags: u32,
    pub(crate) shoff: u64,
    pub(crate) shentsize: u16,
    pub(crate) shnum: u16,
}

/// Checks a 64-bit little-endian ELF header and that its section table lies in the file.
pub(crate) fn check_elf(bytes: &[u8]) -> Result<ElfHeader, String> {
    if !bytes.starts_with(b"\x7fELF") {
        return Err(match sniff_binary(bytes) {
            Some(other) => format!("its bytes are {other}, not ELF"),
            None => "it does not start with the ELF magic \\x7fELF".into(),
        });
    }
    if bytes.len() < 64 {
        return Err(format!(
            "it is truncated: {} bytes, shorter than an ELF header",
            bytes.len()
        ));
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("it is not a 64-bit little-endian ELF file".into());
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]));
    let header = ElfHeader {
        machine: u16_at(18),
        flags: u32_at(48),
        shoff: u64_at(40),
        shentsize: u16_at(58),
        shnum: u16_at(60),
    };
    let table_end = (header.shnum as u64)
        .checked_mul(header.shentsize as u64)
        .and_then(|n| n.checked_add(header.shoff));
    match table_end {
        Some(end) if end <= bytes.len() as u64 => Ok(header),
        _ => Err(format!(
            "it is truncated or corrupt: its section table ends past the file's {} bytes",
            bytes.len()
        )),
    }
}

fn check_fatbin(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 16
        || u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) != FATBIN_MAGIC
    {
        return Err(match sniff_binary(bytes) {
            Some(other) => format!("its bytes are {other}, not a fatbin"),
            None => format!("it does not start with the fatbin magic {FATBIN_MAGIC:#010x}"),
        });
    }
    let header_size = u16::from_le_bytes([bytes[6], bytes[7]]) as u64;
    let body_size = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
    match header_size.checked_add(body_size) {
        Some(total) if total <= bytes.len() as u64 => Ok(()),
        _ => Err(format!(
            "it is truncated: its header announces {} bytes but the file has {}",
            header_size.saturating_add(body_size),
            bytes.len()
        )),
    }
}

/// Walks every member header of an `ar` archive, checking that each lies inside the file.
fn check_archive(bytes: &[u8]) -> Result<(), String> {
    if !bytes.starts_with(AR_MAGIC) {
        return Err(match sniff_binary(bytes) {
            Some(other) => format!("its bytes are {other}, not an ar archive"),
            None => "it does not start with the archive magic `!<arch>\\n`".into(),
        });
    }
    let mut offset = AR_MAGIC.len();
    let mut members = 0usize;
    while offset < bytes.len() {
        if bytes.len() - offset < 60 {
            return Err(format!(
                "it is truncated: a member header at byte {offset} is cut short"
            ));
        }
        let header = &bytes[offset..offset + 60];
        if &header[58..60] != b"`\n" {
            return Err(format!(
                "it is corrupt: the member header at byte {offset} is malformed"
            ));
        }
        let size: u64 = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| {
                format!("it is corrupt: the member at byte {offset} has no valid size")
            })?;
        let end = (offset as u64 + 60)
            .checked_add(size)
            .filter(|&e| e <= bytes.len() as u64)
            .ok_or_else(|| {
                format!(
                    "it is truncated: the member at byte {offset} runs past the end of the file"
                )
            })?;
        members += 1;
        // Members are 2-byte aligned.
        offset = (end + (end & 1)) as usize;
    }
    if members == 0 {
        return Err("it is an archive with no members".into());
    }
    Ok(())
}

/// One entry of a fatbin: PTX or an ELF image, and the SM number it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FatbinEntry {
    /// True for PTX, false for an ELF image (cubin).
    pub(crate) ptx: bool,
    /// The SM number, e.g. 90.
    pub(crate) sm: u32,
}

/// The entries of a fatbin (checked with [`check_shape`] first). Kinds other than PTX and
/// ELF (e.g. LTO-IR) are skipped.
pub(crate) fn fatbin_entries(bytes: &[u8]) -> Vec<FatbinEntry> {
    let mut out = Vec::new();
    let header_size = u16::from_le_bytes([bytes[6], bytes[7]]) as usize;
    let body_size = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8])) as usize;
    let end = header_size.saturating_add(body_size).min(bytes.len());
    let mut offset = header_size;
    while offset + 32 <= end {
        let e = &bytes[offset..];
        let kind = u16::from_le_bytes([e[0], e[1]]);
        let entry_header = u32::from_le_bytes(e[4..8].try_into().unwrap_or([0; 4])) as usize;
        let size = u64::from_le_bytes(e[8..16].try_into().unwrap_or([0; 8])) as usize;
        let sm = u32::from_le_bytes(e[28..32].try_into().unwrap_or([0; 4]));
        match kind {
            1 => out.push(FatbinEntry { ptx: true, sm }),
            2 => out.push(FatbinEntry { ptx: false, sm }),
            _ => {}
        }
        match offset
            .checked_add(entry_header)
            .and_then(|o| o.checked_add(size))
        {
            Some(next) if next > offset && entry_header > 0 => offset = next,
            _ => break,
        }
    }
    out
}

/// The global symbols an input defines, where they can be read without the linker: PTX
/// (`.visible`/`.entry` functions and `.visible` globals) and cubins (ELF global symbols).
/// `None` for kinds whose symbols are not readable here (fatbins may be compressed; objects
/// and archives embed fatbins).
pub(crate) fn defined_symbols(kind: InputKind, bytes: &[u8]) -> Option<Vec<String>> {
    let mut names = match kind {
        InputKind::Ptx => ptx_definitions(std::str::from_utf8(bytes).ok()?),
        InputKind::Cubin => elf_global_definitions(bytes).ok()?,
        _ => return None,
    };
    names.sort();
    names.dedup();
    Some(names)
}

/// The names of the functions and globals a PTX module defines with external linkage.
fn ptx_definitions(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in ptx.lines() {
        let line = line.trim_start();
        let Some(rest) = line
            .strip_prefix(".visible")
            .or_else(|| line.strip_prefix(".entry").map(|_| line))
        else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(".entry") {
            if let Some(name) = leading_identifier(after.trim_start()) {
                out.push(name);
            }
        } else if let Some(after) = rest.strip_prefix(".func") {
            let mut after = after.trim_start();
            if after.starts_with('(') {
                // The return parameter list: `(.param .b32 func_retval0) name(`.
                match after.find(')') {
                    Some(close) => after = after[close + 1..].trim_start(),
                    None => continue,
                }
            }
            if let Some(name) = leading_identifier(after) {
                out.push(name);
            }
        } else if rest.starts_with(".global") || rest.starts_with(".const") {
            // `.visible .global .align 4 .b8 name[16];` or `... .u32 name = 1;`
            let decl = rest.split(['[', '=', ';']).next().unwrap_or("");
            if let Some(name) = decl
                .split_whitespace()
                .last()
                .filter(|n| !n.starts_with('.'))
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn leading_identifier(s: &str) -> Option<String> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
        .unwrap_or(s.len());
    (end > 0).then(|| s[..end].to_string())
}

/// Defined global (not weak, not local) functions and objects of an ELF file.
fn elf_global_definitions(bytes: &[u8]) -> Result<Vec<String>, String> {
    Ok(elf_symbols(bytes)?
        .into_iter()
        .filter(|s| s.bind == 1 && (s.ty == 1 || s.ty == 2) && s.defined)
        .map(|s| s.name)
        .collect())
}

/// One ELF symbol.
struct ElfSymbol {
    name: String,
    /// STB_*: 0 local, 1 global, 2 weak.
    bind: u8,
    /// STT_*: 1 object, 2 function.
    ty: u8,
    /// `st_other`.
    other: u8,
    /// Whether it is defined in a section (not `SHN_UNDEF`).
    defined: bool,
}

fn elf_symbols(bytes: &[u8]) -> Result<Vec<ElfSymbol>, String> {
    let header = check_elf(bytes)?;
    let sec = |i: usize| -> Option<(u32, u64, u64, u32, u64)> {
        let base = header.shoff as usize + i * header.shentsize as usize;
        let s = bytes.get(base..base + 64)?;
        let ty = u32::from_le_bytes(s[4..8].try_into().ok()?);
        let off = u64::from_le_bytes(s[24..32].try_into().ok()?);
        let size = u64::from_le_bytes(s[32..40].try_into().ok()?);
        let link = u32::from_le_bytes(s[40..44].try_into().ok()?);
        let entsize = u64::from_le_bytes(s[56..64].try_into().ok()?);
        Some((ty, off, size, link, entsize))
    };
    let slice = |off: u64, size: u64| -> Option<&[u8]> {
        bytes.get(off as usize..(off as usize).checked_add(size as usize)?)
    };
    let mut out = Vec::new();
    for i in 0..header.shnum as usize {
        let Some((ty, off, size, link, entsize)) = sec(i) else {
            continue;
        };
        if ty != 2 || entsize < 24 {
            continue; // not SHT_SYMTAB
        }
        let (_, str_off, str_size, _, _) = sec(link as usize).ok_or("bad string table index")?;
        let strtab = slice(str_off, str_size).ok_or("string table out of bounds")?;
        let symtab = slice(off, size).ok_or("symbol table out of bounds")?;
        for sym in symtab.chunks_exact(entsize as usize) {
            let name_off = u32::from_le_bytes(sym[0..4].try_into().unwrap_or([0; 4])) as usize;
            let name = strtab
                .get(name_off..)
                .and_then(|s| s.split(|&b| b == 0).next())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default();
            out.push(ElfSymbol {
                name,
                bind: sym[4] >> 4,
                ty: sym[4] & 0xf,
                other: sym[5],
                defined: u16::from_le_bytes([sym[6], sym[7]]) != 0,
            });
        }
    }
    Ok(out)
}

/// The ELF symbols of a cubin: `(name, is_entry)` for every defined function.
pub(crate) fn cubin_functions(bytes: &[u8]) -> Result<Vec<(String, bool)>, String> {
    Ok(elf_symbols(bytes)?
        .into_iter()
        .filter(|s| s.ty == 2 && s.defined && s.bind != 0)
        // CUDA marks kernel entries with STO_CUDA_ENTRY (0x10) in st_other.
        .map(|s| (s.name, s.other & 0x10 != 0))
        .collect())
}

/// The `sm_XY` architecture a cubin was built for (from `e_flags`), if it can be read.
pub(crate) fn cubin_arch(bytes: &[u8]) -> Option<u32> {
    let header = check_elf(bytes).ok()?;
    if header.machine != EM_CUDA {
        return None;
    }
    // CUDA 12+ ELF ABI version 8 keeps the SM in bits 8..16 of e_flags; older ABIs in the low
    // byte.
    let abi = bytes[8];
    let sm = if abi >= 8 {
        (header.flags >> 8) & 0xff
    } else {
        header.flags & 0xff
    };
    (sm != 0).then_some(sm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(kind: InputKind, bytes: &[u8]) -> Input {
        Input {
            kind,
            name: "t".into(),
            path: None,
            bytes: bytes.into(),
        }
    }

    #[test]
    fn kinds_from_extensions() {
        assert_eq!(InputKind::from_path("a/b.cu"), Some(InputKind::Cuda));
        assert_eq!(InputKind::from_path("x.ltoir"), Some(InputKind::LtoIr));
        assert_eq!(InputKind::from_path("libx.a"), Some(InputKind::Library));
        assert_eq!(InputKind::from_path("x.cpp"), None);
        assert_eq!(InputKind::from_path("noext"), None);
    }

    #[test]
    fn archive_walk_rejects_truncation() {
        let mut ar = b"!<arch>\n".to_vec();
        let mut header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "a.o/", 0, 0, 0, 644, 4
        );
        assert_eq!(header.len(), 60);
        ar.extend_from_slice(header.as_bytes());
        ar.extend_from_slice(b"abcd");
        assert!(check_shape(&input(InputKind::Library, &ar)).is_ok());
        header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "b.o/", 0, 0, 0, 644, 400
        );
        ar.extend_from_slice(header.as_bytes());
        let err = check_shape(&input(InputKind::Library, &ar))
            .unwrap_err()
            .to_string();
        assert!(err.contains("runs past the end"), "{err}");
        let err = check_shape(&input(InputKind::Library, b"!<arch>\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no members"), "{err}");
    }

    #[test]
    fn fatbin_header_checked() {
        let mut fb = FATBIN_MAGIC.to_le_bytes().to_vec();
        fb.extend_from_slice(&[1, 0, 16, 0]);
        fb.extend_from_slice(&8u64.to_le_bytes());
        fb.extend_from_slice(&[0; 8]);
        assert!(check_shape(&input(InputKind::Fatbin, &fb)).is_ok());
        fb.truncate(20);
        let err = check_shape(&input(InputKind::Fatbin, &fb))
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn mismatched_kinds_are_named() {
        let err = check_shape(&input(InputKind::Cubin, b"!<arch>\nxxxx"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ar archive"), "{err}");
        let err = check_shape(&input(InputKind::Ptx, b"int main() {}"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(".version"), "{err}");
        let err = check_shape(&input(InputKind::Ptx, b"\x7fELF...."))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ELF"), "{err}");
        let err = check_shape(&input(InputKind::Cubin, b"\x7fELF"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
    }
}
