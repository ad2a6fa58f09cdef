//! `ItemFn` → [`Kernel`]: classifies attributes and parameters; never fails (problems are
//! recorded in the IR for [`super::check`]).

use syn::{FnArg, ItemFn, Pat};

use super::{Binding, Kernel, Param, ParamKind};
use crate::ty::{TypeKind, classify};

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
        TypeKind::Disjoint { elem } => ParamKind::Disjoint { elem: elem.clone() },
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
                ParamKind::Disjoint { elem } => format!("disjoint {}", elem.to_token_stream()),
                ParamKind::Ptr => "ptr".to_owned(),
                ParamKind::Unsupported(why) => format!("unsupported {why:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "scalar",
                "slice f32",
                "disjoint f32",
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

    #[test]
    fn keeps_the_receiver_apart() {
        let k = parse_str("fn k(&self, a: u32) {}");
        assert!(k.receiver.is_some());
        assert_eq!(k.params.len(), 1);
        assert_eq!(k.params[0].index, 0);
    }
}
