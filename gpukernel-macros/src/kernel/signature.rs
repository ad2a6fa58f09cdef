//! The signature fingerprint that binds a kernel's Rust signature to its compiled code.
//!
//! A typed launch trusts that the loaded entry point is the one `#[kernel]` compiled from this
//! signature; the entry's name and parameter sizes alone do not say so (another crate's PTX, a
//! CUDA C `__global__`, or the same source compiled with a type alias that resolves otherwise
//! on the device may reuse the name with other parameter types). The macro cannot resolve
//! types, so it hashes none: it emits, on both targets, one constant expression that the
//! compiler evaluates with that target's types (`gpukernel_device::signature`): each
//! parameter's `ParamSig` (lowering and resolved layout), its `same_len` group as this
//! expansion saw it, the kernel's unsafety, the crate's name (`CARGO_CRATE_NAME`) and the
//! kernel's name. The device build exports the result as the global `__gpukernel_sig_<kernel>`
//! (the whole fingerprint and one fingerprint and summary per parameter); the host build
//! carries the same expression as `Kernel::SIGNATURE` and `Kernel::PARAM_SIGNATURES`.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use super::{Binding, Kernel};
use crate::hygiene::local;
use crate::ty::all_static;

/// The prefix of the exported global: `__gpukernel_sig_<kernel name>` (the name unmangled,
/// without `r#`). `gpukernel_device::SIGNATURE_SYMBOL_PREFIX` is the same string.
pub(super) const SYMBOL_PREFIX: &str = "__gpukernel_sig_";

/// The name of the crate being compiled, as cargo tells the compiler (empty outside cargo).
pub(super) fn crate_name() -> String {
    std::env::var("CARGO_CRATE_NAME")
        .or_else(|_| std::env::var("CARGO_PKG_NAME").map(|n| n.replace('-', "_")))
        .unwrap_or_default()
}

/// The signature as constant expressions, for one target's expansion.
pub(super) struct Signature {
    /// `[ParamSignature; n]` as an array expression.
    pub params: TokenStream,
    /// The number of parameters.
    pub count: usize,
    /// The crate's name, the kernel's name and its unsafety, as literals.
    krate: String,
    name: String,
    is_unsafe: bool,
}

impl Signature {
    pub(super) fn new(crate_name: &str, kernel: &Kernel) -> Self {
        let private = kernel.support.private();
        let entries = kernel.params.iter().map(|p| {
            let ty = all_static(&p.arg.ty);
            let name = match &p.binding {
                Binding::Ident(id) => id.unraw().to_string(),
                _ => "_".to_owned(),
            };
            let spelling = spelling(&p.arg.ty);
            let group = same_len_group(kernel, p);
            let group = Literal::u8_suffixed(group);
            // Spanned on the user's type: a type that cannot cross reports there.
            quote_spanned! {p.arg.ty.span()=>
                #private::ParamSignature::new::<#ty>(#name, #spelling, #group)
            }
        });
        Signature {
            params: quote!([#(#entries),*]),
            count: kernel.params.len(),
            krate: crate_name.to_owned(),
            name: kernel.item.sig.ident.unraw().to_string(),
            is_unsafe: kernel.item.sig.unsafety.is_some(),
        }
    }

    /// `kernel_fingerprint(crate, name, unsafe, params)` for the array `params` (a path to a
    /// constant of the array's type or a slice).
    pub(super) fn whole(&self, private: &TokenStream, params: &TokenStream) -> TokenStream {
        let (krate, name, is_unsafe) = (&self.krate, &self.name, self.is_unsafe);
        quote!(#private::kernel_fingerprint(#krate, #name, #is_unsafe, #params))
    }

    /// The device build's exported global, inside an anonymous const so that neither it nor
    /// the parameters' constant is an item of the user's module.
    pub(super) fn device_global(&self, private: &TokenStream, kernel_name: &Ident) -> TokenStream {
        let symbol = local(&format!("{SYMBOL_PREFIX}{}", kernel_name.unraw()));
        let params_const = local("__GK_PARAMS");
        let n = Literal::usize_unsuffixed(self.count);
        let words = Literal::usize_unsuffixed(3 + 2 * self.count);
        let params = &self.params;
        let whole = self.whole(private, &quote!(&#params_const));
        quote! {
            const _: () = {
                const #params_const: [#private::ParamSignature; #n] = #params;
                /// The signature of the kernel (see `gpukernel_device::signature`).
                #[unsafe(no_mangle)]
                #[allow(non_upper_case_globals)]
                static #symbol: [#private::core::primitive::u64; #words] =
                    #private::signature_words::<#words>(#whole, &#params_const);
            };
        }
    }

    /// `PARAM_SIGNATURES` and `SIGNATURE` of the host's `Kernel` impl.
    pub(super) fn host_consts(&self, private: &TokenStream) -> TokenStream {
        let params = &self.params;
        let whole = self.whole(private, &quote!(Self::PARAM_SIGNATURES));
        quote! {
            const PARAM_SIGNATURES: &'static [#private::ParamSignature] = &#params;
            const SIGNATURE: #private::core::primitive::u64 = #whole;
        }
    }
}

/// 0, or 1 + the index of the `same_len` group that names `param`.
fn same_len_group(kernel: &Kernel, param: &super::Param) -> u8 {
    let Binding::Ident(id) = &param.binding else {
        return 0;
    };
    kernel
        .same_len
        .iter()
        .position(|g| g.iter().any(|n| n == id))
        .map_or(0, |g| u8::try_from(g + 1).unwrap_or(u8::MAX))
}

/// The type as written, for messages: a space between two words (and after `,` and `;`),
/// none around other punctuation, as rustfmt would write a type.
fn spelling(ty: &syn::Type) -> String {
    let mut out = String::new();
    write_spelling(ty.to_token_stream(), &mut out, &mut false);
    out
}

fn write_spelling(tokens: TokenStream, out: &mut String, after_word: &mut bool) {
    use proc_macro2::{Delimiter, TokenTree};
    for tt in tokens {
        match tt {
            TokenTree::Ident(i) => {
                if *after_word {
                    out.push(' ');
                }
                out.push_str(&i.to_string());
                *after_word = true;
            }
            TokenTree::Literal(l) => {
                if *after_word {
                    out.push(' ');
                }
                out.push_str(&l.to_string());
                *after_word = true;
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                *after_word = false;
                if matches!(p.as_char(), ',' | ';') {
                    out.push(' ');
                }
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                if *after_word && !open.is_empty() {
                    out.push(' ');
                }
                out.push_str(open);
                if !open.is_empty() {
                    *after_word = false;
                }
                write_spelling(g.stream(), out, after_word);
                out.push_str(close);
                if !close.is_empty() {
                    *after_word = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(item: &str) -> Kernel {
        super::super::parse::parse(syn::parse_str(item).unwrap())
    }

    #[test]
    fn spellings_read_as_written() {
        let ty = |s: &str| spelling(&syn::parse_str(s).unwrap());
        assert_eq!(ty("&'static [f32]"), "&'static [f32]");
        assert_eq!(ty("& [ Real ]"), "&[Real]");
        assert_eq!(ty("DisjointSlice<'_, Pair>"), "DisjointSlice<'_, Pair>");
        assert_eq!(ty("*const crate::a::B"), "*const crate::a::B");
        assert_eq!(ty("[u8; 4]"), "[u8; 4]");
        assert_eq!(ty("&mut [u32]"), "&mut [u32]");
        assert_eq!(ty("*mut  core::ffi::c_void"), "*mut core::ffi::c_void");
    }

    #[test]
    fn the_expression_names_each_type_and_same_len_group() {
        let mut k =
            kernel("unsafe fn add(x: &[Real], y: &'a [Real], out: DisjointSlice<Flag>, n: u32) {}");
        k.same_len = vec![vec![
            syn::parse_str("x").unwrap(),
            syn::parse_str("out").unwrap(),
        ]];
        let sig = Signature::new("kc", &k);
        let params = sig.params.to_string();
        for want in [
            "ParamSignature :: new :: < & 'static [Real] > (\"x\" , \"&[Real]\" , 1u8)",
            "ParamSignature :: new :: < & 'static [Real] > (\"y\" , \"&'a [Real]\" , 0u8)",
            "ParamSignature :: new :: < DisjointSlice < 'static , Flag > > (\"out\" , \"DisjointSlice<Flag>\" , 1u8)",
            "ParamSignature :: new :: < u32 > (\"n\" , \"u32\" , 0u8)",
        ] {
            assert!(params.contains(want), "{want}\n{params}");
        }
        let private = quote!(p);
        let whole = sig.whole(&private, &quote!(P)).to_string();
        assert_eq!(
            whole,
            "p :: kernel_fingerprint (\"kc\" , \"add\" , true , P)"
        );
        let global = sig.device_global(&private, &k.item.sig.ident).to_string();
        assert!(
            global.contains("static __gpukernel_sig_add : [p :: core :: primitive :: u64 ; 11] = p :: signature_words :: < 11 >"),
            "{global}"
        );
        assert!(
            global.contains("const __GK_PARAMS : [p :: ParamSignature ; 4] ="),
            "{global}"
        );
    }
}
