//! Error collection: every stage reports all the problems it finds, each spanned on the
//! offending tokens, instead of stopping at the first.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Builds an error spanned on `tokens` (from their first to their last token), with an optional
/// `hint:` line that says how to fix it.
pub(crate) fn error(
    tokens: impl ToTokens,
    message: impl AsRef<str>,
    hint: Option<&str>,
) -> syn::Error {
    syn::Error::new_spanned(tokens, with_hint(message.as_ref(), hint))
}

/// Builds an error at one span (for tokens that are not a syntax node, such as a parse position).
pub(crate) fn error_at(
    span: proc_macro2::Span,
    message: impl AsRef<str>,
    hint: Option<&str>,
) -> syn::Error {
    syn::Error::new(span, with_hint(message.as_ref(), hint))
}

fn with_hint(message: &str, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{message}\nhint: {hint}"),
        None => message.to_owned(),
    }
}

/// All the errors found so far, combined into one `syn::Error` (which renders as one
/// `compile_error!` per message, each at its own span).
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Appends all of `other`'s errors.
    pub(crate) fn extend(&mut self, other: Errors) {
        if let Some(error) = other.combined {
            self.push(error);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.combined.is_none()
    }

    /// The messages, in the order they were found (for unit tests).
    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.combined
            .iter()
            .flat_map(|e| e.clone().into_iter().map(|e| e.to_string()))
            .collect()
    }

    /// One `compile_error!` per message, or nothing.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.combined
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}
