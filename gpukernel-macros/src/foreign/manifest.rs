//! The declaration record: what one `declare_device!` entry promises about its foreign symbol,
//! exported by the device build as a global so that the linker can check the definition.
//!
//! On nvptx64 each entry becomes `#[no_mangle] static __gpukernel_foreign_<symbol>_<hash>:
//! [u8; N]`, whose bytes are UTF-8 text, one `key=value` per line:
//!
//! ```text
//! gpukernel-foreign-v1
//! symbol=mul_f32_f32
//! abi=numba            (or `c`: a plain C function, no status and no return slot)
//! at=src/ffi.rs:12     (the Rust declaration: `file!()` and the symbol's line)
//! ret=float            (the C type; `void` for none)
//! arg=float            (one line per argument, in order)
//! ```
//!
//! C types are spelled with builtin types only (`int`, `unsigned long long`: see [`c_type`]). A
//! type the macro cannot spell in C (a `DeviceCopy` struct, or a pointer to one) is written
//! `struct Name` (`struct Name*`): its C name may differ, so the checks accept any class
//! there, and the linker compares its size in the PTX. The global's name carries a hash of the crate, the
//! symbol and the position, so that two declarations of one symbol never collide.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

use super::Entry;
use crate::hygiene::Support;
use crate::ty::strip;

/// The prefix of the exported record globals (`gpukernel_device::FOREIGN_RECORD_PREFIX` and
/// the runtime's reader use the same string).
pub(super) const SYMBOL_PREFIX: &str = "__gpukernel_foreign_";

/// The record's first line (its format version).
const FORMAT: &str = "gpukernel-foreign-v1";

/// The record global of `entry` (device build only).
pub(super) fn record(entry: &Entry, support: &Support) -> TokenStream {
    let private = support.private();
    let symbol = entry.symbol.value();
    let span = entry.symbol.span();
    let line = span_line(span);
    let abi = if entry.is_c_abi() { "c" } else { "numba" };
    let ret = entry.ret.as_ref().map_or_else(|| "void".to_owned(), c_type);
    let head = format!("{FORMAT}\nsymbol={symbol}\nabi={abi}\nat=");
    let mut tail = String::new();
    tail.push_str(&format!("\nret={ret}"));
    for arg in &entry.args {
        tail.push_str(&format!("\narg={}", c_type(&arg.ty)));
    }
    tail.push('\n');
    let line_tokens = match line {
        Some(line) => {
            let line = line.to_string();
            quote!(#line)
        }
        None => quote_spanned!(span=> #private::core::line!()),
    };
    let name = syn::Ident::new(
        &format!(
            "{SYMBOL_PREFIX}{symbol}_{:016x}",
            position_hash(&symbol, line, entry)
        ),
        span,
    );
    let cfgs = &entry.cfgs;
    let structs = by_value_structs(entry).into_iter().map(
        |(c_name, ty)| quote_spanned!(ty.span()=> #private::ForeignStruct::of::<#ty>(#c_name)),
    );
    quote_spanned! {span=>
        #(#cfgs)*
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            const RECORD: &str = #private::core::concat!(#head, #private::core::file!(), ":", #line_tokens, #tail);
            // The layouts of the structs passed by value, as this target lays them out.
            const STRUCTS: &[#private::ForeignStruct] = &[#(#structs),*];
            const LEN: usize = #private::foreign_record_len(RECORD, STRUCTS);
            #[unsafe(no_mangle)]
            #[used]
            static #name: [u8; LEN] = #private::foreign_record::<LEN>(RECORD, STRUCTS);
        };
    }
}

/// The structs `entry` passes by value (its return type and arguments), each once, with the
/// name its C types give it (`struct Name`): their layouts go into the record. Half floats
/// (`struct f16`, `struct bf16`) are scalars to the checks; a pointee need not be `DeviceCopy`,
/// so pointers add none (a pointee named like a recorded struct is checked against it).
fn by_value_structs(entry: &Entry) -> Vec<(String, &Type)> {
    let mut out: Vec<(String, &Type)> = Vec::new();
    for ty in entry.ret.iter().chain(entry.args.iter().map(|a| &a.ty)) {
        if !matches!(strip(ty), Type::Path(_)) {
            continue;
        }
        let spelled = c_type(ty);
        if let Some(name) = spelled.strip_prefix("struct ")
            && !matches!(name, "f16" | "bf16")
            && !out.iter().any(|(n, _)| n == name)
        {
            out.push((name.to_owned(), ty));
        }
    }
    out
}

/// Compile-time checks that the record's C types are the Rust types' (every target): a type
/// written into the record by its name (`f32`, `c_void`, `f16`; see [`c_type`]) must be the
/// type of that name, not a local type or alias named like it; and the types the record names
/// as one struct (the same last path segment: `a::Pair` and `b::Pair`, `W<f32>` and `W<i32>`)
/// must be one type, whose layout the record holds. Each failure is a trait error on the type,
/// whose message says what to do (`gpukernel_device::__private::ForeignTypeNamed`,
/// `ForeignStructNamed`).
pub(super) fn type_checks(entry: &Entry, support: &Support) -> TokenStream {
    let private = support.private();
    let mut all: Vec<&Type> = Vec::new();
    for ty in entry.ret.iter().chain(entry.args.iter().map(|a| &a.ty)) {
        let mut t = ty;
        all.push(t);
        while let Type::Ptr(p) = strip(t) {
            t = &p.elem;
            all.push(t);
        }
    }
    let recorded = by_value_structs(entry);
    let mut checks = Vec::new();
    for ty in all {
        let Type::Path(p) = strip(ty) else { continue };
        let Some(last) = p.path.segments.last() else {
            continue;
        };
        let ident = &last.ident;
        let named = match ident.to_string().as_str() {
            "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "isize" | "u8" | "u16" | "u32"
            | "u64" | "usize" | "bool" => Some(quote!(#private::core::primitive::#ident)),
            "c_void" => Some(quote!(#private::core::ffi::c_void)),
            "f16" | "bf16" => Some(quote!(#private::#ident)),
            _ => None,
        };
        if let Some(named) = named {
            checks.push(quote_spanned!(ty.span()=>
                #private::foreign_type_named::<#ty, #named>();
            ));
            continue;
        }
        let spelled = c_type(ty);
        let Some(name) = spelled.strip_prefix("struct ") else {
            continue;
        };
        if let Some((_, first)) = recorded.iter().find(|(n, _)| n == name)
            && first.to_token_stream().to_string() != ty.to_token_stream().to_string()
        {
            checks.push(quote_spanned!(ty.span()=>
                #private::foreign_struct_named::<#ty, #first>();
            ));
        }
    }
    if checks.is_empty() {
        return TokenStream::new();
    }
    let cfgs = &entry.cfgs;
    quote! {
        #(#cfgs)*
        const _: () = {
            #(#checks)*
        };
    }
}

/// The line of `span` in its file, where the compiler tells it (inside a real macro call).
fn span_line(span: proc_macro2::Span) -> Option<usize> {
    if !proc_macro_available() {
        return None;
    }
    Some(span.unwrap().line())
}

/// Whether this runs inside a macro call (unit tests run outside one, where `Span::unwrap`
/// would panic).
fn proc_macro_available() -> bool {
    proc_macro::is_available()
}

/// FNV-1a of the crate, the symbol, the line and the declaration's tokens.
fn position_hash(symbol: &str, line: Option<usize>, entry: &Entry) -> u64 {
    let crate_name = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut write = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    };
    write(crate_name.as_bytes());
    write(symbol.as_bytes());
    write(line.unwrap_or(0).to_string().as_bytes());
    for arg in &entry.args {
        write(arg.ty.to_token_stream().to_string().as_bytes());
    }
    if let Some(ret) = &entry.ret {
        write(ret.to_token_stream().to_string().as_bytes());
    }
    hash
}

/// The C spelling of a (valid) argument or return type: `float`, `const float*`, `int`,
/// `unsigned long long`, or `struct Name` for a type whose C name the macro cannot know.
///
/// Only types every C++ compiler knows without a header (NVRTC defines no `int32_t` or
/// `size_t` unless the source includes `<cstdint>`), so that the text compiles anywhere; the
/// checks compare what a type is (signed or unsigned integer, float, bool, of how many bytes),
/// not its spelling, so a definition may write `int32_t`, `int` or `std::int32_t`. `isize` and
/// `usize` are 64-bit on nvptx64 and on the 64-bit hosts the simulator runs on; `f16` and
/// `bf16` stay `struct f16` / `struct bf16` (CUDA's `__half` / `__nv_bfloat16` are classes
/// that need `<cuda_fp16.h>`), which the checks match against a 2-byte class or
/// `unsigned short`.
pub(super) fn c_type(ty: &Type) -> String {
    match strip(ty) {
        Type::Ptr(p) => {
            let pointee = match strip(&p.elem) {
                Type::Tuple(t) if t.elems.is_empty() => "void".to_owned(),
                _ => c_type(&p.elem),
            };
            if p.mutability.is_some() {
                format!("{pointee}*")
            } else {
                format!("const {pointee}*")
            }
        }
        Type::Tuple(t) if t.elems.is_empty() => "void".to_owned(),
        Type::Path(p) => {
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            match last.as_str() {
                "f32" => "float",
                "f64" => "double",
                "i8" => "signed char",
                "i16" => "short",
                "i32" => "int",
                "i64" | "isize" => "long long",
                "u8" => "unsigned char",
                "u16" => "unsigned short",
                "u32" => "unsigned int",
                "u64" | "usize" => "unsigned long long",
                "bool" => "bool",
                "c_void" => "void",
                other => return format!("struct {other}"),
            }
            .to_owned()
        }
        other => format!("struct {}", other.to_token_stream()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_spellings() {
        let c = |s: &str| c_type(&syn::parse_str(s).unwrap());
        assert_eq!(c("*const f32"), "const float*");
        assert_eq!(c("*mut *mut u8"), "unsigned char**");
        assert_eq!(c("*mut ()"), "void*");
        assert_eq!(c("Pair"), "struct Pair");
        assert_eq!(c("*mut crate::Pair"), "struct Pair*");
        // Builtin types only: no `<cstdint>` needed wherever the text is compiled.
        for (rust, c_name) in [
            ("i8", "signed char"),
            ("i16", "short"),
            ("i32", "int"),
            ("i64", "long long"),
            ("isize", "long long"),
            ("u8", "unsigned char"),
            ("u16", "unsigned short"),
            ("u32", "unsigned int"),
            ("u64", "unsigned long long"),
            ("usize", "unsigned long long"),
            ("f32", "float"),
            ("f64", "double"),
            ("bool", "bool"),
            ("f16", "struct f16"),
            ("gpukernel_device::half::bf16", "struct bf16"),
        ] {
            assert_eq!(c(rust), c_name);
        }
        for scalar in crate::ty::SCALARS {
            let spelled = c(scalar);
            assert!(
                !spelled.contains("_t") && !spelled.starts_with("struct"),
                "{scalar}: {spelled}"
            );
        }
    }

    #[test]
    fn the_record_names_symbol_abi_and_types() {
        let mut errors = crate::diag::Errors::default();
        let (support, entries) = super::super::parse::parse(
            quote!(unsafe extern { "mul_f32_f32", fn(f32, *const f64) -> f32; "c_add", extern "C" fn(i32) -> i32 }),
            &mut errors,
        );
        assert!(errors.is_empty());
        let out = record(&entries[0], &support).to_string();
        assert!(out.contains("__gpukernel_foreign_mul_f32_f32_"), "{out}");
        assert!(
            out.contains(r#""gpukernel-foreign-v1\nsymbol=mul_f32_f32\nabi=numba\nat=""#),
            "{out}"
        );
        assert!(
            out.contains(r#""\nret=float\narg=float\narg=const double*\n""#),
            "{out}"
        );
        assert!(out.contains("cfg (target_arch = \"nvptx64\")"), "{out}");
        assert!(out.contains("foreign_record"), "{out}");
        assert!(
            out.contains("const STRUCTS : & [") && !out.contains("ForeignStruct :: of"),
            "{out}"
        );
        let out = record(&entries[1], &support).to_string();
        assert!(out.contains(r#"abi=c\nat="#), "{out}");
        // Structs passed by value carry their layout (once each); pointers and half floats none.
        let (_, entries) = super::super::parse::parse(
            quote!(unsafe extern { "by_value", fn(a: Pair, b: *mut Other, c: crate::Pair, d: f16) -> Pair }),
            &mut errors,
        );
        assert!(errors.is_empty());
        let out = record(&entries[0], &support).to_string();
        assert_eq!(out.matches("ForeignStruct :: of").count(), 1, "{out}");
        assert!(
            out.contains("ForeignStruct :: of :: < Pair > (\"Pair\")"),
            "{out}"
        );
    }
}
