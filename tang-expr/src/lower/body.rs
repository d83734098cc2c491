//! Lowering function bodies: the lowerer's state, blocks, statements, `let` and inlined
//! calls. Control flow is in `control.rs`, bindings and assignment in `assign.rs`.

use std::collections::BTreeMap;

use quote::ToTokens;
use syn::{Block, Expr, ItemFn, Pat, Stmt};

use super::env::{Binding, Env, Kind, Val};
use super::errors::Errors;
use super::sig::{Param, ParamKind, Ret, is_f32, is_uniform_attr, type_problem};
use super::site::{Site, SpanRange};
use crate::graph::{Graph, NodeId};
use crate::op::Op;
use crate::ty::Ty;

/// The functions a kernel may call (inlined): those of its `#[kernels] mod`.
pub(crate) type FnTable<'a> = BTreeMap<String, &'a ItemFn>;

/// Most nodes one kernel may build (loops are unrolled; this keeps expansion fast).
const MAX_NODES: usize = 100_000;
/// Most statements one kernel may lower, counting every unrolled iteration.
const MAX_STEPS: usize = 200_000;
/// Most iterations of one unrolled loop.
pub(super) const MAX_UNROLL: i64 = 4096;

/// Builds a graph from a function body, collecting errors instead of stopping at the first.
pub(crate) struct Lowerer<'a> {
    /// The graph being built.
    pub g: Graph,
    /// The Rust code each node first came from (by node index).
    pub spans: Vec<Option<SpanRange>>,
    /// Everything rejected so far.
    pub errors: Errors,
    pub(crate) env: Env,
    fns: &'a FnTable<'a>,
    stack: Vec<String>,
    steps: usize,
    pub(super) too_big: bool,
}

/// What lowering a kernel body produced.
pub(crate) struct Lowered {
    /// The value of each output, in order.
    pub outputs: Vec<NodeId>,
    /// The final value of each in-out parameter, in order.
    pub inouts: Vec<NodeId>,
}

impl<'a> Lowerer<'a> {
    /// A lowerer for the function `name` that can inline the functions of `fns` (a call
    /// back to `name` is reported as recursion).
    pub(crate) fn new(name: &str, fns: &'a FnTable<'a>) -> Self {
        Lowerer {
            g: Graph::new(),
            spans: Vec::new(),
            errors: Errors::default(),
            env: Env::new(),
            fns,
            stack: vec![name.to_string()],
            steps: 0,
            too_big: false,
        }
    }

    /// Remembers that `id` came from the code at `span` (the first origin wins).
    pub(crate) fn record(&mut self, id: NodeId, at: &impl Site) {
        if self.spans.len() < self.g.len() {
            self.spans.resize(self.g.len(), None);
        }
        if let Some(slot) = self.spans.get_mut(id.index())
            && slot.is_none()
        {
            *slot = Some(at.site());
        }
    }

    /// A float constant that came from `at`.
    pub(crate) fn konst(&mut self, v: f32, at: &impl Site) -> NodeId {
        let id = self.g.constant(v);
        self.record(id, at);
        id
    }

    /// `op(args)`, or an error at `at`.
    pub(crate) fn apply(&mut self, op: Op, args: &[NodeId], at: &impl Site) -> Val {
        if self.g.len() >= MAX_NODES {
            self.too_large(at.site());
            return Val::Poison;
        }
        match self.g.apply(op, args) {
            Ok(id) => {
                self.record(id, at);
                Val::Node(id)
            }
            Err(e) => {
                self.errors.range(at.site(), e);
                Val::Poison
            }
        }
    }

    fn too_large(&mut self, at: SpanRange) {
        if !self.too_big {
            self.too_big = true;
            self.errors.range(
                at,
                format!(
                    "this kernel is too large (more than {MAX_NODES} operations or {MAX_STEPS} \
                     statements once loops are unrolled): use fewer loop iterations"
                ),
            );
        }
    }

    /// Whether lowering stopped because the kernel grew too large.
    pub(crate) fn aborted(&self) -> bool {
        self.too_big
    }

    /// The value as a float node, or an error at `at` saying what was found instead.
    pub(crate) fn float(&mut self, v: Val, at: &impl Site) -> Option<NodeId> {
        match v {
            Val::Node(id) => match self.g.ty(id) {
                Ok(Ty::F32) => Some(id),
                _ => {
                    self.errors.range(
                        at.site(),
                        "expected an `f32` value, found a condition: to turn a condition into \
                         a number write `if c { 1.0 } else { 0.0 }`",
                    );
                    None
                }
            },
            Val::Int(i) => Some(self.konst(i as f32, at)),
            Val::Tuple(_) => {
                self.errors.range(
                    at.site(),
                    "expected an `f32` value, found a tuple: destructure it with `let (a, b) = ...;`",
                );
                None
            }
            Val::Unit => {
                self.errors.range(
                    at.site(),
                    "expected an `f32` value, found `()` (a statement)",
                );
                None
            }
            // Reading one is reported where it is read.
            Val::Poison | Val::Uninit => None,
        }
    }

    /// The value as a condition node, or an error at `at`.
    pub(crate) fn cond(&mut self, v: Val, at: &impl Site) -> Option<NodeId> {
        match v {
            Val::Node(id) if self.g.ty(id) == Ok(Ty::Bool) => Some(id),
            Val::Poison => None,
            _ => {
                self.errors.range(
                    at.site(),
                    "expected a condition (a comparison such as `x > 0.0`, `&&`, `||`, `!`), \
                     found a number",
                );
                None
            }
        }
    }

    /// `if c { a } else { b }` for values of any shape (used by `if` and by merging the
    /// variables the branches assigned).
    pub(super) fn select(&mut self, c: NodeId, a: Val, b: Val, at: &impl Site) -> Val {
        if a == b {
            return a;
        }
        match (a, b) {
            (Val::Poison, _) | (_, Val::Poison) => Val::Poison,
            // Assigned on one path only: still unassigned, as Rust sees it.
            (Val::Uninit, _) | (_, Val::Uninit) => Val::Uninit,
            (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => Val::Tuple(
                xs.into_iter()
                    .zip(ys)
                    .map(|(x, y)| self.select(c, x, y, at))
                    .collect(),
            ),
            (Val::Unit, Val::Unit) => Val::Unit,
            (a @ (Val::Node(_) | Val::Int(_)), b @ (Val::Node(_) | Val::Int(_))) => {
                let is_bool =
                    |s: &Self, v: &Val| matches!(v, Val::Node(id) if s.g.ty(*id) == Ok(Ty::Bool));
                match (is_bool(self, &a), is_bool(self, &b)) {
                    (false, false) => {
                        let (Some(x), Some(y)) = (self.float(a, at), self.float(b, at)) else {
                            return Val::Poison;
                        };
                        self.apply(Op::Select, &[c, x, y], at)
                    }
                    (true, true) => {
                        // (c && a) || (!c && b): a select between conditions
                        let (Val::Node(x), Val::Node(y)) = (a, b) else {
                            return Val::Poison;
                        };
                        let (Val::Node(l), Val::Node(nc)) = (
                            self.apply(Op::And, &[c, x], at),
                            self.apply(Op::Not, &[c], at),
                        ) else {
                            return Val::Poison;
                        };
                        let Val::Node(r) = self.apply(Op::And, &[nc, y], at) else {
                            return Val::Poison;
                        };
                        self.apply(Op::Or, &[l, r], at)
                    }
                    _ => {
                        self.errors.range(
                            at.site(),
                            "the branches give different types (a number and a condition)",
                        );
                        Val::Poison
                    }
                }
            }
            _ => {
                self.errors.range(
                    at.site(),
                    "the branches give values of different shapes (a tuple, a number or `()`)",
                );
                Val::Poison
            }
        }
    }

    // ---------------------------------------------------------------- functions

    /// Lowers the body of kernel `sig`: binds the parameters, lowers the block and reads
    /// the outputs and the final in-out values.
    pub(crate) fn kernel_body(
        &mut self,
        params: &[Param],
        rejected: &[String],
        ret: Ret,
        block: &Block,
    ) -> Lowered {
        for name in rejected {
            self.env.bind(Binding {
                name: name.clone(),
                kind: Kind::Local,
                mutable: true,
                val: Val::Poison,
            });
        }
        let n_in = params.iter().filter(|p| p.kind == ParamKind::Input).count() as u32;
        let (mut i, mut u, mut io) = (0u32, 0u32, 0u32);
        for p in params {
            let (kind, id) = match p.kind {
                ParamKind::Input => {
                    i += 1;
                    (Kind::Input, self.g.input(i - 1))
                }
                ParamKind::Uniform => {
                    u += 1;
                    (Kind::Uniform, self.g.uniform(u - 1))
                }
                ParamKind::InOut => {
                    io += 1;
                    (Kind::InOut, self.g.input(n_in + io - 1))
                }
            };
            self.record(id, &p.ident);
            self.env.bind(Binding {
                name: p.name.clone(),
                kind,
                mutable: p.mutable,
                val: Val::Node(id),
            });
        }
        let v = self.fn_block(block);
        let tail = match block.stmts.last() {
            Some(s) => s.site(),
            None => block.site(),
        };
        let outputs = match ret {
            Ret::Unit => Vec::new(),
            Ret::Scalar => self.float(v, &tail).into_iter().collect(),
            Ret::Tuple(n) => {
                match v {
                    Val::Tuple(vs) if vs.len() == n => vs
                        .into_iter()
                        .filter_map(|x| self.float(x, &tail))
                        .collect(),
                    Val::Poison => Vec::new(),
                    _ => {
                        self.errors.range(
                        tail,
                        format!("the function returns a tuple of {n} `f32`: end it with `(a, b, ...)`"),
                    );
                        Vec::new()
                    }
                }
            }
        };
        let mut inouts = Vec::new();
        for p in params.iter().filter(|p| p.kind == ParamKind::InOut) {
            let val = self
                .env
                .scopes
                .first()
                .and_then(|s| s.iter().find(|b| b.name == p.name))
                .map(|b| b.val.clone())
                .unwrap_or(Val::Poison);
            if let Some(id) = self.float(val, &p.ident) {
                inouts.push(id);
            }
        }
        Lowered { outputs, inouts }
    }

    /// A function's block: like any block, except that a final `return x;` is its value.
    fn fn_block(&mut self, block: &Block) -> Val {
        self.env.push();
        let mut value = Val::Unit;
        let last = block.stmts.len().saturating_sub(1);
        for (k, stmt) in block.stmts.iter().enumerate() {
            if self.too_big {
                break;
            }
            if k == last
                && let Stmt::Expr(Expr::Return(r), _) = stmt
            {
                value = match &r.expr {
                    Some(e) => self.expr(e),
                    None => Val::Unit,
                };
                break;
            }
            value = self.stmt(stmt, k == last);
        }
        self.env.pop();
        value
    }

    /// Inlines a call of `name` (a function of the same `#[kernels] mod`).
    pub(crate) fn call(&mut self, at: &syn::ExprCall, name: &str, args: Vec<Val>) -> Val {
        let Some(&f) = self.fns.get(name) else {
            self.errors.at(
                &at.func,
                format!(
                    "unknown function `{name}`: a kernel can call `f32` methods (`x.exp()`), \
                     `f32::max(a, b)`-style functions, and functions defined in the same \
                     `#[kernels] mod`"
                ),
            );
            return Val::Poison;
        };
        if self.stack.iter().any(|s| s == name) {
            self.errors.at(
                at,
                format!(
                    "recursion is not supported: `{name}` calls itself (calls are inlined into \
                     one shader); rewrite it without the recursive call"
                ),
            );
            return Val::Poison;
        }
        let mut params = Vec::new();
        let mut ok = true;
        if !f.sig.generics.params.is_empty() {
            self.errors.at(
                &f.sig.generics,
                "generic functions cannot be called from a kernel: write it over `f32`",
            );
            ok = false;
        }
        for arg in &f.sig.inputs {
            match arg {
                syn::FnArg::Typed(pt) => {
                    // A called kernel's `#[uniform]` parameter is just a value here.
                    let (ident, mutable) = match &*pt.pat {
                        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            (pi.ident.to_string(), pi.mutability.is_some())
                        }
                        other => {
                            self.errors.at(
                                other,
                                "parameters of a function called from a kernel are written `x: f32`",
                            );
                            ok = false;
                            continue;
                        }
                    };
                    if !is_f32(&pt.ty) {
                        let msg = if matches!(&*pt.ty, syn::Type::Reference(_)) {
                            "a function called from a kernel takes `f32` values; `&mut f32` \
                             parameters belong to the kernel itself"
                                .to_string()
                        } else {
                            type_problem(&pt.ty)
                        };
                        self.errors.at(&pt.ty, msg);
                        ok = false;
                        continue;
                    }
                    params.push((ident, mutable));
                }
                syn::FnArg::Receiver(r) => {
                    self.errors.at(r, "methods cannot be called from a kernel");
                    ok = false;
                }
            }
        }
        if !ok {
            return Val::Poison;
        }
        if params.len() != args.len() {
            self.errors.at(
                at,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    params.len(),
                    args.len()
                ),
            );
            return Val::Poison;
        }
        let mut bound = Vec::new();
        for ((pname, mutable), (v, e)) in params.into_iter().zip(args.into_iter().zip(&at.args)) {
            let Some(id) = self.float(v, e) else {
                return Val::Poison;
            };
            bound.push(Binding {
                name: pname,
                kind: Kind::Local,
                mutable,
                val: Val::Node(id),
            });
        }
        let saved = std::mem::replace(&mut self.env, Env::new());
        for b in bound {
            self.env.bind(b);
        }
        self.stack.push(name.to_string());
        let v = self.fn_block(&f.block);
        self.stack.pop();
        self.env = saved;
        v
    }

    // ---------------------------------------------------------------- statements

    /// Lowers a block in its own scope; its value is its tail expression.
    pub(crate) fn block(&mut self, block: &Block) -> Val {
        self.env.push();
        let mut value = Val::Unit;
        let last = block.stmts.len().saturating_sub(1);
        for (k, stmt) in block.stmts.iter().enumerate() {
            if self.too_big {
                break;
            }
            value = self.stmt(stmt, k == last);
        }
        self.env.pop();
        value
    }

    fn stmt(&mut self, stmt: &Stmt, last: bool) -> Val {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.too_large(stmt.site());
            return Val::Poison;
        }
        match stmt {
            Stmt::Local(local) => {
                self.local(local);
                Val::Unit
            }
            Stmt::Expr(e, semi) => {
                let v = self.expr(e);
                if semi.is_none() && last { v } else { Val::Unit }
            }
            Stmt::Item(item) => {
                // Its name is known from here on, so uses of it add no errors.
                let name = match item {
                    syn::Item::Const(c) => Some(&c.ident),
                    syn::Item::Static(c) => Some(&c.ident),
                    syn::Item::Fn(f) => Some(&f.sig.ident),
                    _ => None,
                };
                if let Some(name) = name {
                    self.env.bind(Binding {
                        name: name.to_string(),
                        kind: Kind::Local,
                        mutable: false,
                        val: Val::Poison,
                    });
                }
                self.errors.at(
                    item,
                    "items inside a kernel body are not supported: define them outside the \
                     function (helper functions go in the same `#[kernels] mod`)",
                );
                Val::Unit
            }
            Stmt::Macro(m) => {
                self.errors.at(
                    m,
                    format!(
                        "macro calls are not supported in kernels (`{}!`): a kernel is plain \
                         arithmetic on `f32`",
                        m.mac.path.to_token_stream().to_string().replace(' ', "")
                    ),
                );
                Val::Unit
            }
        }
    }

    fn local(&mut self, local: &syn::Local) {
        for attr in &local.attrs {
            if is_uniform_attr(attr) {
                self.errors.at(
                    attr,
                    "`#[uniform]` marks a kernel parameter (`#[uniform] lr: f32`), not a local \
                     variable",
                );
            } else {
                self.errors
                    .at(attr, "attributes on `let` are not supported in kernels");
            }
        }
        let Some(init) = &local.init else {
            // `let y;` assigned later (once on each path, as Rust requires).
            self.bind_pat(&local.pat, Val::Uninit);
            return;
        };
        if let Some((else_token, _)) = &init.diverge {
            self.errors
                .at(else_token, "`let ... else` is not supported in kernels");
        }
        let v = self.expr(&init.expr);
        self.bind_pat(&local.pat, v);
    }
}
