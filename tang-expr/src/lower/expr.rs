//! Lowering expressions: literals, names, constants, arithmetic, comparisons, logic,
//! casts, methods, calls. Everything outside the kernel language is a spanned error that
//! says what to write instead.

use quote::ToTokens;
use syn::{BinOp, Expr, Lit, UnOp};

use super::body::Lowerer;
use super::builtins;
use super::env::{Kind, Val};
use super::site::{Site, SpanRange};
use crate::graph::NodeId;
use crate::op::Op;

/// Rust's arithmetic and comparison operators that exist in the kernel language.
fn binary_op(op: &BinOp) -> Option<Op> {
    Some(match op {
        BinOp::Add(_) | BinOp::AddAssign(_) => Op::Add,
        BinOp::Sub(_) | BinOp::SubAssign(_) => Op::Sub,
        BinOp::Mul(_) | BinOp::MulAssign(_) => Op::Mul,
        BinOp::Div(_) | BinOp::DivAssign(_) => Op::Div,
        BinOp::Lt(_) => Op::Lt,
        BinOp::Le(_) => Op::Le,
        BinOp::Gt(_) => Op::Gt,
        BinOp::Ge(_) => Op::Ge,
        BinOp::Eq(_) => Op::Eq,
        BinOp::Ne(_) => Op::Ne,
        BinOp::And(_) => Op::And,
        BinOp::Or(_) => Op::Or,
        _ => return None,
    })
}

fn is_compound_assign(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// The result of compile-time integer arithmetic (on loop counters and literals).
enum IntResult {
    Int(i64),
    Bool(bool),
}

/// Compile-time integer arithmetic: `None` when not supported or on overflow.
fn int_op(op: Op, a: i64, b: i64) -> Option<IntResult> {
    use IntResult::{Bool, Int};
    Some(match op {
        Op::Add => Int(a.checked_add(b)?),
        Op::Sub => Int(a.checked_sub(b)?),
        Op::Mul => Int(a.checked_mul(b)?),
        Op::Lt => Bool(a < b),
        Op::Le => Bool(a <= b),
        Op::Gt => Bool(a > b),
        Op::Ge => Bool(a >= b),
        Op::Eq => Bool(a == b),
        Op::Ne => Bool(a != b),
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// Lowers one expression.
    pub(crate) fn expr(&mut self, e: &Expr) -> Val {
        if self.aborted() {
            return Val::Poison;
        }
        // Recursion follows the user's nesting: keep enough stack for the next level.
        super::guard::grow_if_needed(|| self.expr_here(e))
    }

    fn expr_here(&mut self, e: &Expr) -> Val {
        match e {
            Expr::Lit(l) => self.lit(&l.lit),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Path(p) => self.path(p),
            Expr::Unary(u) => self.unary(u),
            Expr::Binary(b) => self.binary(b),
            Expr::Assign(a) => {
                let v = self.expr(&a.right);
                self.assign(&a.left, v);
                Val::Unit
            }
            Expr::Cast(c) => self.cast(c),
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Call(c) => self.call_expr(c),
            Expr::If(i) => self.if_expr(i),
            Expr::Block(b) => {
                if let Some(label) = &b.label {
                    self.errors
                        .at(label, "block labels are not supported in kernels");
                }
                self.block(&b.block)
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Tuple(t) => {
                if t.elems.is_empty() {
                    return Val::Unit;
                }
                Val::Tuple(t.elems.iter().map(|x| self.expr(x)).collect())
            }
            other => {
                let msg = rejected(other);
                self.errors.at(other, msg);
                Val::Poison
            }
        }
    }

    fn lit(&mut self, lit: &Lit) -> Val {
        match lit {
            Lit::Float(f) => match f.suffix() {
                "" | "f32" => match f.base10_parse::<f32>() {
                    Ok(v) => Val::Node(self.konst(v, f)),
                    Err(e) => {
                        self.errors.at(f, e);
                        Val::Poison
                    }
                },
                "f64" => {
                    self.errors.at(
                        f,
                        "`f64` literals are not supported: kernels compute in `f32`; drop the \
                         suffix or write `f32`",
                    );
                    Val::Poison
                }
                other => {
                    self.errors
                        .at(f, format!("unsupported literal suffix `{other}`"));
                    Val::Poison
                }
            },
            Lit::Int(i) => match i.suffix() {
                "f32" => match i.base10_parse::<f32>() {
                    Ok(v) => Val::Node(self.konst(v, i)),
                    Err(e) => {
                        self.errors.at(i, e);
                        Val::Poison
                    }
                },
                "f64" => {
                    self.errors.at(
                        i,
                        "`f64` literals are not supported: kernels compute in `f32`",
                    );
                    Val::Poison
                }
                _ => match i.base10_parse::<i64>() {
                    Ok(v) => Val::Int(v),
                    Err(e) => {
                        self.errors.at(i, e);
                        Val::Poison
                    }
                },
            },
            Lit::Bool(b) => {
                let id = self.g.boolean(b.value);
                self.record(id, &SpanRange::single(b.span));
                Val::Node(id)
            }
            Lit::Str(_) | Lit::ByteStr(_) | Lit::CStr(_) => {
                self.errors.at(
                    lit,
                    "string literals are not supported: a kernel computes with `f32` numbers",
                );
                Val::Poison
            }
            Lit::Char(_) | Lit::Byte(_) => {
                self.errors.at(
                    lit,
                    "character literals are not supported: a kernel computes with `f32` numbers",
                );
                Val::Poison
            }
            _ => {
                self.errors
                    .at(lit, "this literal is not supported: write an `f32` number");
                Val::Poison
            }
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> Val {
        if p.qself.is_some() {
            self.errors.at(
                p,
                "qualified paths (`<T as Trait>::...`) are not supported in kernels",
            );
            return Val::Poison;
        }
        if let Some(ident) = p.path.get_ident() {
            let name = ident.to_string();
            return match self.env.lookup(&name) {
                Some(b) if b.kind == Kind::InOut => {
                    self.errors.at(
                        p,
                        format!(
                            "`{name}` is a `&mut f32` parameter: read its value with `*{name}`"
                        ),
                    );
                    Val::Poison
                }
                Some(b) if b.val == Val::Uninit => {
                    self.errors.at(
                        p,
                        format!(
                            "`{name}` is read before a value is assigned to it on every path: \
                             assign it in each branch of the `if` before this use"
                        ),
                    );
                    Val::Poison
                }
                Some(b) => b.val.clone(),
                None => {
                    let hint = if builtins::constant(&["f32".into(), "consts".into(), name.clone()])
                        .is_some()
                    {
                        format!(": write the full path `std::f32::consts::{name}`")
                    } else {
                        String::new()
                    };
                    self.errors
                        .at(p, format!("unknown name `{name}` in this kernel{hint}"));
                    Val::Poison
                }
            };
        }
        let segments: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        match builtins::constant(&segments) {
            Some(v) if p.path.segments.iter().all(|s| s.arguments.is_none()) => {
                Val::Node(self.konst(v, p))
            }
            _ => {
                self.errors.at(
                    p,
                    format!(
                        "unknown path `{}`: kernels know `std::f32::consts::*` and `f32::EPSILON`, \
                         `f32::MAX`, `f32::MIN`, `f32::MIN_POSITIVE`, `f32::INFINITY`, \
                         `f32::NEG_INFINITY`, `f32::NAN`",
                        segments.join("::")
                    ),
                );
                Val::Poison
            }
        }
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Val {
        match u.op {
            UnOp::Deref(_) => {
                let Some(name) = self.inout_name(&u.expr) else {
                    return Val::Poison;
                };
                self.env
                    .lookup(&name)
                    .map(|b| b.val.clone())
                    .unwrap_or(Val::Poison)
            }
            UnOp::Neg(_) => match self.expr(&u.expr) {
                Val::Int(i) => match i.checked_neg() {
                    Some(n) => Val::Int(n),
                    None => Val::Poison,
                },
                v => match self.float(v, &u.expr) {
                    Some(x) => self.apply(Op::Neg, &[x], u),
                    None => Val::Poison,
                },
            },
            UnOp::Not(_) => {
                let v = self.expr(&u.expr);
                match self.cond(v, &u.expr) {
                    Some(c) => self.apply(Op::Not, &[c], u),
                    None => Val::Poison,
                }
            }
            _ => {
                self.errors
                    .at(u, "this operator is not supported in kernels");
                Val::Poison
            }
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Val {
        let Some(op) = binary_op(&b.op) else {
            let msg = match b.op {
                BinOp::Rem(_) | BinOp::RemAssign(_) => {
                    "the remainder operator `%` is not supported: write `a - b * (a / b).trunc()`"
                }
                _ => {
                    "bitwise and shift operators are not supported: kernels compute with `f32`; \
                     use `&&`, `||` and `!` on conditions"
                }
            };
            self.errors.at(b.op, msg);
            // Still check the operands for their own errors.
            self.expr(&b.left);
            self.expr(&b.right);
            return Val::Poison;
        };
        if is_compound_assign(&b.op) {
            let current = self.expr(&b.left);
            let rhs = self.expr(&b.right);
            let v = self.arith(op, current, rhs, b);
            self.assign(&b.left, v);
            return Val::Unit;
        }
        let l = self.expr(&b.left);
        let r = self.expr(&b.right);
        match op {
            Op::And | Op::Or => {
                let (l, r) = (self.cond(l, &b.left), self.cond(r, &b.right));
                match (l, r) {
                    (Some(l), Some(r)) => self.apply(op, &[l, r], b),
                    _ => Val::Poison,
                }
            }
            _ => self.arith(op, l, r, b),
        }
    }

    /// A float operation or comparison on two values; integers fold at compile time.
    fn arith(&mut self, op: Op, l: Val, r: Val, at: &syn::ExprBinary) -> Val {
        if let (Val::Int(a), Val::Int(c)) = (&l, &r) {
            return match int_op(op, *a, *c) {
                Some(IntResult::Bool(flag)) => {
                    let id = self.g.boolean(flag);
                    self.record(id, at);
                    Val::Node(id)
                }
                Some(IntResult::Int(v)) => Val::Int(v),
                None => {
                    self.errors.at(
                        at,
                        "this integer operation is not supported at compile time (only `+ - *` \
                         and comparisons without overflow); convert with `as f32` first",
                    );
                    Val::Poison
                }
            };
        }
        let (l, r) = (self.float(l, &at.left), self.float(r, &at.right));
        match (l, r) {
            (Some(l), Some(r)) => self.apply(op, &[l, r], at),
            _ => Val::Poison,
        }
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Val {
        let v = self.expr(&c.expr);
        if !super::sig::is_f32(&c.ty) {
            self.errors.at(
                &c.ty,
                format!(
                    "casts to `{}` are not supported: kernels compute in `f32` (`i as f32` \
                     turns a loop counter into a float)",
                    c.ty.to_token_stream().to_string().replace(' ', "")
                ),
            );
            return Val::Poison;
        }
        match self.float(v, &c.expr) {
            Some(id) => Val::Node(id),
            None => Val::Poison,
        }
    }

    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Val {
        if let Some(t) = &m.turbofish {
            self.errors
                .at(t, "generic arguments are not supported on kernel methods");
        }
        let receiver = self.expr(&m.receiver);
        let args: Vec<Val> = m.args.iter().map(|a| self.expr(a)).collect();
        let arg_exprs: Vec<&Expr> = m.args.iter().collect();
        self.method(&m.method, &m.receiver, receiver, &arg_exprs, args, m)
    }

    /// `receiver.name(args)`, also reached from `f32::name(receiver, args)`.
    fn method(
        &mut self,
        name: &syn::Ident,
        receiver_expr: &Expr,
        receiver: Val,
        arg_exprs: &[&Expr],
        args: Vec<Val>,
        at: &impl Site,
    ) -> Val {
        let method = name.to_string();
        let arity = if builtins::unary_method(&method).is_some() || method == "is_nan" {
            0
        } else if builtins::binary_method(&method).is_some() || method == "powi" {
            1
        } else if builtins::ternary_method(&method).is_some() {
            2
        } else {
            self.errors.at(
                name,
                format!(
                    "unknown method `{method}`: kernels support the `f32` methods {}",
                    builtins::METHODS
                ),
            );
            return Val::Poison;
        };
        // The receiver must be a float: a method on a condition or a counter is an error.
        let recv = match receiver {
            Val::Poison => return Val::Poison,
            Val::Node(id) if self.g.ty(id) == Ok(crate::ty::Ty::F32) => id,
            other => {
                let what = match other {
                    Val::Int(_) => format!(
                        "an integer (a loop counter or literal): convert it first, as in \
                         `(i as f32).{method}(...)`"
                    ),
                    Val::Node(_) => "a condition (`bool`); to turn it into a number write \
                                     `if c { 1.0 } else { 0.0 }`"
                        .to_string(),
                    _ => "a tuple or `()`".to_string(),
                };
                self.errors.at(
                    receiver_expr,
                    format!("`{method}` is an `f32` method, but this value is {what}"),
                );
                return Val::Poison;
            }
        };
        if args.len() != arity {
            self.errors.at(
                name,
                format!(
                    "`{method}` takes {arity} argument(s), but {} were given",
                    args.len()
                ),
            );
            return Val::Poison;
        }
        if method == "powi" {
            return match args.first() {
                Some(Val::Int(n)) => match i32::try_from(*n) {
                    Ok(n) => self.apply(Op::PowI(n), &[recv], at),
                    Err(_) => {
                        self.errors
                            .at(arg_exprs[0], "the exponent does not fit in `i32`");
                        Val::Poison
                    }
                },
                Some(Val::Poison) => Val::Poison,
                _ => {
                    let at_arg: &dyn ToTokens = match arg_exprs.first() {
                        Some(e) => e,
                        None => name,
                    };
                    self.errors.at(
                        at_arg,
                        "`powi` needs a constant integer exponent (`x.powi(2)`); use `powf` for \
                         a float exponent",
                    );
                    Val::Poison
                }
            };
        }
        if method == "is_nan" {
            return self.apply(Op::Ne, &[recv, recv], at);
        }
        let mut ids = vec![recv];
        for (v, e) in args.into_iter().zip(arg_exprs) {
            match self.float(v, e) {
                Some(id) => ids.push(id),
                None => return Val::Poison,
            }
        }
        if method == "clamp" && !self.clamp_bounds_ok(&ids, arg_exprs) {
            return Val::Poison;
        }
        let op = builtins::unary_method(&method)
            .or_else(|| builtins::binary_method(&method))
            .or_else(|| builtins::ternary_method(&method));
        match op {
            Some(op) => self.apply(op, &ids, at),
            None => Val::Poison,
        }
    }

    /// Checks constant bounds of `x.clamp(min, max)` (`ids` = `[x, min, max]`): Rust's
    /// `f32::clamp` panics unless `min <= max` and neither is NaN, so the CPU function
    /// would panic on every input while the kernel returned numbers.
    fn clamp_bounds_ok(&mut self, ids: &[NodeId], arg_exprs: &[&Expr]) -> bool {
        // A literal bound, possibly negated (`-1.0` lowers to a negation of `1.0`).
        let constant = |s: &Self, k: usize| {
            let mut id = *ids.get(k)?;
            let mut sign = 1.0f32;
            loop {
                match s.g.node(id).ok()? {
                    crate::graph::Node::Apply(Op::Neg, [a, ..]) => {
                        sign = -sign;
                        id = a;
                    }
                    n => return n.as_const().map(|v| sign * v),
                }
            }
        };
        let (lo, hi) = (constant(self, 1), constant(self, 2));
        let bad = match (lo, hi) {
            (Some(lo), Some(hi)) => lo.is_nan() || hi.is_nan() || lo > hi,
            (Some(v), None) | (None, Some(v)) => v.is_nan(),
            (None, None) => false,
        };
        if bad && let [lo_e, hi_e] = arg_exprs {
            let at = SpanRange {
                start: lo_e.site().start,
                end: hi_e.site().end,
            };
            self.errors.range(
                at,
                format!(
                    "`clamp` needs `min <= max` and neither NaN (Rust's `f32::clamp` panics \
                     otherwise), but here min = {} and max = {}: swap the bounds",
                    lo.map_or("(not constant)".to_string(), |v| format!("{v:?}")),
                    hi.map_or("(not constant)".to_string(), |v| format!("{v:?}")),
                ),
            );
        }
        !bad
    }

    fn call_expr(&mut self, c: &syn::ExprCall) -> Val {
        let Expr::Path(p) = &*c.func else {
            self.errors.at(
                &c.func,
                "only named functions can be called in a kernel (no closures or function values)",
            );
            return Val::Poison;
        };
        let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
        // `f32::max(a, b)`, `std::primitive::f32::exp(x)`, `StableExt::sigmoid(x)`: the
        // method with the first argument as receiver.
        let ufcs = match segments.as_slice() {
            [ty, m] if ty.ident == "f32" || ty.ident == "StableExt" => Some(&m.ident),
            [.., ty, m] if ty.ident == "f32" || ty.ident == "StableExt" => {
                // long paths (`core::primitive::f32::max`)
                Some(&m.ident)
            }
            _ => None,
        };
        if p.qself.is_none()
            && let Some(method) = ufcs
        {
            let mut vals: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
            let exprs: Vec<&Expr> = c.args.iter().collect();
            if vals.is_empty() {
                self.errors.at(
                    c,
                    format!("`{method}` needs its `f32` receiver as the first argument"),
                );
                return Val::Poison;
            }
            let recv = vals.remove(0);
            return self.method(method, exprs[0], recv, &exprs[1..], vals, c);
        }
        match p.path.get_ident() {
            Some(ident) if p.qself.is_none() => {
                let args: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
                let name = ident.to_string();
                if let Some(b) = self.env.lookup(&name) {
                    // A local (e.g. a rejected closure) shadows any function of that name.
                    if b.val != Val::Poison {
                        self.errors
                            .at(&c.func, format!("`{name}` is a variable, not a function"));
                    }
                    return Val::Poison;
                }
                self.call(c, &ident.to_string(), args)
            }
            _ => {
                for a in &c.args {
                    self.expr(a);
                }
                self.errors.at(
                    &c.func,
                    format!(
                        "unknown function `{}`: a kernel can call `f32` methods (`x.exp()`), \
                         `f32::max(a, b)`-style functions, and functions defined in the same \
                         `#[kernels] mod`",
                        p.path.to_token_stream().to_string().replace(' ', "")
                    ),
                );
                Val::Poison
            }
        }
    }
}

/// The message for an expression outside the kernel language.
fn rejected(e: &Expr) -> String {
    match e {
        Expr::While(_) => "`while` loops are not supported: a kernel has no run-time loops; use \
                           `for i in 0..N` with constant bounds (unrolled at compile time)"
            .into(),
        Expr::Loop(_) => "`loop` is not supported: a kernel has no run-time loops; use `for i in \
                          0..N` with constant bounds (unrolled at compile time)"
            .into(),
        Expr::Break(_) => {
            "`break` is not supported: loops are unrolled; use `if` to skip work".into()
        }
        Expr::Continue(_) => {
            "`continue` is not supported: loops are unrolled; use `if` to skip work".into()
        }
        Expr::Return(_) => "early `return` is not supported: make the result the last \
                            expression of the function (use `if`/`else` for a conditional value)"
            .into(),
        Expr::Try(_) => "the `?` operator is not supported: a kernel cannot fail".into(),
        Expr::Closure(_) => "closures are not supported: write a helper function in the same \
                             `#[kernels] mod` and call it"
            .into(),
        Expr::Macro(m) => format!(
            "macro calls are not supported in kernels (`{}!`): a kernel is plain arithmetic on \
             `f32`",
            m.mac.path.to_token_stream().to_string().replace(' ', "")
        ),
        Expr::Match(_) => "`match` is not supported: use `if` / `else if` / `else`".into(),
        Expr::Index(_) => "indexing is not supported: a kernel sees one element of each input; \
                           take each value as an `f32` parameter"
            .into(),
        Expr::Field(_) => "field access is not supported: kernels work on `f32` values; \
                           destructure tuples with `let (a, b) = ...;`"
            .into(),
        Expr::Array(_) | Expr::Repeat(_) => {
            "arrays are not supported: kernels work on `f32` values".into()
        }
        Expr::Struct(_) => "structs are not supported: kernels work on `f32` values".into(),
        Expr::Reference(_) | Expr::RawAddr(_) => "references are not supported in kernels: the \
                                                  only reference is a `&mut f32` parameter, \
                                                  used as `*p`"
            .into(),
        Expr::Unsafe(_) => "`unsafe` blocks are not supported in kernels".into(),
        Expr::Async(_) | Expr::Await(_) => "`async` is not supported in kernels".into(),
        Expr::Let(_) => "`if let` / `let` conditions are not supported: use a comparison".into(),
        Expr::Range(_) => "ranges are only supported as the bounds of `for i in 0..N`".into(),
        Expr::Const(_) => "`const` blocks are not supported in kernels".into(),
        _ => "this expression is not supported in a kernel".into(),
    }
}
