//! `ItemFn` → [`Kernel`]: classifies attributes and parameters; never fails (problems are
//! recorded in the IR for [`super::check`]).

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::{FnArg, ItemFn, LitStr, Pat};

use super::{Binding, Kernel, Param, ParamKind};
use crate::diag::{Errors, error};
use crate::hygiene::{Support, crate_path};
use crate::ty::{TypeKind, classify};

const ARGS_HINT: &str = "`#[kernel]` takes `crate = \"path\"` (the name of a renamed \
                         `gpukernel-device` dependency) and `same_len(a, b, ..)` (slice \
                         parameters of one length, checked at every launch); most kernels need \
                         no argument";

/// The attribute's arguments: `#[kernel]`, `#[kernel(crate = "path")]`,
/// `#[kernel(same_len(a, b, ..))]` (any number of `same_len` groups).
pub(super) struct Args {
    pub support: Support,
    pub same_len: Vec<Vec<syn::Ident>>,
}

pub(super) fn args(attr: TokenStream, errors: &mut Errors) -> Args {
    let mut support: Option<Support> = None;
    let mut same_len = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("same_len") {
            let mut group = Vec::new();
            meta.parse_nested_meta(|inner| match inner.path.get_ident() {
                Some(id) if inner.input.is_empty() || inner.input.peek(syn::Token![,]) => {
                    group.push(id.clone());
                    Ok(())
                }
                _ => Err(error(
                    &inner.path,
                    "`same_len` takes parameter names, e.g. `same_len(x, y, out)`",
                    None,
                )),
            })?;
            same_len.push(group);
            return Ok(());
        }
        if !meta.path.is_ident("crate") {
            let name = quote::ToTokens::to_token_stream(&meta.path).to_string();
            return Err(error(
                &meta.path,
                format!("`{name}` is not an argument of `#[kernel]`"),
                Some(ARGS_HINT),
            ));
        }
        let lit: LitStr = meta.value()?.parse()?;
        if support.is_some() {
            return Err(error(
                &meta.path,
                "`crate` is given twice",
                Some("keep one `crate = \"path\"`"),
            ));
        }
        support = Some(Support::at(&crate_path(&lit)?));
        Ok(())
    });
    if let Err(e) = parser.parse2(attr) {
        errors.push(e);
    }
    Args {
        support: support.unwrap_or_default(),
        same_len,
    }
}

pub(super) fn parse(item: ItemFn) -> Kernel {
    let mut docs = Vec::new();
    let mut cfgs = Vec::new();
    let mut body_attrs = Vec::new();
    for attr in &item.attrs {
        let path = attr.path();
        if path.is_ident("doc") {
            docs.push(attr.clone());
        } else if path.is_ident("cfg") || path.is_ident("cfg_attr") {
            cfgs.push(attr.clone());
        } else {
            body_attrs.push(attr.clone());
        }
    }

    let mut receiver = None;
    let mut params = Vec::new();
    for input in &item.sig.inputs {
        match input {
            FnArg::Receiver(r) => receiver = Some(r.clone()),
            FnArg::Typed(arg) => params.push(Param {
                index: params.len(),
                binding: binding(&arg.pat),
                kind: param_kind(&arg.ty),
                arg: arg.clone(),
            }),
        }
    }

    Kernel {
        docs,
        cfgs,
        body_attrs,
        receiver,
        params,
        support: Support::default(),
        same_len: Vec::new(),
        item,
    }
}

fn binding(pat: &Pat) -> Binding {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            Binding::Ident(p.ident.clone())
        }
        Pat::Wild(_) => Binding::Wild,
        _ => Binding::Unsupported,
    }
}

fn param_kind(ty: &syn::Type) -> ParamKind {
    match classify(ty) {
        TypeKind::Scalar => ParamKind::Scalar,
        TypeKind::Struct => ParamKind::Struct,
        TypeKind::Ptr { .. } => ParamKind::Ptr,
        TypeKind::Slice {
            mutable: false,
            elem,
        } => ParamKind::Slice { elem: elem.clone() },
        TypeKind::Slice {
            mutable: true,
            elem,
        } => ParamKind::SliceMut { elem: elem.clone() },
        TypeKind::Disjoint { elem, dims } => ParamKind::Disjoint {
            elem: elem.clone(),
            dims,
        },
        TypeKind::Slice2D { elem } => ParamKind::Slice2D { elem: elem.clone() },
        // `()` carries nothing to a kernel: most likely a mistake, so it is refused as a tuple.
        TypeKind::Unit => ParamKind::Unsupported(crate::ty::Unsupported::Tuple),
        TypeKind::Unsupported(why) => ParamKind::Unsupported(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ty::Unsupported;
    use quote::ToTokens;

    fn parse_str(s: &str) -> Kernel {
        parse(syn::parse_str(s).unwrap())
    }

    #[test]
    fn sorts_attributes() {
        let k = parse_str(
            "/// Adds.\n#[cfg(feature = \"x\")]\n#[allow(unused)]\n#[inline(never)]\npub fn k() {}",
        );
        assert_eq!(k.docs.len(), 1);
        assert_eq!(k.cfgs.len(), 1);
        assert_eq!(k.body_attrs.len(), 2);
    }

    #[test]
    fn classifies_parameters_in_order() {
        let k = parse_str(
            "pub unsafe fn k(a: f32, x: &[f32], mut y: DisjointSlice<f32>, z: &mut [u8], \
             p: *mut u32, s: Pair, _: i32, (b, c): (u8, u8)) {}",
        );
        let kinds: Vec<_> = k
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKind::Scalar => "scalar".to_owned(),
                ParamKind::Struct => "struct".to_owned(),
                ParamKind::Slice { elem } => format!("slice {}", elem.to_token_stream()),
                ParamKind::SliceMut { elem } => format!("slice_mut {}", elem.to_token_stream()),
                ParamKind::Disjoint { elem, dims } => {
                    format!("disjoint{dims} {}", elem.to_token_stream())
                }
                ParamKind::Slice2D { elem } => format!("slice2d {}", elem.to_token_stream()),
                ParamKind::Ptr => "ptr".to_owned(),
                ParamKind::Unsupported(why) => format!("unsupported {why:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "scalar",
                "slice f32",
                "disjoint1 f32",
                "slice_mut u8",
                "ptr",
                "struct",
                "scalar",
                "unsupported Tuple"
            ]
        );
        assert!(matches!(&k.params[2].binding, Binding::Ident(i) if i == "y"));
        assert!(matches!(k.params[6].binding, Binding::Wild));
        assert!(matches!(k.params[7].binding, Binding::Unsupported));
        assert_eq!(k.params[7].index, 7);
        assert!(matches!(k.params[0].kind, ParamKind::Scalar));
        assert!(!matches!(
            k.params[1].kind,
            ParamKind::Unsupported(Unsupported::Reference)
        ));
    }

    fn args_errors(attr: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        let _ = args(attr, &mut errors);
        errors.messages()
    }

    #[test]
    fn the_arguments_are_the_crate_path_and_same_len_groups() {
        assert!(args_errors(quote::quote!()).is_empty());
        assert!(args_errors(quote::quote!(crate = "gkd")).is_empty());
        assert!(args_errors(quote::quote!(crate = "::renamed::device",)).is_empty());
        let mut errors = Errors::default();
        let support = args(quote::quote!(crate = "gkd"), &mut errors).support;
        assert_eq!(support.private().to_string(), "gkd :: __private");

        let e = args_errors(quote::quote!(block_size = 256));
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("`block_size` is not an argument of `#[kernel]`\nhint:"),
            "{e:?}"
        );
        let e = args_errors(quote::quote!(crate = "a", crate = "b"));
        assert!(e[0].contains("`crate` is given twice"), "{e:?}");
        let e = args_errors(quote::quote!(crate = "a b"));
        assert!(e[0].contains("`a b` is not a path"), "{e:?}");
        assert_eq!(args_errors(quote::quote!(crate = gkd)).len(), 1);
    }

    #[test]
    fn same_len_groups_are_kept_in_order() {
        let mut errors = Errors::default();
        let a = args(
            quote::quote!(same_len(x, y, out), crate = "gkd", same_len(a, b)),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        let names: Vec<Vec<String>> = a
            .same_len
            .iter()
            .map(|g| g.iter().map(|i| i.to_string()).collect())
            .collect();
        assert_eq!(names, [vec!["x", "y", "out"], vec!["a", "b"]]);
        let e = args_errors(quote::quote!(same_len(x::y, z)));
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("`same_len` takes parameter names"), "{e:?}");
        // A literal is refused by syn's nested-meta parser itself.
        assert_eq!(args_errors(quote::quote!(same_len("x", y))).len(), 1);
    }

    #[test]
    fn keeps_the_receiver_apart() {
        let k = parse_str("fn k(&self, a: u32) {}");
        assert!(k.receiver.is_some());
        assert_eq!(k.params.len(), 1);
        assert_eq!(k.params[0].index, 0);
    }
}
