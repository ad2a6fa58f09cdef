//! Every way a `#[kernel]` can be misused, each reported on the offending tokens.

use proc_macro2::{Ident, Span};
use quote::{ToTokens, quote};
use syn::{GenericParam, Item};

use super::{Binding, Kernel, ParamKind};
use crate::diag::{Errors, error, error_at};
use crate::ty::Unsupported;

const ALLOWED: &str = "a kernel takes scalars, `&[T]`, `DisjointSlice<T>` (and its 2D and 3D \
                       forms `DisjointSlice2D<T>`, `DisjointSlice3D<T>`), `&mut [T]` (in an \
                       `unsafe fn`), raw pointers, and `#[repr(C)]` structs that implement \
                       `DeviceCopy`";

pub(super) fn check(kernel: &Kernel, errors: &mut Errors) {
    let sig = &kernel.item.sig;
    if let Some(constness) = &sig.constness {
        errors.push(error(
            constness,
            "a kernel cannot be a `const fn`",
            Some("remove `const`"),
        ));
    }
    if let Some(asyncness) = &sig.asyncness {
        errors.push(error(
            asyncness,
            "a kernel cannot be `async`",
            Some("remove `async`"),
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(error(
            abi,
            "`#[kernel]` chooses the ABI itself",
            Some("remove the `extern` ABI: the device entry point is generated as `extern \"gpu-kernel\"`"),
        ));
    }
    if !sig.generics.params.is_empty() {
        let only_lifetimes = sig
            .generics
            .params
            .iter()
            .all(|p| matches!(p, GenericParam::Lifetime(_)));
        errors.push(if only_lifetimes {
            error(
                &sig.generics,
                "a kernel cannot have lifetime parameters",
                Some("remove them: `&[T]` and `DisjointSlice<T>` work with elided lifetimes"),
            )
        } else {
            error(
                &sig.generics,
                "a kernel cannot be generic",
                Some("a GPU entry point needs concrete types: write one kernel per type (a `macro_rules!` can stamp them out)"),
            )
        });
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        errors.push(error(
            where_clause,
            "a kernel cannot have a `where` clause",
            Some("remove it: a kernel has no generic parameters to constrain"),
        ));
    }
    if let Some(receiver) = &kernel.receiver {
        errors.push(error(
            receiver,
            "a kernel cannot take `self`",
            Some("a kernel is a free function: move it out of the `impl` block and pass the data as parameters"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(error(
            variadic,
            "a kernel cannot be variadic",
            Some("pass the values in a slice (`&[T]`)"),
        ));
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output
        && !matches!(crate::ty::strip(ty), syn::Type::Tuple(t) if t.elems.is_empty())
    {
        errors.push(error(
            ty,
            "a kernel cannot return a value",
            Some("write results into an output parameter, such as `out: DisjointSlice<T>`"),
        ));
    }

    entry_name(kernel, errors);
    let declared: Vec<&syn::Lifetime> = sig.generics.lifetimes().map(|l| &l.lifetime).collect();
    for param in &kernel.params {
        explicit_lifetimes(&param.arg.ty, &declared, errors);
        for attr in &param.arg.attrs {
            if attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr") {
                errors.push(error(
                    attr,
                    "a kernel parameter cannot be conditional: it would change the kernel's ABI",
                    Some("make the whole kernel conditional instead"),
                ));
            }
        }
        if let Binding::Unsupported = param.binding {
            errors.push(error(
                &param.arg.pat,
                "kernel parameters must be plain names",
                Some("bind the parameter to a name (`x: T` or `mut x: T`) and destructure it in the body"),
            ));
        }
        match &param.kind {
            ParamKind::SliceMut { elem } if sig.unsafety.is_none() => {
                let elem = elem.to_token_stream();
                errors.push(error(
                    &param.arg.ty,
                    "`&mut [T]` is only allowed in an `unsafe fn` kernel: every thread would get the whole slice, so safe code could race",
                    Some(&format!(
                        "take `DisjointSlice<{elem}>` (each thread writes its own index) or declare the kernel `unsafe fn`"
                    )),
                ));
            }
            ParamKind::Unsupported(why) => {
                let (message, hint) = unsupported(*why);
                errors.push(error(&param.arg.ty, message, Some(hint)));
            }
            _ => {}
        }
    }
    same_len(kernel, errors);
}

/// The symbol names that device code, libdevice, the CUDA device runtime and foreign code use
/// besides the ones reserved by prefix (see [`reserved_name`]): PTX system calls and the C
/// library functions LLVM and CUDA C call by name.
const RESERVED_NAMES: &[&str] = &[
    "vprintf", "printf", "malloc", "free", "memset", "memcpy", "memmove", "memcmp", "bcmp",
    "abort", "exit",
];

/// Why a kernel may not be named `name`, or `None`. A kernel's name is its entry's unmangled
/// symbol, in the one symbol namespace of the linked device code: a kernel named like a
/// function that other code calls (libdevice's `__nv_expf`, PTX's `vprintf`) captures those
/// calls, and LLVM deletes the callers, whose call now has the wrong signature.
fn reserved_name(name: &str) -> Option<&'static str> {
    if name.starts_with("__") {
        Some(
            "names that begin with `__` belong to the toolchain: libdevice (`__nv_*`), NVVM \
             (`__nvvm_*`), the compiler's runtime functions (`__udivti3`, ..), CUDA's \
             `__assertfail` and gpukernel's own symbols (`__gpukernel_*`)",
        )
    } else if name.starts_with("_Z") {
        Some(
            "names that begin with `_Z` are C++ mangled names, which foreign CUDA C++ code defines",
        )
    } else if name.starts_with("cuda") && name[4..].starts_with(|c: char| c.is_ascii_uppercase()) {
        Some(
            "`cuda*` names belong to the CUDA device runtime (`cudaGraphSetConditional`, `cudaLaunchDevice`, ..)",
        )
    } else if RESERVED_NAMES.contains(&name) {
        Some("it is a PTX system call or a C library function that device code calls by name")
    } else {
        None
    }
}

/// The kernel's name must not be a symbol that device code uses for something else.
fn entry_name(kernel: &Kernel, errors: &mut Errors) {
    let ident = &kernel.item.sig.ident;
    let name = syn::ext::IdentExt::unraw(ident).to_string();
    if let Some(why) = reserved_name(&name) {
        errors.push(error(
            ident,
            format!(
                "a kernel cannot be named `{name}`: its entry point's symbol would take the place of the function of that name that device code calls ({why})"
            ),
            Some("rename the kernel"),
        ));
    }
}

/// Every lifetime written in a parameter's type, except `'_` and those declared as the
/// kernel's own generic parameters (already refused), is refused: a kernel's slices live for
/// one launch, and a named lifetime (`&'static [u32]`) would let the body keep them longer.
fn explicit_lifetimes(ty: &syn::Type, declared: &[&syn::Lifetime], errors: &mut Errors) {
    struct Finder<'a> {
        declared: &'a [&'a syn::Lifetime],
        found: Vec<syn::Lifetime>,
    }
    impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
        fn visit_lifetime(&mut self, lifetime: &'ast syn::Lifetime) {
            if lifetime.ident != "_" && !self.declared.contains(&lifetime) {
                self.found.push(lifetime.clone());
            }
        }
    }
    let mut finder = Finder {
        declared,
        found: Vec::new(),
    };
    syn::visit::Visit::visit_type(&mut finder, ty);
    for lifetime in finder.found {
        errors.push(error(
            &lifetime,
            format!("a kernel parameter cannot name a lifetime (`{lifetime}`): its data lives for one launch only"),
            Some("leave the lifetime out (`&[T]`, `DisjointSlice<T>`) or write `'_`: the body then cannot keep the data past the launch"),
        ));
    }
}

/// `same_len(a, b, ..)`: two or more names, each a one-dimensional slice parameter of the
/// kernel, none named twice (in any group).
fn same_len(kernel: &Kernel, errors: &mut Errors) {
    let mut seen: Vec<&Ident> = Vec::new();
    for group in &kernel.same_len {
        if group.len() < 2 {
            let span = group
                .first()
                .map(|i| i.span())
                .unwrap_or_else(Span::call_site);
            errors.push(error_at(
                span,
                "`same_len` needs two or more parameters",
                Some("name the slices that share one length, e.g. `same_len(x, y, out)`"),
            ));
        }
        for name in group {
            if seen.contains(&name) {
                errors.push(error(
                    name,
                    format!("`{name}` is named twice in `same_len`"),
                    Some("name each parameter in one group, once"),
                ));
                continue;
            }
            seen.push(name);
            let param = kernel
                .params
                .iter()
                .find(|p| matches!(&p.binding, Binding::Ident(id) if id == name));
            match param.map(|p| &p.kind) {
                None => errors.push(error(
                    name,
                    format!("`same_len` names `{name}`, which is not a parameter of this kernel"),
                    Some("name the kernel's slice parameters as written in its signature"),
                )),
                Some(
                    ParamKind::Slice { .. }
                    | ParamKind::SliceMut { .. }
                    | ParamKind::Disjoint { dims: 1, .. },
                ) => {}
                Some(_) => errors.push(error(
                    name,
                    format!("`same_len` names `{name}`, which is not a one-dimensional slice"),
                    Some("`same_len` takes `&[T]`, `&mut [T]` and `DisjointSlice<T>` parameters"),
                )),
            }
        }
    }
}

/// The message and the hint for a parameter type that cannot reach the device.
fn unsupported(why: Unsupported) -> (&'static str, &'static str) {
    match why {
        Unsupported::Reference => (
            "a kernel cannot take a reference to one value: it would point into host memory",
            "pass it by value (its type must implement `DeviceCopy`) or as a one-element `&[T]`",
        ),
        Unsupported::Text => (
            "strings cannot be kernel parameters",
            "pass the bytes as `&[u8]`",
        ),
        Unsupported::Char => ("`char` cannot be a kernel parameter", "pass it as `u32`"),
        Unsupported::Int128 => (
            "128-bit integers cannot be kernel parameters: the GPU ABI has no 128-bit parameter",
            "pass it as two `u64` halves",
        ),
        Unsupported::Tuple => (
            "tuples cannot be kernel parameters: their layout is unspecified",
            "pass each element as its own parameter, or a `#[repr(C)]` struct that implements `DeviceCopy`",
        ),
        Unsupported::Array => (
            "arrays cannot be kernel parameters by value",
            "take `&[T]`, or wrap the array in a `#[repr(C)]` struct that implements `DeviceCopy`",
        ),
        Unsupported::ImplTrait => (
            "`impl Trait` cannot be a kernel parameter: a kernel cannot be generic",
            "name a concrete type",
        ),
        Unsupported::TraitObject => (
            "trait objects cannot be kernel parameters",
            "name a concrete type",
        ),
        Unsupported::FnPointer => (
            "function pointers cannot be kernel parameters: host functions cannot run on the GPU",
            "call the function from the kernel body (use `declare_device!` for foreign device functions)",
        ),
        Unsupported::HostOwned => (
            "`Vec`, `Box`, `Rc` and `Arc` cannot be kernel parameters: they own host memory, and a kernel has no allocator",
            "take `&[T]` to read (or `DisjointSlice<T>` to write), and on the host copy the data into a device buffer and pass that",
        ),
        Unsupported::GenericPath => (
            "generic types other than `DisjointSlice<T>`, `DisjointSlice2D<T>`, `DisjointSlice3D<T>` and `Slice2D<T>` cannot be kernel parameters",
            ALLOWED,
        ),
        Unsupported::BadDisjoint => (
            "a disjoint output (`DisjointSlice`, `DisjointSlice2D`, `DisjointSlice3D`) or a `Slice2D` input takes one element type",
            "write `DisjointSlice<T>` (or its 2D / 3D form, or `Slice2D<T>`, with one `T`)",
        ),
        Unsupported::QualifiedPath => (
            "associated types cannot be kernel parameters",
            "name the concrete type",
        ),
        Unsupported::Never | Unsupported::Infer | Unsupported::Other => {
            ("this type cannot be a kernel parameter", ALLOWED)
        }
    }
}

/// The error for `#[kernel]` on something other than a function, spanned on the item's
/// keyword and name.
pub(super) fn not_a_function(item: &Item) -> syn::Error {
    let head = match item {
        Item::Struct(i) => {
            let (kw, id) = (&i.struct_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Enum(i) => {
            let (kw, id) = (&i.enum_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Union(i) => {
            let (kw, id) = (&i.union_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Const(i) => {
            let (kw, id) = (&i.const_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Static(i) => {
            let (kw, id) = (&i.static_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Mod(i) => {
            let (kw, id) = (&i.mod_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Trait(i) => {
            let (kw, id) = (&i.trait_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Type(i) => {
            let (kw, id) = (&i.type_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Impl(i) => {
            let (kw, ty) = (&i.impl_token, &i.self_ty);
            quote!(#kw #ty)
        }
        other => other.to_token_stream(),
    };
    error(
        head,
        "`#[kernel]` applies to functions only",
        Some("write `#[kernel] pub fn name(..) { .. }`"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn messages(item: TokenStream) -> Vec<String> {
        let kernel = super::super::parse::parse(syn::parse2(item).unwrap());
        let mut errors = Errors::default();
        check(&kernel, &mut errors);
        errors.messages()
    }

    #[test]
    fn accepts_every_parameter_kind() {
        let errors = messages(quote! {
            /// Docs.
            pub unsafe fn k(a: f32, x: &[f32], mut y: DisjointSlice<'_, f32>, z: &mut [u8],
                            p: *mut u32, q: *const Pair, s: Pair, _: bool) -> () {}
        });
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn reports_every_signature_misuse_at_once() {
        let errors = messages(quote! {
            const async extern "C" fn k<T: Copy>(x: T) -> f32 where T: Clone {}
        });
        let expected = [
            "a kernel cannot be a `const fn`",
            "a kernel cannot be `async`",
            "`#[kernel]` chooses the ABI itself",
            "a kernel cannot be generic",
            "a kernel cannot have a `where` clause",
            "a kernel cannot return a value",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, expected) in errors.iter().zip(expected) {
            assert!(error.starts_with(expected), "{error} / {expected}");
            assert!(error.contains("\nhint: "), "{error}");
        }
    }

    #[test]
    fn lifetimes_receivers_and_variadics() {
        let errors = messages(quote!(
            fn k<'a>(&self, x: &'a [f32], ...) {}
        ));
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(errors[0].starts_with("a kernel cannot have lifetime parameters"));
        assert!(errors[1].starts_with("a kernel cannot take `self`"));
        assert!(errors[2].starts_with("a kernel cannot be variadic"));
    }

    #[test]
    fn named_lifetimes_in_parameter_types_are_refused() {
        let errors = messages(quote!(
            fn k(
                x: &'static [u32],
                y: DisjointSlice<'static, f32>,
                z: &'_ [u8],
                p: *const &'static u8,
            ) {
            }
        ));
        assert_eq!(errors.len(), 3, "{errors:#?}");
        for e in &errors {
            assert!(
                e.starts_with("a kernel parameter cannot name a lifetime (`'static`)"),
                "{e}"
            );
            assert!(e.contains("hint: leave the lifetime out"), "{e}");
        }
        // A declared lifetime parameter is reported once, as such.
        let errors = messages(quote!(
            fn k<'a>(x: &'a [f32], y: &'b [f32]) {}
        ));
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].starts_with("a kernel cannot have lifetime parameters"));
        assert!(errors[1].starts_with("a kernel parameter cannot name a lifetime (`'b`)"));
    }

    #[test]
    fn names_the_device_code_uses_are_refused() {
        for name in [
            "__nv_expf",
            "__nvvm_reflect",
            "__gpukernel_sig_x",
            "__assertfail",
            "__udivti3",
            "vprintf",
            "malloc",
            "free",
            "memset",
            "memcpy",
            "cudaGraphSetConditional",
            "_Z3addPfS_",
        ] {
            let item: syn::ItemFn = syn::parse_str(&format!("fn {name}() {{}}")).unwrap();
            let kernel = super::super::parse::parse(item);
            let mut errors = Errors::default();
            check(&kernel, &mut errors);
            let errors = errors.messages();
            assert_eq!(errors.len(), 1, "{name}: {errors:?}");
            assert!(
                errors[0].starts_with(&format!("a kernel cannot be named `{name}`")),
                "{errors:?}"
            );
        }
        for name in [
            "saxpy",
            "expf",
            "cuda_style",
            "free_list",
            "r#match",
            "_private",
            "cu",
        ] {
            let item: syn::ItemFn = syn::parse_str(&format!("fn {name}() {{}}")).unwrap();
            let mut errors = Errors::default();
            check(&super::super::parse::parse(item), &mut errors);
            assert!(errors.is_empty(), "{name}: {:?}", errors.messages());
        }
    }

    #[test]
    fn mutable_slices_need_an_unsafe_kernel() {
        let errors = messages(quote!(
            fn k(x: &mut [f32]) {}
        ));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("only allowed in an `unsafe fn` kernel"));
        assert!(errors[0].contains(
            "hint: take `DisjointSlice<f32>` (each thread writes its own index) or declare the kernel `unsafe fn`"
        ));
        assert!(
            messages(quote!(
                unsafe fn k(x: &mut [f32]) {}
            ))
            .is_empty()
        );
    }

    #[test]
    fn unsupported_parameters_and_patterns() {
        let errors = messages(quote! {
            fn k(a: (f32, f32), b: [f32; 4], c: &f32, d: &str, e: impl Copy, f: fn(), g: dyn Tr,
                 h: u128, i: char, j: Vec<f32>, (l, m): Pair, ref n: u32, #[cfg(x)] o: u32) {}
        });
        let expected = [
            "tuples cannot be kernel parameters",
            "arrays cannot be kernel parameters",
            "a kernel cannot take a reference to one value",
            "strings cannot be kernel parameters",
            "`impl Trait` cannot be a kernel parameter",
            "function pointers cannot be kernel parameters",
            "trait objects cannot be kernel parameters",
            "128-bit integers cannot be kernel parameters",
            "`char` cannot be a kernel parameter",
            "`Vec`, `Box`, `Rc` and `Arc` cannot be kernel parameters",
            "kernel parameters must be plain names",
            "kernel parameters must be plain names",
            "a kernel parameter cannot be conditional",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, expected) in errors.iter().zip(expected) {
            assert!(error.starts_with(expected), "{error} / {expected}");
        }
    }

    #[test]
    fn not_a_function_names_the_item() {
        let item: Item = syn::parse2(quote!(
            pub struct S {
                x: u32,
            }
        ))
        .unwrap();
        let error = not_a_function(&item);
        assert!(
            error
                .to_string()
                .starts_with("`#[kernel]` applies to functions only")
        );
    }
}
