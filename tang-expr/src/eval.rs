//! CPU evaluation of a graph, in f64 (the reference for gradient checks) or in f32 (the
//! same rounding as the Rust function a graph was lowered from).
//!
//! Only the nodes the roots depend on are evaluated. Booleans evaluate to 0 or 1, so a
//! boolean root can be read back like any other value.

use crate::error::ExprError;
use crate::graph::{Graph, Node, NodeId};
use crate::op::float::Float;

/// Evaluates `roots` at one point in f64.
///
/// `inputs[i]` is the value of `Node::Input(i)` and `uniforms[j]` of `Node::Uniform(j)`.
///
/// # Errors
/// [`ExprError::UnknownNode`] for a root that is not in `g`, [`ExprError::Index`] when a
/// live node reads an input or uniform beyond the slices given.
pub fn eval_f64(
    g: &Graph,
    roots: &[NodeId],
    inputs: &[f64],
    uniforms: &[f64],
) -> Result<Vec<f64>, ExprError> {
    Evaluator::new(g, roots)?.run(inputs, uniforms)
}

/// Evaluates `roots` at one point in f32: every operation rounds to f32 exactly as Rust's
/// `f32` arithmetic and methods do.
///
/// # Errors
/// As [`eval_f64`].
pub fn eval_f32(
    g: &Graph,
    roots: &[NodeId],
    inputs: &[f32],
    uniforms: &[f32],
) -> Result<Vec<f32>, ExprError> {
    Evaluator::new(g, roots)?.run(inputs, uniforms)
}

/// Evaluates `roots` at many points: `inputs[i]` holds input `i` for every point (all the
/// same length), the uniforms are shared. Returns one vector per root, one value per point.
///
/// # Errors
/// As [`eval_f64`], plus [`ExprError::Index`] (`what: "point"`) when the input columns
/// differ in length.
pub fn eval_batch<F: Float>(
    g: &Graph,
    roots: &[NodeId],
    inputs: &[&[F]],
    uniforms: &[F],
) -> Result<Vec<Vec<F>>, ExprError> {
    let ev = Evaluator::new(g, roots)?;
    let n = inputs.first().map_or(0, |c| c.len());
    if let Some(bad) = inputs.iter().find(|c| c.len() != n) {
        return Err(ExprError::Index {
            what: "point",
            index: bad.len() as u32,
            count: n as u32,
        });
    }
    let mut out = vec![Vec::with_capacity(n); roots.len()];
    let mut point = vec![F::from_f64(0.0); inputs.len()];
    for p in 0..n {
        for (slot, col) in point.iter_mut().zip(inputs) {
            *slot = col[p];
        }
        for (o, v) in out.iter_mut().zip(ev.run(&point, uniforms)?) {
            o.push(v);
        }
    }
    Ok(out)
}

/// A graph and roots prepared for repeated evaluation (the live set is computed once).
#[derive(Clone, Debug)]
pub struct Evaluator<'g> {
    graph: &'g Graph,
    roots: Vec<NodeId>,
    live: Vec<usize>,
}

impl<'g> Evaluator<'g> {
    /// Prepares the evaluation of `roots` in `g`.
    ///
    /// # Errors
    /// [`ExprError::UnknownNode`] for a root that is not in `g`.
    pub fn new(g: &'g Graph, roots: &[NodeId]) -> Result<Self, ExprError> {
        for &r in roots {
            g.node(r)?;
        }
        let live = g
            .reachable(roots)
            .iter()
            .enumerate()
            .filter_map(|(i, &l)| l.then_some(i))
            .collect();
        Ok(Evaluator {
            graph: g,
            roots: roots.to_vec(),
            live,
        })
    }

    /// The value of every node of the graph (NaN for nodes the roots do not depend on).
    /// Tests use it to look inside an evaluation, e.g. at which side of a branch a point is.
    ///
    /// # Errors
    /// [`ExprError::Index`] when a live node reads an input or uniform that is not given.
    pub fn values<F: Float>(&self, inputs: &[F], uniforms: &[F]) -> Result<Vec<F>, ExprError> {
        let g = self.graph;
        let mut vals = vec![F::from_f64(f64::NAN); g.len()];
        let mut args = [F::from_f64(0.0); 3];
        for &i in &self.live {
            vals[i] = match g.nodes()[i] {
                Node::Input(k) => *inputs.get(k as usize).ok_or(ExprError::Index {
                    what: "input",
                    index: k,
                    count: inputs.len() as u32,
                })?,
                Node::Uniform(k) => *uniforms.get(k as usize).ok_or(ExprError::Index {
                    what: "uniform",
                    index: k,
                    count: uniforms.len() as u32,
                })?,
                Node::Const(bits) => F::from_f64(f32::from_bits(bits) as f64),
                Node::Bool(b) => F::from_f64(if b { 1.0 } else { 0.0 }),
                Node::Apply(op, a) => {
                    let n = op.arity();
                    for (slot, id) in args.iter_mut().zip(&a[..n]) {
                        *slot = vals[id.index()];
                    }
                    op.eval(&args[..n])
                }
            };
        }
        Ok(vals)
    }

    /// The roots' values at one point.
    ///
    /// # Errors
    /// [`ExprError::Index`] when a live node reads an input or uniform that is not given.
    pub fn run<F: Float>(&self, inputs: &[F], uniforms: &[F]) -> Result<Vec<F>, ExprError> {
        let vals = self.values(inputs, uniforms)?;
        Ok(self.roots.iter().map(|r| vals[r.index()]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;

    #[test]
    fn evaluates_in_both_precisions_and_booleans_as_numbers() {
        let mut g = Graph::new();
        let x = g.input(0);
        let u = g.uniform(0);
        let third = g.constant(3.0);
        let d = g.apply(Op::Div, &[x, third]).unwrap();
        let s = g.apply(Op::Add, &[d, u]).unwrap();
        let c = g.apply(Op::Lt, &[x, u]).unwrap();
        let v64 = eval_f64(&g, &[s, c], &[1.0], &[0.5]).unwrap();
        assert_eq!(v64, vec![1.0 / 3.0 + 0.5, 0.0]);
        let v32 = eval_f32(&g, &[s, c], &[1.0], &[0.5]).unwrap();
        assert_eq!(v32, vec![1.0f32 / 3.0 + 0.5, 0.0]);
        assert_ne!(v32[0] as f64, v64[0]);
    }

    #[test]
    fn missing_values_are_typed_errors_and_dead_nodes_are_not_read() {
        let mut g = Graph::new();
        let x = g.input(0);
        let y = g.input(3);
        let _dead = g.apply(Op::Mul, &[x, y]).unwrap();
        let e = g.apply(Op::Exp, &[x]).unwrap();
        assert_eq!(eval_f64(&g, &[e], &[0.0], &[]).unwrap(), vec![1.0]);
        assert_eq!(
            eval_f64(&g, &[y], &[0.0], &[]),
            Err(ExprError::Index {
                what: "input",
                index: 3,
                count: 1
            })
        );
        let u = g.uniform(1);
        assert!(matches!(
            eval_f32(&g, &[u], &[], &[1.0]),
            Err(ExprError::Index {
                what: "uniform",
                ..
            })
        ));
        assert!(matches!(
            eval_f64(&Graph::new(), &[e], &[], &[]),
            Err(ExprError::UnknownNode(_))
        ));
    }

    #[test]
    fn batch_evaluates_columns() {
        let mut g = Graph::new();
        let x = g.input(0);
        let y = g.input(1);
        let m = g.apply(Op::Mul, &[x, y]).unwrap();
        let out = eval_batch::<f64>(&g, &[m], &[&[1.0, 2.0], &[3.0, 4.0]], &[]).unwrap();
        assert_eq!(out, vec![vec![3.0, 8.0]]);
        assert!(eval_batch::<f64>(&g, &[m], &[&[1.0], &[3.0, 4.0]], &[]).is_err());
    }
}
