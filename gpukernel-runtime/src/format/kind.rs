//! The kinds of module images and link inputs, told apart by their bytes, and the checks of
//! their shape made before any compiler or the driver sees them (a malformed archive handed to
//! the driver has aborted whole processes).

use std::fmt;
use std::path::Path;

use super::elf::{self, HeaderError, SectionTableError};
use super::fatbin::{self, Fatbin};
use super::{archive, ptx, trim_nul};

/// The kind of a module image, told apart by its first bytes.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::ImageKind;
/// match ImageKind::detect(kernels_ptx().as_bytes())? {
///     ImageKind::Ptx => println!("PTX text: the driver JIT-compiles it"),
///     ImageKind::Cubin | ImageKind::Fatbin => println!("device code"),
///     _ => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// PTX assembly text.
    Ptx,
    /// A CUDA ELF object (`EM_CUDA`): a cubin.
    Cubin,
    /// A fat binary (magic `0xBA55ED50`).
    Fatbin,
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Ptx => "PTX",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbin => "fatbin",
        })
    }
}

/// What a link input holds. [`InputKind::from_path`] maps file extensions to kinds the way
/// Numba does.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::{InputKind, Linker};
/// let module = Linker::new(&ctx)?
///     .add_data(InputKind::Ptx, kernels_ptx(), "kernels.ptx")
///     .link_and_load()?;
/// assert_eq!(InputKind::from_path("lib/functions.a"), Some(InputKind::Library));
/// # Ok(()) }
/// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::InputKind;
    /// assert_eq!(InputKind::from_path("cuda/functions.cu"), Some(InputKind::Cuda));
    /// assert_eq!(InputKind::from_path("kernels.ltoir"), Some(InputKind::LtoIr));
    /// assert_eq!(InputKind::from_path("notes.txt"), None);
    /// # Ok(()) }
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Option<InputKind> {
        let ext = path.as_ref().extension()?.to_str()?;
        InputKind::ALL.into_iter().find(|k| k.extension() == ext)
    }

    /// The file extension of this kind, without the dot.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::InputKind;
    /// assert_eq!(InputKind::Fatbin.extension(), "fatbin");
    /// let accepted: Vec<_> = InputKind::ALL.iter().map(|k| k.extension()).collect();
    /// # Ok(()) }
    /// ```
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

/// The magic of NVVM LTO-IR as NVRTC (`-dlto`) writes it (0x7F4E43ED, little-endian).
pub(crate) const LTOIR_MAGIC: [u8; 4] = [0xed, 0x43, 0x4e, 0x7f];

/// Classifies a module image and checks its shape (headers within bounds), so the driver is
/// never handed a truncated or foreign file. The error is the reason, for
/// `Error::InvalidModuleImage`.
pub(crate) fn detect_image(image: &[u8]) -> Result<ImageKind, String> {
    if image.is_empty() {
        return Err("the image is empty".into());
    }
    match elf::Header::read(image) {
        Err(HeaderError::NotElf) => {}
        Err(HeaderError::Truncated { len }) => {
            return Err(format!("truncated ELF header ({len} bytes)"));
        }
        Err(HeaderError::NotElf64Le) => {
            return Err("not a 64-bit little-endian ELF object".into());
        }
        Ok(header) => {
            let machine = header.machine();
            if machine != elf::EM_CUDA {
                return Err(format!(
                    "an ELF object for machine {machine}, not a CUDA cubin (EM_CUDA = {})",
                    elf::EM_CUDA
                ));
            }
            if let Err(SectionTableError { end, len }) = header.check_sections() {
                return Err(format!(
                    "truncated cubin: its section headers end at byte {} but it has {len} bytes",
                    end.map_or("overflow".to_string(), |e| e.to_string()),
                ));
            }
            return Ok(ImageKind::Cubin);
        }
    }
    match Fatbin::read(image) {
        Err(fatbin::HeaderError::NotFatbin) => {}
        Err(fatbin::HeaderError::TruncatedHeader) => {
            return Err("truncated fatbin header".into());
        }
        Err(fatbin::HeaderError::Truncated { announced, len }) => {
            return Err(format!(
                "truncated fatbin: header says {announced} bytes, the image has {len}"
            ));
        }
        Ok(_) => return Ok(ImageKind::Fatbin),
    }
    if image.starts_with(archive::MAGIC) {
        return Err(
            "a static library (ar archive) is not a module: link it with the Linker first".into(),
        );
    }
    let text = trim_nul(image);
    match std::str::from_utf8(text) {
        Ok(t) if t.contains(".version") || t.contains(".target") || t.contains(".entry") => {
            if text.contains(&0) {
                return Err("PTX text contains a NUL byte before its end".into());
            }
            Ok(ImageKind::Ptx)
        }
        _ => Err(format!(
            "not PTX, a cubin or a fatbin (first bytes: {:02x?})",
            &image[..image.len().min(8)]
        )),
    }
}

/// Checks that an input's bytes have the shape its kind promises. The error says what the
/// bytes are instead, for `Error::LinkInputMismatch` (`… given as {kind}, but {found}`).
pub(crate) fn check_input(kind: InputKind, bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("it is empty".into());
    }
    match kind {
        InputKind::Cuda | InputKind::Ptx => {
            if let Some(other) = sniff_binary(bytes) {
                return Err(format!("its bytes are {other}"));
            }
            let text =
                std::str::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text ({e})"))?;
            let body = text.trim_end_matches('\0');
            if body.contains('\0') {
                return Err("it contains a NUL byte inside the text".into());
            }
            if kind == InputKind::Ptx && !body.contains(".version") {
                return Err("it has no `.version` directive, so it is not PTX assembly".into());
            }
        }
        InputKind::Cubin => {
            let machine = check_elf(bytes)?;
            if machine != elf::EM_CUDA {
                return Err(format!(
                    "it is an ELF file for machine {machine} (a host object?), not a CUDA device \
                     image (machine {}); link host objects as .o",
                    elf::EM_CUDA
                ));
            }
        }
        InputKind::Object => {
            check_elf(bytes)?;
        }
        InputKind::Fatbin => match Fatbin::read(bytes) {
            Ok(_) => {}
            Err(fatbin::HeaderError::Truncated { announced, len }) => {
                return Err(format!(
                    "it is truncated: its header announces {announced} bytes but the file has \
                     {len}"
                ));
            }
            Err(fatbin::HeaderError::TruncatedHeader) => {
                return Err("it is truncated: shorter than a fatbin header".into());
            }
            Err(fatbin::HeaderError::NotFatbin) => {
                return Err(match sniff_binary(bytes) {
                    Some(other) => format!("its bytes are {other}, not a fatbin"),
                    None => format!(
                        "it does not start with the fatbin magic {:#010x}",
                        fatbin::MAGIC
                    ),
                });
            }
        },
        InputKind::Library => {
            if let Some(other) = sniff_binary(bytes).filter(|_| !bytes.starts_with(archive::MAGIC))
            {
                return Err(format!("its bytes are {other}, not an ar archive"));
            }
            archive::check(bytes)?;
        }
        InputKind::LtoIr => {
            if !bytes.starts_with(&LTOIR_MAGIC) {
                let what = match sniff_binary(bytes) {
                    Some(other) => format!("its bytes are {other}"),
                    None if looks_like_text(bytes) => "it is text".to_string(),
                    None => "it does not start with the LTO-IR magic 0x7f4e43ed".to_string(),
                };
                return Err(format!(
                    "{what}, not LTO-IR (compile CUDA C++ to LTO-IR with NVRTC `-dlto`, or \
                     use `Linker::lto(true)` with the .cu itself)"
                ));
            }
        }
    }
    Ok(())
}

/// Checks a 64-bit little-endian ELF header and that its section table lies in the file;
/// returns its machine.
fn check_elf(bytes: &[u8]) -> Result<u16, String> {
    let header = elf::Header::read(bytes).map_err(|e| match e {
        HeaderError::NotElf => match sniff_binary(bytes) {
            Some(other) => format!("its bytes are {other}, not ELF"),
            None => "it does not start with the ELF magic \\x7fELF".into(),
        },
        HeaderError::Truncated { len } => {
            format!("it is truncated: {len} bytes, shorter than an ELF header")
        }
        HeaderError::NotElf64Le => "it is not a 64-bit little-endian ELF file".into(),
    })?;
    header.check_sections().map_err(|e| {
        format!(
            "it is truncated or corrupt: its section table ends past the file's {} bytes",
            e.len
        )
    })?;
    Ok(header.machine())
}

/// Names a binary format recognised by its magic, if any.
fn sniff_binary(bytes: &[u8]) -> Option<String> {
    if bytes.starts_with(elf::MAGIC) {
        return Some("an ELF file (a cubin or an object)".into());
    }
    if fatbin::has_magic(bytes) {
        return Some(format!("a fatbin (magic {:#010x})", fatbin::MAGIC));
    }
    if bytes.starts_with(archive::MAGIC) {
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

/// The global symbols an input defines, where they can be read without the linker: PTX
/// (`.visible`/`.entry` functions and `.visible` globals), cubins (ELF global symbols),
/// fatbins (those of each PTX and ELF entry, inflated), objects (those of the fatbins in
/// their device-code sections, or of the object itself when it is device code) and archives
/// (those of every member), sorted and without repeats. `None` for `.cu` and LTO-IR (NVVM
/// bitcode), for a fatbin with LTO-IR or an entry that cannot be inflated, and for unreadable
/// bytes.
pub(crate) fn defined_symbols(kind: InputKind, bytes: &[u8]) -> Option<Vec<String>> {
    let mut names = match kind {
        InputKind::Ptx => ptx::Ptx::parse(std::str::from_utf8(bytes).ok()?).definitions(),
        InputKind::Cubin => elf::global_definitions(bytes).ok()?,
        InputKind::Fatbin => fatbin_symbols(&Fatbin::read(bytes).ok()?)?,
        InputKind::Object => object_symbols(bytes)?,
        InputKind::Library => {
            let archive = object::read::archive::ArchiveFile::parse(bytes).ok()?;
            let mut names = Vec::new();
            for member in archive.members() {
                names.extend(object_symbols(member.ok()?.data(bytes).ok()?)?);
            }
            names
        }
        InputKind::Cuda | InputKind::LtoIr => return None,
    };
    names.sort();
    names.dedup();
    Some(names)
}

/// The symbols a fatbin's PTX and ELF entries define.
fn fatbin_symbols(fatbin: &Fatbin<'_>) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for image in fatbin.images() {
        match image? {
            fatbin::Image::Ptx(text) => names.extend(ptx::Ptx::parse(&text).definitions()),
            fatbin::Image::Elf(bytes) => names.extend(elf::global_definitions(&bytes).ok()?),
        }
    }
    Some(names)
}

/// The device symbols an object defines: a device ELF's own, or those of the fatbins in a
/// host object's `.nv_fatbin` / `__nv_relfatbin` sections (none when it has no device code).
fn object_symbols(bytes: &[u8]) -> Option<Vec<String>> {
    use object::read::{Object, ObjectSection};
    if elf::Header::read(bytes).ok()?.machine() == elf::EM_CUDA {
        return elf::global_definitions(bytes).ok();
    }
    let file = object::read::elf::ElfFile64::<object::LittleEndian>::parse(bytes).ok()?;
    let mut names = Vec::new();
    for section in file.sections() {
        if !matches!(section.name(), Ok(".nv_fatbin" | "__nv_relfatbin")) {
            continue;
        }
        for fatbin in fatbin::in_section(section.data().ok()?) {
            names.extend(fatbin_symbols(&fatbin)?);
        }
    }
    Some(names)
}

/// Whether an input carries LTO-IR, which only nvJitLink with `-lto` links: LTO-IR itself,
/// or a fatbin, object or archive whose fatbins have an LTO-IR entry (`nvcc -dlto`). Objects
/// are searched in their `.nv_fatbin` / `__nv_relfatbin` sections, archives member by member.
pub(crate) fn carries_ltoir(kind: InputKind, bytes: &[u8]) -> bool {
    match kind {
        InputKind::LtoIr => true,
        InputKind::Fatbin => Fatbin::read(bytes).is_ok_and(|f| f.has_ltoir()),
        InputKind::Object => object_carries_ltoir(bytes),
        InputKind::Library => {
            let Ok(archive) = object::read::archive::ArchiveFile::parse(bytes) else {
                return false;
            };
            archive
                .members()
                .filter_map(|m| m.ok()?.data(bytes).ok())
                .any(object_carries_ltoir)
        }
        InputKind::Cuda | InputKind::Ptx | InputKind::Cubin => false,
    }
}

/// Whether a host object's device-code sections hold a fatbin with LTO-IR.
fn object_carries_ltoir(bytes: &[u8]) -> bool {
    use object::read::{Object, ObjectSection};
    let Ok(file) = object::read::elf::ElfFile64::<object::LittleEndian>::parse(bytes) else {
        return false;
    };
    file.sections()
        .filter(|s| matches!(s.name(), Ok(".nv_fatbin" | "__nv_relfatbin")))
        .filter_map(|s| s.data().ok())
        .any(|data| fatbin::in_section(data).iter().any(|f| f.has_ltoir()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(check_input(InputKind::Library, &ar).is_ok());
        header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "b.o/", 0, 0, 0, 644, 400
        );
        ar.extend_from_slice(header.as_bytes());
        let err = check_input(InputKind::Library, &ar).unwrap_err();
        assert!(err.contains("runs past the end"), "{err}");
        let err = check_input(InputKind::Library, b"!<arch>\n").unwrap_err();
        assert!(err.contains("no members"), "{err}");
    }

    /// `nvcc -arch=sm_90 -rdc=true -fatbin` of `extern "C" __device__ int dupfn(int*, int)`,
    /// uncompressed (`-no-compress`), LZ4 (`-compress-mode=speed`), zstd (the default) and
    /// with `-dlto`.
    #[test]
    fn fatbin_symbols_are_read_through_every_compression() {
        for (name, bytes) in [
            (
                "plain",
                &include_bytes!("../../tests/data/dupfn.plain.fatbin")[..],
            ),
            ("lz4", include_bytes!("../../tests/data/dupfn.lz4.fatbin")),
            ("zstd", include_bytes!("../../tests/data/dupfn.zstd.fatbin")),
        ] {
            assert_eq!(
                defined_symbols(InputKind::Fatbin, bytes),
                Some(vec!["dupfn".to_string()]),
                "{name}"
            );
            assert!(!carries_ltoir(InputKind::Fatbin, bytes), "{name}");
        }
        let lto = include_bytes!("../../tests/data/dupfn.ltoir.fatbin");
        assert!(carries_ltoir(InputKind::Fatbin, lto));
        assert_eq!(
            defined_symbols(InputKind::Fatbin, lto),
            None,
            "LTO-IR is not readable"
        );
        // A corrupt compressed payload is unreadable, not a panic.
        let mut bad = include_bytes!("../../tests/data/dupfn.zstd.fatbin").to_vec();
        for b in &mut bad[90..200] {
            *b ^= 0x5a;
        }
        assert_eq!(defined_symbols(InputKind::Fatbin, &bad), None);
        let symbols = defined_symbols(
            InputKind::Fatbin,
            include_bytes!("../../tests/data/test_kernels.fatbin"),
        )
        .unwrap();
        assert!(!symbols.is_empty(), "{symbols:?}");
    }

    #[test]
    fn fatbin_header_checked() {
        let mut fb = fatbin::MAGIC.to_le_bytes().to_vec();
        fb.extend_from_slice(&[1, 0, 16, 0]);
        fb.extend_from_slice(&8u64.to_le_bytes());
        fb.extend_from_slice(&[0; 8]);
        assert!(check_input(InputKind::Fatbin, &fb).is_ok());
        fb.truncate(20);
        let err = check_input(InputKind::Fatbin, &fb).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn mismatched_kinds_are_named() {
        let err = check_input(InputKind::Cubin, b"!<arch>\nxxxx").unwrap_err();
        assert!(err.contains("ar archive"), "{err}");
        let err = check_input(InputKind::Ptx, b"int main() {}").unwrap_err();
        assert!(err.contains(".version"), "{err}");
        let err = check_input(InputKind::Ptx, b"\x7fELF....").unwrap_err();
        assert!(err.contains("ELF"), "{err}");
        let err = check_input(InputKind::Cubin, b"\x7fELF").unwrap_err();
        assert!(err.contains("truncated"), "{err}");
    }

    const PTX: &str = "\n.version 7.8\n.target sm_90\n.visible .entry saxpy()\n{\n    ret;\n}\n";

    #[test]
    fn image_kinds() {
        assert_eq!(ImageKind::detect(PTX.as_bytes()).unwrap(), ImageKind::Ptx);
        let mut with_nul = PTX.as_bytes().to_vec();
        with_nul.push(0);
        assert_eq!(ImageKind::detect(&with_nul).unwrap(), ImageKind::Ptx);

        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[18..20].copy_from_slice(&elf::EM_CUDA.to_le_bytes());
        assert_eq!(ImageKind::detect(&elf).unwrap(), ImageKind::Cubin);
        // Section headers past the end: truncated.
        elf[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        let e = ImageKind::detect(&elf).unwrap_err().to_string();
        assert!(e.contains("truncated cubin"), "{e}");
        // x86-64 ELF.
        elf[18..20].copy_from_slice(&62u16.to_le_bytes());
        let e = ImageKind::detect(&elf).unwrap_err().to_string();
        assert!(e.contains("machine 62"), "{e}");

        let mut fat = vec![0u8; 16];
        fat[..4].copy_from_slice(&fatbin::MAGIC.to_le_bytes());
        fat[6..8].copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(ImageKind::detect(&fat).unwrap(), ImageKind::Fatbin);
        fat[8..16].copy_from_slice(&100u64.to_le_bytes());
        assert!(
            ImageKind::detect(&fat)
                .unwrap_err()
                .to_string()
                .contains("truncated fatbin")
        );

        let e = ImageKind::detect(b"!<arch>\nfoo").unwrap_err().to_string();
        assert!(e.contains("static library"), "{e}");
        let e = ImageKind::detect(b"\x01\x02\x03garbage")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not PTX, a cubin or a fatbin"), "{e}");
        assert!(ImageKind::detect(b"").is_err());
        let e = ImageKind::detect(b".version 7.8\0.entry x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("NUL"), "{e}");
    }

    #[test]
    fn real_inputs_pass_their_checks() {
        let cubin = include_bytes!("../../tests/data/test_kernels.sm_90.cubin");
        let fatbin = include_bytes!("../../tests/data/test_kernels.fatbin");
        let ptx = include_str!("../../tests/data/test_kernels.ptx");
        assert_eq!(detect_image(cubin), Ok(ImageKind::Cubin));
        assert_eq!(detect_image(fatbin), Ok(ImageKind::Fatbin));
        assert_eq!(detect_image(ptx.as_bytes()), Ok(ImageKind::Ptx));
        assert_eq!(check_input(InputKind::Cubin, cubin), Ok(()));
        assert_eq!(check_input(InputKind::Fatbin, fatbin), Ok(()));
        assert_eq!(check_input(InputKind::Ptx, ptx.as_bytes()), Ok(()));
        let symbols = defined_symbols(InputKind::Cubin, cubin).unwrap();
        assert!(symbols.iter().any(|s| s == "saxpy"), "{symbols:?}");
        // The PTX and the cubin built from it define the same kernels.
        let kernels = |names: Vec<String>| -> Vec<String> {
            names.into_iter().filter(|n| !n.starts_with("__")).collect()
        };
        assert_eq!(
            defined_symbols(InputKind::Ptx, ptx.as_bytes()).map(kernels),
            defined_symbols(InputKind::Cubin, cubin).map(kernels)
        );
    }
}
