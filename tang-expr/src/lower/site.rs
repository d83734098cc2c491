//! Where a graph node came from: the first and last token of its Rust expression, found
//! without printing the expression.
//!
//! `syn`'s `Spanned::span` (and `Error::new_spanned`) turn the whole expression into
//! tokens to find its ends. Doing that for every node made lowering quadratic: each `+` of
//! a 10,000-term sum printed everything to its left. Here the ends are found by walking
//! at most [`MAX_WALK`] steps down the leftmost and rightmost paths of the syntax tree;
//! deeper than that, the operator's own token stands for the expression.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Type};

/// Most steps taken down one edge of the syntax tree to find an expression's first or last
/// token (bounds the work per node; a deeper expression is marked at its operator).
const MAX_WALK: usize = 64;

/// The first and last token of a piece of code: an error spanning them underlines it all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpanRange {
    pub start: Span,
    pub end: Span,
}

impl SpanRange {
    /// The range of a single token.
    pub(crate) fn single(span: Span) -> Self {
        SpanRange {
            start: span,
            end: span,
        }
    }

    /// Two tokens carrying the range's ends: `syn::Error::new_spanned` on them spans the
    /// whole range.
    pub(crate) fn tokens(self) -> proc_macro2::TokenStream {
        let start = proc_macro2::Ident::new("start", self.start);
        let end = proc_macro2::Ident::new("end", self.end);
        quote::quote!(#start #end)
    }
}

/// Code a node or an error can point at.
pub(crate) trait Site {
    /// The first and last token of the code.
    fn site(&self) -> SpanRange;
}

impl<T: Site + ?Sized> Site for &T {
    fn site(&self) -> SpanRange {
        (**self).site()
    }
}

impl<T: Site + ?Sized> Site for Box<T> {
    fn site(&self) -> SpanRange {
        (**self).site()
    }
}

impl Site for SpanRange {
    fn site(&self) -> SpanRange {
        *self
    }
}

impl Site for proc_macro2::Ident {
    fn site(&self) -> SpanRange {
        SpanRange::single(self.span())
    }
}

impl Site for syn::token::If {
    fn site(&self) -> SpanRange {
        SpanRange::single(self.span)
    }
}

impl Site for syn::LitFloat {
    fn site(&self) -> SpanRange {
        SpanRange::single(self.span())
    }
}

impl Site for syn::LitInt {
    fn site(&self) -> SpanRange {
        SpanRange::single(self.span())
    }
}

impl Site for Expr {
    fn site(&self) -> SpanRange {
        range(self, small_span(self))
    }
}

impl Site for syn::ExprBinary {
    fn site(&self) -> SpanRange {
        let op = self.op.span();
        SpanRange {
            start: first(&self.left, MAX_WALK).unwrap_or(op),
            end: last(&self.right, MAX_WALK).unwrap_or(op),
        }
    }
}

impl Site for syn::ExprUnary {
    fn site(&self) -> SpanRange {
        let op = self.op.span();
        SpanRange {
            start: op,
            end: last(&self.expr, MAX_WALK).unwrap_or(op),
        }
    }
}

impl Site for syn::ExprMethodCall {
    fn site(&self) -> SpanRange {
        SpanRange {
            start: first(&self.receiver, MAX_WALK).unwrap_or(self.method.span()),
            end: self.paren_token.span.close(),
        }
    }
}

impl Site for syn::ExprCall {
    fn site(&self) -> SpanRange {
        let close = self.paren_token.span.close();
        SpanRange {
            start: first(&self.func, MAX_WALK).unwrap_or(close),
            end: close,
        }
    }
}

impl Site for syn::ExprPath {
    fn site(&self) -> SpanRange {
        let mut idents = self.path.segments.iter().map(|s| s.ident.span());
        let start = match (&self.qself, &self.path.leading_colon) {
            (Some(q), _) => q.lt_token.span,
            (None, Some(c)) => c.spans[0],
            (None, None) => idents.next().unwrap_or_else(Span::call_site),
        };
        let end = self.path.segments.last().map_or(start, |s| s.ident.span());
        SpanRange { start, end }
    }
}

/// The range of `e`, or `fallback` at an end too deep to find.
fn range(e: &Expr, fallback: Span) -> SpanRange {
    SpanRange {
        start: first(e, MAX_WALK).unwrap_or(fallback),
        end: last(e, MAX_WALK).unwrap_or(fallback),
    }
}

/// A token of `e` found in constant time (its operator, or its first token).
fn small_span(e: &Expr) -> Span {
    match e {
        Expr::Binary(b) => b.op.span(),
        Expr::MethodCall(m) => m.method.span(),
        Expr::Call(c) => c.paren_token.span.open(),
        Expr::Paren(p) => p.paren_token.span.open(),
        _ => first(e, 4).unwrap_or_else(Span::call_site),
    }
}

/// The span of the first token of `e`, walking at most `budget` steps down.
fn first(e: &Expr, budget: usize) -> Option<Span> {
    let budget = budget.checked_sub(1)?;
    Some(match e {
        Expr::Binary(b) => return first(&b.left, budget),
        Expr::MethodCall(m) => return first(&m.receiver, budget),
        Expr::Call(c) => return first(&c.func, budget),
        Expr::Cast(c) => return first(&c.expr, budget),
        Expr::Group(g) => return first(&g.expr, budget),
        Expr::Assign(a) => return first(&a.left, budget),
        Expr::Field(f) => return first(&f.base, budget),
        Expr::Index(i) => return first(&i.expr, budget),
        Expr::Try(t) => return first(&t.expr, budget),
        Expr::Paren(p) => p.paren_token.span.open(),
        Expr::Tuple(t) => t.paren_token.span.open(),
        Expr::Lit(l) => l.lit.span(),
        Expr::Path(p) => p.site().start,
        Expr::Unary(u) => u.op.span(),
        Expr::If(i) => i.if_token.span,
        Expr::ForLoop(f) => f.for_token.span,
        Expr::Block(b) => b.block.brace_token.span.open(),
        // Outside the kernel language: reported with syn's own span (once, on an error).
        other => other.span(),
    })
}

/// The span of the last token of `e`, walking at most `budget` steps down.
fn last(e: &Expr, budget: usize) -> Option<Span> {
    let budget = budget.checked_sub(1)?;
    Some(match e {
        Expr::Binary(b) => return last(&b.right, budget),
        Expr::Unary(u) => return last(&u.expr, budget),
        Expr::Group(g) => return last(&g.expr, budget),
        Expr::Assign(a) => return last(&a.right, budget),
        Expr::Cast(c) => return last_of_type(&c.ty, budget),
        Expr::If(i) => match &i.else_branch {
            Some((_, e)) => return last(e, budget),
            None => i.then_branch.brace_token.span.close(),
        },
        Expr::MethodCall(m) => m.paren_token.span.close(),
        Expr::Call(c) => c.paren_token.span.close(),
        Expr::Paren(p) => p.paren_token.span.close(),
        Expr::Tuple(t) => t.paren_token.span.close(),
        Expr::Lit(l) => l.lit.span(),
        Expr::Path(p) => p.site().end,
        Expr::ForLoop(f) => f.body.brace_token.span.close(),
        Expr::Block(b) => b.block.brace_token.span.close(),
        other => other.span(),
    })
}

fn last_of_type(ty: &Type, budget: usize) -> Option<Span> {
    budget.checked_sub(1)?;
    Some(match ty {
        Type::Path(p) => p.path.segments.last()?.ident.span(),
        other => other.to_token_stream().into_iter().last()?.span(),
    })
}

impl Site for syn::Stmt {
    fn site(&self) -> SpanRange {
        match self {
            syn::Stmt::Local(l) => SpanRange {
                start: l.let_token.span,
                end: l.semi_token.span,
            },
            syn::Stmt::Expr(e, Some(semi)) => SpanRange {
                end: semi.span,
                ..e.site()
            },
            syn::Stmt::Expr(e, None) => e.site(),
            // Outside the kernel language: reported with syn's own span (once, on an error).
            other => SpanRange::single(other.span()),
        }
    }
}

impl Site for syn::Block {
    fn site(&self) -> SpanRange {
        SpanRange {
            start: self.brace_token.span.open(),
            end: self.brace_token.span.close(),
        }
    }
}
