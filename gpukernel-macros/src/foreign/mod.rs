//! `declare_device!`: typed Rust wrappers for foreign CUDA C device functions that follow
//! Numba's ABI, `extern "C" __device__ int f(T* ret, args...)` with 0 meaning success, or
//! (written `extern "C" fn(..) -> T`) plain C functions `extern "C" __device__ T f(args...)`.
//! Each declaration is also recorded for the linker ([`manifest`]).
//!
//! Pipeline: [`parse`] (tokens → [`Entry`] list; a malformed entry is reported and skipped, the
//! others still parse) → [`check`] → [`expand`]. The expansion is the same on both targets: on
//! the host the symbol comes from the `.cu` file compiled for the host.

mod check;
mod expand;
mod manifest;
mod parse;

use proc_macro2::{Ident, TokenStream};
use syn::{Attribute, LitStr, Type, Visibility};

use crate::diag::Errors;

/// One declared foreign function.
pub(crate) struct Entry {
    /// `#[cfg]` / `#[cfg_attr]`: on every generated item.
    pub cfgs: Vec<Attribute>,
    /// Every other attribute, doc comments included: on the wrapper.
    pub attrs: Vec<Attribute>,
    /// The wrapper's visibility.
    pub vis: Visibility,
    /// The Rust name given with `name = "symbol"`.
    pub alias: Option<Ident>,
    /// The foreign symbol.
    pub symbol: LitStr,
    /// `safe fn(..)`: the wrapper is a safe function (the only way to get one; refused with
    /// pointer arguments).
    pub safe: Option<Ident>,
    /// `unsafe fn(..)`: the wrapper is `unsafe`, as it is without `safe`.
    pub unsafety: Option<syn::Token![unsafe]>,
    /// An explicit ABI: `extern "C"` declares a plain C function (no status, no return
    /// slot); any other ABI is an error.
    pub abi: Option<syn::Abi>,
    /// `for<'a>` or `fn<T>` (an error).
    pub generics: Option<TokenStream>,
    /// The arguments after the return slot.
    pub args: Vec<Arg>,
    /// `...` (an error).
    pub variadic: Option<syn::Token![...]>,
    /// The return type; `None` for `()` written or omitted.
    pub ret: Option<Type>,
}

/// One argument of a foreign function.
pub(crate) struct Arg {
    /// `name: T` gives the wrapper's parameter a name.
    pub name: Option<Ident>,
    /// The type as written.
    pub ty: Type,
}

impl Entry {
    /// Whether the entry declares a plain C function (`extern "C" fn(..) -> T`).
    pub(crate) fn is_c_abi(&self) -> bool {
        self.abi
            .as_ref()
            .is_some_and(|abi| abi.name.as_ref().is_some_and(|n| n.value() == "C"))
    }

    /// The Rust name of the wrapper: the alias, else the symbol (if it is a valid identifier).
    pub(crate) fn rust_name(&self) -> Option<Ident> {
        match &self.alias {
            Some(alias) => Some(alias.clone()),
            None => {
                let mut ident: Ident = syn::parse_str(&self.symbol.value()).ok()?;
                ident.set_span(self.symbol.span());
                Some(ident)
            }
        }
    }
}

/// Expands `declare_device!(...)`.
pub(crate) fn declare_device(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let (support, entries) = parse::parse(input, &mut errors);
    let valid = check::check(&entries, &mut errors);
    let mut tokens: TokenStream = entries
        .iter()
        .zip(valid)
        .filter(|(_, ok)| *ok)
        .map(|(e, _)| {
            let mut tokens = expand::expand(e, &support);
            tokens.extend(manifest::record(e, &support));
            tokens.extend(manifest::type_checks(e, &support));
            tokens
        })
        .collect();
    tokens.extend(errors.to_compile_errors());
    tokens
}
