//! The longer local derivatives of the op table, built in the graph from the same op set.
//! Each function returns the node `p` of a [`Partial::Scale`](crate::Partial) or the
//! partials of an op whose adjoint is routed by a condition.

use crate::graph::{Graph, NodeId};
use crate::op::special::{GELU_C, GELU_K};
use crate::op::{Op, Partial};

/// `d|a|/da`: +1 above zero, -1 below, 0 at zero (`abs'(0) = 0`), all through select.
pub(crate) fn abs_slope(g: &mut Graph, a: NodeId) -> NodeId {
    let zero = g.constant(0.0);
    let one = g.constant(1.0);
    let minus = g.constant(-1.0);
    let pos = g.app(Op::Gt, &[a, zero]);
    let neg = g.app(Op::Lt, &[a, zero]);
    let below = g.app(Op::Select, &[neg, minus, zero]);
    g.app(Op::Select, &[pos, one, below])
}

/// `d/da gelu_tanh(a)`: with `u = K (a + C a^3)`, `t = tanh(u)`,
/// `0.5 (1 + t) + 0.5 a (1 - t^2) K (1 + 3 C a^2)`.
pub(crate) fn gelu_tanh(g: &mut Graph, a: NodeId) -> NodeId {
    let kk = g.constant(GELU_K);
    let cc = g.constant(GELU_C);
    let c3 = g.constant(3.0 * GELU_C);
    let one = g.constant(1.0);
    let half = g.constant(0.5);
    let a2 = g.app(Op::Mul, &[a, a]);
    let a3 = g.app(Op::Mul, &[a2, a]);
    let inner = g.app(Op::Mul, &[cc, a3]);
    let inner = g.app(Op::Add, &[a, inner]);
    let u = g.app(Op::Mul, &[kk, inner]);
    let t = g.app(Op::Tanh, &[u]);
    let left = g.app(Op::Add, &[one, t]);
    let left = g.app(Op::Mul, &[half, left]);
    let t2 = g.app(Op::Mul, &[t, t]);
    let sech2 = g.app(Op::Sub, &[one, t2]);
    let du = g.app(Op::Mul, &[c3, a2]);
    let du = g.app(Op::Add, &[one, du]);
    let du = g.app(Op::Mul, &[kk, du]);
    let right = g.app(Op::Mul, &[half, a]);
    let right = g.app(Op::Mul, &[right, sech2]);
    let right = g.app(Op::Mul, &[right, du]);
    g.app(Op::Add, &[left, right])
}

/// The f64 value `v` as `hi + lo`, two f32 constants: in f32 it is `hi` (the rounded
/// constant), in the f64 reference it is `v` to 1e-15, so a derivative's constant is as
/// exact as the f64 function it differentiates (finite differences of the f64 `erf`
/// would otherwise see the f32 rounding of `2/sqrt(pi)`).
pub(crate) fn split_constant(g: &mut Graph, v: f64) -> NodeId {
    let hi = v as f32;
    let lo = (v - hi as f64) as f32;
    let (hi, lo) = (g.constant(hi), g.constant(lo));
    g.app(Op::Add, &[hi, lo])
}

/// `d/da (Phi(a) + a phi(a)) = phi(a) (2 - a^2)`, the exact GELU's second derivative
/// (`phi(a) = exp(-a^2 / 2) / sqrt(2 pi)`).
pub(crate) fn gelu_erf_second(g: &mut Graph, a: NodeId) -> NodeId {
    let k = split_constant(g, 1.0 / (2.0 * std::f64::consts::PI).sqrt());
    let half = g.constant(0.5);
    let two = g.constant(2.0);
    let a2 = g.app(Op::Mul, &[a, a]);
    let h = g.app(Op::Mul, &[half, a2]);
    let e = g.app(Op::Neg, &[h]);
    let e = g.app(Op::Exp, &[e]);
    let pdf = g.app(Op::Mul, &[k, e]);
    let rest = g.app(Op::Sub, &[two, a2]);
    g.app(Op::Mul, &[pdf, rest])
}

/// `±2/sqrt(pi) exp(-a^2)`, the derivative of `erf` (`sign = 1`) or `erfc` (`-1`).
pub(crate) fn erf(g: &mut Graph, a: NodeId, sign: f64) -> NodeId {
    let k = split_constant(g, sign * 2.0 / std::f64::consts::PI.sqrt());
    let a2 = g.app(Op::Mul, &[a, a]);
    let na2 = g.app(Op::Neg, &[a2]);
    let e = g.app(Op::Exp, &[na2]);
    g.app(Op::Mul, &[k, e])
}

/// `q / out` where `out > 0`, else 0: the partials of `hypot` (undefined at the origin,
/// where tang gives 0 as for `abs`).
pub(crate) fn over_positive(g: &mut Graph, q: NodeId, out: NodeId) -> NodeId {
    let zero = g.constant(0.0);
    let pos = g.app(Op::Gt, &[out, zero]);
    let d = g.app(Op::Div, &[q, out]);
    g.app(Op::Select, &[pos, d, zero])
}

/// `a^2 + b^2`.
pub(crate) fn sum_of_squares(g: &mut Graph, a: NodeId, b: NodeId) -> NodeId {
    let a2 = g.app(Op::Mul, &[a, a]);
    let b2 = g.app(Op::Mul, &[b, b]);
    g.app(Op::Add, &[a2, b2])
}

/// `1 + s a^2` for `s = ±1`.
pub(crate) fn one_plus_square(g: &mut Graph, a: NodeId, s: f32) -> NodeId {
    let a2 = g.app(Op::Mul, &[a, a]);
    let one = g.constant(1.0);
    if s > 0.0 {
        g.app(Op::Add, &[one, a2])
    } else {
        g.app(Op::Sub, &[one, a2])
    }
}

/// The partials of `min` (`op = Lt`) or `max` (`op = Gt`): the argument that wins takes
/// the adjoint; at a tie the second one does, so `x.min(0.0)` has derivative 0 at 0 and
/// `x.min(x)` derivative 1 (giving it to neither would make the derivative of
/// `x.min(x) = x` zero).
pub(crate) fn min_max(g: &mut Graph, op: Op, a: NodeId, b: NodeId) -> [Partial; 2] {
    let first = g.app(op, &[a, b]);
    [
        Partial::Route {
            cond: first,
            on_true: true,
        },
        Partial::Route {
            cond: first,
            on_true: false,
        },
    ]
}

/// Rust's clamp: `lo` if `a < lo`, `hi` if `a > hi`, else `a`; the adjoint goes to the
/// argument returned.
pub(crate) fn clamp(g: &mut Graph, a: NodeId, lo: NodeId, hi: NodeId) -> [Partial; 3] {
    let below = g.app(Op::Lt, &[a, lo]);
    let above = g.app(Op::Gt, &[a, hi]);
    let outside = g.app(Op::Or, &[below, above]);
    let nb = g.app(Op::Not, &[below]);
    let above_only = g.app(Op::And, &[nb, above]);
    [
        Partial::Route {
            cond: outside,
            on_true: false,
        },
        Partial::Route {
            cond: below,
            on_true: true,
        },
        Partial::Route {
            cond: above_only,
            on_true: true,
        },
    ]
}
