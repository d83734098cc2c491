//! Simplification: rebuilds the part of a graph that the roots need, bottom-up, folding
//! constants and applying identities that hold for every input.
//!
//! Rules (all keyed by [`Op`]):
//!
//! - **Constant folding** only for exactly rounded ops ([`Op::is_exactly_rounded`]:
//!   `+ - * / sqrt min max neg abs select`, comparisons, `&& || !`), and only when every
//!   argument and the result are finite and normal (or zero): the host then computes the
//!   very bits the GPU would, so the build never depends on the host's `libm`, WGSL never
//!   needs an infinite literal, and a GPU that flushes subnormals cannot disagree.
//!   `min`/`max` of two zeros of different sign are left alone (their sign is unspecified).
//!   The result must also be exact (representable in f32: `1 / 4` folds, `1 / 3` does
//!   not), so a folded constant has the same value in f32, in f64 and on the GPU.
//! - **Identities**: `x + (-0)`, `(-0) + x`, `x - (+0)`, `x * 1`, `x / 1`, `x * -1 -> -x`, `--x`,
//!   `select(true, a, b) -> a`, `select(false, a, b) -> b`, `select(c, a, a) -> a`,
//!   `select(!c, a, b) -> select(c, b, a)`, `!!b`, `true && b`, `false && b`,
//!   `true || b`, `false || b`, `stop_gradient(constant)`, `stop_gradient(stop_gradient(x))`,
//!   `x.powi(0) -> 1`, `x.powi(1) -> x`.
//! - `x * 0` is **not** rewritten to `0` for a non-constant `x`: it is NaN when `x` is
//!   infinite or NaN, and tang keeps NaNs visible. `c * 0` with a finite constant `c` folds
//!   like any constant product.
//!
//! `x + (+0)` is **not** rewritten: at `x = -0` it is `+0` (IEEE: `-0 + +0 = +0`), and the
//! kernel must return what the CPU function returns. Every rule is exact, NaN,
//! infinities and the sign of zero included; in particular, wherever the original
//! evaluates to a finite number the simplified graph evaluates to an equal one (a
//! property test checks this on random expressions).
//!
//! Output is deterministic: nodes are visited in graph order and the result is compacted
//! with [`Graph::extract`], so equal inputs give equal graphs.

use crate::error::ExprError;
use crate::graph::{Graph, Node, NodeId};
use crate::op::Op;
use crate::ty::Ty;

/// Simplifies the expressions at `roots` into a fresh graph holding only what they need.
/// Returns the new graph and the roots' ids in it. Input and uniform indices are kept.
///
/// A root that does not belong to `g` maps to an id that belongs to no graph, so any later
/// use of it reports [`ExprError::UnknownNode`]; [`try_simplify`] reports it at once.
pub fn simplify(g: &Graph, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
    let valid: Vec<NodeId> = roots
        .iter()
        .copied()
        .filter(|r| r.index() < g.len())
        .collect();
    let (out, mapped) = rebuild(g, &valid);
    let mut it = mapped.into_iter();
    let roots = roots
        .iter()
        .map(|r| {
            if r.index() < g.len() {
                it.next().unwrap_or(NodeId::NONE)
            } else {
                NodeId::NONE
            }
        })
        .collect();
    (out, roots)
}

/// [`simplify`], reporting a root that does not belong to `g`.
///
/// # Errors
/// [`ExprError::UnknownNode`] for a root that is not in `g`.
pub fn try_simplify(g: &Graph, roots: &[NodeId]) -> Result<(Graph, Vec<NodeId>), ExprError> {
    for &r in roots {
        g.node(r)?;
    }
    Ok(rebuild(g, roots))
}

fn rebuild(g: &Graph, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
    let live = g.reachable(roots);
    let mut out = Graph::new();
    let mut map = vec![NodeId::NONE; g.len()];
    for (i, node) in g.nodes().iter().enumerate() {
        if !live[i] {
            continue;
        }
        map[i] = match *node {
            Node::Input(k) => out.input(k),
            Node::Uniform(k) => out.uniform(k),
            Node::Const(bits) => out.constant(f32::from_bits(bits)),
            Node::Bool(b) => out.boolean(b),
            Node::Apply(op, args) => {
                let a: Vec<NodeId> = args[..op.arity()].iter().map(|x| map[x.index()]).collect();
                rewrite(&mut out, op, &a)
            }
        };
    }
    let mapped: Vec<NodeId> = roots.iter().map(|r| map[r.index()]).collect();
    // Rewrites such as `select(!c, a, b)` can leave a node nothing uses: compact.
    out.extract(&mapped)
}

/// A float or boolean constant's value as f32 (booleans as 0/1).
fn constant(g: &Graph, id: NodeId) -> Option<f32> {
    match g.get(id) {
        Node::Const(bits) => Some(f32::from_bits(bits)),
        Node::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

fn is_const(g: &Graph, id: NodeId, v: f32) -> bool {
    matches!(g.get(id), Node::Const(bits) if bits == v.to_bits())
}

fn is_bool(g: &Graph, id: NodeId, v: bool) -> bool {
    g.get(id) == Node::Bool(v)
}

/// Finite and either zero or normal: a value the GPU reproduces bit for bit.
fn foldable(v: f32) -> bool {
    v.is_finite() && (v == 0.0 || v.is_normal())
}

fn fold(g: &mut Graph, op: Op, a: &[NodeId]) -> Option<NodeId> {
    if !op.is_exactly_rounded() {
        return None;
    }
    let vals: Vec<f32> = a.iter().map(|&x| constant(g, x)).collect::<Option<_>>()?;
    if !vals.iter().all(|&v| foldable(v)) {
        return None;
    }
    if matches!(op, Op::Min | Op::Max)
        && vals[0] == vals[1]
        && vals[0].to_bits() != vals[1].to_bits()
    {
        return None;
    }
    let r: f32 = op.eval(&vals);
    if op.result_type() == Ty::Bool {
        return Some(g.boolean(r != 0.0));
    }
    // Fold only results that f32 represents exactly (`1 / 4` yes, `1 / 3` no): then the
    // constant is the op's value in every precision, and the f64 reference evaluation of
    // the simplified graph equals that of the original bit for bit.
    let wide: Vec<f64> = vals.iter().map(|&v| v as f64).collect();
    let exact = op.eval::<f64>(&wide) == r as f64;
    (foldable(r) && exact).then(|| g.constant(r))
}

fn rewrite(g: &mut Graph, op: Op, a: &[NodeId]) -> NodeId {
    if let Some(id) = fold(g, op, a) {
        return id;
    }
    if let Some(id) = identity(g, op, a) {
        return id;
    }
    g.app(op, a)
}

fn identity(g: &mut Graph, op: Op, a: &[NodeId]) -> Option<NodeId> {
    let arg = |k: usize| a[k];
    let node = |g: &Graph, k: usize| g.get(a[k]);
    Some(match op {
        // x + (-0) = x for every x; x + (+0) is not an identity: -0 + +0 = +0
        Op::Add if is_const(g, arg(1), -0.0) => arg(0),
        Op::Add if is_const(g, arg(0), -0.0) => arg(1),
        // x - (+0) = x + (-0) = x; x - (-0) is x + (+0), not an identity
        Op::Sub if is_const(g, arg(1), 0.0) => arg(0),
        Op::Mul if is_const(g, arg(1), 1.0) => arg(0),
        Op::Mul if is_const(g, arg(0), 1.0) => arg(1),
        Op::Mul if is_const(g, arg(1), -1.0) => g.app(Op::Neg, &[arg(0)]),
        Op::Mul if is_const(g, arg(0), -1.0) => g.app(Op::Neg, &[arg(1)]),
        Op::Div if is_const(g, arg(1), 1.0) => arg(0),
        Op::Neg => match node(g, 0) {
            Node::Apply(Op::Neg, inner) => inner[0],
            _ => return None,
        },
        Op::Not => match node(g, 0) {
            Node::Apply(Op::Not, inner) => inner[0],
            _ => return None,
        },
        Op::And if is_bool(g, arg(0), true) => arg(1),
        Op::And if is_bool(g, arg(1), true) => arg(0),
        Op::And if is_bool(g, arg(0), false) || is_bool(g, arg(1), false) => g.boolean(false),
        Op::Or if is_bool(g, arg(0), false) => arg(1),
        Op::Or if is_bool(g, arg(1), false) => arg(0),
        Op::Or if is_bool(g, arg(0), true) || is_bool(g, arg(1), true) => g.boolean(true),
        Op::Select if is_bool(g, arg(0), true) => arg(1),
        Op::Select if is_bool(g, arg(0), false) => arg(2),
        Op::Select if arg(1) == arg(2) => arg(1),
        Op::Select => match node(g, 0) {
            Node::Apply(Op::Not, inner) => g.app(Op::Select, &[inner[0], arg(2), arg(1)]),
            _ => return None,
        },
        Op::StopGradient => match node(g, 0) {
            Node::Const(_) | Node::Apply(Op::StopGradient, _) => arg(0),
            _ => return None,
        },
        Op::PowI(0) => g.constant(1.0),
        Op::PowI(1) => arg(0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{eval_f32, eval_f64};

    #[test]
    fn folds_exact_ops_only_and_never_to_non_finite() {
        let mut g = Graph::new();
        let two = g.constant(2.0);
        let three = g.constant(3.0);
        let zero = g.constant(0.0);
        let s = g.apply(Op::Add, &[two, three]).unwrap();
        let q = g.apply(Op::Sqrt, &[s]).unwrap();
        let e = g.apply(Op::Exp, &[two]).unwrap();
        let inf = g.apply(Op::Div, &[two, zero]).unwrap();
        let big = g.constant(3e38);
        let over = g.apply(Op::Mul, &[big, big]).unwrap();
        let lt = g.apply(Op::Lt, &[two, three]).unwrap();
        let quarter = g.constant(0.25);
        let four = g.apply(Op::Mul, &[two, two]).unwrap();
        let sixteen = g.apply(Op::Div, &[four, quarter]).unwrap();
        let root = g.apply(Op::Sqrt, &[sixteen]).unwrap();
        let (h, r) = simplify(&g, &[q, e, inf, over, lt, root]);
        assert_eq!(h.get(r[5]).as_const(), Some(4.0));
        assert!(
            matches!(h.get(r[0]), Node::Apply(Op::Sqrt, _)),
            "sqrt(5) is inexact"
        );
        assert!(matches!(h.get(r[1]), Node::Apply(Op::Exp, _)));
        assert!(matches!(h.get(r[2]), Node::Apply(Op::Div, _)));
        assert!(matches!(h.get(r[3]), Node::Apply(Op::Mul, _)));
        assert_eq!(h.get(r[4]), Node::Bool(true));
    }

    #[test]
    fn identities() {
        let mut g = Graph::new();
        let x = g.input(0);
        let b = g.apply(Op::Lt, &[x, x]).unwrap();
        let zero = g.constant(0.0);
        let one = g.constant(1.0);
        let m1 = g.constant(-1.0);
        let minus_zero = g.constant(-0.0);
        let t = g.boolean(true);
        let cases: Vec<(NodeId, NodeId)> = vec![
            (g.apply(Op::Add, &[x, minus_zero]).unwrap(), x),
            (g.apply(Op::Sub, &[x, zero]).unwrap(), x),
            (g.apply(Op::Mul, &[one, x]).unwrap(), x),
            (g.apply(Op::Div, &[x, one]).unwrap(), x),
            (
                {
                    let n = g.apply(Op::Neg, &[x]).unwrap();
                    g.apply(Op::Neg, &[n]).unwrap()
                },
                x,
            ),
            (g.apply(Op::Select, &[t, x, one]).unwrap(), x),
            (g.apply(Op::Select, &[b, x, x]).unwrap(), x),
            (
                {
                    let n = g.apply(Op::Not, &[b]).unwrap();
                    let nn = g.apply(Op::Not, &[n]).unwrap();
                    g.apply(Op::Select, &[nn, x, one]).unwrap()
                },
                g.apply(Op::Select, &[b, x, one]).unwrap(),
            ),
            (g.apply(Op::PowI(1), &[x]).unwrap(), x),
            (g.apply(Op::PowI(0), &[x]).unwrap(), one),
            (g.apply(Op::StopGradient, &[one]).unwrap(), one),
            (
                g.apply(Op::Mul, &[x, m1]).unwrap(),
                g.apply(Op::Neg, &[x]).unwrap(),
            ),
        ];
        for (k, (got, want)) in cases.iter().enumerate() {
            let (h1, r1) = simplify(&g, &[*got]);
            let (h2, r2) = simplify(&g, &[*want]);
            assert_eq!(h1.structural_hash(&r1), h2.structural_hash(&r2), "case {k}");
        }
        // x + 0 and x - (-0) stay: at x = -0 they are +0, and so must the kernel be
        for op in [Op::Add, Op::Sub] {
            let c = if op == Op::Add { zero } else { minus_zero };
            let s = g.apply(op, &[x, c]).unwrap();
            let (h, r) = simplify(&g, &[s]);
            assert_eq!(h.len(), 3, "{op:?}");
            let v = eval_f64(&h, &r, &[-0.0], &[]).unwrap()[0];
            assert!(v == 0.0 && v.is_sign_positive(), "{op:?}: {v}");
            let v = eval_f32(&h, &r, &[-0.0], &[]).unwrap()[0];
            assert!(v == 0.0 && v.is_sign_positive(), "{op:?}: {v}");
        }
        // x * 0 stays: it is NaN for an infinite x
        let xz = g.apply(Op::Mul, &[x, zero]).unwrap();
        let (h, r) = simplify(&g, &[xz]);
        assert_eq!(h.len(), 3);
        assert!(eval_f64(&h, &r, &[f64::INFINITY], &[]).unwrap()[0].is_nan());
    }

    #[test]
    fn drops_dead_nodes_keeps_indices_and_is_deterministic() {
        let mut g = Graph::new();
        let _x = g.input(0);
        let y = g.input(2);
        let u = g.uniform(1);
        let e = g.apply(Op::Exp, &[y]).unwrap();
        let s = g.apply(Op::Mul, &[e, u]).unwrap();
        let (h1, r1) = simplify(&g, &[s]);
        let (h2, r2) = simplify(&g, &[s]);
        assert_eq!(h1.nodes(), h2.nodes());
        assert_eq!(r1, r2);
        assert_eq!(h1.len(), 4);
        assert_eq!(
            eval_f64(&h1, &r1, &[9.0, 9.0, 0.0], &[9.0, 2.0]).unwrap(),
            vec![2.0]
        );
        let (_, bad) = simplify(&g, &[s, NodeId(1000)]);
        assert_eq!(bad[1], NodeId::NONE);
        assert!(try_simplify(&g, &[NodeId(1000)]).is_err());
    }
}
