//! Lowering bindings and assignment: `let` patterns, `x = ..`/`x op= ..` on locals and
//! `*p = ..` on `&mut f32` parameters.

use syn::{Expr, Pat};

use super::body::Lowerer;
use super::env::{Binding, Kind, Val};
use super::sig::{is_f32, type_problem};

impl Lowerer<'_> {
    /// Binds the names of a `let` pattern to (parts of) `v`.
    pub(super) fn bind_pat(&mut self, pat: &Pat, v: Val) {
        match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.env.bind(Binding {
                    name: pi.ident.to_string(),
                    kind: Kind::Local,
                    mutable: pi.mutability.is_some(),
                    val: v,
                });
            }
            Pat::Type(pt) => {
                let ok = match &*pt.ty {
                    t if is_f32(t) => true,
                    syn::Type::Tuple(t) => t.elems.iter().all(is_f32),
                    syn::Type::Infer(_) => true,
                    other => {
                        self.errors.at(other, type_problem(other));
                        false
                    }
                };
                self.bind_pat(&pt.pat, if ok { v } else { Val::Poison });
            }
            Pat::Wild(_) => {}
            Pat::Paren(p) => self.bind_pat(&p.pat, v),
            Pat::Tuple(t) => {
                let parts = match v {
                    Val::Tuple(parts) if parts.len() == t.elems.len() => parts,
                    Val::Poison => vec![Val::Poison; t.elems.len()],
                    _ => {
                        self.errors.at(
                            t,
                            format!(
                                "this pattern takes a tuple of {} values, but the value is not \
                                 one",
                                t.elems.len()
                            ),
                        );
                        vec![Val::Poison; t.elems.len()]
                    }
                };
                for (p, part) in t.elems.iter().zip(parts) {
                    self.bind_pat(p, part);
                }
            }
            other => {
                self.errors.at(
                    other,
                    "this pattern is not supported in a kernel: bind a name (`let x = ...`) \
                     or a tuple of names (`let (a, b) = ...`)",
                );
                // Bind the pattern's names anyway, so their uses do not add errors.
                struct Names(Vec<String>);
                impl<'ast> syn::visit::Visit<'ast> for Names {
                    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                        self.0.push(p.ident.to_string());
                    }
                }
                let mut names = Names(Vec::new());
                syn::visit::Visit::visit_pat(&mut names, other);
                for name in names.0 {
                    self.env.bind(Binding {
                        name,
                        kind: Kind::Local,
                        mutable: true,
                        val: Val::Poison,
                    });
                }
            }
        }
    }

    /// Assigns `v` to the place `target` (`x` for a `let mut x`, or `*p` for a `&mut f32`).
    pub(crate) fn assign(&mut self, target: &Expr, v: Val) {
        match target {
            Expr::Paren(p) => self.assign(&p.expr, v),
            Expr::Group(g) => self.assign(&g.expr, v),
            Expr::Infer(_) => {}
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                let Some(b) = self.env.lookup(&name) else {
                    self.errors.at(target, format!("unknown variable `{name}`"));
                    return;
                };
                let msg = match (b.kind, b.mutable) {
                    (Kind::Local | Kind::Input, true) => None,
                    // `let y;` then `y = ...`: its first (and only) assignment.
                    (Kind::Local, false) if b.val == Val::Uninit => None,
                    (Kind::Local, false) => Some(format!(
                        "cannot assign to `{name}`: it is not mutable; declare it with \
                         `let mut {name}`"
                    )),
                    (Kind::Input, false) => Some(format!(
                        "cannot assign to `{name}`: it is a by-value input, read-only; copy it \
                         into a local (`let mut y = {name};`), or take it as `{name}: &mut f32` \
                         to update it in place"
                    )),
                    (Kind::Uniform, _) => Some(format!(
                        "cannot assign to `{name}`: it is a uniform (one read-only value for the \
                         whole launch); copy it into a local with `let mut`"
                    )),
                    (Kind::InOut, _) => Some(format!(
                        "`{name}` is a `&mut f32` parameter: assign through it with `*{name} = ...`"
                    )),
                    (Kind::LoopVar, _) => {
                        Some(format!("cannot assign to the loop counter `{name}`"))
                    }
                };
                if let Some(msg) = msg {
                    self.errors.at(target, msg);
                    return;
                }
                if let Some(b) = self.env.lookup_mut(&name) {
                    b.val = v;
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let Some(name) = self.inout_name(&u.expr) else {
                    return;
                };
                let v = match self.float(v, target) {
                    Some(id) => Val::Node(id),
                    None => Val::Poison,
                };
                if let Some(b) = self.env.lookup_mut(&name) {
                    b.val = v;
                }
            }
            other => self.errors.at(
                other,
                "cannot assign to this expression: assign to a `let mut` local or through a \
                 `&mut f32` parameter (`*p = ...`)",
            ),
        }
    }

    /// The name of the `&mut f32` parameter `e` names (for `*e`), or an error.
    pub(crate) fn inout_name(&mut self, e: &Expr) -> Option<String> {
        if let Expr::Path(p) = e
            && p.qself.is_none()
            && let Some(ident) = p.path.get_ident()
        {
            let name = ident.to_string();
            match self.env.lookup(&name) {
                Some(b) if b.kind == Kind::InOut => return Some(name),
                // Already reported (e.g. a rejected reference): nothing more to say.
                Some(b) if b.val == Val::Poison => return None,
                Some(_) => {
                    self.errors.at(
                        e,
                        format!(
                            "`{name}` is not a reference: only `&mut f32` parameters can be \
                             dereferenced"
                        ),
                    );
                    return None;
                }
                None => {
                    self.errors.at(e, format!("unknown variable `{name}`"));
                    return None;
                }
            }
        }
        self.errors
            .at(e, "only `&mut f32` parameters can be dereferenced (`*p`)");
        None
    }

    // ---------------------------------------------------------------- control flow
}
