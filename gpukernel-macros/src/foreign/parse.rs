//! Tokens → [`Entry`] list. Declarations are split at top-level `;` first, so one malformed
//! declaration is reported and the others are still parsed (and expanded).

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Ident, LitStr, Token, Type, Visibility};

use super::{Arg, Entry};
use crate::diag::{Errors, error, error_at};
use crate::hygiene::{Support, crate_path};

const CRATE_HINT: &str =
    "write `crate = \"gkd\";` first when `gpukernel-device` is a dependency renamed to `gkd`";

const SIGNATURE_HINT: &str = "give the signature without the return slot: `\"mul_f32_f32\", fn(f32, f32) -> f32` for `int mul_f32_f32(float* ret, float a, float b)`";

const BLOCK_HINT: &str = "write `declare_device! { unsafe extern { \"f\", safe fn(f32) -> f32; \"g\", fn(*mut u32); } }`: `unsafe` vouches for the foreign code, `safe fn` makes a wrapper that safe code may call";

/// The declarations, and where the generated code finds `gpukernel_device` (a first
/// declaration `crate = "path";`, for a renamed dependency).
///
/// The input is `(crate = "path";)? unsafe extern { entries }...`: a foreign function is
/// trusted code, so its author writes `unsafe` once, on the block, as for Rust's
/// `unsafe extern` blocks. Entries outside such a block (the form before blocks existed) are
/// reported once, and still parsed and expanded, so that the rest of the crate keeps
/// type-checking.
pub(super) fn parse(input: TokenStream, errors: &mut Errors) -> (Support, Vec<Entry>) {
    let mut support = None;
    let mut entries = Vec::new();
    let mut trees: Vec<TokenTree> = input.into_iter().collect();
    let mut at = 0;
    let mut blocks = 0;
    while at < trees.len() {
        // `crate = "path";`
        if let TokenTree::Ident(i) = &trees[at]
            && i == "crate"
        {
            let end = trees[at..]
                .iter()
                .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
                .map_or(trees.len(), |e| at + e);
            let tokens: TokenStream = trees[at..end].iter().cloned().collect();
            if blocks > 0 {
                errors.push(error_at(
                    i.span(),
                    "`crate = \"path\"` must come first in `declare_device!`",
                    Some("move it before the first declaration: `declare_device!(crate = \"path\"; ...)`"),
                ));
            } else {
                match crate_option.parse2(tokens) {
                    Ok(s) => support = Some(s),
                    Err(e) => errors.push(e),
                }
            }
            at = end + 1;
            continue;
        }
        // `unsafe extern { .. }` or `extern { .. }` (an error: `unsafe` is missing).
        let unsafe_at = matches!(&trees[at], TokenTree::Ident(i) if i == "unsafe");
        let extern_at = at + usize::from(unsafe_at);
        let is_extern = matches!(trees.get(extern_at), Some(TokenTree::Ident(i)) if i == "extern");
        if let (true, Some(TokenTree::Group(g))) = (is_extern, trees.get(extern_at + 1))
            && g.delimiter() == Delimiter::Brace
        {
            if !unsafe_at {
                errors.push(error(
                    &trees[extern_at],
                    "foreign declarations go in an `unsafe extern` block: the foreign code is trusted, and `unsafe` says that you vouch for it",
                    Some("write `unsafe extern { .. }`"),
                ));
            }
            entries.extend(parse_entries(g.stream(), errors));
            blocks += 1;
            at = extern_at + 2;
            // A `;` after the block is allowed.
            if matches!(trees.get(at), Some(TokenTree::Punct(p)) if p.as_char() == ';') {
                at += 1;
            }
            continue;
        }
        // Anything else: entries written outside a block.
        let rest: Vec<TokenTree> = trees.drain(at..).collect();
        errors.push(error(
            &rest[0],
            "foreign declarations go in an `unsafe extern { .. }` block inside `declare_device!`: a foreign function is trusted code, whose author vouches for it with `unsafe`",
            Some(BLOCK_HINT),
        ));
        entries.extend(parse_entries(rest.into_iter().collect(), errors));
    }
    (support.unwrap_or_default(), entries)
}

/// The entries of one block, split at top-level `;`.
fn parse_entries(input: TokenStream, errors: &mut Errors) -> Vec<Entry> {
    let mut entries = Vec::new();
    for tokens in split_at_semicolons(input) {
        if let Some(at) = crate_keyword(&tokens) {
            errors.push(error_at(
                at,
                "`crate = \"path\"` must come first in `declare_device!`, before the `unsafe extern` block",
                Some("write `declare_device! { crate = \"path\"; unsafe extern { .. } }`"),
            ));
            continue;
        }
        match entry.parse2(tokens) {
            Ok(entry) => entries.push(entry),
            Err(e) => errors.push(e),
        }
    }
    entries
}

/// The span of a leading `crate` keyword (the `crate = "path"` option).
fn crate_keyword(tokens: &TokenStream) -> Option<Span> {
    match tokens.clone().into_iter().next() {
        Some(TokenTree::Ident(i)) if i == "crate" => Some(i.span()),
        _ => None,
    }
}

/// `crate = "path"`.
fn crate_option(input: ParseStream<'_>) -> syn::Result<Support> {
    input.parse::<Token![crate]>()?;
    input.parse::<Token![=]>()?;
    let lit: LitStr = input.parse().map_err(|e| {
        error_at(
            e.span(),
            "expected the path of the device library as a string literal",
            Some(CRATE_HINT),
        )
    })?;
    let path = crate_path(&lit)?;
    if !input.is_empty() {
        let rest: TokenStream = input.parse()?;
        return Err(error(
            rest,
            "unexpected tokens after `crate = \"path\"`",
            Some("end it with `;`"),
        ));
    }
    Ok(Support::at(&path))
}

/// Splits at top-level `;` (those inside brackets, as in `[T; N]`, are inside a group),
/// dropping empty pieces (a trailing `;`).
fn split_at_semicolons(input: TokenStream) -> Vec<TokenStream> {
    let mut pieces = vec![TokenStream::new()];
    for tt in input {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ';' => pieces.push(TokenStream::new()),
            _ => pieces.last_mut().expect("never empty").extend([tt]),
        }
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

/// `attrs vis (name =)? "symbol", (unsafe)? fn(args) (-> T)?`
fn entry(input: ParseStream<'_>) -> syn::Result<Entry> {
    let all_attrs = input.call(Attribute::parse_outer)?;
    let (cfgs, attrs): (Vec<_>, Vec<_>) = all_attrs
        .into_iter()
        .partition(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"));
    let vis: Visibility = input.parse()?;
    let alias = if input.peek(Ident) && input.peek2(Token![=]) {
        let alias: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        Some(alias)
    } else {
        None
    };
    // What precedes the symbol, to point at if the entry ends there.
    let before_symbol = match &alias {
        Some(alias) => alias.to_token_stream(),
        None if !matches!(vis, Visibility::Inherited) => vis.to_token_stream(),
        None => attrs
            .iter()
            .chain(&cfgs)
            .map(ToTokens::to_token_stream)
            .collect(),
    };
    let symbol = symbol(input, alias.is_some(), before_symbol)?;
    if input.is_empty() {
        return Err(error(
            &symbol,
            "missing the foreign function's signature",
            Some(SIGNATURE_HINT),
        ));
    }
    let comma: Token![,] = input.parse().map_err(|_| {
        error_at(
            input.span(),
            "expected `,` and the signature `fn(..) -> T` after the symbol name",
            Some(SIGNATURE_HINT),
        )
    })?;
    if input.is_empty() {
        return Err(error(
            comma,
            "missing the foreign function's signature",
            Some(SIGNATURE_HINT),
        ));
    }

    let safe: Option<Ident> = if input.peek(Ident) && input.fork().parse::<Ident>()? == "safe" {
        Some(input.parse()?)
    } else {
        None
    };
    let unsafety: Option<Token![unsafe]> = input.parse()?;
    let abi: Option<syn::Abi> = if input.peek(Token![extern]) {
        Some(input.parse()?)
    } else {
        None
    };
    let mut generics = None;
    if input.peek(Token![for]) {
        let lifetimes: syn::BoundLifetimes = input.parse()?;
        generics = Some(lifetimes.into_token_stream());
    }
    if input.is_empty() {
        let last = match (&generics, &abi) {
            (Some(generics), _) => generics.clone(),
            (None, Some(abi)) => abi.to_token_stream(),
            (None, None) if unsafety.is_some() => unsafety.to_token_stream(),
            (None, None) => safe.to_token_stream(),
        };
        return Err(error(
            last,
            "expected the signature `fn(..) -> T`",
            Some(SIGNATURE_HINT),
        ));
    }
    let fn_token: Token![fn] = input.parse().map_err(|_| {
        error_at(
            input.span(),
            "expected the signature `fn(..) -> T`",
            Some(SIGNATURE_HINT),
        )
    })?;
    if input.peek(Token![<]) {
        let params: syn::Generics = input.parse()?;
        generics = Some(params.into_token_stream());
    }
    let args_group = match input.parse::<TokenTree>() {
        Ok(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => g,
        _ => {
            return Err(error(
                fn_token,
                "expected the argument list `fn(..)`",
                Some(SIGNATURE_HINT),
            ));
        }
    };
    let (args, variadic) = arguments.parse2(args_group.stream())?;
    let ret = if input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        let ty: Type = input.parse()?;
        match crate::ty::strip(&ty) {
            Type::Tuple(t) if t.elems.is_empty() => None,
            _ => Some(ty),
        }
    } else {
        None
    };
    // `declare_device!("f", fn(f32) -> f32,)`: a trailing comma, as in other macro calls.
    if input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
    }
    if !input.is_empty() {
        let rest: TokenStream = input.parse()?;
        return Err(error(
            rest,
            "unexpected tokens after the signature",
            Some("separate declarations with `;`"),
        ));
    }
    Ok(Entry {
        cfgs,
        attrs,
        vis,
        alias,
        symbol,
        safe,
        unsafety,
        abi,
        generics,
        args,
        variadic,
        ret,
    })
}

fn symbol(input: ParseStream<'_>, has_alias: bool, before: TokenStream) -> syn::Result<LitStr> {
    if input.peek(LitStr) {
        return input.parse();
    }
    let message = "expected the foreign function's symbol name as a string literal";
    if input.is_empty() {
        return Err(error(
            before,
            message,
            Some("write e.g. `\"mul_f32_f32\", fn(f32, f32) -> f32` after it"),
        ));
    }
    let tt: TokenTree = input.parse()?;
    let hint = match &tt {
        TokenTree::Ident(ident) if !has_alias => format!(
            "quote it: `\"{ident}\"`, or write `{ident} = \"symbol\"` to give the wrapper another name than the symbol"
        ),
        _ => "write e.g. `\"mul_f32_f32\"`".to_owned(),
    };
    Err(error(tt, message, Some(&hint)))
}

/// The inside of `fn(..)`: `T`, `name: T` or `_: T`, separated by commas, then maybe `...`.
fn arguments(input: ParseStream<'_>) -> syn::Result<(Vec<Arg>, Option<Token![...]>)> {
    let mut args = Vec::new();
    let mut variadic = None;
    while !input.is_empty() {
        if input.peek(Token![...]) {
            variadic = Some(input.parse()?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            continue;
        }
        let name = if (input.peek(Ident) || input.peek(Token![_]))
            && input.peek2(Token![:])
            && !input.peek2(Token![::])
        {
            let name = if input.peek(Token![_]) {
                input.parse::<Token![_]>()?;
                None
            } else {
                Some(input.parse::<Ident>()?)
            };
            input.parse::<Token![:]>()?;
            name
        } else {
            None
        };
        let ty: Type = input.parse()?;
        args.push(Arg { name, ty });
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok((args, variadic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse_ok(tokens: TokenStream) -> Vec<Entry> {
        let mut errors = Errors::default();
        let (_, entries) = parse(quote!(unsafe extern { #tokens }), &mut errors);
        assert!(errors.is_empty(), "{:?}", errors.messages());
        entries
    }

    fn parse_err(tokens: TokenStream) -> (Vec<Entry>, Vec<String>) {
        let mut errors = Errors::default();
        let (_, entries) = parse(quote!(unsafe extern { #tokens }), &mut errors);
        (entries, errors.messages())
    }

    #[test]
    fn parses_every_form() {
        let entries = parse_ok(quote! {
            "mul_f32_f32", fn(f32, f32) -> f32;
            pub "add", fn(a: f32, _: f32) -> f32;
            /// Docs.
            #[cfg(feature = "x")]
            pub(crate) sum = "sum_reduce", fn(*const f32, i32) -> f32;
            pub "touch", fn(*mut u32);
            "unit", unsafe fn() -> ();
            "safe", safe fn(f32);
        });
        assert_eq!(entries.len(), 6);
        let e = &entries[0];
        assert_eq!(e.symbol.value(), "mul_f32_f32");
        assert!(matches!(e.vis, Visibility::Inherited));
        assert_eq!(e.args.len(), 2);
        assert!(e.ret.is_some());
        assert_eq!(entries[1].args[0].name.as_ref().unwrap(), "a");
        assert!(entries[1].args[1].name.is_none());
        let e = &entries[2];
        assert_eq!(e.alias.as_ref().unwrap(), "sum");
        assert_eq!(e.attrs.len(), 1);
        assert_eq!(e.cfgs.len(), 1);
        assert_eq!(e.rust_name().unwrap(), "sum");
        assert!(entries[3].ret.is_none());
        assert!(entries[4].ret.is_none());
        assert!(entries[4].unsafety.is_some());
        assert!(entries[4].safe.is_none() && entries[0].safe.is_none());
        assert!(entries[5].safe.is_some());
    }

    #[test]
    fn the_crate_path_comes_first() {
        let mut errors = Errors::default();
        let (support, entries) = parse(
            quote!(crate = "gkd"; unsafe extern { "f", fn(f32) }),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert_eq!(support.private().to_string(), "gkd :: __private");
        assert_eq!(entries.len(), 1);
        let (support, _) = parse(quote!(unsafe extern { "f", fn(f32) }), &mut errors);
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert_eq!(
            support.private().to_string(),
            ":: gpukernel_device :: __private"
        );

        let (entries, errors) = parse_err(quote! {
            "f", fn(f32);
            crate = "gkd";
        });
        assert_eq!(entries.len(), 1);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("must come first"), "{errors:?}");
        let mut errors = Errors::default();
        parse(
            quote!(unsafe extern { "f", fn(f32) } crate = "gkd";),
            &mut errors,
        );
        assert!(errors.messages()[0].contains("must come first"));
        let mut errors = Errors::default();
        parse(
            quote!(crate = gkd; unsafe extern { "f", fn() }),
            &mut errors,
        );
        assert!(errors.messages()[0].contains("as a string literal"));
        let mut errors = Errors::default();
        parse(
            quote!(crate = "gkd" x; unsafe extern { "f", fn() }),
            &mut errors,
        );
        assert!(errors.messages()[0].contains("unexpected tokens after"));
    }

    #[test]
    fn declarations_need_an_unsafe_extern_block() {
        let mut errors = Errors::default();
        let (_, entries) = parse(quote!("f", fn(f32); "g", fn()), &mut errors);
        // Reported once, and still parsed (the wrappers are expanded, `unsafe`).
        assert_eq!(entries.len(), 2);
        let messages = errors.messages();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("`unsafe extern { .. }` block"),
            "{messages:?}"
        );
        let mut errors = Errors::default();
        let (_, entries) = parse(quote!(extern { "f", fn(f32); }), &mut errors);
        assert_eq!(entries.len(), 1);
        assert!(errors.messages()[0].contains("`unsafe extern` block"));
        let mut errors = Errors::default();
        let (_, entries) = parse(
            quote!(unsafe extern { "f", fn(f32); } unsafe extern { "g", safe fn(); };),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert_eq!(entries.len(), 2);
    }

    #[test]
    fn parses_generic_and_array_types_with_commas() {
        let entries = parse_ok(quote!(
            "f",
            fn(Foo<A, B>, [u8; 4], core::primitive::f32) -> u32
        ));
        assert_eq!(entries[0].args.len(), 3);
        assert!(entries[0].args[2].name.is_none());
    }

    #[test]
    fn records_generics_abi_and_variadics_for_check() {
        let entries = parse_ok(quote! {
            "a", fn<T>(T) -> T;
            "b", for<'a> fn(&'a f32);
            "c", extern "C" fn(i32);
            "d", fn(i32, ...);
        });
        assert!(entries[0].generics.is_some());
        assert!(entries[1].generics.is_some());
        assert!(entries[2].abi.is_some());
        assert!(entries[3].variadic.is_some());
    }

    #[test]
    fn reports_each_bad_entry_and_keeps_the_good_ones() {
        let (entries, errors) = parse_err(quote! {
            mul_f32_f32, fn(f32) -> f32;
            "ok", fn(f32) -> f32;
            "no_signature";
            "no_fn", (f32) -> f32;
            42, fn();
            "trailing", fn() -> f32 f32;
            pub;
            "f", unsafe;
        });
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].symbol.value(), "ok");
        assert_eq!(errors.len(), 7, "{errors:#?}");
        assert!(errors[0].contains("symbol name as a string literal"));
        assert!(errors[0].contains("quote it: `\"mul_f32_f32\"`"));
        assert!(errors[1].contains("missing the foreign function's signature"));
        assert!(errors[2].contains("expected the signature `fn(..) -> T`"));
        assert!(errors[3].contains("symbol name as a string literal"));
        assert!(errors[4].contains("unexpected tokens after the signature"));
        assert!(errors[5].contains("symbol name as a string literal"));
        assert!(errors[6].contains("expected the signature `fn(..) -> T`"));
    }
}
