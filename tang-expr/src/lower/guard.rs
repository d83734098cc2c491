//! Keeping the compiler alive on deep input: a stack that grows, and limits checked on
//! the tokens before anything recursive (syn's parser) sees them.
//!
//! A proc macro runs on rustc's thread (8 MiB of stack). syn parses, clones, prints and
//! drops syntax trees recursively, and the lowering walks them recursively, so a 3,000-term
//! sum or 1,000 nested parentheses used to overflow that stack and kill rustc. Now each
//! expansion runs on a stack of [`STACK`] bytes (reserved, touched only as used), the
//! lowering grows it further when it runs low, and input beyond the limits below is a
//! spanned error instead of a crash.

use proc_macro2::{TokenStream, TokenTree};

/// Stack reserved for one expansion (virtual memory: only the pages used are touched).
const STACK: usize = 256 << 20;
/// Free stack the recursive lowering keeps before it moves to a new segment.
const RED_ZONE: usize = 256 << 10;
/// Size of each further segment of the lowering's stack.
const SEGMENT: usize = 8 << 20;
/// Most levels of nested brackets (`( [ {`). rustc's own parser overflows past about
/// 1,100 nested parentheses, so this never rejects code rustc accepts.
pub(crate) const MAX_NESTING: usize = 2_048;
/// Most tokens between two `;` or `,` of one bracket level: an upper bound on how deep a
/// single expression's syntax tree can be (a 10,000-term sum is 40,000 tokens).
pub(crate) const MAX_RUN: usize = 400_000;

/// Runs one expansion on its own large stack.
pub(crate) fn on_big_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::grow(STACK, f)
}

/// Runs a step of the recursive lowering, moving to a new stack segment first when the
/// current one is nearly used up.
pub(crate) fn grow_if_needed<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// Checks, without recursion, that `tokens` nest at most [`MAX_NESTING`] brackets deep
/// and have no expression of more than [`MAX_RUN`] tokens.
///
/// # Errors
/// A spanned error at the first bracket past the limit, or at the first token past the
/// longest allowed expression.
pub(crate) fn check_depth(tokens: &TokenStream) -> Result<(), syn::Error> {
    // One iterator per open bracket, and the tokens since the last `;` or `,` at each.
    let mut stack: Vec<(proc_macro2::token_stream::IntoIter, usize)> =
        vec![(tokens.clone().into_iter(), 0)];
    while let Some((iter, run)) = stack.last_mut() {
        let Some(tt) = iter.next() else {
            stack.pop();
            continue;
        };
        *run += 1;
        if *run > MAX_RUN {
            return Err(syn::Error::new(
                tt.span(),
                format!(
                    "this expression is too long for a kernel (more than {MAX_RUN} tokens): \
                     split it into several `let` statements"
                ),
            ));
        }
        match tt {
            TokenTree::Punct(p) if matches!(p.as_char(), ';' | ',') => *run = 0,
            TokenTree::Group(g) => {
                if stack.len() > MAX_NESTING {
                    return Err(syn::Error::new(
                        g.span_open(),
                        format!(
                            "brackets nest too deeply here (more than {MAX_NESTING} levels): \
                             split the expression into several `let` statements"
                        ),
                    ));
                }
                stack.push((g.stream().into_iter(), 0));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> TokenStream {
        let src = format!("{}x{}", "(".repeat(depth), ")".repeat(depth));
        src.parse().unwrap_or_default()
    }

    #[test]
    fn nesting_up_to_the_limit_passes_and_past_it_is_an_error() {
        assert!(check_depth(&nested(MAX_NESTING)).is_ok());
        let e = check_depth(&nested(MAX_NESTING + 1)).unwrap_err();
        assert!(e.to_string().contains("nest too deeply"), "{e}");
    }

    #[test]
    fn long_runs_are_counted_between_separators() {
        let ok: TokenStream = "a + b;".repeat(MAX_RUN / 2).parse().unwrap_or_default();
        assert!(check_depth(&ok).is_ok());
        let long: TokenStream = "a +".repeat(MAX_RUN / 2 + 1).parse().unwrap_or_default();
        assert!(check_depth(&long).is_err());
    }
}
