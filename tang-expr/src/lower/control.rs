//! Lowering control flow: `if`/`else` (both branches from the same state, merged with
//! `select`) and `for` loops with constant bounds (unrolled).

use syn::{Expr, ExprForLoop, ExprIf, Pat};

use super::body::{Lowerer, MAX_UNROLL};
use super::env::{Binding, Env, Kind, Val};
use super::sig::is_f32;
use crate::graph::Node;

impl Lowerer<'_> {
    /// `if`/`else`: both branches are lowered from the same state; the result and every
    /// variable they assign become `select(cond, then, else)`.
    pub(crate) fn if_expr(&mut self, e: &ExprIf) -> Val {
        let c = self.expr(&e.cond);
        let c = self.cond(c, &e.cond);
        let before = self.env.clone();
        let then_v = self.block(&e.then_branch);
        let then_env = std::mem::replace(&mut self.env, before);
        let else_v = match &e.else_branch {
            Some((_, else_e)) => self.expr(else_e),
            None => Val::Unit,
        };
        let else_env = std::mem::take(&mut self.env);
        let at = &e.if_token;
        let Some(c) = c else {
            // The condition was rejected: keep going without guessing the values.
            self.env = poison_differences(then_env, else_env);
            return Val::Poison;
        };
        // A constant condition (e.g. `i == 0` on an unrolled counter) picks a branch.
        if let Ok(Node::Bool(b)) = self.g.node(c) {
            if b {
                self.env = then_env;
                return then_v;
            }
            self.env = else_env;
            return else_v;
        }
        let mut merged = else_env.clone();
        for (s, (ts, es)) in then_env.scopes.iter().zip(&else_env.scopes).enumerate() {
            for (k, (tb, eb)) in ts.iter().zip(es).enumerate() {
                if tb.val != eb.val {
                    let v = self.select(c, tb.val.clone(), eb.val.clone(), at);
                    if let Some(b) = merged.scopes.get_mut(s).and_then(|sc| sc.get_mut(k)) {
                        b.val = v;
                    }
                }
            }
        }
        self.env = merged;
        if e.else_branch.is_none() {
            return Val::Unit;
        }
        self.select(c, then_v, else_v, at)
    }

    /// `for i in a..b { ... }` with constant bounds, unrolled.
    pub(crate) fn for_loop(&mut self, f: &ExprForLoop) -> Val {
        if let Some(label) = &f.label {
            self.errors.at(
                label,
                "loop labels are not supported in kernels (there is no `break`)",
            );
        }
        let var = match &*f.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                Some(pi.ident.to_string())
            }
            Pat::Wild(_) => None,
            other => {
                self.errors
                    .at(other, "the loop variable must be a name: `for i in 0..4`");
                return Val::Unit;
            }
        };
        let range = match &*f.expr {
            Expr::Range(r) => r,
            Expr::Paren(p) if matches!(&*p.expr, Expr::Range(_)) => match &*p.expr {
                Expr::Range(r) => r,
                _ => return Val::Unit,
            },
            other => {
                self.errors.at(
                    other,
                    "only `for i in A..B` over integer constants is supported (the loop is \
                     unrolled at compile time)",
                );
                return Val::Unit;
            }
        };
        let bound = |s: &mut Self, e: Option<&Expr>| -> Option<i64> {
            let Some(e) = e else {
                s.errors.at(
                    range,
                    "the loop range needs both bounds: `for i in 0..4` (the loop is unrolled)",
                );
                return None;
            };
            // `0..(n as usize)`: a bound computed at run time, whatever the cast says.
            let mut inner = e;
            while let Expr::Paren(p) = inner {
                inner = &p.expr;
            }
            if let Expr::Cast(c) = inner
                && !is_f32(&c.ty)
            {
                s.errors.at(
                    e,
                    "loop bounds must be integer constants, like `0..4`: the loop is unrolled at \
                     compile time, so a bound known only at run time is not supported",
                );
                return None;
            }
            match s.expr(e) {
                Val::Int(i) => Some(i),
                Val::Poison => None,
                _ => {
                    s.errors.at(
                        e,
                        "loop bounds must be integer constants, like `0..4`: the loop is \
                         unrolled at compile time, so a bound known only at run time is not \
                         supported",
                    );
                    None
                }
            }
        };
        let lo = bound(self, range.start.as_deref());
        let hi = bound(self, range.end.as_deref());
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Val::Unit;
        };
        let end = match range.limits {
            syn::RangeLimits::HalfOpen(_) => hi,
            syn::RangeLimits::Closed(_) => hi.saturating_add(1),
        };
        if end.saturating_sub(lo) > MAX_UNROLL {
            self.errors.at(
                range,
                format!("at most {MAX_UNROLL} iterations can be unrolled"),
            );
            return Val::Unit;
        }
        for i in lo..end {
            if self.too_big {
                break;
            }
            self.env.push();
            if let Some(name) = &var {
                self.env.bind(Binding {
                    name: name.clone(),
                    kind: Kind::LoopVar,
                    mutable: false,
                    val: Val::Int(i),
                });
            }
            self.block(&f.body);
            self.env.pop();
        }
        Val::Unit
    }
}

/// After an `if` whose condition was rejected: variables the branches disagree on become
/// [`Val::Poison`], so no error follows from them.
fn poison_differences(then_env: Env, mut else_env: Env) -> Env {
    for (ts, es) in then_env.scopes.iter().zip(else_env.scopes.iter_mut()) {
        for (tb, eb) in ts.iter().zip(es.iter_mut()) {
            if tb.val != eb.val {
                eb.val = Val::Poison;
            }
        }
    }
    else_env
}
