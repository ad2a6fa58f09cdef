//! What `declare_device!` refuses, each reported on the offending tokens.

use std::collections::HashSet;

use syn::ext::IdentExt;

use super::Entry;
use crate::diag::{Errors, error};
use crate::ty::{TypeKind, Unsupported, classify};

const POINTER_AND_LENGTH: &str = "pass `x.as_ptr()` as `*const T` and the length as an integer";

/// Checks every entry; returns, per entry, whether it is valid (and may be expanded).
pub(super) fn check(entries: &[Entry], errors: &mut Errors) -> Vec<bool> {
    let mut seen = HashSet::new();
    entries
        .iter()
        .map(|entry| {
            let mut entry_errors = Errors::default();
            check_entry(entry, &mut entry_errors);
            if let Some(name) = entry.rust_name() {
                let key = name.unraw().to_string();
                if !seen.insert(key.clone()) {
                    let at = entry.alias.as_ref().map_or_else(
                        || quote::ToTokens::to_token_stream(&entry.symbol),
                        quote::ToTokens::to_token_stream,
                    );
                    entry_errors.push(error(
                        at,
                        format!("`{key}` is declared twice in this `declare_device!`"),
                        Some(
                            "give one of them another Rust name: `other_name = \"symbol\", fn(..)`",
                        ),
                    ));
                }
            }
            let ok = entry_errors.is_empty();
            errors.extend(entry_errors);
            ok
        })
        .collect()
}

fn check_entry(entry: &Entry, errors: &mut Errors) {
    let symbol = entry.symbol.value();
    if !is_c_identifier(&symbol) {
        let hint = if symbol.contains("::") || symbol.contains('(') {
            "use the function's unmangled name: declare it `extern \"C\"` in the CUDA source"
        } else {
            "a C symbol has letters, digits and `_`, and does not start with a digit"
        };
        errors.push(error(
            &entry.symbol,
            format!("`{symbol}` is not a valid C identifier"),
            Some(hint),
        ));
    } else if entry.alias.is_none() && entry.rust_name().is_none() {
        errors.push(error(
            &entry.symbol,
            format!("`{symbol}` cannot name the Rust wrapper: it is a Rust keyword"),
            Some(&format!(
                "choose the Rust name: `{symbol}_ = \"{symbol}\", fn(..)`"
            )),
        ));
    }
    if let Some(why) = reserved_symbol(&symbol) {
        errors.push(error(
            &entry.symbol,
            format!("`{symbol}` cannot be declared: it is {why}, not a function of your foreign code"),
            Some("declare only functions that your own `.cu` sources (or the objects, archives and PTX you link) define, with the signature given here"),
        ));
    }
    if let (Some(safe), Some(unsafety)) = (&entry.safe, &entry.unsafety) {
        let tokens = quote::quote!(#safe #unsafety);
        errors.push(error(
            tokens,
            "an entry is `safe fn` or `unsafe fn`, not both",
            Some("`safe fn` for a wrapper that safe code may call; `fn` or `unsafe fn` for an `unsafe` one"),
        ));
    }
    if entry.safe.is_some() {
        for arg in &entry.args {
            if matches!(classify(&arg.ty), TypeKind::Ptr { .. }) {
                errors.push(error(
                    &arg.ty,
                    "a foreign function that takes a pointer cannot be declared `safe fn`: no safe caller can promise what it reads and writes through it",
                    Some("remove `safe`: the wrapper is then an `unsafe fn` whose caller promises the pointers' validity"),
                ));
            }
        }
    }
    if let Some(abi) = &entry.abi
        && !entry.is_c_abi()
    {
        errors.push(error(
            abi,
            "a foreign device function has Numba's ABI (`fn(..)`: `extern \"C\" __device__ int f(T* ret, args...)`) or the C ABI (`extern \"C\" fn(..)`: `extern \"C\" __device__ T f(args...)`)",
            Some("write `extern \"C\" fn(..) -> T` for a plain C function, or no ABI for Numba's"),
        ));
    }
    if let Some(generics) = &entry.generics {
        errors.push(error(
            generics,
            "a foreign device function cannot be generic",
            Some("declare one entry per instantiation, e.g. `mul_f32 = \"mul_f32\", fn(f32, f32) -> f32`"),
        ));
    }
    if let Some(variadic) = &entry.variadic {
        errors.push(error(
            variadic,
            "a foreign device function cannot be variadic",
            Some("declare one entry per argument list"),
        ));
    }
    let mut names = HashSet::new();
    for arg in &entry.args {
        if let Some(name) = &arg.name
            && !names.insert(name.unraw().to_string())
        {
            errors.push(error(
                name,
                format!("argument `{name}` is named twice"),
                None,
            ));
        }
        if let Some((message, hint)) = argument_problem(classify(&arg.ty)) {
            errors.push(error(&arg.ty, message, Some(hint)));
        }
    }
    if let Some(ret) = &entry.ret
        && let Some((message, hint)) = return_problem(classify(ret))
    {
        errors.push(error(ret, message, Some(hint)));
    }
}

/// Why `symbol` cannot name a foreign function of the user's code, if it cannot: a name that
/// the PTX JIT, libdevice, the C library or the compiler's builtins already give a meaning,
/// which a declaration would bind instead of the user's definition (a `memset` declared with
/// `u64` arguments and called from safe code writes wherever the arguments say).
///
/// The list is `gpukernel-ffi-check`'s: the build (`nvptx-builder`) and the run-time linker
/// refuse the same names at their stage.
pub(super) fn reserved_symbol(symbol: &str) -> Option<&'static str> {
    gpukernel_ffi_check::reserved_symbol(symbol)
}

/// Whether `s` is a C identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub(super) fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn argument_problem(kind: TypeKind<'_>) -> Option<(&'static str, &'static str)> {
    const ARG: &str = "this type cannot be passed to a foreign device function";
    Some(match kind {
        TypeKind::Scalar | TypeKind::Struct | TypeKind::Ptr { .. } => return None,
        TypeKind::Unit => ("`()` cannot be an argument", "remove it"),
        TypeKind::Slice { mutable: false, .. } => (
            "slices cannot be passed to a foreign device function",
            POINTER_AND_LENGTH,
        ),
        TypeKind::Slice { mutable: true, .. } => (
            "slices cannot be passed to a foreign device function",
            "pass `x.as_mut_ptr()` as `*mut T` and the length as an integer",
        ),
        TypeKind::Disjoint { .. } => (
            "a `DisjointSlice` cannot be passed to a foreign device function",
            "pass `out.as_mut_ptr()` as `*mut T` and the length as an integer (the wrapper is then `unsafe`)",
        ),
        TypeKind::Slice2D { .. } => (
            "a `Slice2D` cannot be passed to a foreign device function",
            "pass `m.as_ptr()` as `*const T` and `cols`, `rows` and `pitch` as integers (the wrapper is then `unsafe`)",
        ),
        TypeKind::Unsupported(why) => match why {
            Unsupported::Reference => (
                "references cannot be passed to a foreign device function",
                "pass the value itself, or a raw pointer (`*const T` / `*mut T`)",
            ),
            Unsupported::Text => (
                "strings cannot be passed to a foreign device function",
                "pass `s.as_ptr()` as `*const u8` and the length as an integer",
            ),
            Unsupported::Char => (
                "`char` cannot be passed to a foreign device function",
                "pass it as `u32`",
            ),
            Unsupported::Int128 => (
                "128-bit integers cannot be passed to a foreign device function",
                "pass it as two `u64` halves",
            ),
            Unsupported::Tuple => (
                "tuples cannot be passed to a foreign device function: their layout is unspecified",
                "pass each element as its own argument, or a `#[repr(C)]` struct that implements `DeviceCopy`",
            ),
            Unsupported::Array | Unsupported::HostOwned | Unsupported::GenericPath => {
                (ARG, POINTER_AND_LENGTH)
            }
            Unsupported::ImplTrait | Unsupported::TraitObject | Unsupported::QualifiedPath => (
                ARG,
                "name a concrete scalar, raw pointer or `DeviceCopy` struct type",
            ),
            Unsupported::FnPointer => (
                "function pointers cannot be passed to a foreign device function",
                "declare the callee with `declare_device!` and call it directly",
            ),
            Unsupported::BadDisjoint
            | Unsupported::Never
            | Unsupported::Infer
            | Unsupported::Other => (
                ARG,
                "use a scalar, a raw pointer, or a `#[repr(C)]` struct that implements `DeviceCopy`",
            ),
        },
    })
}

fn return_problem(kind: TypeKind<'_>) -> Option<(&'static str, &'static str)> {
    const RET: &str = "this type cannot be returned from a foreign device function";
    const OUT: &str = "return through an out-pointer argument instead, e.g. `fn(*mut T, usize)`";
    Some(match kind {
        TypeKind::Scalar | TypeKind::Struct | TypeKind::Unit | TypeKind::Ptr { .. } => return None,
        TypeKind::Slice { .. } | TypeKind::Disjoint { .. } | TypeKind::Slice2D { .. } => (RET, OUT),
        TypeKind::Unsupported(why) => match why {
            Unsupported::Char => (RET, "return it as `u32`"),
            Unsupported::Reference | Unsupported::Text => (
                RET,
                "return the value itself, or a raw pointer (`*const T` / `*mut T`)",
            ),
            Unsupported::Int128 => (RET, "return a `#[repr(C)]` struct of two `u64` halves"),
            Unsupported::Tuple => (
                "tuples cannot be returned from a foreign device function: their layout is unspecified",
                "return a `#[repr(C)]` struct that implements `DeviceCopy`",
            ),
            Unsupported::Never => (
                "a foreign device function returns a status, so it cannot return `!`",
                "return `()`",
            ),
            _ => (RET, OUT),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn messages(tokens: TokenStream) -> (Vec<bool>, Vec<String>) {
        let mut errors = Errors::default();
        let (_, entries) =
            super::super::parse::parse(quote!(unsafe extern { #tokens }), &mut errors);
        assert!(errors.is_empty(), "{:?}", errors.messages());
        let valid = check(&entries, &mut errors);
        (valid, errors.messages())
    }

    #[test]
    fn c_identifiers() {
        for ok in ["f", "_f", "mul_f32_f32", "F9", "__x"] {
            assert!(is_c_identifier(ok), "{ok}");
        }
        for bad in ["", "9f", "a-b", "ns::f", "f(int)", "a b", "é"] {
            assert!(!is_c_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn accepts_the_supported_types() {
        let (valid, errors) = messages(quote! {
            "a", fn(f32, f64, i8, u64, usize, bool) -> f32;
            "b", fn(*const f32, *mut Pair, Pair) -> Pair;
            "c", fn() -> ();
            "d", fn(*mut u32);
            "e", fn() -> *mut u8;
            "f", extern "C" fn(f32, *mut f32) -> f32;
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(valid, [true; 6]);
    }

    #[test]
    fn refuses_unsupported_types_with_hints() {
        let (valid, errors) = messages(quote! {
            "ok", fn(f32) -> f32;
            "a", fn(&[f32]) -> f32;
            "b", fn(String);
            "c", fn((f32, f32));
            "d", fn() -> &[f32];
            "e", fn(Vec<f32>);
        });
        assert_eq!(valid, [true, false, false, false, false, false]);
        assert_eq!(errors.len(), 5, "{errors:#?}");
        assert!(errors[0].starts_with("slices cannot be passed"));
        assert!(
            errors[0]
                .ends_with("hint: pass `x.as_ptr()` as `*const T` and the length as an integer")
        );
        assert!(errors[1].starts_with("strings cannot be passed"));
        assert!(errors[2].starts_with("tuples cannot be passed"));
        assert!(errors[3].starts_with("this type cannot be returned"));
        assert!(errors[4].ends_with(POINTER_AND_LENGTH));
    }

    #[test]
    fn refuses_reserved_symbols_and_safe_pointers() {
        let (valid, errors) = messages(quote! {
            "memset", fn(u64, u32, u64);
            "free", safe fn(u64);
            "__nv_expf", safe extern "C" fn(f32) -> f32;
            "__udivti3", fn(u64) -> u64;
            "cudaMalloc", fn(u64, u64) -> i32;
            "__gpukernel_sig_k", fn();
            "p", safe fn(*mut u32);
            "both", safe unsafe fn();
            "my_free2", safe fn(u64);
            "__my_helper2", safe fn(u64);
        });
        assert_eq!(
            valid,
            [
                false, false, false, false, false, false, false, false, true, true
            ],
            "{errors:#?}"
        );
        assert!(errors[0].contains("`memset` cannot be declared: it is a C library function"));
        assert!(errors[1].contains("`free` cannot be declared: it is a PTX system call"));
        assert!(errors[2].contains("libdevice"));
        assert!(errors[3].contains("compiler's builtins"));
        assert!(errors[4].contains("CUDA runtime"));
        assert!(errors[5].contains("gpukernel itself"));
        assert!(errors[6].contains("cannot be declared `safe fn`"));
        assert!(errors[7].contains("not both"));
        assert_eq!(errors.len(), 8);
    }

    #[test]
    fn refuses_bad_symbols_duplicates_and_generics() {
        let (valid, errors) = messages(quote! {
            "9lives", fn();
            "ns::f", fn();
            "type", fn();
            mul = "mul_f32", fn(f32) -> f32;
            mul = "mul_f64", fn(f64) -> f64;
            "g", fn<T>(T) -> T;
            "h", extern "system" fn();
            "v", fn(i32, ...);
            "n", fn(a: f32, a: f32);
        });
        assert_eq!(
            valid,
            [false, false, false, true, false, false, false, false, false]
        );
        assert!(errors[0].contains("`9lives` is not a valid C identifier"));
        assert!(errors[1].contains("declare it `extern \"C\"`"));
        assert!(errors[2].contains("it is a Rust keyword"));
        assert!(errors[2].contains("`type_ = \"type\", fn(..)`"));
        assert!(errors[3].contains("`mul` is declared twice"));
        assert!(errors[4].contains("cannot be generic"));
        assert!(errors[5].contains("or the C ABI"), "{}", errors[5]);
        assert!(errors[6].contains("cannot be variadic"));
        assert!(errors[7].contains("argument `a` is named twice"));
        assert_eq!(errors.len(), 8);
    }
}
