//! `#[kernel]`: a Rust function that becomes a GPU entry point (on nvptx64) and a launch
//! descriptor plus simulator entry (on the host).
//!
//! Pipeline: [`parse`] (syn `ItemFn` → [`Kernel`] IR, total) → [`check`] (every misuse, all
//! reported) → [`expand`] (both targets' code, gated by `cfg(target_arch = "nvptx64")`),
//! which carries the [`signature`] fingerprint to both.

mod check;
mod expand;
mod parse;
mod signature;

use proc_macro2::{Ident, TokenStream};
use quote::ToTokens;
use syn::{Attribute, ItemFn, PatType, Type};

use crate::diag::Errors;
use crate::hygiene::Support;
use crate::ty::Unsupported;

/// A `#[kernel]` function after parsing. Keeps the original syntax for spans and for the
/// fallback expansion.
pub(crate) struct Kernel {
    /// The function as written (attributes included).
    pub item: ItemFn,
    /// `#[doc]` attributes: on the marker type, the body and the device entry.
    pub docs: Vec<Attribute>,
    /// `#[cfg]` / `#[cfg_attr]` attributes: on every generated item.
    pub cfgs: Vec<Attribute>,
    /// Every other attribute (lints, `#[inline]`, ...): on the function holding the body.
    pub body_attrs: Vec<Attribute>,
    /// A `self` receiver, which is an error.
    pub receiver: Option<syn::Receiver>,
    /// The typed parameters in order.
    pub params: Vec<Param>,
    /// Where the generated code finds `gpukernel_device` (`#[kernel(crate = "...")]`).
    pub support: Support,
    /// `#[kernel(same_len(a, b, ..))]` groups, as written.
    pub same_len: Vec<Vec<Ident>>,
}

/// One kernel parameter.
pub(crate) struct Param {
    /// Position among the parameters.
    pub index: usize,
    /// `pattern: Type` as written.
    pub arg: PatType,
    /// How the pattern binds.
    pub binding: Binding,
    /// How the type lowers to ABI parameters.
    pub kind: ParamKind,
}

/// How a parameter's pattern binds its value.
pub(crate) enum Binding {
    /// `x` or `mut x`.
    Ident(Ident),
    /// `_`.
    Wild,
    /// Anything else (destructuring, `ref x`, `x @ ..`): an error.
    Unsupported,
}

/// How a parameter lowers to the kernel ABI (see `gpukernel_device::Kernel`).
pub(crate) enum ParamKind {
    /// A primitive: one parameter by value.
    Scalar,
    /// A `DeviceCopy` struct: one parameter by value.
    Struct,
    /// `&[T]`: `*const T`, `usize`.
    Slice { elem: Type },
    /// `&mut [T]` (unsafe kernels only): `*mut T`, `usize`.
    SliceMut { elem: Type },
    /// `DisjointSlice<T>`: `*mut T`, `usize`; `DisjointSlice2D<T>` (`dims` 2): `*mut T`, cols,
    /// rows, pitch; `DisjointSlice3D<T>` (`dims` 3): `*mut T`, cols, rows, depth, pitch.
    Disjoint { elem: Type, dims: u8 },
    /// `Slice2D<T>`: `*const T`, cols, rows, pitch.
    Slice2D { elem: Type },
    /// `*const T` / `*mut T`: one parameter.
    Ptr,
    /// Not allowed in a kernel.
    Unsupported(Unsupported),
}

/// Expands `#[kernel]` (`attr` are the attribute's arguments, `item` the annotated item).
pub(crate) fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = parse::args(attr, &mut errors);
    let item_fn = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(item_fn)) => item_fn,
        Ok(other) => {
            errors.push(check::not_a_function(&other));
            return with_errors(item, &errors);
        }
        Err(e) => {
            errors.push(e);
            return with_errors(item, &errors);
        }
    };
    let mut kernel = parse::parse(item_fn);
    kernel.support = args.support;
    kernel.same_len = args.same_len;
    check::check(&kernel, &mut errors);
    if errors.is_empty() {
        let signature = signature::Signature::new(&signature::crate_name(), &kernel);
        expand::expand(&kernel, &signature)
    } else {
        with_errors(expand::fallback(&kernel), &errors)
    }
}

fn with_errors(item: impl ToTokens, errors: &Errors) -> TokenStream {
    let mut tokens = item.into_token_stream();
    tokens.extend(errors.to_compile_errors());
    tokens
}
