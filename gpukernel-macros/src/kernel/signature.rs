//! The signature fingerprint that binds a kernel's Rust signature to its compiled code.
//!
//! A typed launch trusts that the loaded entry point is the one `#[kernel]` compiled from this
//! signature; the entry's name and parameter sizes alone do not say so (another crate's PTX or
//! a CUDA C `__global__` may reuse the name with other parameter types). Each `#[kernel]`
//! therefore computes one `u64` from what makes its ABI and its safety contract: the crate's
//! name (`CARGO_CRATE_NAME`, read when the macro expands, the same for the device and the host
//! build of one crate), the kernel's name, whether it is an `unsafe fn`, and each parameter
//! type as written (lifetimes normalised to `'static`). The device build exports it as the
//! global `__gpukernel_sig_<kernel>`; the host build carries the same value as
//! `Kernel::SIGNATURE`. It is a consistency check, not a secret: FNV-1a, like the runtime's
//! cache keys, stable across processes, compilers and platforms.
//!
//! The type spelling is hashed from the token trees themselves (identifiers, punctuation and
//! literals joined by single spaces), never from the compiler's pretty printer, which differs
//! between the stable (host) and nightly (device) compilers.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;

use super::Kernel;
use crate::ty::all_static;

/// The prefix of the exported global: `__gpukernel_sig_<kernel name>` (the name unmangled,
/// without `r#`). `gpukernel_device::SIGNATURE_SYMBOL_PREFIX` is the same string.
pub(super) const SYMBOL_PREFIX: &str = "__gpukernel_sig_";

/// The version of the fingerprint's input format, hashed first.
const FORMAT: &str = "gpukernel-kernel-signature-v1";

/// The name of the crate being compiled, as cargo tells the compiler (empty outside cargo).
pub(super) fn crate_name() -> String {
    std::env::var("CARGO_CRATE_NAME")
        .or_else(|_| std::env::var("CARGO_PKG_NAME").map(|n| n.replace('-', "_")))
        .unwrap_or_default()
}

/// The fingerprint of `kernel` in crate `crate_name`.
pub(super) fn fingerprint(crate_name: &str, kernel: &Kernel) -> u64 {
    let sig = &kernel.item.sig;
    let mut parts = vec![
        FORMAT.to_owned(),
        crate_name.to_owned(),
        sig.ident.unraw().to_string(),
        if sig.unsafety.is_some() {
            "unsafe"
        } else {
            "safe"
        }
        .to_owned(),
    ];
    parts.extend(
        kernel
            .params
            .iter()
            .map(|p| canonical(all_static(&p.arg.ty).into_token_stream())),
    );
    let mut hash = Fnv1a64::default();
    for part in &parts {
        hash.write(part.as_bytes());
        hash.write(&[0]);
    }
    hash.finish()
}

/// The tokens as text, independent of the compiler's spacing.
fn canonical(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_canonical(tokens, &mut out);
    out
}

fn write_canonical(tokens: TokenStream, out: &mut String) {
    for tt in tokens {
        let (open, close) = match &tt {
            TokenTree::Group(g) => match g.delimiter() {
                Delimiter::Parenthesis => ("(", ")"),
                Delimiter::Brace => ("{", "}"),
                Delimiter::Bracket => ("[", "]"),
                Delimiter::None => ("", ""),
            },
            _ => ("", ""),
        };
        match tt {
            TokenTree::Group(g) => {
                push_word(out, open);
                write_canonical(g.stream(), out);
                push_word(out, close);
            }
            TokenTree::Ident(i) => push_word(out, &i.to_string()),
            TokenTree::Punct(p) => push_word(out, &p.as_char().to_string()),
            TokenTree::Literal(l) => push_word(out, &l.to_string()),
        }
    }
}

fn push_word(out: &mut String, word: &str) {
    if word.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(word);
}

/// 64-bit FNV-1a.
struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a64 {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(crate_name: &str, item: &str) -> u64 {
        fingerprint(
            crate_name,
            &super::super::parse::parse(syn::parse_str(item).unwrap()),
        )
    }

    #[test]
    fn fnv1a_matches_the_reference_values() {
        let h = |s: &str| {
            let mut h = Fnv1a64::default();
            h.write(s.as_bytes());
            h.finish()
        };
        assert_eq!(h(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(h("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(h("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn canonical_text_ignores_spacing() {
        let a: TokenStream = syn::parse_str("&'static [f32]").unwrap();
        let b: TokenStream = syn::parse_str("& 'static[ f32 ]").unwrap();
        assert_eq!(canonical(a.clone()), canonical(b));
        assert_eq!(canonical(a), "& ' static [ f32 ]");
        let c: TokenStream = syn::parse_str("DisjointSlice<'static, Pair>").unwrap();
        assert_eq!(canonical(c), "DisjointSlice < ' static , Pair >");
    }

    #[test]
    fn what_the_fingerprint_depends_on() {
        let base = sig("k", "fn saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>) {}");
        // Not on parameter names, lifetimes as written, mutability of bindings or the body.
        assert_eq!(
            base,
            sig(
                "k",
                "pub fn saxpy(b: f32, z: &'a [f32], mut w: DisjointSlice<'_, f32>) { work(); }"
            )
        );
        // On the crate, the name, the unsafety and every parameter type.
        for other in [
            sig(
                "other_crate",
                "fn saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>) {}",
            ),
            sig(
                "k",
                "fn saxpy2(a: f32, x: &[f32], y: DisjointSlice<f32>) {}",
            ),
            sig(
                "k",
                "unsafe fn saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>) {}",
            ),
            sig("k", "fn saxpy(a: f64, x: &[f32], y: DisjointSlice<f32>) {}"),
            sig("k", "fn saxpy(a: f32, x: &[u32], y: DisjointSlice<f32>) {}"),
            sig("k", "unsafe fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {}"),
            sig("k", "fn saxpy(a: f32, x: &[f32]) {}"),
            sig(
                "k",
                "fn saxpy(a: f32, x: *const f32, n: usize, y: DisjointSlice<f32>) {}",
            ),
        ] {
            assert_ne!(base, other);
        }
    }
}
