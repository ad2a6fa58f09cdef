//! Syntactic classification of the types that may cross to the device, shared by `#[kernel]`
//! and `declare_device!`. Types are recognised by their spelling only (a proc macro cannot
//! resolve names); by-value struct types are then checked with a `DeviceCopy` const assertion.

use syn::visit_mut::VisitMut;
use syn::{GenericArgument, Lifetime, PathArguments, Type, TypePath};

/// The primitive types passed by value (one ABI parameter each).
pub(crate) const SCALARS: &[&str] = &[
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "usize", "isize", "bool",
];

/// What a type is, as far as the device ABI cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeKind<'a> {
    /// One of [`SCALARS`].
    Scalar,
    /// `()`.
    Unit,
    /// Any other path without generic arguments: a by-value `#[repr(C)]` struct that must be
    /// `DeviceCopy`.
    Struct,
    /// `*const T` or `*mut T`.
    Ptr { mutable: bool, pointee: &'a Type },
    /// `&[T]` or `&mut [T]`.
    Slice { mutable: bool, elem: &'a Type },
    /// `DisjointSlice<T>` or `DisjointSlice<'a, T>` (any path ending in `DisjointSlice`), and
    /// likewise `DisjointSlice2D` (`dims` 2) and `DisjointSlice3D` (`dims` 3).
    Disjoint { elem: &'a Type, dims: u8 },
    /// `Slice2D<T>` or `Slice2D<'a, T>` (any path ending in `Slice2D`): a read-only 2D input.
    Slice2D { elem: &'a Type },
    /// Anything else, with the reason.
    Unsupported(Unsupported),
}

/// Why a type cannot cross to the device. Each macro words the message and the hint for its
/// own context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsupported {
    /// `&T` or `&mut T` where `T` is not a slice.
    Reference,
    /// `&str`, `str`, `String`, `CStr`, `CString`.
    Text,
    /// `char`.
    Char,
    /// `i128`, `u128`.
    Int128,
    /// `(A, B)`.
    Tuple,
    /// `[T; N]` or a bare `[T]`.
    Array,
    /// `impl Trait`.
    ImplTrait,
    /// `dyn Trait` (or a bare trait object).
    TraitObject,
    /// `fn(..)`.
    FnPointer,
    /// `!`.
    Never,
    /// `_`.
    Infer,
    /// `Vec<T>`, `Box<T>`, `Rc<T>`, `Arc<T>`, `VecDeque<T>`: types that own host memory.
    HostOwned,
    /// A path with generic arguments, such as `Option<u32>`.
    GenericPath,
    /// `DisjointSlice` (or `Slice2D`) with other arguments than one type (and an optional
    /// lifetime).
    BadDisjoint,
    /// `<T as Trait>::Assoc` or `Self`.
    QualifiedPath,
    /// A macro in type position, or syntax this crate does not know.
    Other,
}

/// Removes parentheses and invisible groups (from `macro_rules!` expansions) around a type.
pub(crate) fn strip(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Paren(p) => ty = &p.elem,
            Type::Group(g) => ty = &g.elem,
            _ => return ty,
        }
    }
}

/// Classifies `ty`.
pub(crate) fn classify(ty: &Type) -> TypeKind<'_> {
    match strip(ty) {
        Type::Path(path) => classify_path(path),
        Type::Ptr(ptr) => TypeKind::Ptr {
            mutable: ptr.mutability.is_some(),
            pointee: &ptr.elem,
        },
        Type::Reference(reference) => match strip(&reference.elem) {
            Type::Slice(slice) => TypeKind::Slice {
                mutable: reference.mutability.is_some(),
                elem: &slice.elem,
            },
            Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
                TypeKind::Unsupported(Unsupported::Text)
            }
            _ => TypeKind::Unsupported(Unsupported::Reference),
        },
        Type::Tuple(tuple) if tuple.elems.is_empty() => TypeKind::Unit,
        Type::Tuple(_) => TypeKind::Unsupported(Unsupported::Tuple),
        Type::Array(_) | Type::Slice(_) => TypeKind::Unsupported(Unsupported::Array),
        Type::ImplTrait(_) => TypeKind::Unsupported(Unsupported::ImplTrait),
        Type::TraitObject(_) => TypeKind::Unsupported(Unsupported::TraitObject),
        Type::BareFn(_) => TypeKind::Unsupported(Unsupported::FnPointer),
        Type::Never(_) => TypeKind::Unsupported(Unsupported::Never),
        Type::Infer(_) => TypeKind::Unsupported(Unsupported::Infer),
        _ => TypeKind::Unsupported(Unsupported::Other),
    }
}

fn classify_path(ty: &TypePath) -> TypeKind<'_> {
    if ty.qself.is_some() {
        return TypeKind::Unsupported(Unsupported::QualifiedPath);
    }
    let path = &ty.path;
    let Some(last) = path.segments.last() else {
        return TypeKind::Unsupported(Unsupported::Other);
    };
    if let Some(dims) = disjoint_dims(&last.ident) {
        return match disjoint_elem(&last.arguments) {
            Some(elem) => TypeKind::Disjoint { elem, dims },
            None => TypeKind::Unsupported(Unsupported::BadDisjoint),
        };
    }
    if last.ident == "Slice2D" {
        return match disjoint_elem(&last.arguments) {
            Some(elem) => TypeKind::Slice2D { elem },
            None => TypeKind::Unsupported(Unsupported::BadDisjoint),
        };
    }
    if ["Vec", "VecDeque", "Box", "Rc", "Arc"]
        .iter()
        .any(|s| last.ident == s)
    {
        return TypeKind::Unsupported(Unsupported::HostOwned);
    }
    if path.segments.iter().any(|s| !s.arguments.is_none()) {
        return TypeKind::Unsupported(Unsupported::GenericPath);
    }
    if let Some(ident) = path.get_ident() {
        let name = ident.to_string();
        if SCALARS.contains(&name.as_str()) {
            return TypeKind::Scalar;
        }
        match name.as_str() {
            "i128" | "u128" => return TypeKind::Unsupported(Unsupported::Int128),
            "char" => return TypeKind::Unsupported(Unsupported::Char),
            "str" => return TypeKind::Unsupported(Unsupported::Text),
            "Self" => return TypeKind::Unsupported(Unsupported::QualifiedPath),
            _ => {}
        }
    }
    if ["String", "CString", "CStr", "OsString", "OsStr"]
        .iter()
        .any(|s| last.ident == s)
    {
        return TypeKind::Unsupported(Unsupported::Text);
    }
    TypeKind::Struct
}

/// Whether `ty` names `ConditionalHandle` (`gpukernel_device::graph::ConditionalHandle`, by its
/// last path segment, as `DisjointSlice` is recognised): a by-value kernel parameter that is
/// not `DeviceCopy`.
pub(crate) fn is_conditional_handle(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "ConditionalHandle" && s.arguments.is_none()))
}

/// The dimensions of a disjoint output type's name: `DisjointSlice` 1, `DisjointSlice2D` 2,
/// `DisjointSlice3D` 3.
pub(crate) fn disjoint_dims(ident: &syn::Ident) -> Option<u8> {
    if ident == "DisjointSlice" {
        Some(1)
    } else if ident == "DisjointSlice2D" {
        Some(2)
    } else if ident == "DisjointSlice3D" {
        Some(3)
    } else {
        None
    }
}

/// The element type of `DisjointSlice<T>` / `DisjointSlice<'a, T>`.
fn disjoint_elem(args: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = args else {
        return None;
    };
    let mut elem = None;
    let mut lifetimes = 0;
    for arg in &args.args {
        match arg {
            GenericArgument::Lifetime(_) if lifetimes == 0 && elem.is_none() => lifetimes += 1,
            GenericArgument::Type(ty) if elem.is_none() => elem = Some(ty),
            _ => return None,
        }
    }
    elem
}

/// A filter that keeps the first type of each spelling, so that a type used twice gets one
/// `DeviceCopy` assertion (and at most one error).
pub(crate) fn first_of_its_spelling() -> impl FnMut(&&Type) -> bool {
    let mut seen = std::collections::HashSet::new();
    move |ty| seen.insert(quote::ToTokens::to_token_stream(*ty).to_string())
}

/// Returns `ty` with every lifetime, named or elided, replaced by `'static`, including the
/// elided lifetime of `DisjointSlice<T>` and `Slice2D<T>` (for `Kernel::Params`).
pub(crate) fn all_static(ty: &Type) -> Type {
    let mut ty = ty.clone();
    Lifetimes {
        lifetime: Lifetime::new("'static", proc_macro2::Span::call_site()),
        all: true,
    }
    .visit_type_mut(&mut ty);
    ty
}

/// Returns `ty` with `'_` written into `DisjointSlice<T>` and `Slice2D<T>` (so that the
/// generated functions do not trip the `elided_lifetimes_in_paths` lint); other lifetimes are
/// kept.
pub(crate) fn explicit_disjoint_lifetime(ty: &Type) -> Type {
    let mut ty = ty.clone();
    Lifetimes {
        lifetime: Lifetime::new("'_", proc_macro2::Span::call_site()),
        all: false,
    }
    .visit_type_mut(&mut ty);
    ty
}

struct Lifetimes {
    lifetime: Lifetime,
    /// Replace every lifetime (and fill elided reference lifetimes), not only fill
    /// `DisjointSlice`'s.
    all: bool,
}

impl VisitMut for Lifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
        if self.all {
            *lifetime = Lifetime::new(&self.lifetime.to_string(), lifetime.apostrophe);
        }
    }

    fn visit_type_reference_mut(&mut self, reference: &mut syn::TypeReference) {
        if self.all && reference.lifetime.is_none() {
            reference.lifetime = Some(self.lifetime.clone());
        }
        syn::visit_mut::visit_type_reference_mut(self, reference);
    }

    fn visit_path_segment_mut(&mut self, segment: &mut syn::PathSegment) {
        if (disjoint_dims(&segment.ident).is_some() || segment.ident == "Slice2D")
            && let PathArguments::AngleBracketed(args) = &mut segment.arguments
            && !args
                .args
                .iter()
                .any(|a| matches!(a, GenericArgument::Lifetime(_)))
        {
            args.args
                .insert(0, GenericArgument::Lifetime(self.lifetime.clone()));
        }
        syn::visit_mut::visit_path_segment_mut(self, segment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn ty(s: &str) -> Type {
        syn::parse_str(s).unwrap()
    }

    fn tokens(t: &Type) -> String {
        t.to_token_stream().to_string()
    }

    #[test]
    fn classifies_scalars_structs_and_pointers() {
        for s in SCALARS {
            assert_eq!(classify(&ty(s)), TypeKind::Scalar, "{s}");
        }
        assert_eq!(classify(&ty("()")), TypeKind::Unit);
        assert_eq!(classify(&ty("Pair")), TypeKind::Struct);
        assert_eq!(classify(&ty("crate::types::Pair")), TypeKind::Struct);
        assert_eq!(classify(&ty("::core::primitive::f32")), TypeKind::Struct);
        let t = ty("*mut u32");
        assert!(
            matches!(classify(&t), TypeKind::Ptr { mutable: true, pointee } if tokens(pointee) == "u32")
        );
        let t = ty("*const Pair");
        assert!(matches!(classify(&t), TypeKind::Ptr { mutable: false, .. }));
    }

    #[test]
    fn classifies_slices() {
        let t = ty("&[f32]");
        assert!(
            matches!(classify(&t), TypeKind::Slice { mutable: false, elem } if tokens(elem) == "f32")
        );
        let t = ty("&'a mut [u8]");
        assert!(matches!(
            classify(&t),
            TypeKind::Slice { mutable: true, .. }
        ));
        for (s, d) in [
            ("DisjointSlice<f32>", 1),
            ("DisjointSlice<'a, f32>", 1),
            ("gpukernel_device::DisjointSlice<f32>", 1),
            ("DisjointSlice2D<f32>", 2),
            ("DisjointSlice3D<'_, f32>", 3),
        ] {
            let t = ty(s);
            assert!(
                matches!(classify(&t), TypeKind::Disjoint { elem, dims } if tokens(elem) == "f32" && dims == d),
                "{s}"
            );
        }
        let t = ty("(&[f32])");
        assert!(matches!(classify(&t), TypeKind::Slice { .. }));
        for s in [
            "Slice2D<f32>",
            "Slice2D<'a, f32>",
            "gpukernel_device::Slice2D<f32>",
        ] {
            let t = ty(s);
            assert!(
                matches!(classify(&t), TypeKind::Slice2D { elem } if tokens(elem) == "f32"),
                "{s}"
            );
        }
    }

    #[test]
    fn rejects_what_cannot_cross() {
        let cases = [
            ("&f32", Unsupported::Reference),
            ("&mut Pair", Unsupported::Reference),
            ("&str", Unsupported::Text),
            ("String", Unsupported::Text),
            ("std::ffi::CString", Unsupported::Text),
            ("char", Unsupported::Char),
            ("u128", Unsupported::Int128),
            ("i128", Unsupported::Int128),
            ("(f32, f32)", Unsupported::Tuple),
            ("[f32; 4]", Unsupported::Array),
            ("impl Copy", Unsupported::ImplTrait),
            ("dyn Fn()", Unsupported::TraitObject),
            ("fn(f32) -> f32", Unsupported::FnPointer),
            ("!", Unsupported::Never),
            ("_", Unsupported::Infer),
            ("Vec<f32>", Unsupported::HostOwned),
            ("alloc::boxed::Box<[f32]>", Unsupported::HostOwned),
            ("Option<u32>", Unsupported::GenericPath),
            ("DisjointSlice", Unsupported::BadDisjoint),
            ("DisjointSlice<f32, f32>", Unsupported::BadDisjoint),
            ("Slice2D", Unsupported::BadDisjoint),
            ("Slice2D<f32, u32>", Unsupported::BadDisjoint),
            ("<T as Tr>::X", Unsupported::QualifiedPath),
            ("Self", Unsupported::QualifiedPath),
        ];
        for (s, why) in cases {
            assert_eq!(classify(&ty(s)), TypeKind::Unsupported(why), "{s}");
        }
    }

    #[test]
    fn rewrites_lifetimes() {
        assert_eq!(tokens(&all_static(&ty("&[f32]"))), "& 'static [f32]");
        assert_eq!(
            tokens(&all_static(&ty("&'a mut [f32]"))),
            "& 'static mut [f32]"
        );
        assert_eq!(
            tokens(&all_static(&ty("DisjointSlice<f32>"))),
            "DisjointSlice < 'static , f32 >"
        );
        assert_eq!(
            tokens(&all_static(&ty("DisjointSlice<'_, f32>"))),
            "DisjointSlice < 'static , f32 >"
        );
        assert_eq!(
            tokens(&all_static(&ty("*const &u8"))),
            "* const & 'static u8"
        );
        assert_eq!(
            tokens(&explicit_disjoint_lifetime(&ty("DisjointSlice<f32>"))),
            "DisjointSlice < '_ , f32 >"
        );
        assert_eq!(
            tokens(&all_static(&ty("DisjointSlice2D<f32>"))),
            "DisjointSlice2D < 'static , f32 >"
        );
        assert_eq!(
            tokens(&all_static(&ty("Slice2D<f32>"))),
            "Slice2D < 'static , f32 >"
        );
        assert_eq!(
            tokens(&explicit_disjoint_lifetime(&ty("Slice2D<f32>"))),
            "Slice2D < '_ , f32 >"
        );
        assert_eq!(
            tokens(&explicit_disjoint_lifetime(&ty("&[f32]"))),
            "& [f32]"
        );
    }
}
