//! `gpu_print!` / `gpu_println!`: a Rust-style format string checked at compile time and
//! turned into a C format string for PTX's `vprintf` (see `gpukernel_device::print`).
//!
//! Pipeline: parse (`"literal", args...`, optionally `crate = "path";` first) → split the
//! literal into text and placeholders, checking each spec and the count → expand to a call of
//! a generic function per call site whose associated const builds the C format from the
//! arguments' types (`PrintArg::CLASS`), so the type-dependent conversions are chosen at
//! compile time without the macro knowing the types.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, LitStr, Token};

use crate::diag::error;
use crate::hygiene::{Support, crate_path, local};

/// The most arguments CUDA's `printf` takes.
const MAX_ARGS: usize = 32;

struct Input {
    support: Support,
    format: LitStr,
    args: Vec<Expr>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut support = Support::default();
        if input.peek(Token![crate]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            support = Support::at(&crate_path(&input.parse()?)?);
            input.parse::<Token![;]>()?;
        }
        let format: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "`gpu_println!` takes a string literal first\nhint: `gpu_println!(\"x = {}\", x)`",
            )
        })?;
        let mut args = Vec::new();
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
            let rest = Punctuated::<Expr, Token![,]>::parse_terminated(input)?;
            args.extend(rest);
        }
        Ok(Input {
            support,
            format,
            args,
        })
    }
}

/// A piece of the format string.
#[derive(Debug, PartialEq)]
pub(crate) enum Piece {
    Lit(String),
    Arg {
        flags: String,
        width: u32,
        precision: i32,
        ty: u8,
    },
}

/// Splits a Rust format string into literal text and placeholders; a message on misuse.
pub(crate) fn pieces(s: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                lit.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                lit.push('}');
            }
            '}' => {
                return Err("unmatched `}` in the format string (write `}}` for a brace)".into());
            }
            '{' => {
                let mut spec = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => spec.push(c),
                        None => {
                            return Err(
                                "unclosed `{` in the format string (write `{{` for a brace)".into(),
                            );
                        }
                    }
                }
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(placeholder(&spec)?);
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// `""` or `":[<][+][#][0][width][.precision][x|X|o|e|E]"`.
fn placeholder(spec: &str) -> Result<Piece, String> {
    let unsupported = || {
        format!(
            "`{{{spec}}}` is not supported by `gpu_println!`: it takes `{{}}`, `{{:x}}`, `{{:X}}`, `{{:o}}`, `{{:e}}`, `{{:E}}`, a precision `{{:.3}}`, a width `{{:8}}` and the flags `<` `+` `#` `0`"
        )
    };
    let Some(rest) = spec.strip_prefix(':') else {
        return if spec.is_empty() {
            Ok(Piece::Arg {
                flags: String::new(),
                width: 0,
                precision: -1,
                ty: 0,
            })
        } else if spec.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Err(format!(
                "`{{{spec}}}`: `gpu_println!` takes positional `{{}}` placeholders only (pass the value as an argument)"
            ))
        } else {
            Err(unsupported())
        };
    };
    let mut s = rest;
    let mut flags = String::new();
    if let Some(r) = s.strip_prefix('<') {
        flags.push('-');
        s = r;
    }
    if let Some(r) = s.strip_prefix('+') {
        flags.push('+');
        s = r;
    }
    if let Some(r) = s.strip_prefix('#') {
        flags.push('#');
        s = r;
    }
    if let Some(r) = s.strip_prefix('0') {
        flags.push('0');
        s = r;
    }
    let digits = |s: &str| s.chars().take_while(char::is_ascii_digit).count();
    let n = digits(s);
    let width = if n > 0 {
        s[..n].parse::<u32>().map_err(|_| unsupported())?
    } else {
        0
    };
    s = &s[n..];
    let mut precision = -1;
    if let Some(r) = s.strip_prefix('.') {
        let n = digits(r);
        if n == 0 {
            return Err(unsupported());
        }
        precision = r[..n].parse::<i32>().map_err(|_| unsupported())?;
        s = &r[n..];
    }
    let ty = match s {
        "" => 0,
        "x" | "X" | "o" | "e" | "E" => s.as_bytes()[0],
        _ => return Err(unsupported()),
    };
    Ok(Piece::Arg {
        flags,
        width,
        precision,
        ty,
    })
}

pub(crate) fn print(input: TokenStream, newline: bool) -> TokenStream {
    let input: Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let pieces = match pieces(&input.format.value()) {
        Ok(p) => p,
        Err(message) => return error(&input.format, message, None).to_compile_error(),
    };
    let placeholders = pieces
        .iter()
        .filter(|p| matches!(p, Piece::Arg { .. }))
        .count();
    if placeholders != input.args.len() {
        let message = format!(
            "the format string has {placeholders} placeholder{} but {} argument{} {} given",
            if placeholders == 1 { "" } else { "s" },
            input.args.len(),
            if input.args.len() == 1 { "" } else { "s" },
            if input.args.len() == 1 { "is" } else { "are" },
        );
        return error(&input.format, message, Some("pass one argument per `{}`"))
            .to_compile_error();
    }
    if placeholders > MAX_ARGS {
        return error(
            &input.format,
            format!("`gpu_println!` takes at most {MAX_ARGS} arguments (CUDA's printf limit)"),
            None,
        )
        .to_compile_error();
    }
    expand(&input, &pieces, newline)
}

fn expand(input: &Input, pieces: &[Piece], newline: bool) -> TokenStream {
    let private = input.support.private();
    let printf = quote!(#private::printf);
    let n = input.args.len();
    let generics: Vec<_> = (0..n).map(|i| format_ident!("A{}", i)).collect();
    let params: Vec<_> = (0..n).map(|i| local(&format!("__gk_a{i}"))).collect();
    let mut specs = Vec::new();
    let mut k = 0;
    let built: Vec<TokenStream> = pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => quote!(#printf::Piece::Lit(#s)),
            Piece::Arg { flags, width, precision, ty } => {
                let spec = quote!(#printf::Spec { flags: #flags, width: #width, precision: #precision, ty: #ty });
                let g = &generics[k];
                k += 1;
                specs.push(spec.clone());
                quote!(#printf::Piece::Arg(#spec, <#g as #private::PrintArg>::CLASS))
            }
        })
        .collect();
    // Each piece's text at most doubles (`%` → `%%`); a conversion is at most
    // `%-+#0` + 10 digits + `.` + 10 digits + `llX`.
    let literal: usize = pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => 2 * s.len(),
            Piece::Arg { .. } => 32,
        })
        .sum();
    let cap = literal + 2;
    let (fmt, func) = (local("__GkFormat"), local("__gk_print"));
    let bounds = generics.iter().map(|g| quote!(#g: #private::PrintArg));
    let bounds2 = bounds.clone();
    let phantom = quote!(#private::core::marker::PhantomData<(#(#generics,)*)>);
    let args = &input.args;
    let slots = params
        .iter()
        .zip(&specs)
        .map(|(p, s)| quote!(#printf::slot(#p, #s)));
    quote! {{
        struct #fmt<#(#generics),*>(#phantom);
        impl<#(#bounds),*> #fmt<#(#generics),*> {
            const BYTES: [#private::core::primitive::u8; #cap] =
                #printf::build::<#cap>(&[#(#built),*], #newline);
        }
        #[inline(always)]
        fn #func<#(#bounds2),*>(#(#params: #generics),*) {
            let slots: [#private::core::primitive::u64; #n] = [#(#slots),*];
            // SAFETY: the format was built from the pieces of these arguments' classes, and
            // `slots` holds their slots in order.
            unsafe { #printf::print(&#fmt::<#(#generics),*>::BYTES, &slots) };
        }
        #func(#(#args),*)
    }}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(flags: &str, width: u32, precision: i32, ty: u8) -> Piece {
        Piece::Arg {
            flags: flags.into(),
            width,
            precision,
            ty,
        }
    }

    #[test]
    fn splits_text_and_placeholders() {
        assert_eq!(
            pieces("x = {}, y = {:.3} {{ok}} {:<+#08X}").unwrap(),
            [
                Piece::Lit("x = ".into()),
                arg("", 0, -1, 0),
                Piece::Lit(", y = ".into()),
                arg("", 0, 3, 0),
                Piece::Lit(" {ok} ".into()),
                arg("-+#0", 8, -1, b'X'),
            ]
        );
        assert_eq!(
            pieces("{:e}{:12}").unwrap(),
            [arg("", 0, -1, b'e'), arg("", 12, -1, 0)]
        );
        assert!(pieces("{").unwrap_err().contains("unclosed"));
        assert!(pieces("}").unwrap_err().contains("unmatched"));
        assert!(pieces("{x}").unwrap_err().contains("positional"));
        assert!(pieces("{:?}").unwrap_err().contains("not supported"));
        assert!(pieces("{:.}").unwrap_err().contains("not supported"));
        assert!(pieces("{:>8}").unwrap_err().contains("not supported"));
    }

    #[test]
    fn counts_arguments() {
        let out = print(quote!("{} {}", a), true).to_string();
        assert!(
            out.contains("the format string has 2 placeholders but 1 argument is given"),
            "{out}"
        );
        let out = print(quote!("{}", a, b), false).to_string();
        assert!(
            out.contains("has 1 placeholder but 2 arguments are given"),
            "{out}"
        );
        let out = print(quote!(x), false).to_string();
        assert!(out.contains("takes a string literal first"), "{out}");
        let ok = print(quote!(crate = "gkd"; "{} {:x}\n", a, b), true).to_string();
        assert!(
            ok.contains("gkd :: __private :: printf :: build :: < "),
            "{ok}"
        );
        assert!(!ok.contains("compile_error"), "{ok}");
    }
}
