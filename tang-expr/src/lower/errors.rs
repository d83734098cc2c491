//! Collecting every error of a function so they are all reported at once.

use std::collections::BTreeSet;

use proc_macro2::Span;
use quote::ToTokens;

use super::site::SpanRange;

/// The errors found so far, without duplicates (a helper inlined twice reports once).
#[derive(Default)]
pub(crate) struct Errors {
    list: Vec<syn::Error>,
    seen: BTreeSet<String>,
}

impl Errors {
    /// Records `e` unless the same message at the same place is already recorded.
    pub(crate) fn push(&mut self, e: syn::Error) {
        let key = format!("{:?} {}", e.span(), e);
        if self.seen.insert(key) {
            self.list.push(e);
        }
    }

    /// Records an error covering the tokens of `at`.
    pub(crate) fn at(&mut self, at: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(at, message));
    }

    /// Records an error underlining `range` (from its first to its last token).
    pub(crate) fn range(&mut self, range: SpanRange, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(range.tokens(), message));
    }

    /// Records an error at `span`.
    pub(crate) fn span(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Number of distinct errors so far.
    pub(crate) fn count(&self) -> usize {
        self.list.len()
    }

    /// Whether nothing went wrong.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// All errors as one (rustc reports each part separately), or `None` if there are none.
    pub(crate) fn combined(self) -> Option<syn::Error> {
        let mut it = self.list.into_iter();
        let mut first = it.next()?;
        for e in it {
            first.combine(e);
        }
        Some(first)
    }

    /// Moves every error of `other` into `self`.
    pub(crate) fn extend(&mut self, other: Errors) {
        for e in other.list {
            self.push(e);
        }
    }
}
