//! [`Kernel`] → tokens: the nvptx64 entry point and the host's marker type, `Kernel` impl and
//! simulator entry, each gated on `target_arch` (the macro runs on the host for both builds).

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Type};

use super::signature::Signature;
use super::{Binding, Kernel, Param, ParamKind};
use crate::hygiene::local;
use crate::ty::{all_static, explicit_disjoint_lifetime};

/// How one kernel parameter crosses the ABI.
struct Lowered {
    /// The ABI parameters: `(name, type)`, one or two.
    abi: Vec<(Ident, TokenStream)>,
    /// Rebuilds the Rust value from the ABI parameters (for slices).
    rebuild: Option<TokenStream>,
    /// The expression passed to the body.
    value: Ident,
}

fn lower(param: &Param, private: &TokenStream) -> Lowered {
    // Mixed-site names: the user's parameter names live in the body function, never here.
    let base = match &param.binding {
        Binding::Ident(ident) => format!("__gk_{}_{}", param.index, ident.unraw()),
        Binding::Wild | Binding::Unsupported => format!("__gk_{}", param.index),
    };
    let ty = &param.arg.ty;
    let (elem_ptr, rebuild_fn, extents): (_, _, &[&str]) = match &param.kind {
        ParamKind::Slice { elem } => (
            quote!(*const #elem),
            quote!(slice_from_raw::<#elem>),
            &["len"],
        ),
        ParamKind::SliceMut { elem } => (
            quote!(*mut #elem),
            quote!(slice_from_raw_mut::<#elem>),
            &["len"],
        ),
        ParamKind::Disjoint { elem, dims: 1 } => (
            quote!(*mut #elem),
            quote!(disjoint_from_raw::<#elem>),
            &["len"],
        ),
        ParamKind::Disjoint { elem, dims: 2 } => (
            quote!(*mut #elem),
            quote!(disjoint_2d_from_raw::<#elem>),
            &["cols", "rows", "pitch"],
        ),
        ParamKind::Disjoint { elem, .. } => (
            quote!(*mut #elem),
            quote!(disjoint_3d_from_raw::<#elem>),
            &["cols", "rows", "depth", "pitch"],
        ),
        ParamKind::Slice2D { elem } => (
            quote!(*const #elem),
            quote!(slice_2d_from_raw::<#elem>),
            &["cols", "rows", "pitch"],
        ),
        ParamKind::Scalar | ParamKind::Struct | ParamKind::Ptr | ParamKind::Unsupported(_) => {
            return Lowered {
                abi: vec![(local(&base), ty.to_token_stream())],
                rebuild: None,
                value: local(&base),
            };
        }
    };
    let ptr = local(&format!("{base}_ptr"));
    let extents: Vec<Ident> = extents
        .iter()
        .map(|e| local(&format!("{base}_{e}")))
        .collect();
    let base = local(&base);
    let rebuild = quote! {
        // SAFETY: the runtime passes a pointer and extents that describe one live buffer
        // for the whole launch, borrowed as the parameter's type says (see `Kernel`).
        let #base = unsafe { #private::#rebuild_fn(#ptr, #(#extents),*) };
    };
    let mut abi = vec![(ptr, elem_ptr)];
    abi.extend(
        extents
            .into_iter()
            .map(|e| (e, quote!(#private::core::primitive::usize))),
    );
    Lowered {
        abi,
        rebuild: Some(rebuild),
        value: base,
    }
}

/// The user's parameters as the body function takes them (with `DisjointSlice<'_, T>`).
fn body_params(kernel: &Kernel) -> Vec<FnArg> {
    kernel
        .params
        .iter()
        .map(|p| {
            let mut arg = p.arg.clone();
            *arg.ty = explicit_disjoint_lifetime(&arg.ty);
            FnArg::Typed(arg)
        })
        .collect()
}

/// `const _: () = assert_device_copy::<T>();` for each by-value struct (except
/// `gpukernel_device::graph::ConditionalHandle`) and each slice element type, spanned on the user's type so that a missing `DeviceCopy` is reported there.
fn device_copy_asserts(kernel: &Kernel, private: &TokenStream) -> TokenStream {
    let cfgs = &kernel.cfgs;
    kernel
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            // A conditional node's handle is a by-value parameter that is not `DeviceCopy`
            // (no buffer may hold one); its `ParamAbi` impl is the check.
            ParamKind::Struct if crate::ty::is_conditional_handle(&p.arg.ty) => None,
            ParamKind::Struct => Some(&*p.arg.ty),
            ParamKind::Slice { elem }
            | ParamKind::SliceMut { elem }
            | ParamKind::Disjoint { elem, .. }
            | ParamKind::Slice2D { elem } => Some(elem),
            _ => None,
        })
        .filter(crate::ty::first_of_its_spelling())
        .map(|ty: &Type| {
            let ty = all_static(ty);
            quote_spanned! {ty.span()=>
                #(#cfgs)*
                const _: () = #private::assert_device_copy::<#ty>();
            }
        })
        .collect()
}

pub(super) fn expand(kernel: &Kernel, signature: &Signature) -> TokenStream {
    let private = kernel.support.private();
    let lowered: Vec<Lowered> = kernel.params.iter().map(|p| lower(p, &private)).collect();
    let asserts = device_copy_asserts(kernel, &private);
    let marker = marker(kernel);
    let device = device(kernel, &lowered, signature);
    let host = host(kernel, &lowered, signature);
    quote! { #asserts #marker #device #host }
}

/// On both targets: the marker type named after the kernel (a braced struct: the type
/// namespace only) and, as its associated function, the function holding the body. An
/// associated function is no name in any scope, so a user's item named like it (`__gk_body`)
/// stays what the body calls; the entry and the simulator reach it as `<kernel>::__gk_body`.
fn marker(kernel: &Kernel) -> TokenStream {
    let sig = &kernel.item.sig;
    let name = &sig.ident;
    let vis = &kernel.item.vis;
    let private = kernel.support.private();
    let (cfgs, docs, body_attrs) = (&kernel.cfgs, &kernel.docs, &kernel.body_attrs);
    let unsafety = &sig.unsafety;
    let output = &sig.output;
    let block = body_block(kernel);
    let params = body_params(kernel);
    // On the GPU the body is inlined into the entry unless the kernel says otherwise.
    let inline =
        (!has_inline(kernel)).then(|| quote!(#[cfg_attr(target_arch = "nvptx64", inline(always))]));
    let body_fn = local("__gk_body");
    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types, dead_code)]
        #[derive(
            #private::core::clone::Clone,
            #private::core::marker::Copy,
            #private::core::fmt::Debug
        )]
        #vis struct #name {}

        #(#cfgs)*
        impl #name {
            #inline
            // The parameter list is the kernel's launch interface, taken by value by design.
            #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
            #(#body_attrs)*
            #unsafety fn #body_fn(#(#params),*) #output #block
        }
    }
}

fn device(kernel: &Kernel, lowered: &[Lowered], signature: &Signature) -> TokenStream {
    let sig = &kernel.item.sig;
    let name = &sig.ident;
    let (cfgs, docs) = (&kernel.cfgs, &kernel.docs);
    let unsafety = &sig.unsafety;
    let abi = lowered
        .iter()
        .flat_map(|l| &l.abi)
        .map(|(n, t)| quote!(#n: #t));
    let rebuild = lowered.iter().filter_map(|l| l.rebuild.as_ref());
    let values = lowered.iter().map(|l| &l.value);
    // rustc warns that aggregates in the "gpu-kernel" ABI "may have unexpected behavior"; a
    // `DeviceCopy` struct is `#[repr(C)]` and lowers to `.param .align A .b8 name[size]`, the
    // layout nvcc gives a struct kernel parameter (checked with ptxas), so the warning is
    // silenced for those parameters only. `unknown_lints`: older nightlies lack the lint.
    let allow_structs = kernel
        .params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Struct))
        .then(|| {
            quote! {
                #[allow(unknown_lints)]
                #[allow(improper_gpu_kernel_arg)]
            }
        });
    let body_fn = local("__gk_body");
    let call = quote!(#name::#body_fn(#(#values),*));
    let call = match unsafety {
        Some(_) => quote! {
            // SAFETY: the kernel's author states the conditions in its `# Safety` docs; the
            // launch that reached this entry point is `unsafe` or checked them.
            unsafe { #call }
        },
        None => call,
    };
    let private = kernel.support.private();
    let entry_name = name.unraw().to_string();
    let global = signature.device_global(&private, name);
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #(#cfgs)*
        #global

        #[cfg(target_arch = "nvptx64")]
        #(#cfgs)*
        #(#docs)*
        ///
        /// # Safety
        /// A GPU entry point: launched by the driver with the parameters laid out as the
        /// `gpukernel_device::Kernel` ABI says, never called from Rust.
        #[unsafe(no_mangle)]
        #allow_structs
        pub unsafe extern "gpu-kernel" fn #name(#(#abi),*) {
            #(#rebuild)*
            // The kernel a failing foreign call names (see `gpukernel_device::ffi`).
            #private::enter_kernel(#entry_name);
            #call;
        }
    }
}

fn host(kernel: &Kernel, lowered: &[Lowered], signature: &Signature) -> TokenStream {
    let sig = &kernel.item.sig;
    let name = &sig.ident;
    let name_str = name.unraw().to_string();
    let vis = &kernel.item.vis;
    let (cfgs, docs) = (&kernel.cfgs, &kernel.docs);
    let unsafety = &sig.unsafety;
    let param_tys = kernel.params.iter().map(|p| all_static(&p.arg.ty));
    let private = kernel.support.private();
    let signature_consts = signature.host_consts(&private);
    let same_len_const = same_len_const(kernel);
    let (body_fn, entry_fn, params_ident) = (
        local("__gk_body"),
        local("__gk_sim_entry"),
        local("__gk_params"),
    );

    let mut reads = Vec::new();
    for (k, (abi_name, abi_ty)) in lowered.iter().flat_map(|l| &l.abi).enumerate() {
        let k = Literal::usize_unsuffixed(k);
        reads.push(quote! {
            // SAFETY: the runtime's parameter array holds one pointer per ABI parameter, in
            // order, each to a value of that parameter's type.
            let #abi_name = unsafe { (*#params_ident.add(#k)).cast::<#abi_ty>().read_unaligned() };
        });
    }
    if reads.is_empty() {
        reads.push(quote!(let _ = #params_ident;));
    }
    let rebuild = lowered.iter().filter_map(|l| l.rebuild.as_ref());
    let values = lowered.iter().map(|l| &l.value);
    let call = quote!(#name::#body_fn(#(#values),*));
    let call = match unsafety {
        Some(_) => quote! {
            // SAFETY: as on the GPU, the launch is `unsafe` or checked the kernel's contract.
            unsafe { #call }
        },
        None => call,
    };

    // Only a kernel declared `fn` may be launched by the safe `Stream::launch`.
    let safe = unsafety.is_none().then(|| {
        quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            #(#cfgs)*
            // SAFETY: the kernel is a safe `fn`: its body is sound for any arguments of its
            // parameter types, which the safe launch only lends as those types allow.
            unsafe impl #private::SafeKernel for #name {}
        }
    });

    // The marker type lives in the type namespace only (a braced struct) and a function of
    // the same name returns it, so that the host can rebind the kernel's name:
    // `let saxpy = module.kernel(saxpy)?;` (a unit struct's name cannot be shadowed by `let`).
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #(#cfgs)*
        #(#docs)*
        #[doc = ""]
        #[doc = " On the host, the kernel's marker value: `module.kernel(this_function)` looks it up."]
        #[allow(non_snake_case, dead_code)]
        #[inline(always)]
        #vis const fn #name() -> #name {
            #name {}
        }

        #[cfg(not(target_arch = "nvptx64"))]
        #(#cfgs)*
        // SAFETY: generated by `#[kernel]`: `NAME` is the entry point's unmangled name, `Params`
        // the parameter types in order and `SIM_ENTRY` reads them in the documented ABI.
        unsafe impl #private::Kernel for #name {
            const NAME: &'static #private::core::primitive::str = #name_str;
            type Params = (#(#param_tys,)*);
            #signature_consts
            #same_len_const
            const SIM_ENTRY: #private::SimEntry = {
                unsafe fn #entry_fn(#params_ident: *const *mut #private::core::ffi::c_void) {
                    #(#reads)*
                    #(#rebuild)*
                    #call;
                }
                #entry_fn
            };
        }

        #safe
    }
}

fn has_inline(kernel: &Kernel) -> bool {
    kernel
        .body_attrs
        .iter()
        .any(|a| a.path().is_ident("inline"))
}

/// What is emitted next to the errors: the function as written (so that its body is still
/// type-checked and IDEs keep working), minus a variadic, which would only add an error.
pub(super) fn fallback(kernel: &Kernel) -> TokenStream {
    let mut item = kernel.item.clone();
    if item.sig.variadic.take().is_some() {
        // `fn f(a: u32, ...)`: the comma before `...` is the inputs' trailing punctuation.
        item.sig.inputs = item.sig.inputs.into_iter().collect();
    }
    item.into_token_stream()
}

/// The body as written, behind what `same_len` lets it assume: for each group, every length
/// equals the first (`assert_unchecked`, which the typed launches' host check makes true).
fn body_block(kernel: &Kernel) -> TokenStream {
    let block = &kernel.item.block;
    if kernel.same_len.is_empty() {
        return block.to_token_stream();
    }
    let private = kernel.support.private();
    let equal = kernel.same_len.iter().flat_map(|group| {
        let first = &group[0];
        group[1..]
            .iter()
            .map(move |other| quote!(#other.len() == #first.len()))
    });
    quote! {{
        // SAFETY: `#[kernel(same_len(..))]`: every typed launch refuses arguments of other
        // lengths on the host (`Error::SameLenViolated`), and an untyped launch's caller
        // promises the kernel's parameters as declared.
        unsafe { #private::core::hint::assert_unchecked(true #(&& #equal)*) };
        #block
    }}
}

/// `Kernel::SAME_LEN` for the declared groups: each parameter's name and position.
fn same_len_const(kernel: &Kernel) -> TokenStream {
    if kernel.same_len.is_empty() {
        return TokenStream::new();
    }
    let private = kernel.support.private();
    let groups = kernel.same_len.iter().map(|group| {
        let entries = group.iter().map(|name| {
            let index = kernel
                .params
                .iter()
                .find(|p| matches!(&p.binding, Binding::Ident(id) if id == name))
                .map_or(0, |p| p.index);
            let (name, index) = (name.unraw().to_string(), Literal::usize_unsuffixed(index));
            quote!((#name, #index))
        });
        quote!(&[#(#entries),*])
    });
    quote! {
        const SAME_LEN: &'static [&'static [(&'static #private::core::primitive::str, #private::core::primitive::usize)]] =
            &[#(#groups),*];
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    const USIZE: &str = ":: gpukernel_device :: __private :: core :: primitive :: usize";

    fn expand(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        super::super::kernel(attr, item).to_string()
    }

    #[test]
    fn the_signature_reaches_both_builds() {
        let out = expand(
            quote!(same_len(x, y)),
            quote!(
                pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {}
            ),
        );
        let krate = super::super::signature::crate_name();
        // Device: an exported array global named after the kernel, inside an anonymous const,
        // evaluated by the compiler from the device's types.
        assert!(
            out.contains(
                "const __GK_PARAMS : [:: gpukernel_device :: __private :: ParamSignature ; 3] = \
                 [:: gpukernel_device :: __private :: ParamSignature :: new :: < f32 > (\"a\" , \"f32\" , 0u8) , \
                 :: gpukernel_device :: __private :: ParamSignature :: new :: < & 'static [f32] > (\"x\" , \"&[f32]\" , 1u8) , \
                 :: gpukernel_device :: __private :: ParamSignature :: new :: < DisjointSlice < 'static , f32 > > (\"y\" , \"DisjointSlice<f32>\" , 1u8)] ;"
            ),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "# [unsafe (no_mangle)] # [allow (non_upper_case_globals)] static __gpukernel_sig_saxpy : \
                 [:: gpukernel_device :: __private :: core :: primitive :: u64 ; 9] = \
                 :: gpukernel_device :: __private :: signature_words :: < 9 > \
                 (:: gpukernel_device :: __private :: kernel_fingerprint (\"{krate}\" , \"saxpy\" , false , & __GK_PARAMS) , & __GK_PARAMS) ; }} ;"
            )),
            "{out}"
        );
        // Host: the same expressions, with the host's types.
        assert!(
            out.contains(
                "const PARAM_SIGNATURES : & 'static [:: gpukernel_device :: __private :: ParamSignature] = & [:: gpukernel_device :: __private :: ParamSignature :: new :: < f32 >"
            ),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "const SIGNATURE : :: gpukernel_device :: __private :: core :: primitive :: u64 = \
                 :: gpukernel_device :: __private :: kernel_fingerprint (\"{krate}\" , \"saxpy\" , false , Self :: PARAM_SIGNATURES) ;"
            )),
            "{out}"
        );
        // A raw name is the entry's name.
        let out = expand(
            quote!(),
            quote!(
                fn r#match() {}
            ),
        );
        assert!(out.contains("static __gpukernel_sig_match :"), "{out}");
        assert!(
            out.contains("< 3 > (:: gpukernel_device :: __private :: kernel_fingerprint (\""),
            "{out}"
        );
    }

    #[test]
    fn device_entry_lowers_slices_to_pointer_and_length() {
        let out = expand(
            quote!(),
            quote!(
                pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
                    body();
                }
            ),
        );
        assert!(
            out.contains(
                "pub unsafe extern \"gpu-kernel\" fn saxpy (__gk_0_a : f32 , \
                 __gk_1_x_ptr : * const f32 , __gk_1_x_len : USIZE , \
                 __gk_2_y_ptr : * mut f32 , __gk_2_y_len : USIZE)"
                    .replace("USIZE", USIZE)
                    .as_str()
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "fn __gk_body (a : f32 , x : & [f32] , mut y : DisjointSlice < '_ , f32 >)"
            ),
            "{out}"
        );
        assert!(
            out.contains("slice_from_raw :: < f32 > (__gk_1_x_ptr , __gk_1_x_len)"),
            "{out}"
        );
        assert!(
            out.contains("disjoint_from_raw :: < f32 > (__gk_2_y_ptr , __gk_2_y_len)"),
            "{out}"
        );
        assert!(
            out.contains("__gk_body (__gk_0_a , __gk_1_x , __gk_2_y) ;"),
            "{out}"
        );
        assert!(out.contains("# [cfg (target_arch = \"nvptx64\")]"), "{out}");
        assert!(
            out.contains("# [cfg (not (target_arch = \"nvptx64\"))]"),
            "{out}"
        );
    }

    #[test]
    fn two_and_three_dimensional_outputs_lower_to_pointer_and_extents() {
        let out = expand(
            quote!(),
            quote!(
                pub fn k(mut a: DisjointSlice2D<f32>, b: DisjointSlice3D<u8>) {}
            ),
        );
        assert!(
            out.contains(
                "pub unsafe extern \"gpu-kernel\" fn k (__gk_0_a_ptr : * mut f32 , \
                 __gk_0_a_cols : USIZE , __gk_0_a_rows : USIZE , __gk_0_a_pitch : USIZE , \
                 __gk_1_b_ptr : * mut u8 , __gk_1_b_cols : USIZE , __gk_1_b_rows : USIZE , \
                 __gk_1_b_depth : USIZE , __gk_1_b_pitch : USIZE)"
                    .replace("USIZE", USIZE)
                    .as_str()
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "disjoint_2d_from_raw :: < f32 > (__gk_0_a_ptr , __gk_0_a_cols , __gk_0_a_rows , __gk_0_a_pitch)"
            ),
            "{out}"
        );
        assert!(
            out.contains("disjoint_3d_from_raw :: < u8 > (__gk_1_b_ptr , __gk_1_b_cols ,"),
            "{out}"
        );
        assert!(
            out.contains(
                "type Params = (DisjointSlice2D < 'static , f32 > , DisjointSlice3D < 'static , u8 > ,) ;"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "fn __gk_body (mut a : DisjointSlice2D < '_ , f32 > , b : DisjointSlice3D < '_ , u8 >)"
            ),
            "{out}"
        );
        // Nine ABI values read by the simulator's entry.
        assert!(out.contains("__gk_params . add (8)"), "{out}");
        assert!(!out.contains("__gk_params . add (9)"), "{out}");
    }

    #[test]
    fn a_read_only_2d_input_lowers_to_a_const_pointer_and_extents() {
        let out = expand(
            quote!(),
            quote!(
                pub fn k(m: Slice2D<f32>) {}
            ),
        );
        assert!(
            out.contains(
                "pub unsafe extern \"gpu-kernel\" fn k (__gk_0_m_ptr : * const f32 , \
                 __gk_0_m_cols : USIZE , __gk_0_m_rows : USIZE , __gk_0_m_pitch : USIZE)"
                    .replace("USIZE", USIZE)
                    .as_str()
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "slice_2d_from_raw :: < f32 > (__gk_0_m_ptr , __gk_0_m_cols , __gk_0_m_rows , __gk_0_m_pitch)"
            ),
            "{out}"
        );
        assert!(
            out.contains("type Params = (Slice2D < 'static , f32 > ,) ;"),
            "{out}"
        );
        assert!(
            out.contains("fn __gk_body (m : Slice2D < '_ , f32 >)"),
            "{out}"
        );
        assert!(out.contains("assert_device_copy :: < f32 >"), "{out}");
    }

    #[test]
    fn host_side_implements_kernel() {
        let out = expand(
            quote!(),
            quote!(
                pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {}
            ),
        );
        // A braced marker (type namespace only) and a function returning it (value namespace).
        assert!(out.contains("pub struct saxpy { }"), "{out}");
        assert!(
            out.contains("pub const fn saxpy () -> saxpy { saxpy { } }"),
            "{out}"
        );
        assert!(
            out.contains("unsafe impl :: gpukernel_device :: __private :: Kernel for saxpy"),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "const NAME : & 'static {}str = \"saxpy\"",
                USIZE.trim_end_matches("usize")
            )),
            "{out}"
        );
        assert!(
            out.contains(
                "type Params = (f32 , & 'static [f32] , DisjointSlice < 'static , f32 > ,) ;"
            ),
            "{out}"
        );
        // The body is an associated function of the marker (a name in no scope: no item next
        // to the user's), which the simulator's entry inside `SIM_ENTRY` calls by path.
        assert!(
            out.contains("pub struct saxpy { } impl saxpy { # [cfg_attr (target_arch = \"nvptx64\" , inline (always))] # [allow (clippy :: too_many_arguments , clippy :: needless_pass_by_value)] fn __gk_body (a : f32 ,"),
            "{out}"
        );
        assert!(
            out.contains("const SIM_ENTRY : :: gpukernel_device :: __private :: SimEntry = { unsafe fn __gk_sim_entry"),
            "{out}"
        );
        assert_eq!(
            out.matches("saxpy :: __gk_body (__gk_0_a , __gk_1_x , __gk_2_y) ;")
                .count(),
            2,
            "{out}"
        );
        assert!(!out.contains("__gk_body_"), "{out}");
        for (k, ty) in [
            (0, "f32"),
            (1, "* const f32"),
            (2, USIZE),
            (3, "* mut f32"),
            (4, USIZE),
        ] {
            let read =
                format!("(* __gk_params . add ({k})) . cast :: < {ty} > () . read_unaligned ()");
            assert!(out.contains(&read), "{read}\n{out}");
        }
        assert_eq!(
            out.matches("assert_device_copy :: < f32 >").count(),
            1,
            "{out}"
        );
        assert!(!out.contains("gpukernel_runtime"));
    }

    #[test]
    fn only_safe_kernels_are_safe_kernels() {
        let safe = expand(
            quote!(),
            quote!(
                fn k(p: *mut u32) {}
            ),
        );
        assert!(
            safe.contains("unsafe impl :: gpukernel_device :: __private :: SafeKernel for k { }"),
            "{safe}"
        );
        let out = expand(
            quote!(),
            quote!(
                unsafe fn k(p: *mut u32) {}
            ),
        );
        assert!(!out.contains("SafeKernel"), "{out}");
    }

    #[test]
    fn unsafe_kernels_keep_their_unsafety() {
        let out = expand(
            quote!(),
            quote!(
                pub unsafe fn k(x: &mut [u32]) {}
            ),
        );
        assert!(
            out.contains("unsafe fn __gk_body (x : & mut [u32])"),
            "{out}"
        );
        assert_eq!(
            out.matches("unsafe fn __gk_body (x : & mut [u32])").count(),
            1,
            "{out}"
        );
        assert!(out.contains("slice_from_raw_mut :: < u32 >"), "{out}");
        assert_eq!(
            out.matches("unsafe { k :: __gk_body (__gk_0_x) }").count(),
            2,
            "{out}"
        );
    }

    /// Every `::core` and support-code path of `out` goes through `private`.
    fn assert_only_through(out: &str, private: &str) {
        for needle in [":: core ::", ":: __private ::"] {
            for (i, _) in out.match_indices(needle) {
                let at = if needle == ":: core ::" {
                    i
                } else {
                    i + ":: __private ".len()
                };
                assert!(
                    out[..at].ends_with(private),
                    "{}",
                    &out[i.saturating_sub(80)..i + 10]
                );
            }
        }
    }

    #[test]
    fn a_renamed_crate_is_reached_through_its_private_module_only() {
        let out = expand(
            quote!(crate = "gkd"),
            quote!(
                pub unsafe fn k(
                    a: f32,
                    x: &[f32],
                    y: DisjointSlice<f32>,
                    z: &mut [u8],
                    s: Pair,
                    p: *mut u32,
                ) {
                }
            ),
        );
        assert_only_through(&out, "gkd :: __private ");
        assert!(!out.contains("gpukernel_device ::"), "{out}");
        assert!(
            out.contains("unsafe impl gkd :: __private :: Kernel for k"),
            "{out}"
        );
        assert!(
            out.contains("gkd :: __private :: assert_device_copy :: < Pair >"),
            "{out}"
        );
        assert!(
            out.contains("gkd :: __private :: slice_from_raw_mut :: < u8 >"),
            "{out}"
        );
        let out = expand(
            quote!(),
            quote!(
                fn k(a: f32, x: &[f32]) {}
            ),
        );
        assert_only_through(&out, ":: gpukernel_device :: __private ");
    }

    #[test]
    fn no_parameters() {
        let out = expand(
            quote!(),
            quote!(
                fn empty() {}
            ),
        );
        assert!(out.contains("fn empty ()"), "{out}");
        assert!(out.contains("type Params = () ;"), "{out}");
        assert!(out.contains("let _ = __gk_params ;"), "{out}");
    }

    #[test]
    fn cfg_attributes_go_on_every_item_docs_on_the_type() {
        let out = expand(
            quote!(),
            quote!(
                #[doc = " Hi."]
                #[cfg(feature = "k")]
                #[allow(unused)]
                fn k(s: Pair) {}
            ),
        );
        // the DeviceCopy check, the marker type, its impl holding the body, the signature
        // global, the device entry, the marker's function, the `Kernel` impl and the
        // `SafeKernel` impl
        assert_eq!(out.matches("# [cfg (feature = \"k\")]").count(), 8, "{out}");
        assert!(
            out.contains("# [doc = \" Hi.\"] # [allow (non_camel_case_types , dead_code)]"),
            "{out}"
        );
        assert!(out.contains("assert_device_copy :: < Pair >"), "{out}");
    }

    #[test]
    fn bad_input_still_emits_the_function() {
        let out = expand(
            quote!(fast),
            quote!(
                fn k(x: &mut [f32]) {
                    work();
                }
            ),
        );
        assert!(
            out.contains("fn k (x : & mut [f32]) { work () ; }"),
            "{out}"
        );
        assert_eq!(out.matches("compile_error !").count(), 2, "{out}");
        assert!(!out.contains("gpu-kernel"), "{out}");
        let out = expand(
            quote!(),
            quote!(
                unsafe extern "C" fn k(a: u32, ...) {}
            ),
        );
        assert!(
            out.contains("unsafe extern \"C\" fn k (a : u32) { }"),
            "{out}"
        );
        let out = expand(
            quote!(),
            quote!(
                struct S;
            ),
        );
        assert!(out.starts_with("struct S ;"), "{out}");
        assert!(out.contains("applies to functions only"), "{out}");
    }
}
