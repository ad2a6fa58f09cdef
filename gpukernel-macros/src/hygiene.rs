//! How generated code stays out of the user's way: it reaches support code only through
//! `gpukernel_device::__private` (at the path `crate = "..."` gives, for a renamed
//! dependency), and every name it introduces for its own locals and parameters has a
//! mixed-site span, so that it can neither capture nor shadow a name the user wrote.
//!
//! Mixed-site spans do not separate items, and an item is in scope throughout the block that
//! holds it, its own body included. So no generated item is ever declared where the user's
//! code can see it: the function holding a kernel's body is an associated function of the
//! kernel's marker type (which names no scope: the body's `__gk_body` is the user's), the
//! simulator's entry function and the signature global live inside `const` blocks that the
//! body is not in, and the only generated names in the user's module are the kernel's own
//! (the marker type and, on the host, its function).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::{LitStr, Path};

use crate::diag::error;

/// The path of the device library in the expanding crate: `::gpukernel_device` unless
/// `crate = "..."` names another.
#[derive(Clone)]
pub(crate) struct Support {
    krate: TokenStream,
}

impl Default for Support {
    fn default() -> Self {
        Support {
            krate: quote!(::gpukernel_device),
        }
    }
}

impl Support {
    /// Support code at `path` (as given by `crate = "path"`).
    pub(crate) fn at(path: &Path) -> Self {
        Support {
            krate: quote!(#path),
        }
    }

    /// `<crate>::__private`: the only path generated code names support code through.
    pub(crate) fn private(&self) -> TokenStream {
        let krate = &self.krate;
        quote!(#krate::__private)
    }
}

/// Parses the value of `crate = "path"`.
pub(crate) fn crate_path(lit: &LitStr) -> syn::Result<Path> {
    lit.parse::<Path>().map_err(|_| {
        error(
            lit,
            format!("`{}` is not a path", lit.value()),
            Some("name the crate `gpukernel-device` is renamed to, e.g. `crate = \"gkd\"` for `gkd = { package = \"gpukernel-device\", .. }`"),
        )
    })
}

/// A name for a generated local, parameter or helper: its span is mixed-site, so the user's
/// code cannot refer to it and it cannot shadow or capture the user's names (items, which
/// mixed-site hygiene does not separate, are kept where the user's code cannot see them:
/// see the module's documentation).
pub(crate) fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_renamed_paths() {
        assert_eq!(
            Support::default().private().to_string(),
            ":: gpukernel_device :: __private"
        );
        let lit: LitStr = syn::parse_quote!("gkd");
        let path = crate_path(&lit).unwrap();
        assert_eq!(Support::at(&path).private().to_string(), "gkd :: __private");
        let lit: LitStr = syn::parse_quote!("::a::b");
        assert!(crate_path(&lit).is_ok());
        let lit: LitStr = syn::parse_quote!("not a path");
        let e = crate_path(&lit).err().unwrap().to_string();
        assert!(e.contains("`not a path` is not a path"), "{e}");
    }
}
