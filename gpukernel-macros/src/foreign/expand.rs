//! [`Entry`] → the `extern "C"` declaration and the typed wrapper that owns the return slot
//! and checks the status.

use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use super::Entry;
use super::manifest::c_type;
use crate::hygiene::{Support, local};
use crate::ty::{TypeKind, classify};

/// The prefix of a foreign definition's name on the host: nvptx-builder's host compile renames
/// every definition `f` of a foreign library to `__gpukernel_host_f` (the two must agree).
const HOST_SYMBOL_PREFIX: &str = "__gpukernel_host_";

pub(super) fn expand(entry: &Entry, support: &Support) -> TokenStream {
    let private = support.private();
    let Some(name) = entry.rust_name() else {
        // `check` refuses such entries; nothing to expand.
        return TokenStream::new();
    };
    let symbol = &entry.symbol;
    let symbol_str = symbol.value();
    // On the host (the simulator), the foreign library's definitions are renamed into a
    // namespace of their own (nvptx-builder's host compile), so that a declaration can neither
    // bind to nor replace a symbol of the host process (libc's `write`, `getpid`, ...).
    let host_symbol = format!("{HOST_SYMBOL_PREFIX}{symbol_str}");
    let link_name = quote! {
        #[cfg_attr(target_arch = "nvptx64", link_name = #symbol_str)]
        #[cfg_attr(not(target_arch = "nvptx64"), link_name = #host_symbol)]
    };
    let (cfgs, attrs, vis) = (&entry.cfgs, &entry.attrs, &entry.vis);
    // Generated names are mixed-site (see `hygiene`): an argument the user named `ret` or
    // `__gk_ret_ptr` stays theirs. The foreign declaration lives inside the wrapper.
    let (ffi_name, slot_param, ret, ret_ptr, status) = (
        local("__gk_ffi"),
        local("ret"),
        local("__gk_ret"),
        local("__gk_ret_ptr"),
        local("__gk_status"),
    );
    let params = param_names(entry);
    let tys: Vec<_> = entry.args.iter().map(|a| &a.ty).collect();
    // Only an entry declared `safe fn` is a safe wrapper (`check` refuses one that takes a
    // pointer): the block's `unsafe` vouches for it.
    let unsafety = entry.safe.is_none().then(|| quote!(unsafe));

    let asserts: TokenStream = entry
        .args
        .iter()
        .map(|a| &a.ty)
        .chain(entry.ret.as_ref())
        .filter(|ty| classify(ty) == TypeKind::Struct)
        .filter(crate::ty::first_of_its_spelling())
        .map(|ty| {
            quote_spanned! {ty.span()=>
                #(#cfgs)*
                const _: () = #private::assert_device_copy::<#ty>();
            }
        })
        .collect();

    let docs = docs(entry, &symbol_str, unsafety.is_some());
    let inline =
        (!attrs.iter().any(|a| a.path().is_ident("inline"))).then(|| quote!(#[inline(always)]));
    if entry.is_c_abi() {
        // A plain C function: called directly, its value returned; it has no status.
        let arrow = entry.ret.as_ref().map(|ty| quote!(-> #ty));
        return quote! {
            #asserts

            #(#cfgs)*
            #(#attrs)*
            #docs
            #inline
            // The argument list mirrors the foreign function's, which the caller cannot change.
            #[allow(clippy::too_many_arguments)]
            #vis #unsafety fn #name(#(#params: #tys),*) #arrow {
                unsafe extern "C" {
                    #link_name
                    fn #ffi_name(#(#params: #tys),*) #arrow;
                }
                // SAFETY: the arguments' validity is the caller's promise where they are
                // pointers, plain values otherwise; the linker checks the definition's
                // signature where the definition's types can be read.
                unsafe { #ffi_name(#(#params),*) }
            }
        };
    }
    let call = quote!(#ffi_name(#ret_ptr, #(#params),*));
    let check = quote! {
        if #status != 0 {
            #private::report_foreign_failure(#symbol_str, #status);
        }
    };

    let (slot, arrow, body) = match &entry.ret {
        None => (
            quote!(#private::core::primitive::u8),
            quote!(),
            quote! {
                let mut #ret: #private::core::primitive::u8 = 0;
                let #ret_ptr: *mut #private::core::primitive::u8 = &raw mut #ret;
                // SAFETY: the return slot is a live local; the arguments' validity is the
                // caller's promise where they are pointers, plain values otherwise.
                let #status = unsafe { #call };
                #check
            },
        ),
        Some(ret_ty) => (
            ret_ty.to_token_stream(),
            quote!(-> #ret_ty),
            quote! {
                let mut #ret = #private::core::mem::MaybeUninit::<#ret_ty>::zeroed();
                let #ret_ptr: *mut #ret_ty = #ret.as_mut_ptr();
                // SAFETY: the return slot is a live local; the arguments' validity is the
                // caller's promise where they are pointers, plain values otherwise.
                let #status = unsafe { #call };
                if #status != 0 {
                    #private::report_foreign_failure(#symbol_str, #status);
                    // A failed call returns zero, whatever the callee left in the slot.
                    #ret = #private::core::mem::MaybeUninit::zeroed();
                }
                // SAFETY: the slot is zero-initialised and the type is a scalar, raw pointer
                // or `DeviceCopy` value, for which all-zero is valid; a successful callee may
                // only have overwritten it with a value of that type.
                unsafe { #ret.assume_init() }
            },
        ),
    };

    quote! {
        #asserts

        #(#cfgs)*
        #(#attrs)*
        #docs
        #inline
        // The argument list mirrors the foreign function's, which the caller cannot change.
        #[allow(clippy::too_many_arguments)]
        #vis #unsafety fn #name(#(#params: #tys),*) #arrow {
            unsafe extern "C" {
                #link_name
                fn #ffi_name(
                    #slot_param: *mut #slot,
                    #(#params: #tys),*
                ) -> #private::core::primitive::i32;
            }
            #body
        }
    }
}

/// The wrapper's parameter names: the user's where given, else `a0`, `a1`, ... (mixed-site,
/// and textually distinct from the user's names so that the docs stay unambiguous).
fn param_names(entry: &Entry) -> Vec<Ident> {
    let taken: Vec<String> = entry
        .args
        .iter()
        .filter_map(|a| a.name.as_ref().map(|n| n.unraw().to_string()))
        .collect();
    entry
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match &a.name {
            Some(name) => name.clone(),
            None => {
                let mut name = format!("a{i}");
                while taken.contains(&name) {
                    name.push('_');
                }
                local(&name)
            }
        })
        .collect()
}

/// The generated documentation: the C declaration the symbol must have, and how failures are
/// reported.
fn docs(entry: &Entry, symbol: &str, is_unsafe: bool) -> TokenStream {
    let ret = entry.ret.as_ref().map_or_else(|| "void".to_owned(), c_type);
    let mut c_args = if entry.is_c_abi() {
        Vec::new()
    } else {
        vec![format!("{ret}* ret")]
    };
    c_args.extend(entry.args.iter().map(|a| c_type(&a.ty)));
    let separator = if entry.attrs.iter().any(|a| a.path().is_ident("doc")) {
        quote!(#[doc = ""])
    } else {
        quote!()
    };
    let c_ret = if entry.is_c_abi() {
        ret.as_str()
    } else {
        "int"
    };
    let calls = format!(
        " Calls the foreign device function `{symbol}`, declared in CUDA C as \
         `extern \"C\" __device__ {c_ret} {symbol}({})`.",
        c_args.join(", ")
    );
    let status = if entry.is_c_abi() {
        " A plain C function: it reports no status, and its value is returned as it is."
    } else {
        " A non-zero status is never ignored: the first failure of a launch is recorded \
                  and reported by the runtime as an error wherever the host next observes the \
                  launch's work (a synchronization, a copy to the host), and this \
                  call returns the zero-initialised return value."
    };
    let safety = is_unsafe.then(|| {
        let text = format!(
            " The arguments must satisfy `{symbol}`'s own contract: each pointer valid for the \
             reads and writes it does through it during the call, and every other value one \
             for which the call is sound (the declaration did not say `safe fn`)."
        );
        quote! {
            #[doc = ""]
            #[doc = " # Safety"]
            #[doc = #text]
        }
    });
    quote! {
        #separator
        #[doc = #calls]
        #[doc = ""]
        #[doc = #status]
        #safety
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: &str = ":: gpukernel_device :: __private :: core :: primitive ::";

    fn expand_str(tokens: TokenStream) -> String {
        let mut errors = crate::diag::Errors::default();
        let (support, entries) = super::super::parse::parse(tokens, &mut errors);
        assert!(errors.is_empty());
        entries
            .iter()
            .map(|e| expand(e, &support))
            .collect::<TokenStream>()
            .to_string()
    }

    #[test]
    fn c_types_for_the_docs() {
        let c = |s: &str| c_type(&syn::parse_str(s).unwrap());
        assert_eq!(c("*const f32"), "const float*");
        assert_eq!(c("*mut *mut u8"), "unsigned char**");
        assert_eq!(c("Pair"), "struct Pair");
        assert_eq!(c("crate::Pair"), "struct Pair");
        assert_eq!(c("usize"), "unsigned long long");
    }

    #[test]
    fn safe_wrapper_for_scalars() {
        let out = expand_str(
            quote::quote!(unsafe extern { pub mul = "mul_f32_f32", safe fn(f32, f32) -> f32 }),
        );
        assert!(
            out.contains("target_arch = \"nvptx64\" , link_name = \"mul_f32_f32\"")
                && out.contains(
                    "not (target_arch = \"nvptx64\") , link_name = \"__gpukernel_host_mul_f32_f32\""
                ),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "fn __gk_ffi (ret : * mut f32 , a0 : f32 , a1 : f32) -> {CORE} i32"
            )),
            "{out}"
        );
        assert!(
            out.contains("pub fn mul (a0 : f32 , a1 : f32) -> f32"),
            "{out}"
        );
        assert!(
            out.contains("report_foreign_failure (\"mul_f32_f32\" , __gk_status)"),
            "{out}"
        );
        assert!(
            out.contains("int mul_f32_f32(float* ret, float, float)"),
            "{out}"
        );
        assert!(!out.contains("assert_device_copy"), "{out}");
    }

    #[test]
    fn unsafe_wrapper_for_pointers_and_unit_return() {
        let out = expand_str(quote::quote!(unsafe extern { "touch", fn(p: *mut u32) }));
        assert!(out.contains("unsafe fn touch (p : * mut u32)"), "{out}");
        assert!(
            out.contains(&format!(
                "fn __gk_ffi (ret : * mut {CORE} u8 , p : * mut u32) -> {CORE} i32"
            )),
            "{out}"
        );
        assert!(out.contains("# Safety"), "{out}");
        assert!(out.contains("int touch(void* ret, unsigned int*)"), "{out}");
        assert!(!out.contains("assume_init"), "{out}");
    }

    #[test]
    fn only_safe_fn_entries_are_safe_wrappers() {
        let out = expand_str(
            quote::quote!(unsafe extern { "plain", fn(u64, u64); "c", extern "C" fn(u32) -> u32 }),
        );
        assert!(
            out.contains("unsafe fn plain (a0 : u64 , a1 : u64)"),
            "{out}"
        );
        assert!(out.contains("unsafe fn c (a0 : u32) -> u32"), "{out}");
        assert!(out.contains("# Safety"), "{out}");
    }

    #[test]
    fn a_renamed_crate_is_reached_through_its_private_module_only() {
        let out = expand_str(
            quote::quote!(crate = "gkd"; unsafe extern { "f", fn(Pair, *mut u8) -> Pair; "g", safe fn() }),
        );
        assert!(!out.contains("gpukernel_device"), "{out}");
        for (i, _) in out.match_indices(":: core ::") {
            assert!(out[..i].ends_with("gkd :: __private "), "{out}");
        }
        assert!(
            out.contains("gkd :: __private :: report_foreign_failure (\"f\""),
            "{out}"
        );
        assert!(
            out.contains("gkd :: __private :: assert_device_copy :: < Pair >"),
            "{out}"
        );
    }

    #[test]
    fn the_foreign_declaration_is_inside_the_wrapper() {
        let out = expand_str(quote::quote!(unsafe extern { "f", safe fn(f32) }));
        let wrapper = out.find("fn f (a0 : f32)").unwrap();
        assert!(out.find("unsafe extern \"C\"").unwrap() > wrapper, "{out}");
    }

    #[test]
    fn generated_argument_names_differ_from_the_users() {
        let out =
            expand_str(quote::quote!(unsafe extern { "f", safe fn(a1: f32, f32, a1_: f32, u8) }));
        assert!(
            out.contains("fn f (a1 : f32 , a1__ : f32 , a1_ : f32 , a3 : u8)"),
            "{out}"
        );
    }

    #[test]
    fn c_abi_calls_directly_and_returns_the_value() {
        let out = expand_str(
            quote::quote!(unsafe extern { "fma_c", safe extern "C" fn(f32, f32, f32) -> f32 }),
        );
        assert!(
            out.contains("fn __gk_ffi (a0 : f32 , a1 : f32 , a2 : f32) -> f32 ;"),
            "{out}"
        );
        assert!(out.contains("unsafe { __gk_ffi (a0 , a1 , a2) }"), "{out}");
        assert!(!out.contains("report_foreign_failure"), "{out}");
        assert!(
            out.contains("extern \\\"C\\\" __device__ float fma_c(float, float, float)"),
            "{out}"
        );
    }

    #[test]
    fn structs_are_checked_for_device_copy() {
        let out = expand_str(quote::quote!(unsafe extern { "f", safe fn(Pair) -> Pair }));
        assert_eq!(
            out.matches("assert_device_copy :: < Pair >").count(),
            1,
            "{out}"
        );
        assert!(out.contains("fn f (a0 : Pair) -> Pair"), "{out}");
    }
}
