//! The declaration record: what one `declare_device!` entry promises about its foreign symbol,
//! exported by the device build as a global (`__gpukernel_foreign_<symbol>_<hash>`) whose
//! bytes are UTF-8 text, one `key=value` per line:
//!
//! ```text
//! gpukernel-foreign-v1
//! symbol=mul_f32_f32
//! abi=numba            (or `c`: a plain C function, no status and no return slot)
//! at=src/ffi.rs:12     (the Rust declaration: `file!()` and the symbol's line)
//! ret=float            (the C type; `void` for none)
//! arg=float            (one line per argument, in order)
//! struct=Pair:8:4      (a struct the entry passes: name, size, alignment on nvptx64)
//! field=Pair:a:0:4:3  (its fields: struct, name, offset, size, kind)
//! ```
//!
//! C types are spelled with builtin types only (`int`, `unsigned long long`), so the text
//! compiles anywhere. A `#[repr(C)]` struct is `struct Name` (its C name may differ); its
//! `struct=` line gives the size and alignment the Rust compiler laid out, and its `field=`
//! lines each field's offset, size and kind (`gpukernel_device::signature::kind`'s numbers,
//! [`kind`] here; read as a C type by [`field_c_type`]: a field that is an array or a struct
//! is `bytes`, checked by offset and size), for `#[derive(DeviceCopy)]` structs; a
//! hand-written `unsafe impl DeviceCopy` gives no fields. The fields of a nested derived
//! struct and the first element of an array follow their field's line, named by their C
//! member designator (`field=Outer:inner.a:0:4:3`, `field=Outer:v[0]:8:4:2`; offsets from the
//! start of the outer struct), so that their types are checked too.

/// The prefix of the exported record globals.
pub const RECORD_PREFIX: &str = "__gpukernel_foreign_";

/// The record's first line (its format version).
pub const FORMAT: &str = "gpukernel-foreign-v1";

/// The ABI of a foreign function.
///
/// ```
/// use gpukernel_ffi_check::{Declaration, ForeignAbi};
/// let d = Declaration::parse("gpukernel-foreign-v1\nsymbol=f\nabi=numba\nat=a.rs:1\nret=int\n").unwrap();
/// assert_eq!(d.abi, ForeignAbi::Numba);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForeignAbi {
    /// Numba's: `extern "C" __device__ int f(T* ret, args...)`, 0 meaning success.
    Numba,
    /// A plain C function: `extern "C" __device__ T f(args...)`.
    C,
}

/// The layout of a `#[repr(C)]` struct a declaration passes (by value or pointed to), as the
/// Rust compiler laid it out for nvptx64.
///
/// ```
/// use gpukernel_ffi_check::Declaration;
/// let d = Declaration::parse(
///     "gpukernel-foreign-v1\nsymbol=f\nabi=c\nat=a.rs:1\nret=void\narg=struct Pair\n\
///      struct=Pair:8:4\nfield=Pair:a:0:4:3\nfield=Pair:b:4:4:1\n",
/// )
/// .unwrap();
/// let pair = &d.structs[0];
/// assert_eq!((pair.name.as_str(), pair.size, pair.align), ("Pair", 8, 4));
/// assert_eq!(pair.fields[1].c_type, "unsigned int");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructLayout {
    /// The Rust struct's name (the record's `struct Name`).
    pub name: String,
    /// `size_of`.
    pub size: u64,
    /// `align_of`.
    pub align: u64,
    /// The named fields, in declaration order (none for a hand-written `DeviceCopy` impl).
    pub fields: Vec<FieldLayout>,
}

/// One field of a [`StructLayout`].
///
/// ```
/// use gpukernel_ffi_check::Declaration;
/// let d = Declaration::parse(
///     "gpukernel-foreign-v1\nsymbol=f\nabi=c\nat=a.rs:1\nret=void\narg=struct V\n\
///      struct=V:12:4\nfield=V:xyz:0:12:7\n",
/// )
/// .unwrap();
/// let f = &d.structs[0].fields[0];
/// assert_eq!((f.name.as_str(), f.offset, f.size, f.c_type.as_str()), ("xyz", 0, 12, "bytes"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// The Rust field's name (a tuple struct's are `0`, `1`, ...).
    pub name: String,
    /// `offset_of`.
    pub offset: u64,
    /// `size_of` of the field's type.
    pub size: u64,
    /// The field's C type (`float`, `unsigned int`, `struct f16`), or `bytes` for an array or
    /// a struct (checked by offset and size).
    pub c_type: String,
}

/// One `declare_device!` declaration, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Declaration {
    /// The foreign symbol.
    pub symbol: String,
    /// Its ABI.
    pub abi: ForeignAbi,
    /// The Rust declaration: `file:line`.
    pub declared_at: String,
    /// The C return type (`void` for none); `struct Name` where the C name is not known.
    pub ret: String,
    /// The C argument types (after the return slot, for Numba's ABI).
    pub args: Vec<String>,
    /// The layouts of the structs it passes (records of this version; empty before).
    pub structs: Vec<StructLayout>,
}

impl Declaration {
    /// Parses one record's text (see the module's documentation); `None` if it is not one.
    ///
    /// ```
    /// use gpukernel_ffi_check::Declaration;
    /// assert!(Declaration::parse("not a record").is_none());
    /// ```
    pub fn parse(record: &str) -> Option<Declaration> {
        let mut lines = record.lines();
        if lines.next()? != FORMAT {
            return None;
        }
        let (mut symbol, mut abi, mut at, mut ret) = (None, None, None, None);
        let mut args = Vec::new();
        let mut structs: Vec<StructLayout> = Vec::new();
        for line in lines {
            let (key, value) = line.split_once('=')?;
            match key {
                "symbol" => symbol = Some(value.to_owned()),
                "abi" => {
                    abi = Some(match value {
                        "numba" => ForeignAbi::Numba,
                        "c" => ForeignAbi::C,
                        _ => return None,
                    })
                }
                "at" => at = Some(value.to_owned()),
                "ret" => ret = Some(value.to_owned()),
                "arg" => args.push(value.to_owned()),
                "struct" => {
                    let mut parts = value.split(':');
                    let (name, size, align) = (parts.next()?, parts.next()?, parts.next()?);
                    if !structs.iter().any(|s| s.name == name) {
                        structs.push(StructLayout {
                            name: name.to_owned(),
                            size: size.parse().ok()?,
                            align: align.parse().ok()?,
                            fields: Vec::new(),
                        });
                    }
                }
                "field" => {
                    let mut parts = value.splitn(5, ':');
                    let (owner, name, offset, size, kind) = (
                        parts.next()?,
                        parts.next()?,
                        parts.next()?,
                        parts.next()?,
                        parts.next()?,
                    );
                    let size: u64 = size.parse().ok()?;
                    let field = FieldLayout {
                        name: name.to_owned(),
                        offset: offset.parse().ok()?,
                        size,
                        c_type: field_c_type(kind.parse().ok()?, size as usize).to_owned(),
                    };
                    let owner = structs.iter_mut().find(|s| s.name == owner)?;
                    if !owner.fields.contains(&field) {
                        owner.fields.push(field);
                    }
                }
                _ => {}
            }
        }
        Some(Declaration {
            symbol: symbol?,
            abi: abi?,
            declared_at: at?,
            ret: ret?,
            args,
            structs,
        })
    }

    /// The C declaration this declaration stands for, e.g.
    /// `extern "C" __device__ int mul_f32_f32(float*, float, float)`.
    ///
    /// ```
    /// use gpukernel_ffi_check::Declaration;
    /// let d = Declaration::parse(
    ///     "gpukernel-foreign-v1\nsymbol=mul\nabi=numba\nat=a.rs:3\nret=float\narg=float\narg=float\n",
    /// )
    /// .unwrap();
    /// assert_eq!(d.c_declaration(), "extern \"C\" __device__ int mul(float*, float, float)");
    /// ```
    pub fn c_declaration(&self) -> String {
        let (ret, mut params) = match self.abi {
            ForeignAbi::Numba => ("int".to_owned(), vec![format!("{}*", self.ret)]),
            ForeignAbi::C => (self.ret.clone(), Vec::new()),
        };
        params.extend(self.args.iter().cloned());
        format!(
            "extern \"C\" __device__ {ret} {}({})",
            self.symbol,
            params.join(", ")
        )
    }

    /// The Rust declaration's file and line, for a `#line` directive.
    pub fn file_and_line(&self) -> (&str, u32) {
        match self.declared_at.rsplit_once(':') {
            Some((file, line)) => (file, line.parse().unwrap_or(1)),
            None => (&self.declared_at, 1),
        }
    }

    /// The layout recorded for `struct Name` (a declared type's spelling), if any.
    pub fn struct_layout(&self, c_type: &str) -> Option<&StructLayout> {
        let name = c_type
            .trim()
            .trim_end_matches('*')
            .trim()
            .trim_start_matches("const ")
            .strip_prefix("struct ")?
            .trim();
        self.structs.iter().find(|s| s.name == name)
    }
}

/// The kinds of a `field=` line: `gpukernel_device::signature::kind`'s numbers (the record
/// carries them; a test of the workspace keeps the two lists equal).
pub mod kind {
    /// An unsigned integer.
    pub const UNSIGNED: u8 = 1;
    /// A signed integer.
    pub const SIGNED: u8 = 2;
    /// An IEEE binary float (`f32`, `f64`, `f16`).
    pub const FLOAT: u8 = 3;
    /// `bool`.
    pub const BOOL: u8 = 4;
    /// `bf16`.
    pub const BFLOAT: u8 = 6;
}

/// The C spelling of a field of `kind` ([`kind`]) and `size` bytes, or `bytes` for anything
/// else (arrays, structs, opaque types).
///
/// ```
/// use gpukernel_ffi_check::record::field_c_type;
/// assert_eq!(field_c_type(3, 4), "float");
/// assert_eq!(field_c_type(1, 8), "unsigned long long");
/// assert_eq!(field_c_type(7, 12), "bytes");
/// ```
pub const fn field_c_type(kind: u8, size: usize) -> &'static str {
    match (kind, size) {
        (kind::UNSIGNED, 1) => "unsigned char",
        (kind::UNSIGNED, 2) => "unsigned short",
        (kind::UNSIGNED, 4) => "unsigned int",
        (kind::UNSIGNED, 8) => "unsigned long long",
        (kind::SIGNED, 1) => "signed char",
        (kind::SIGNED, 2) => "short",
        (kind::SIGNED, 4) => "int",
        (kind::SIGNED, 8) => "long long",
        (kind::FLOAT, 2) => "struct f16",
        (kind::FLOAT, 4) => "float",
        (kind::FLOAT, 8) => "double",
        (kind::BOOL, 1) => "bool",
        (kind::BFLOAT, 2) => "struct bf16",
        _ => "bytes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_with_structs_parse_and_earlier_ones_still_do() {
        let old =
            "gpukernel-foreign-v1\nsymbol=f\nabi=numba\nat=src/a.rs:4\nret=struct Pair\narg=int\n";
        let d = Declaration::parse(old).unwrap();
        assert!(d.structs.is_empty());
        assert_eq!(d.file_and_line(), ("src/a.rs", 4));
        let new = format!(
            "{old}struct=Pair:12:4\nfield=Pair:a:0:4:3\nfield=Pair:b:4:8:7\nstruct=Pair:12:4\n"
        );
        let d = Declaration::parse(&new).unwrap();
        assert_eq!(d.structs.len(), 1);
        assert_eq!(
            d.struct_layout("const struct Pair*").unwrap().fields.len(),
            2
        );
        assert!(d.struct_layout("float").is_none());
        // A field of a struct the record does not describe: not a record of this format.
        assert!(Declaration::parse(&format!("{old}field=Other:a:0:4:3\n")).is_none());
    }
}
