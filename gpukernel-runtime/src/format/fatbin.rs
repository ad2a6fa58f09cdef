//! Fat binaries (`nvcc -fatbin`): a header, then entries of PTX or ELF images, each for one
//! architecture. No maintained crate reads them, so this one is by hand; every read is
//! bounds-checked.
//!
//! Layout (little-endian): the file header is `magic: u32`, `version: u16`,
//! `header_size: u16`, `body_size: u64`; the body holds entries, each starting with
//! `kind: u16`, `_: u16`, `header_size: u32`, `size: u64`, ..., `sm: u32` at byte 28, then
//! its payload (`size` bytes after its header).

/// The fatbin magic number (little-endian at offset 0).
pub(crate) const MAGIC: u32 = 0xBA55_ED50;

/// Whether `bytes` start with the fatbin magic.
pub(crate) fn has_magic(bytes: &[u8]) -> bool {
    u32_at(bytes, 0) == Some(MAGIC)
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        bytes.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Why bytes are not a readable fatbin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// No fatbin magic.
    NotFatbin,
    /// The magic, but shorter than the 16-byte header.
    TruncatedHeader,
    /// The header announces more bytes than there are.
    Truncated {
        /// Header plus body size, as announced (saturating).
        announced: u64,
        /// The length of the bytes.
        len: usize,
    },
}

/// A fatbin's file header, checked against the length of the bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fatbin<'a> {
    bytes: &'a [u8],
    header_size: u64,
    body_size: u64,
}

/// One entry of a fatbin: PTX or an ELF image, and the SM number it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// True for PTX, false for an ELF image (cubin).
    pub(crate) ptx: bool,
    /// The SM number, e.g. 90.
    pub(crate) sm: u32,
}

/// An entry header: kind(2) reserved(2) header size(4) payload size(8) ... sm(4) at 28.
const ENTRY_HEADER_MIN: usize = 32;
const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
/// LTO-IR (`nvcc -dlto`), which only nvJitLink with `-lto` links.
const KIND_LTOIR: u16 = 8;
/// An entry header long enough to hold the compression fields: the compressed length (u32 at
/// 16), the flags (u64 at 40) and the inflated length (u64 at 56).
const ENTRY_HEADER_COMPRESSION: usize = 64;
/// Flag of an LZ4-compressed payload (a raw LZ4 block; `nvcc -compress-mode=speed`, the
/// default before CUDA 12.8).
const FLAG_LZ4: u64 = 0x2000;
/// Flag of a zstd-compressed payload (a zstd frame; CUDA 13's default).
const FLAG_ZSTD: u64 = 0x8000;
/// The largest payload inflated here: a header may announce any length.
const MAX_INFLATED: u64 = 256 << 20;

/// The code of one PTX or ELF entry, inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Image {
    /// PTX text (without trailing NULs).
    Ptx(String),
    /// An ELF image (a cubin).
    Elf(Vec<u8>),
}

/// One entry as it lies in the fatbin.
#[derive(Debug, Clone, Copy)]
struct RawEntry<'a> {
    kind: u16,
    sm: u32,
    /// The entry's header (at least [`ENTRY_HEADER_MIN`] bytes).
    header: &'a [u8],
    /// Its payload (`size` bytes after the header, padding included).
    payload: &'a [u8],
}

impl RawEntry<'_> {
    /// The payload, inflated when compressed; `None` when it cannot be read (an unknown
    /// compression, a corrupt stream, an announced length beyond [`MAX_INFLATED`]).
    fn inflate(&self) -> Option<Vec<u8>> {
        let flags = u64_at(self.header, 40).unwrap_or(0);
        if flags & (FLAG_LZ4 | FLAG_ZSTD) == 0 {
            return Some(self.payload.to_vec());
        }
        if self.header.len() < ENTRY_HEADER_COMPRESSION {
            return None;
        }
        let compressed = usize::try_from(u32_at(self.header, 16)?).ok()?;
        let inflated = u64_at(self.header, 56)?;
        if inflated > MAX_INFLATED {
            return None;
        }
        let input = self.payload.get(..compressed)?;
        let out = if flags & FLAG_LZ4 != 0 {
            // An LZ4 block inflates at most 255-fold: a larger announced length is corrupt
            // (and would be allocated up front).
            if inflated > (compressed as u64).saturating_mul(255).saturating_add(64) {
                return None;
            }
            lz4_flex::block::decompress(input, usize::try_from(inflated).ok()?).ok()?
        } else {
            use std::io::Read;
            let mut decoder = ruzstd::decoding::StreamingDecoder::new(input).ok()?;
            let mut out = Vec::new();
            (&mut decoder).take(inflated).read_to_end(&mut out).ok()?;
            out
        };
        (out.len() as u64 == inflated).then_some(out)
    }
}

impl<'a> Fatbin<'a> {
    /// Reads the file header and checks that the body lies inside `bytes`.
    pub(crate) fn read(bytes: &'a [u8]) -> Result<Fatbin<'a>, HeaderError> {
        if !has_magic(bytes) {
            return Err(HeaderError::NotFatbin);
        }
        let (Some(header_size), Some(body_size)) = (u16_at(bytes, 6), u64_at(bytes, 8)) else {
            return Err(HeaderError::TruncatedHeader);
        };
        let header_size = u64::from(header_size);
        match header_size.checked_add(body_size) {
            Some(total) if total <= bytes.len() as u64 => Ok(Fatbin {
                bytes,
                header_size,
                body_size,
            }),
            _ => Err(HeaderError::Truncated {
                announced: header_size.saturating_add(body_size),
                len: bytes.len(),
            }),
        }
    }

    /// The PTX and ELF entries, in order; other kinds (e.g. LTO-IR) are skipped. Stops at the
    /// first entry whose header does not fit in the body.
    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.raw_entries()
            .into_iter()
            .filter_map(|RawEntry { kind, sm, .. }| match kind {
                KIND_PTX => Some(Entry { ptx: true, sm }),
                KIND_ELF => Some(Entry { ptx: false, sm }),
                _ => None,
            })
            .collect()
    }

    /// Whether the fatbin holds an executable ELF image (whole-program machine code, which
    /// the driver loads as it is) for SM `sm`: ptxas's output without `-c`, as nvptx-builder
    /// embeds it. A relocatable one (`-rdc`) needs a link first.
    pub(crate) fn has_executable_elf_for(&self, sm: u32) -> bool {
        const ET_EXEC: u16 = 2;
        self.raw_entries()
            .iter()
            .filter(|e| e.kind == KIND_ELF && e.sm == sm)
            .filter_map(RawEntry::inflate)
            .any(|elf| elf.starts_with(b"\x7fELF") && u16_at(&elf, 16) == Some(ET_EXEC))
    }

    /// The SM numbers of the relocatable ELF images (`ptxas -c`, `nvcc -rdc`): machine code a
    /// link takes as it is.
    pub(crate) fn relocatable_elf_sms(&self) -> Vec<u32> {
        const ET_REL: u16 = 1;
        let mut sms: Vec<u32> = self
            .raw_entries()
            .iter()
            .filter(|e| e.kind == KIND_ELF)
            .filter(|e| {
                e.inflate().is_some_and(|elf| {
                    elf.starts_with(b"\x7fELF") && u16_at(&elf, 16) == Some(ET_REL)
                })
            })
            .map(|e| e.sm)
            .collect();
        sms.dedup();
        sms
    }

    /// The first relocatable ELF image for SM `sm`, inflated.
    pub(crate) fn relocatable_elf_for(&self, sm: u32) -> Option<Vec<u8>> {
        const ET_REL: u16 = 1;
        self.raw_entries()
            .iter()
            .filter(|e| e.kind == KIND_ELF && e.sm == sm)
            .filter_map(RawEntry::inflate)
            .find(|elf| elf.starts_with(b"\x7fELF") && u16_at(elf, 16) == Some(ET_REL))
    }

    /// Whether an ELF image (relocatable or not) is for SM `sm` exactly.
    pub(crate) fn has_elf_for(&self, sm: u32) -> bool {
        self.raw_entries()
            .iter()
            .any(|e| e.kind == KIND_ELF && e.sm == sm)
    }

    /// Whether an entry holds LTO-IR (a fatbin of `nvcc -dlto`).
    pub(crate) fn has_ltoir(&self) -> bool {
        self.raw_entries().iter().any(|e| e.kind == KIND_LTOIR)
    }

    /// The code of each PTX and ELF entry, inflated one at a time as the iterator is walked;
    /// `None` for an entry that cannot be read, or that holds LTO-IR (whose symbols are not
    /// readable here).
    pub(crate) fn images(&self) -> impl Iterator<Item = Option<Image>> + 'a {
        self.raw_entries()
            .into_iter()
            .filter(|e| matches!(e.kind, KIND_PTX | KIND_ELF | KIND_LTOIR))
            .map(|entry| match entry.kind {
                KIND_PTX => {
                    let bytes = entry.inflate()?;
                    let text = std::str::from_utf8(super::trim_nul(&bytes)).ok()?;
                    Some(Image::Ptx(text.to_owned()))
                }
                KIND_ELF => Some(Image::Elf(entry.inflate()?)),
                _ => None,
            })
    }

    /// The bytes after this fatbin (its header and body), where a section may hold the next.
    fn rest(&self) -> &'a [u8] {
        // Both fit in the bytes (checked by `read`), so in usize.
        &self.bytes[(self.header_size + self.body_size) as usize..]
    }

    /// Every entry, in order.
    fn raw_entries(&self) -> Vec<RawEntry<'a>> {
        let mut out = Vec::new();
        // Both fit in the bytes (checked by `read`), so in usize.
        let end = (self.header_size + self.body_size) as usize;
        let mut offset = self.header_size as usize;
        while end - offset >= ENTRY_HEADER_MIN {
            let entry = &self.bytes[offset..end];
            let (Some(kind), Some(entry_header), Some(size), Some(sm)) = (
                u16_at(entry, 0),
                u32_at(entry, 4),
                u64_at(entry, 8),
                u32_at(entry, 28),
            ) else {
                break;
            };
            // Clipped to the body: an entry that runs past it is the last one read.
            let header_end = (entry_header as usize).clamp(ENTRY_HEADER_MIN, entry.len());
            let payload_end = u64::from(entry_header)
                .saturating_add(size)
                .min(entry.len() as u64) as usize;
            out.push(RawEntry {
                kind,
                sm,
                header: &entry[..header_end],
                payload: &entry[header_end..payload_end.max(header_end)],
            });
            let next = (offset as u64)
                .checked_add(u64::from(entry_header))
                .and_then(|o| o.checked_add(size));
            match next {
                Some(next) if entry_header > 0 && next <= end as u64 => offset = next as usize,
                _ => break,
            }
        }
        out
    }
}

/// The fatbins a section holds one after another (`.nv_fatbin`, `__nv_relfatbin` of a host
/// object), each starting at an 8-byte boundary; the walk stops at the first that is not one.
pub(crate) fn in_section(mut bytes: &[u8]) -> Vec<Fatbin<'_>> {
    let mut out = Vec::new();
    while let Ok(fatbin) = Fatbin::read(bytes) {
        let rest = fatbin.rest();
        out.push(fatbin);
        let consumed = bytes.len() - rest.len();
        let padded = consumed.next_multiple_of(8).min(bytes.len());
        bytes = &bytes[padded..];
    }
    out
}

/// The fatbins embedded anywhere in `bytes` (a host object's sections, or those of an
/// archive's members, which start at any even offset), found by their magic.
pub(crate) fn embedded(bytes: &[u8]) -> Vec<Fatbin<'_>> {
    let magic = MAGIC.to_le_bytes();
    bytes
        .windows(magic.len())
        .enumerate()
        .filter(|(_, w)| *w == magic)
        .filter_map(|(o, _)| Fatbin::read(&bytes[o..]).ok())
        .collect()
}

/// A fatbin of `(kind, sm, payload)` entries, uncompressed (tests only): kind 1 PTX, 2 ELF.
#[cfg(test)]
pub(crate) fn build_for_tests(entries: &[(u16, u32, Vec<u8>)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (kind, sm, payload) in entries {
        let mut e = vec![0u8; 64];
        e[0..2].copy_from_slice(&kind.to_le_bytes());
        e[4..8].copy_from_slice(&64u32.to_le_bytes());
        e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        e[28..32].copy_from_slice(&sm.to_le_bytes());
        e.extend_from_slice(payload);
        body.extend(e);
    }
    let mut fb = MAGIC.to_le_bytes().to_vec();
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&16u16.to_le_bytes());
    fb.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fb.extend(body);
    fb
}

/// The first bytes of an ELF image of type `e_type` (1 relocatable, 2 executable; tests only).
#[cfg(test)]
pub(crate) fn elf_for_tests(e_type: u16) -> Vec<u8> {
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(16, 0);
    elf.extend_from_slice(&e_type.to_le_bytes());
    elf.resize(64, 0);
    elf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executable_machine_code_is_told_from_relocatable() {
        let fb = build_for_tests(&[
            (KIND_ELF, 80, elf_for_tests(2)),
            (KIND_ELF, 90, elf_for_tests(1)),
            (KIND_PTX, 90, b".version 7.8\n".to_vec()),
        ]);
        let f = Fatbin::read(&fb).unwrap();
        assert!(f.has_executable_elf_for(80));
        // Relocatable (`-rdc`) machine code needs a link; no code at all for sm_100.
        assert!(!f.has_executable_elf_for(90));
        assert!(!f.has_executable_elf_for(100));
    }

    fn header(header_size: u16, body_size: u64) -> Vec<u8> {
        let mut fb = MAGIC.to_le_bytes().to_vec();
        fb.extend_from_slice(&1u16.to_le_bytes());
        fb.extend_from_slice(&header_size.to_le_bytes());
        fb.extend_from_slice(&body_size.to_le_bytes());
        fb
    }

    fn entry(kind: u16, sm: u32, payload: usize) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[0..2].copy_from_slice(&kind.to_le_bytes());
        e[4..8].copy_from_slice(&64u32.to_le_bytes());
        e[8..16].copy_from_slice(&(payload as u64).to_le_bytes());
        e[28..32].copy_from_slice(&sm.to_le_bytes());
        e.resize(64 + payload, 0xab);
        e
    }

    #[test]
    fn header_is_checked() {
        assert_eq!(Fatbin::read(b"").unwrap_err(), HeaderError::NotFatbin);
        assert_eq!(
            Fatbin::read(&MAGIC.to_le_bytes()).unwrap_err(),
            HeaderError::TruncatedHeader
        );
        let mut fb = header(16, 8);
        fb.extend_from_slice(&[0; 8]);
        assert!(Fatbin::read(&fb).unwrap().entries().is_empty());
        fb.truncate(20);
        assert_eq!(
            Fatbin::read(&fb).unwrap_err(),
            HeaderError::Truncated {
                announced: 24,
                len: 20
            }
        );
        let fb = header(16, u64::MAX);
        assert_eq!(
            Fatbin::read(&fb).unwrap_err(),
            HeaderError::Truncated {
                announced: u64::MAX,
                len: 16
            }
        );
    }

    #[test]
    fn entries_are_listed_and_bounded() {
        let body: Vec<u8> = [entry(2, 90, 10), entry(1, 80, 3), entry(4, 90, 0)].concat();
        let mut fb = header(16, body.len() as u64);
        fb.extend_from_slice(&body);
        let entries = Fatbin::read(&fb).unwrap().entries();
        assert_eq!(
            entries,
            [Entry { ptx: false, sm: 90 }, Entry { ptx: true, sm: 80 }]
        );
        assert!(!Fatbin::read(&fb).unwrap().has_ltoir());
        // Two fatbins in a row in a section (the second at an 8-byte boundary), the second
        // with LTO-IR.
        let body: Vec<u8> = [entry(8, 90, 5)].concat();
        let mut second = header(16, body.len() as u64);
        second.extend_from_slice(&body);
        let mut section = fb.clone();
        section.resize(fb.len().next_multiple_of(8), 0);
        section.extend_from_slice(&second);
        let found = in_section(&section);
        assert_eq!(found.len(), 2);
        assert!(!found[0].has_ltoir() && found[1].has_ltoir());
        // An entry announcing more than the body holds ends the walk.
        let mut big = entry(2, 90, 0);
        big[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut fb = header(16, big.len() as u64);
        fb.extend_from_slice(&big);
        assert_eq!(Fatbin::read(&fb).unwrap().entries().len(), 1);
    }

    #[test]
    fn announced_lengths_are_bounded() {
        for (flag, inflated) in [(FLAG_LZ4, 1u64 << 20), (FLAG_ZSTD, MAX_INFLATED + 1)] {
            let mut e = entry(KIND_ELF, 90, 8);
            e[16..20].copy_from_slice(&8u32.to_le_bytes());
            e[40..48].copy_from_slice(&flag.to_le_bytes());
            e[56..64].copy_from_slice(&inflated.to_le_bytes());
            let mut fb = header(16, e.len() as u64);
            fb.extend_from_slice(&e);
            let fatbin = Fatbin::read(&fb).unwrap();
            let images: Vec<Option<Image>> = fatbin.images().collect();
            assert_eq!(images, [None], "{flag:#x}");
        }
    }

    #[test]
    fn real_fatbin() {
        let bytes = include_bytes!("../../tests/data/test_kernels.fatbin");
        let entries = Fatbin::read(bytes).unwrap().entries();
        assert!(entries.iter().any(|e| !e.ptx && e.sm == 90), "{entries:?}");
    }
}
