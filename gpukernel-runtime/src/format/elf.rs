//! ELF files: cubins (device images, machine `EM_CUDA`) and host objects with embedded device
//! code, read through the `object` crate.
//!
//! Only 64-bit little-endian ELF is accepted (what CUDA writes). [`Header::read`] checks the
//! file header, [`Header::check_sections`] that the section table lies inside the file; the
//! symbol table is read by `object`, whose readers check every offset against the file.

use object::LittleEndian as LE;
use object::elf::{self, FileHeader64, SectionHeader64};
use object::read::StringTable;
use object::read::elf::{FileHeader, SectionTable, Sym};

/// The ELF machine number of CUDA device images.
pub(crate) const EM_CUDA: u16 = elf::EM_CUDA;

/// The ELF magic.
pub(crate) const MAGIC: &[u8; 4] = b"\x7fELF";

/// Why bytes are not a readable ELF file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// The bytes do not start with `\x7fELF`.
    NotElf,
    /// Shorter than an ELF64 header.
    Truncated {
        /// The length of the bytes.
        len: usize,
    },
    /// Not ELFCLASS64 with ELFDATA2LSB.
    NotElf64Le,
}

/// The section table runs past the end of the file (or cannot be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionTableError {
    /// Where the table ends by the header's numbers (`None` when that overflows).
    pub(crate) end: Option<u64>,
    /// The length of the file.
    pub(crate) len: usize,
}

/// A 64-bit little-endian ELF file header, borrowed from the file.
#[derive(Clone, Copy)]
pub(crate) struct Header<'a> {
    raw: &'a FileHeader64<LE>,
    bytes: &'a [u8],
}

impl std::fmt::Debug for Header<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Header")
            .field("machine", &self.machine())
            .field("flags", &self.flags())
            .finish()
    }
}

impl<'a> Header<'a> {
    /// Reads the file header: magic, size, class and byte order.
    pub(crate) fn read(bytes: &'a [u8]) -> Result<Header<'a>, HeaderError> {
        if !bytes.starts_with(MAGIC) {
            return Err(HeaderError::NotElf);
        }
        let Ok((raw, _)) = object::pod::from_bytes::<FileHeader64<LE>>(bytes) else {
            return Err(HeaderError::Truncated { len: bytes.len() });
        };
        if raw.e_ident.class != elf::ELFCLASS64 || raw.e_ident.data != elf::ELFDATA2LSB {
            return Err(HeaderError::NotElf64Le);
        }
        Ok(Header { raw, bytes })
    }

    /// `e_machine`.
    pub(crate) fn machine(&self) -> u16 {
        self.raw.e_machine.get(LE)
    }

    /// `e_flags`.
    pub(crate) fn flags(&self) -> u32 {
        self.raw.e_flags.get(LE)
    }

    /// The ABI version byte of `e_ident`.
    pub(crate) fn abi_version(&self) -> u8 {
        self.raw.e_ident.abi_version
    }

    /// Checks that the section table lies inside the file.
    pub(crate) fn check_sections(&self) -> Result<(), SectionTableError> {
        self.section_headers().map(|_| ())
    }

    fn section_headers(&self) -> Result<&'a [SectionHeader64<LE>], SectionTableError> {
        let end = u64::from(self.raw.e_shnum.get(LE))
            .checked_mul(u64::from(self.raw.e_shentsize.get(LE)))
            .and_then(|n| n.checked_add(self.raw.e_shoff.get(LE)));
        let error = SectionTableError {
            end,
            len: self.bytes.len(),
        };
        if end.is_none_or(|e| e > self.bytes.len() as u64) {
            return Err(error);
        }
        self.raw.section_headers(LE, self.bytes).map_err(|_| error)
    }

    /// Every symbol of the file's symbol table (`SHT_SYMTAB`; none when it has none).
    pub(crate) fn symbols(&self) -> Result<Vec<Symbol>, String> {
        let headers = self
            .section_headers()
            .map_err(|e| format!("its section table ends past the file's {} bytes", e.len))?;
        // Section names are not needed, so a missing section-name table is no error.
        let sections = SectionTable::<FileHeader64<LE>>::new(headers, StringTable::default());
        let table = sections
            .symbols(LE, self.bytes, elf::SHT_SYMTAB)
            .map_err(|e| format!("its symbol table cannot be read: {e}"))?;
        let strings = table.strings();
        Ok(table
            .symbols()
            .iter()
            .map(|sym| Symbol {
                name: sym
                    .name(LE, strings)
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default(),
                bind: sym.st_bind(),
                ty: sym.st_type(),
                other: sym.st_other(),
                defined: sym.st_shndx(LE) != elf::SHN_UNDEF,
            })
            .collect())
    }
}

/// One ELF symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    /// Its name (empty when the string table does not hold it).
    pub(crate) name: String,
    /// `STB_*`: 0 local, 1 global, 2 weak.
    pub(crate) bind: u8,
    /// `STT_*`: 1 object, 2 function.
    pub(crate) ty: u8,
    /// `st_other`.
    pub(crate) other: u8,
    /// Whether it is defined in a section (not `SHN_UNDEF`).
    pub(crate) defined: bool,
}

/// CUDA marks kernel entries with `STO_CUDA_ENTRY` in `st_other`.
const STO_CUDA_ENTRY: u8 = 0x10;

fn symbols(bytes: &[u8]) -> Result<Vec<Symbol>, String> {
    Header::read(bytes)
        .map_err(|e| match e {
            HeaderError::NotElf => "it is not an ELF file".to_string(),
            HeaderError::Truncated { len } => {
                format!("it is truncated: {len} bytes, shorter than an ELF header")
            }
            HeaderError::NotElf64Le => "it is not a 64-bit little-endian ELF file".to_string(),
        })?
        .symbols()
}

/// Defined global (not weak, not local) functions and objects of an ELF file.
pub(crate) fn global_definitions(bytes: &[u8]) -> Result<Vec<String>, String> {
    Ok(symbols(bytes)?
        .into_iter()
        .filter(|s| {
            s.bind == elf::STB_GLOBAL
                && (s.ty == elf::STT_OBJECT || s.ty == elf::STT_FUNC)
                && s.defined
        })
        .map(|s| s.name)
        .collect())
}

/// The names of every defined global (not weak, not local) symbol of an ELF file, of any
/// type (CUDA gives variables of some sections a processor-specific type).
pub(crate) fn defined_globals(bytes: &[u8]) -> Result<Vec<String>, String> {
    Ok(symbols(bytes)?
        .into_iter()
        .filter(|s| s.bind == elf::STB_GLOBAL && s.defined)
        .map(|s| s.name)
        .collect())
}

/// The functions a cubin defines: `(name, is_entry)` for every defined, non-local function.
pub(crate) fn cubin_functions(bytes: &[u8]) -> Result<Vec<(String, bool)>, String> {
    Ok(symbols(bytes)?
        .into_iter()
        .filter(|s| s.ty == elf::STT_FUNC && s.defined && s.bind != elf::STB_LOCAL)
        .map(|s| (s.name, s.other & STO_CUDA_ENTRY != 0))
        .collect())
}

/// The `sm_XY` number a cubin was built for (from `e_flags`), if it can be read.
pub(crate) fn cubin_arch(bytes: &[u8]) -> Option<u32> {
    let header = Header::read(bytes).ok()?;
    header.check_sections().ok()?;
    if header.machine() != EM_CUDA {
        return None;
    }
    // CUDA 12+ ELF ABI version 8 keeps the SM in bits 8..16 of e_flags; older ABIs in the low
    // byte.
    let flags = header.flags();
    let sm = if header.abi_version() >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    };
    (sm != 0).then_some(sm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header for `machine` with no sections.
    pub(crate) fn header_only(machine: u16) -> Vec<u8> {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(MAGIC);
        elf[4] = 2;
        elf[5] = 1;
        elf[18..20].copy_from_slice(&machine.to_le_bytes());
        elf
    }

    #[test]
    fn header_fields_and_errors() {
        let elf = header_only(EM_CUDA);
        let h = Header::read(&elf).unwrap();
        assert_eq!(h.machine(), EM_CUDA);
        assert!(h.check_sections().is_ok());
        assert!(h.symbols().unwrap().is_empty());
        assert_eq!(
            Header::read(b"\x7fELF").unwrap_err(),
            HeaderError::Truncated { len: 4 }
        );
        assert_eq!(Header::read(b"!<arch>\n").unwrap_err(), HeaderError::NotElf);
        let mut be = elf.clone();
        be[5] = 2;
        assert_eq!(Header::read(&be).unwrap_err(), HeaderError::NotElf64Le);
        let mut cut = elf;
        cut[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        cut[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        cut[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        let e = Header::read(&cut).unwrap().check_sections().unwrap_err();
        assert_eq!(
            e,
            SectionTableError {
                end: Some(1192),
                len: 64
            }
        );
    }

    #[test]
    fn real_cubin_symbols_and_arch() {
        let cubin = include_bytes!("../../tests/data/test_kernels.sm_90.cubin");
        let mut functions = cubin_functions(cubin).unwrap();
        functions.sort();
        let entries: Vec<&str> = functions
            .iter()
            .filter(|f| f.1)
            .map(|f| f.0.as_str())
            .collect();
        assert_eq!(entries, ["empty", "fails_foreign", "saxpy", "write_null"]);
        assert_eq!(cubin_arch(cubin), Some(90));
        assert!(
            global_definitions(cubin)
                .unwrap()
                .iter()
                .any(|n| n == "saxpy")
        );
        // Cut anywhere, the reader says so instead of reading past the end.
        for len in [0, 3, 63, 64, 100, cubin.len() / 2, cubin.len() - 1] {
            let _ = cubin_functions(&cubin[..len]);
            let _ = cubin_arch(&cubin[..len]);
        }
    }
}
