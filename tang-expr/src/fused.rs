//! Fused value-and-gradient kernels: what `#[fused_grad]` emits and what the runtime
//! launches for a function's forward and backward pass.
//!
//! From a graph of element inputs, uniforms and float outputs, [`fused_grad_kernels`]
//! simplifies the outputs, differentiates them in reverse mode with respect to the `wrt`
//! inputs, simplifies again, and emits three elementwise kernels (binding layout in
//! [`crate::kernel`]). Their interfaces are fixed; the macro and the runtime rely on them:
//!
//! | kernel | name | inputs | uniforms | outputs |
//! |---|---|---|---|---|
//! | value | `<name>` | the inputs | the uniforms | the outputs |
//! | GRAD | `<name>_grad` | the inputs | the uniforms | every output (same names), then for each output `o` in order and each `wrt` input `x` in order, `d_<o>_<x>` = ∂o/∂x |
//! | VJP | `<name>_vjp` | the inputs, then one upstream gradient `g_<o>` per output | the uniforms | one `grad_<x>` = Σ_o g_o ∂o/∂x per `wrt` input |
//!
//! Each is one dispatch. In the graph of [`FusedKernels`], `Node::Input(i)` is input `i`
//! for `i < inputs.len()`, and `Node::Input(inputs.len() + k)` is the upstream gradient of
//! output `k` (used by the VJP roots only), so the CPU twins evaluate the same graph the
//! GPU runs: inputs then upstream gradients, as the VJP kernel binds them.

use crate::codegen::{ElementwiseSpec, emit_elementwise};
use crate::diff::{grad, vjp};
use crate::error::ExprError;
use crate::eval::Evaluator;
use crate::graph::{Graph, Node, NodeId};
use crate::kernel::Kernel;
use crate::op::float::Float;
use crate::simplify::{simplify, try_simplify};
use crate::ty::Ty;

/// What to build fused kernels from.
#[derive(Clone, Debug)]
pub struct FusedSpec<'g> {
    /// The base name: the value kernel's name, and the prefix of the derived kernels.
    pub name: String,
    /// The graph holding the outputs.
    pub graph: &'g Graph,
    /// Names of the element inputs (`Node::Input(i)` is `inputs[i]`).
    pub inputs: Vec<String>,
    /// Names of the uniforms (`Node::Uniform(j)` is `uniforms[j]`).
    pub uniforms: Vec<String>,
    /// Names of the float outputs and their nodes.
    pub outputs: Vec<(String, NodeId)>,
    /// The element inputs (indices into `inputs`) to differentiate with respect to, in
    /// the order of the partials; all of them when the function names none.
    pub wrt: Vec<u32>,
}

/// The three kernels of a fused function and the simplified graph they were emitted from.
#[derive(Clone, Debug)]
pub struct FusedKernels {
    /// The outputs' values.
    pub value: Kernel,
    /// The values and every partial derivative, in one dispatch (layout in the module doc).
    pub grad: Kernel,
    /// Upstream gradients in, input gradients out: the function's backward pass.
    pub vjp: Kernel,
    /// The simplified graph holding all three kernels' roots.
    pub graph: Graph,
    /// The roots of the value kernel's outputs, in order.
    pub value_roots: Vec<NodeId>,
    /// The roots of the GRAD kernel's outputs, in order (values, then partials).
    pub grad_roots: Vec<NodeId>,
    /// The roots of the VJP kernel's outputs, in order.
    pub vjp_roots: Vec<NodeId>,
}

impl FusedKernels {
    /// CPU twin of the value kernel at one point.
    ///
    /// # Errors
    /// [`ExprError::Index`] when fewer inputs or uniforms are given than the graph reads.
    pub fn value_at<F: Float>(&self, inputs: &[F], uniforms: &[F]) -> Result<Vec<F>, ExprError> {
        Evaluator::new(&self.graph, &self.value_roots)?.run(inputs, uniforms)
    }

    /// CPU twin of the GRAD kernel at one point: the outputs, then the partials.
    ///
    /// # Errors
    /// As [`FusedKernels::value_at`].
    pub fn grad_at<F: Float>(&self, inputs: &[F], uniforms: &[F]) -> Result<Vec<F>, ExprError> {
        Evaluator::new(&self.graph, &self.grad_roots)?.run(inputs, uniforms)
    }

    /// CPU twin of the VJP kernel at one point; `inputs` holds the function's inputs
    /// followed by one upstream gradient per output.
    ///
    /// # Errors
    /// As [`FusedKernels::value_at`].
    pub fn vjp_at<F: Float>(&self, inputs: &[F], uniforms: &[F]) -> Result<Vec<F>, ExprError> {
        Evaluator::new(&self.graph, &self.vjp_roots)?.run(inputs, uniforms)
    }

    /// Per VJP output: whether it is the upstream gradient itself (`grad_x = g`, as both
    /// gradients of `x + y`), so a backward may hand `g` on instead of launching the VJP.
    /// Only a function of one output has such gradients (with several, `g` is a sum).
    pub fn vjp_passthrough(&self) -> Vec<bool> {
        let seed = Node::Input(self.value.inputs.len() as u32);
        self.vjp_roots
            .iter()
            .map(|&r| self.value_roots.len() == 1 && self.graph.node(r).ok() == Some(seed))
            .collect()
    }
}

/// Checks that the outputs are floats that read only declared inputs and uniforms.
fn check_spec(spec: &FusedSpec<'_>) -> Result<(), ExprError> {
    if spec.outputs.is_empty() {
        return Err(ExprError::NoOutputs);
    }
    let g = spec.graph;
    for (_, id) in &spec.outputs {
        let got = g.ty(*id)?;
        if got != Ty::F32 {
            return Err(ExprError::Type {
                op: "store",
                position: 0,
                expected: Ty::F32,
                got,
            });
        }
    }
    let roots: Vec<NodeId> = spec.outputs.iter().map(|(_, id)| *id).collect();
    let n_in = spec.inputs.len() as u32;
    let n_u = spec.uniforms.len() as u32;
    for (node, live) in g.nodes().iter().zip(g.reachable(&roots)) {
        match *node {
            Node::Input(i) if live && i >= n_in => {
                return Err(ExprError::Index {
                    what: "input",
                    index: i,
                    count: n_in,
                });
            }
            Node::Uniform(j) if live && j >= n_u => {
                return Err(ExprError::Index {
                    what: "uniform",
                    index: j,
                    count: n_u,
                });
            }
            _ => {}
        }
    }
    for &w in &spec.wrt {
        if w >= n_in {
            return Err(ExprError::Index {
                what: "input",
                index: w,
                count: n_in,
            });
        }
    }
    Ok(())
}

/// Builds, validates and returns the value, GRAD and VJP kernels of `spec` (layouts in
/// the module doc).
///
/// # Errors
/// No outputs, a boolean output, an output reading an undeclared input or uniform, a
/// `wrt` index out of range, or a bad or repeated name (including derived names such as
/// `d_<o>_<x>` colliding with a declared one).
pub fn fused_grad_kernels(spec: &FusedSpec<'_>) -> Result<FusedKernels, ExprError> {
    check_spec(spec)?;
    let roots: Vec<NodeId> = spec.outputs.iter().map(|(_, id)| *id).collect();
    let (mut g, outs) = try_simplify(spec.graph, &roots)?;
    let xs: Vec<NodeId> = spec.wrt.iter().map(|&i| g.input(i)).collect();
    let mut partials = Vec::with_capacity(outs.len() * xs.len());
    for &o in &outs {
        partials.extend(grad(&mut g, o, &xs)?);
    }
    let n_in = spec.inputs.len() as u32;
    let seeds: Vec<NodeId> = (0..outs.len() as u32).map(|k| g.input(n_in + k)).collect();
    let input_grads = vjp(&mut g, &outs, &seeds, &xs)?;

    let all: Vec<NodeId> = outs
        .iter()
        .chain(&partials)
        .chain(&input_grads)
        .copied()
        .collect();
    let (graph, r) = simplify(&g, &all);
    let value_roots = r[..outs.len()].to_vec();
    let grad_roots = r[..outs.len() + partials.len()].to_vec();
    let vjp_roots = r[outs.len() + partials.len()..].to_vec();

    let out_names: Vec<&String> = spec.outputs.iter().map(|(n, _)| n).collect();
    let wrt_names: Vec<&String> = spec.wrt.iter().map(|&i| &spec.inputs[i as usize]).collect();
    let named = |names: Vec<String>, roots: &[NodeId]| -> Vec<(String, NodeId)> {
        names.into_iter().zip(roots.iter().copied()).collect()
    };

    let value = emit_elementwise(&ElementwiseSpec {
        name: spec.name.clone(),
        graph: &graph,
        inputs: spec.inputs.clone(),
        uniforms: spec.uniforms.clone(),
        inouts: vec![],
        outputs: named(
            out_names.iter().map(|n| n.to_string()).collect(),
            &value_roots,
        ),
    })?;
    let mut grad_names: Vec<String> = out_names.iter().map(|n| n.to_string()).collect();
    for o in &out_names {
        for x in &wrt_names {
            grad_names.push(format!("d_{o}_{x}"));
        }
    }
    let grad_kernel = emit_elementwise(&ElementwiseSpec {
        name: format!("{}_grad", spec.name),
        graph: &graph,
        inputs: spec.inputs.clone(),
        uniforms: spec.uniforms.clone(),
        inouts: vec![],
        outputs: named(grad_names, &grad_roots),
    })?;
    let mut vjp_inputs = spec.inputs.clone();
    vjp_inputs.extend(out_names.iter().map(|o| format!("g_{o}")));
    let vjp_kernel = emit_elementwise(&ElementwiseSpec {
        name: format!("{}_vjp", spec.name),
        graph: &graph,
        inputs: vjp_inputs,
        uniforms: spec.uniforms.clone(),
        inouts: vec![],
        outputs: named(
            wrt_names.iter().map(|x| format!("grad_{x}")).collect(),
            &vjp_roots,
        ),
    })?;
    Ok(FusedKernels {
        value,
        grad: grad_kernel,
        vjp: vjp_kernel,
        graph,
        value_roots,
        grad_roots,
        vjp_roots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;

    /// y = x * w + b (uniform b), z = tanh(x)
    fn spec_graph() -> (Graph, NodeId, NodeId) {
        let mut g = Graph::new();
        let x = g.input(0);
        let w = g.input(1);
        let b = g.uniform(0);
        let xw = g.apply(Op::Mul, &[x, w]).unwrap();
        let y = g.apply(Op::Add, &[xw, b]).unwrap();
        let z = g.apply(Op::Tanh, &[x]).unwrap();
        (g, y, z)
    }

    #[test]
    fn layouts_and_cpu_twins() {
        let (g, y, z) = spec_graph();
        let k = fused_grad_kernels(&FusedSpec {
            name: "lin".into(),
            graph: &g,
            inputs: vec!["x".into(), "w".into()],
            uniforms: vec!["b".into()],
            outputs: vec![("y".into(), y), ("z".into(), z)],
            wrt: vec![0, 1],
        })
        .unwrap();
        assert_eq!(k.value.name, "lin");
        assert_eq!(k.grad.name, "lin_grad");
        assert_eq!(k.vjp.name, "lin_vjp");
        assert_eq!(
            k.grad.outputs,
            ["y", "z", "d_y_x", "d_y_w", "d_z_x", "d_z_w"]
        );
        assert_eq!(k.vjp.inputs, ["x", "w", "g_y", "g_z"]);
        assert_eq!(k.vjp.outputs, ["grad_x", "grad_w"]);
        let (x, w, b) = (0.5f64, 3.0, 1.0);
        let t = x.tanh();
        assert_eq!(k.value_at(&[x, w], &[b]).unwrap(), vec![x * w + b, t]);
        let d = k.grad_at(&[x, w], &[b]).unwrap();
        assert_eq!(d[2..], [w, x, 1.0 - t * t, 0.0]);
        let v = k.vjp_at(&[x, w, 2.0, 10.0], &[b]).unwrap();
        assert_eq!(v, vec![2.0 * w + 10.0 * (1.0 - t * t), 2.0 * x]);
    }

    /// Only a gradient that simplifies to the upstream gradient itself passes through.
    #[test]
    fn passthrough_gradients() {
        let mut g = Graph::new();
        let (a, b) = (g.input(0), g.input(1));
        let sum = g.apply(Op::Add, &[a, b]).unwrap();
        let diff = g.apply(Op::Sub, &[a, b]).unwrap();
        let kernels = |out: NodeId, outputs: usize| {
            fused_grad_kernels(&FusedSpec {
                name: "f".into(),
                graph: &g,
                inputs: vec!["a".into(), "b".into()],
                uniforms: vec![],
                outputs: (0..outputs).map(|i| (format!("y{i}"), out)).collect(),
                wrt: vec![0, 1],
            })
            .unwrap()
        };
        assert_eq!(kernels(sum, 1).vjp_passthrough(), [true, true]);
        // grad_b = -g: a launch.
        assert_eq!(kernels(diff, 1).vjp_passthrough(), [true, false]);
        // Two outputs: grad_a = g_y0 + g_y1.
        assert_eq!(kernels(sum, 2).vjp_passthrough(), [false, false]);
        let (g2, y, _) = spec_graph();
        let lin = fused_grad_kernels(&FusedSpec {
            name: "lin".into(),
            graph: &g2,
            inputs: vec!["x".into(), "w".into()],
            uniforms: vec!["b".into()],
            outputs: vec![("y".into(), y)],
            wrt: vec![0, 1],
        })
        .unwrap();
        assert_eq!(lin.vjp_passthrough(), [false, false]);
    }

    #[test]
    fn wrt_subset_and_errors() {
        let (g, y, _) = spec_graph();
        let spec = |wrt: Vec<u32>, inputs: Vec<&str>| FusedSpec {
            name: "lin".into(),
            graph: &g,
            inputs: inputs.into_iter().map(String::from).collect(),
            uniforms: vec!["b".into()],
            outputs: vec![("y".into(), y)],
            wrt,
        };
        let k = fused_grad_kernels(&spec(vec![1], vec!["x", "w"])).unwrap();
        assert_eq!(k.grad.outputs, ["y", "d_y_w"]);
        assert_eq!(k.vjp.outputs, ["grad_w"]);
        assert!(matches!(
            fused_grad_kernels(&spec(vec![2], vec!["x", "w"])),
            Err(ExprError::Index { index: 2, .. })
        ));
        assert!(matches!(
            fused_grad_kernels(&spec(vec![0], vec!["x"])),
            Err(ExprError::Index { what: "input", .. })
        ));
        assert!(matches!(
            fused_grad_kernels(&spec(vec![0, 0], vec!["x", "w"])),
            Err(ExprError::BadName(_))
        ));
        assert!(matches!(
            fused_grad_kernels(&spec(vec![0], vec!["x", "g_y"])),
            Err(ExprError::BadName(_))
        ));
    }
}
