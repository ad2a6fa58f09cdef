//! `#[derive(DeviceCopy)]`: implements `gpukernel_device::DeviceCopy` for a `#[repr(C)]` (or
//! `#[repr(transparent)]`) struct of `DeviceCopy` fields, with a `LAYOUT` that lists each
//! field's offset and layout, so that kernel signature fingerprints see through the struct (a
//! field whose type differs between the device and the host build refuses the kernel).
//!
//! Pipeline: parse (`syn::DeriveInput`) → check (a struct, no generics, a `repr` that fixes the
//! layout; all errors collected) → expand.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Member};

use crate::diag::{Errors, error};
use crate::hygiene::{Support, crate_path};

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let input = match syn::parse2::<DeriveInput>(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let support = support(&input, &mut errors);
    let fields = match &input.data {
        Data::Struct(s) => Some(&s.fields),
        Data::Enum(e) => {
            errors.push(error(
                e.enum_token,
                "`#[derive(DeviceCopy)]` applies to structs only: an enum's discriminant may hold values the other side does not know",
                Some("pass the discriminant as an integer field of a `#[repr(C)]` struct"),
            ));
            None
        }
        Data::Union(u) => {
            errors.push(error(
                u.union_token,
                "`#[derive(DeviceCopy)]` applies to structs only",
                Some("write `unsafe impl DeviceCopy for ..` by hand and state why it is sound"),
            ));
            None
        }
    };
    if !input.generics.params.is_empty() {
        errors.push(error(
            &input.generics,
            "`#[derive(DeviceCopy)]` does not take generic structs",
            Some("derive it for each concrete struct, or write the `unsafe impl` by hand"),
        ));
    }
    if matches!(input.data, Data::Struct(_)) && !has_fixed_layout(&input) {
        errors.push(error(
            &input.ident,
            format!(
                "`{}` needs `#[repr(C)]` (or `#[repr(transparent)]`) to cross to the device: Rust's default layout may differ between the host and the device build",
                input.ident
            ),
            Some("add `#[repr(C)]` to the struct"),
        ));
    }
    let (Some(fields), true) = (fields, errors.is_empty()) else {
        return errors.to_compile_errors();
    };
    let private = support.private();
    let name = &input.ident;
    let field_entries = fields.members().zip(fields.iter()).map(|(member, field)| {
        let ty = &field.ty;
        let (member, label) = match member {
            Member::Named(id) => (quote!(#id), id.to_string()),
            Member::Unnamed(i) => {
                let label = i.index.to_string();
                let i = syn::Index::from(i.index as usize);
                (quote!(#i), label)
            }
        };
        quote_spanned! {ty.span()=>
            #private::FieldLayout {
                name: #label,
                offset: #private::core::mem::offset_of!(#name, #member),
                layout: <#ty as #private::DeviceCopy>::LAYOUT,
                inside: <#ty as #private::DeviceCopy>::INSIDE,
            }
        }
    });
    quote! {
        // SAFETY: `#[repr(C)]` / `#[repr(transparent)]` (checked by the derive), so the layout
        // is the same on every target for the same field types; every field is `DeviceCopy`
        // (the `LAYOUT` below names each field's impl), so the struct holds no references or
        // host pointers, all-zero is a value and every value the device writes is one; `Copy`
        // and `'static` are the trait's supertraits.
        unsafe impl #private::DeviceCopy for #name {
            const LAYOUT: #private::TypeLayout =
                #private::TypeLayout::record_fields::<#name>(Self::FIELDS);
            const FIELDS: &'static [#private::FieldLayout] = &[#(#field_entries),*];
            const INSIDE: #private::Inside = #private::Inside::Fields(Self::FIELDS);
        }
    }
}

/// `#[repr(C)]`, `#[repr(transparent)]`, with or without `align(N)` / `packed`.
fn has_fixed_layout(input: &DeriveInput) -> bool {
    input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("repr"))
        .any(|a| {
            let mut fixed = false;
            let _ = a.parse_nested_meta(|m| {
                if m.path.is_ident("C") || m.path.is_ident("transparent") {
                    fixed = true;
                }
                if m.input.peek(syn::token::Paren) {
                    let _content;
                    syn::parenthesized!(_content in m.input);
                }
                Ok(())
            });
            fixed
        })
}

/// `#[device_copy(crate = "path")]`, for a renamed `gpukernel-device` dependency.
fn support(input: &DeriveInput, errors: &mut Errors) -> Support {
    let mut support = Support::default();
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("device_copy"))
    {
        let r = attr.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                let lit: syn::LitStr = m.value()?.parse()?;
                support = Support::at(&crate_path(&lit)?);
                Ok(())
            } else {
                Err(error(
                    &m.path,
                    "`device_copy` takes `crate = \"path\"` only",
                    Some("name the crate `gpukernel-device` is renamed to, e.g. `#[device_copy(crate = \"gkd\")]`"),
                ))
            }
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    support
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(item: proc_macro2::TokenStream) -> String {
        super::derive(item).to_string()
    }

    #[test]
    fn lists_each_field_with_its_offset() {
        let out = expand(quote! {
            #[repr(C)]
            #[derive(Clone, Copy)]
            pub struct Setting { pub scale: f32, pub flag: Flag }
        });
        assert!(
            out.contains("unsafe impl :: gpukernel_device :: __private :: DeviceCopy for Setting"),
            "{out}"
        );
        assert!(
            out.contains("name : \"scale\" , offset : :: gpukernel_device :: __private :: core :: mem :: offset_of ! (Setting , scale) , layout : < f32 as :: gpukernel_device :: __private :: DeviceCopy > :: LAYOUT ,"),
            "{out}"
        );
        assert!(
            out.contains("name : \"flag\" , offset : :: gpukernel_device :: __private :: core :: mem :: offset_of ! (Setting , flag) , layout : < Flag as"),
            "{out}"
        );
        assert!(
            out.contains("record_fields :: < Setting > (Self :: FIELDS)"),
            "{out}"
        );
        let out = expand(quote! {
            #[repr(transparent)]
            #[device_copy(crate = "gkd")]
            struct Meters(f64);
        });
        assert!(out.contains("offset_of ! (Meters , 0)"), "{out}");
        assert!(
            out.contains("gkd :: __private :: TypeLayout :: record_fields :: < Meters >"),
            "{out}"
        );
    }

    #[test]
    fn refuses_what_has_no_fixed_layout() {
        let out = expand(quote!(
            struct S {
                a: u32,
            }
        ));
        assert!(out.contains("needs `#[repr(C)]`"), "{out}");
        let out = expand(quote!(
            #[repr(align(8))]
            struct S {
                a: u32,
            }
        ));
        assert!(out.contains("needs `#[repr(C)]`"), "{out}");
        assert!(
            !expand(quote!(
                #[repr(C, align(8))]
                struct S {
                    a: u32,
                }
            ))
            .contains("compile_error")
        );
        let out = expand(quote!(
            #[repr(C)]
            enum E {
                A,
            }
        ));
        assert!(out.contains("applies to structs only"), "{out}");
        let out = expand(quote!(
            #[repr(C)]
            struct G<T> {
                a: T,
            }
        ));
        assert!(out.contains("does not take generic structs"), "{out}");
        let out = expand(quote!(
            #[repr(C)]
            #[device_copy(krate = "x")]
            struct S {
                a: u32,
            }
        ));
        assert!(out.contains("takes `crate = \\\"path\\\"` only"), "{out}");
    }
}
