//! Differentiation on the shared DAG: reverse mode ([`vjp`], [`grad`]) and forward mode
//! ([`jvp`]).
//!
//! Derivative rules live in one place, [`Op::partials`]; this module only routes adjoints
//! (or tangents) along the graph. The derivative nodes are added to the same graph, built
//! from the same op set, so a derivative can be evaluated, simplified, emitted as WGSL or
//! differentiated again (higher order) like any other expression.
//!
//! - Only *active* nodes get adjoints: those that depend on a `wrt` node through an op
//!   with a nonzero derivative, and that the outputs depend on. Everything else is
//!   untouched, so the derivative graph is a few times the size of the expression (no
//!   expression swell).
//! - A branch ([`Partial::Route`]) passes its adjoint through `select(cond, adj, 0)`,
//!   never `indicator * adj`: a NaN or infinity on the branch not taken stays there.
//!   Below a branch the adjoint keeps its guard, and every further multiplication by a
//!   local derivative is wrapped as `select(guard, adj * p, 0)`, so `p = NaN` on the side
//!   not taken (`sqrt'(x)` for `x < 0`) gives 0, not `0 * NaN`. Forward mode needs no
//!   guard: there the branch's `select` comes last and drops the untaken tangent.
//! - Contributions are summed without `0 + x` nodes: the first one is the adjoint itself.
//! - A `wrt` node may be any float node, not only an input. Its result is the adjoint of
//!   that node with every other path held as the graph defines it: if `wrt = [x, y]` and
//!   `y` depends on `x`, the result for `x` includes the path through `y`.

use crate::error::ExprError;
use crate::graph::{Graph, Node, NodeId};
use crate::op::{Op, Partial};
use crate::ty::Ty;

/// Whether the op's derivative is zero with respect to every argument (so nothing above
/// it is active through it).
fn blocks_derivative(op: Op) -> bool {
    op.is_piecewise_constant() || op == Op::PowI(0) || op.result_type() == Ty::Bool
}

fn expect_float(g: &Graph, id: NodeId, what: &'static str) -> Result<(), ExprError> {
    let got = g.ty(id)?;
    if got != Ty::F32 {
        return Err(ExprError::Type {
            op: what,
            position: 0,
            expected: Ty::F32,
            got,
        });
    }
    Ok(())
}

/// Which nodes (of the first `len`) depend on a `wrt` node through differentiable ops.
fn active_set(g: &Graph, wrt: &[NodeId], len: usize) -> Vec<bool> {
    let mut active = vec![false; len];
    for w in wrt {
        active[w.index()] = true;
    }
    for (i, node) in g.nodes()[..len].iter().enumerate() {
        if let Node::Apply(op, _) = *node
            && !blocks_derivative(op)
            && node.args().iter().any(|a| active[a.index()])
        {
            active[i] = true;
        }
    }
    active
}

/// `adj` pushed through one partial derivative; `None` when it contributes nothing.
fn contribution(g: &mut Graph, partial: Partial, adj: NodeId) -> Option<NodeId> {
    match partial {
        Partial::Zero => None,
        Partial::One => Some(adj),
        Partial::MinusOne => Some(g.app(Op::Neg, &[adj])),
        Partial::Scale(p) => Some(g.app(Op::Mul, &[adj, p])),
        Partial::Route { cond, on_true } => {
            let zero = g.constant(0.0);
            let (t, f) = if on_true { (adj, zero) } else { (zero, adj) };
            Some(g.app(Op::Select, &[cond, t, f]))
        }
    }
}

/// Adds `c` to an accumulated sum without ever building `0 + c`.
fn accumulate(g: &mut Graph, slot: &mut Option<NodeId>, c: NodeId) {
    *slot = Some(match *slot {
        None => c,
        Some(prev) => g.app(Op::Add, &[prev, c]),
    });
}

/// An adjoint with its guard: a boolean node such that the adjoint is exactly zero
/// whenever the guard is false (`None`: no such knowledge).
type Guarded = (NodeId, Option<NodeId>);

/// Reverse-mode version of [`contribution`] that keeps adjoints that came through a branch
/// exactly zero on the side not taken. Below `select(x > 0, sqrt(x), 0)` the adjoint of
/// `sqrt(x)` is `select(x > 0, adj, 0)`; multiplying it by `sqrt'(x)`, which is NaN for
/// `x < 0`, would give `0 * NaN = NaN`. So a scaled guarded adjoint is wrapped again:
/// `select(guard, adj * p, 0)`. This costs one node per scaled edge below a branch.
fn guarded_contribution(g: &mut Graph, partial: Partial, (adj, guard): Guarded) -> Option<Guarded> {
    match partial {
        Partial::Zero => None,
        Partial::One => Some((adj, guard)),
        Partial::MinusOne => Some((g.app(Op::Neg, &[adj]), guard)),
        Partial::Scale(p) => {
            let m = g.app(Op::Mul, &[adj, p]);
            let safe = g.get(p).as_const().is_some_and(f32::is_finite);
            match guard {
                Some(c) if !safe => {
                    let zero = g.constant(0.0);
                    Some((g.app(Op::Select, &[c, m, zero]), Some(c)))
                }
                _ => Some((m, guard)),
            }
        }
        Partial::Route { cond, on_true } => {
            let c = contribution(g, partial, adj)?;
            let guard = if on_true {
                cond
            } else {
                g.app(Op::Not, &[cond])
            };
            Some((c, Some(guard)))
        }
    }
}

/// [`accumulate`] for guarded adjoints: a sum is zero where all its terms are.
fn accumulate_guarded(g: &mut Graph, slot: &mut Option<Guarded>, (c, guard): Guarded) {
    *slot = Some(match *slot {
        None => (c, guard),
        Some((prev, pg)) => {
            let sum = g.app(Op::Add, &[prev, c]);
            let guard = match (pg, guard) {
                (Some(a), Some(b)) if a == b => Some(a),
                (Some(a), Some(b)) => Some(g.app(Op::Or, &[a, b])),
                _ => None,
            };
            (sum, guard)
        }
    });
}

/// Reverse mode: the vector-Jacobian product. Returns, for each `wrt` node, the sum over
/// outputs of `seed * d(output)/d(wrt)` as a node of `g` (the constant 0 when the outputs
/// do not depend on it).
///
/// # Errors
/// [`ExprError::Arity`] when `seeds` and `outputs` differ in length,
/// [`ExprError::UnknownNode`] for an id from another graph, [`ExprError::Type`] for a
/// boolean output, seed or `wrt` node.
pub fn vjp(
    g: &mut Graph,
    outputs: &[NodeId],
    seeds: &[NodeId],
    wrt: &[NodeId],
) -> Result<Vec<NodeId>, ExprError> {
    if outputs.len() != seeds.len() {
        return Err(ExprError::Arity {
            op: "vjp",
            expected: outputs.len(),
            got: seeds.len(),
        });
    }
    for &id in outputs {
        expect_float(g, id, "vjp output")?;
    }
    for &id in seeds {
        expect_float(g, id, "vjp seed")?;
    }
    for &id in wrt {
        expect_float(g, id, "vjp wrt")?;
    }
    let len = g.len();
    let mut active = active_set(g, wrt, len);
    let needed = g.reachable(outputs);
    for (a, n) in active.iter_mut().zip(&needed) {
        *a &= *n;
    }
    let mut adj: Vec<Option<Guarded>> = vec![None; len];
    for (&o, &s) in outputs.iter().zip(seeds) {
        if active[o.index()] && g.get(s).as_const() != Some(0.0) {
            accumulate_guarded(g, &mut adj[o.index()], (s, None));
        }
    }
    for i in (0..len).rev() {
        let Some(a) = adj[i] else { continue };
        let Node::Apply(op, args) = g.get(NodeId(i as u32)) else {
            continue;
        };
        let args = &args[..op.arity()];
        if !args.iter().any(|x| active[x.index()]) {
            continue;
        }
        let partials = op.partials(g, args, NodeId(i as u32));
        for (&arg, &p) in args.iter().zip(&partials) {
            if !active[arg.index()] {
                continue;
            }
            if let Some(c) = guarded_contribution(g, p, a) {
                accumulate_guarded(g, &mut adj[arg.index()], c);
            }
        }
    }
    let zero = g.constant(0.0);
    Ok(wrt
        .iter()
        .map(|w| adj[w.index()].map_or(zero, |(a, _)| a))
        .collect())
}

/// Reverse mode for one output: `d(output)/d(wrt[k])` for each `k` (seed 1).
///
/// # Errors
/// As [`vjp`].
pub fn grad(g: &mut Graph, output: NodeId, wrt: &[NodeId]) -> Result<Vec<NodeId>, ExprError> {
    let one = g.constant(1.0);
    vjp(g, &[output], &[one], wrt)
}

/// Forward mode: the Jacobian-vector product. Returns, for each output, the sum over `k`
/// of `d(output)/d(wrt[k]) * tangents[k]` as a node of `g` (the constant 0 when the output
/// does not depend on any `wrt` node).
///
/// # Errors
/// [`ExprError::Arity`] when `tangents` and `wrt` differ in length,
/// [`ExprError::UnknownNode`] for an id from another graph, [`ExprError::Type`] for a
/// boolean output, `wrt` node or tangent.
pub fn jvp(
    g: &mut Graph,
    outputs: &[NodeId],
    wrt: &[NodeId],
    tangents: &[NodeId],
) -> Result<Vec<NodeId>, ExprError> {
    if wrt.len() != tangents.len() {
        return Err(ExprError::Arity {
            op: "jvp",
            expected: wrt.len(),
            got: tangents.len(),
        });
    }
    for &id in outputs {
        expect_float(g, id, "jvp output")?;
    }
    for &id in wrt {
        expect_float(g, id, "jvp wrt")?;
    }
    for &id in tangents {
        expect_float(g, id, "jvp tangent")?;
    }
    let len = g.len();
    let mut active = active_set(g, wrt, len);
    let needed = g.reachable(outputs);
    for (a, n) in active.iter_mut().zip(&needed) {
        *a &= *n;
    }
    // Seeds are added where their node is reached in the sweep, after what flows into it.
    let mut seed: Vec<Option<NodeId>> = vec![None; len];
    for (&w, &t) in wrt.iter().zip(tangents) {
        if active[w.index()] {
            accumulate(g, &mut seed[w.index()], t);
        }
    }
    let mut tan: Vec<Option<NodeId>> = vec![None; len];
    for i in 0..len {
        if !active[i] {
            continue;
        }
        let id = NodeId(i as u32);
        let mut t = None;
        if let Node::Apply(op, args) = g.get(id) {
            let args = &args[..op.arity()];
            if args.iter().any(|a| tan[a.index()].is_some()) {
                let partials = op.partials(g, args, id);
                for (&arg, &p) in args.iter().zip(&partials) {
                    if let Some(ta) = tan[arg.index()]
                        && let Some(c) = contribution(g, p, ta)
                    {
                        accumulate(g, &mut t, c);
                    }
                }
            }
        }
        if let Some(s) = seed[i] {
            accumulate(g, &mut t, s);
        }
        tan[i] = t;
    }
    let zero = g.constant(0.0);
    Ok(outputs
        .iter()
        .map(|o| tan[o.index()].unwrap_or(zero))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::eval_f64;

    fn d1(build: impl Fn(&mut Graph, NodeId) -> NodeId, x: f64) -> f64 {
        let mut g = Graph::new();
        let xi = g.input(0);
        let y = build(&mut g, xi);
        let d = grad(&mut g, y, &[xi]).unwrap();
        eval_f64(&g, &d, &[x], &[]).unwrap()[0]
    }

    #[test]
    fn product_rule_reverse_and_forward() {
        let mut g = Graph::new();
        let x = g.input(0);
        let y = g.input(1);
        let s = g.apply(Op::Sin, &[x]).unwrap();
        let p = g.apply(Op::Mul, &[s, y]).unwrap();
        let d = grad(&mut g, p, &[x, y]).unwrap();
        let v = eval_f64(&g, &d, &[0.3, 2.0], &[]).unwrap();
        assert!((v[0] - 2.0 * 0.3f64.cos()).abs() < 1e-15);
        assert!((v[1] - 0.3f64.sin()).abs() < 1e-15);
        let one = g.constant(1.0);
        let zero = g.constant(0.0);
        let t = jvp(&mut g, &[p], &[x, y], &[one, zero]).unwrap();
        assert_eq!(eval_f64(&g, &t, &[0.3, 2.0], &[]).unwrap()[0], v[0]);
    }

    #[test]
    fn branches_never_leak_nan() {
        // select(x > 0, sqrt(x), 0) at x = -1: sqrt'(-1) is NaN but the branch is not taken
        let f = |g: &mut Graph, x: NodeId| {
            let zero = g.constant(0.0);
            let c = g.apply(Op::Gt, &[x, zero]).unwrap();
            let s = g.apply(Op::Sqrt, &[x]).unwrap();
            g.apply(Op::Select, &[c, s, zero]).unwrap()
        };
        assert_eq!(d1(f, -1.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(d1(f, 4.0), 0.25);
    }

    #[test]
    fn relu_and_abs_have_zero_derivative_at_zero() {
        let relu_max = |g: &mut Graph, x: NodeId| {
            let zero = g.constant(0.0);
            g.apply(Op::Max, &[x, zero]).unwrap()
        };
        let relu_select = |g: &mut Graph, x: NodeId| {
            let zero = g.constant(0.0);
            let c = g.apply(Op::Gt, &[x, zero]).unwrap();
            g.apply(Op::Select, &[c, x, zero]).unwrap()
        };
        let abs = |g: &mut Graph, x: NodeId| g.apply(Op::Abs, &[x]).unwrap();
        for f in [
            &relu_max as &dyn Fn(&mut Graph, NodeId) -> NodeId,
            &relu_select,
        ] {
            assert_eq!(d1(f, 0.0), 0.0);
            assert_eq!(d1(f, 2.0), 1.0);
            assert_eq!(d1(f, -2.0), 0.0);
        }
        assert_eq!(d1(abs, 0.0), 0.0);
        assert_eq!(d1(abs, -3.0), -1.0);
    }

    #[test]
    fn independent_and_blocked_inputs_get_constant_zero() {
        let mut g = Graph::new();
        let x = g.input(0);
        let y = g.input(1);
        let f = g.apply(Op::Floor, &[x]).unwrap();
        let sg = g.apply(Op::StopGradient, &[x]).unwrap();
        let e = g.apply(Op::Mul, &[f, sg]).unwrap();
        let before = g.len();
        let d = grad(&mut g, e, &[x, y]).unwrap();
        assert_eq!(g.get(d[0]).as_const(), Some(0.0));
        assert_eq!(g.get(d[1]).as_const(), Some(0.0));
        // only the constant 1 seed and the constant 0 were added
        assert!(g.len() <= before + 2);
    }

    #[test]
    fn no_zero_plus_nodes_and_second_order() {
        let mut g = Graph::new();
        let x = g.input(0);
        let x3 = g.apply(Op::PowI(3), &[x]).unwrap();
        let d = grad(&mut g, x3, &[x]).unwrap()[0];
        let dd = grad(&mut g, d, &[x]).unwrap()[0];
        let v = eval_f64(&g, &[d, dd], &[2.0], &[]).unwrap();
        assert_eq!(v, vec![12.0, 12.0]);
        for node in g.nodes() {
            if let Node::Apply(Op::Add, a) = node {
                assert!(g.get(a[0]).as_const() != Some(0.0));
                assert!(g.get(a[1]).as_const() != Some(0.0));
            }
        }
    }

    #[test]
    fn misuse_is_an_error() {
        let mut g = Graph::new();
        let x = g.input(0);
        let c = g.apply(Op::Lt, &[x, x]).unwrap();
        assert!(matches!(grad(&mut g, c, &[x]), Err(ExprError::Type { .. })));
        assert!(matches!(
            vjp(&mut g, &[x], &[], &[x]),
            Err(ExprError::Arity { .. })
        ));
        assert!(matches!(
            jvp(&mut g, &[x], &[x], &[NodeId(77)]),
            Err(ExprError::UnknownNode(77))
        ));
    }
}
