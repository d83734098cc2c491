//! A scalar function applied to every element of a matmul's output as it is stored
//! (`gelu(x @ w + b)` in one pass over C instead of three), optionally also reading a
//! second operand at C's index (`(dY · W) ⊙ gelu'(h)` in one pass instead of two).

use tang_expr::{
    Graph, Node, NodeId, Traced, scalar_fn::emit_scalar_fn_of, stable_hash, try_simplify, vjp,
};

use crate::Error;

/// The WGSL name the matmul shader calls.
pub(crate) const EPILOGUE_FN: &str = "tang_epilogue";

/// An elementwise function `f(x)` fused into a matmul's store. Built from a one-input
/// graph (`Node::Input(0)` is the value being stored, after the bias) or from a traced
/// closure; the WGSL is generated and validated once, here. A two-input epilogue
/// ([`Epilogue::with_aux`]) is `f(x, aux)`, where `aux` is read from
/// [`MatmulOptions::aux`](super::MatmulOptions::aux) at the element's index.
#[derive(Clone, Debug)]
pub struct Epilogue {
    graph: Graph,
    root: NodeId,
    /// 1 for `f(x)`, 2 for `f(x, aux)`.
    arity: usize,
    wgsl: String,
    hash: u64,
}

impl Epilogue {
    /// The epilogue computing `root` of `graph`, a function of `Node::Input(0)` only.
    ///
    /// # Errors
    /// [`Error::Shader`] when the graph reads another input or a uniform, the root is
    /// not a float, or the root is not in `graph`.
    pub fn new(graph: &Graph, root: NodeId) -> Result<Epilogue, Error> {
        Epilogue::of_arity(graph, root, 1)
    }

    /// The epilogue `f(x, aux)` computing `root` of `graph`, where `Node::Input(0)` is the
    /// value being stored (after the bias) and `Node::Input(1)` the element of
    /// [`MatmulOptions::aux`](super::MatmulOptions::aux) at the same index; a matmul
    /// with this epilogue needs that operand.
    ///
    /// # Errors
    /// [`Error::Shader`] when the graph reads an input past 1 or a uniform, the root is
    /// not a float, or the root is not in `graph`.
    pub fn with_aux(graph: &Graph, root: NodeId) -> Result<Epilogue, Error> {
        Epilogue::of_arity(graph, root, 2)
    }

    fn of_arity(graph: &Graph, root: NodeId, arity: usize) -> Result<Epilogue, Error> {
        let (g, roots) = try_simplify(graph, &[root])?;
        let root = roots[0];
        let wgsl = emit_scalar_fn_of(EPILOGUE_FN, &g, root, arity)?;
        let hash = stable_hash(&wgsl);
        Ok(Epilogue {
            graph: g,
            root,
            arity,
            wgsl,
            hash,
        })
    }

    /// The epilogue of a traced one-output closure of one input, `f(x)`
    /// (`Epilogue::from_traced(&tang_expr::trace(1, |v| v[0].max(0.0)))`), or of two,
    /// `f(x, aux)` as [`Epilogue::with_aux`]
    /// (`Epilogue::from_traced(&tang_expr::trace(2, |v| v[0] * v[1]))`).
    ///
    /// # Errors
    /// [`Error::Arity`] for a trace with uniforms, more than two inputs, or other than
    /// one output; [`Error::Shader`] for a trace that recorded a misuse; as
    /// [`Epilogue::new`] otherwise.
    pub fn from_traced(t: &Traced) -> Result<Epilogue, Error> {
        t.check()?;
        if t.outputs.len() != 1 || t.n_uniforms != 0 || t.n_inputs > 2 {
            return Err(Error::Arity {
                op: "matmul epilogue".into(),
                what: "inputs/outputs (an epilogue is f(x) or f(x, aux) -> y: one or two inputs, one output, no uniforms)",
                expected: 1,
                got: t.outputs.len().max(t.n_inputs) + t.n_uniforms,
            });
        }
        Epilogue::of_arity(&t.graph, t.outputs[0], t.n_inputs.max(1))
    }

    /// The epilogue of the backward of this one: `g(x, aux) = x · f'(aux)`, the
    /// gradient `x` with respect to the stored value times the derivative at the value
    /// `aux` it was computed from. With `f = gelu` and `aux` the pre-activation `h`
    /// saved by [`matmul_with_pre`](super::matmul_with_pre), the matmul producing
    /// `dY · W2` with this epilogue gives `dH` in the same pass. The derivative is
    /// generated from `f`'s graph (no hand-written derivative).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an epilogue that already takes `aux`;
    /// [`Error::Shader`] if the derivative's graph cannot be built or printed.
    pub fn vjp(&self) -> Result<Epilogue, Error> {
        if self.takes_aux() {
            return Err(Error::InvalidArgument {
                op: "matmul epilogue".into(),
                detail: "vjp of a two-input epilogue f(x, aux): only f(x) has one derivative; build the backward epilogue with Epilogue::with_aux".into(),
            });
        }
        // Rebuild f with its input moved to Input(1) (the matmul's aux), so Input(0)
        // can be the incoming gradient.
        let mut g = Graph::new();
        let mut map: Vec<NodeId> = Vec::with_capacity(self.graph.len());
        for node in self.graph.nodes() {
            let id = match *node {
                Node::Input(_) => g.input(1),
                Node::Uniform(i) => g.uniform(i),
                Node::Const(bits) => g.constant(f32::from_bits(bits)),
                Node::Bool(b) => g.boolean(b),
                Node::Apply(op, _) => {
                    let args: Vec<NodeId> = node.args().iter().map(|a| map[a.index()]).collect();
                    g.apply(op, &args)?
                }
            };
            map.push(id);
        }
        let h = g.input(1);
        let seed = g.input(0);
        let root = vjp(&mut g, &[map[self.root.index()]], &[seed], &[h])?[0];
        Epilogue::with_aux(&g, root)
    }

    /// Whether this is `f(x, aux)`: a matmul using it needs
    /// [`MatmulOptions::aux`](super::MatmulOptions::aux).
    pub fn takes_aux(&self) -> bool {
        self.arity == 2
    }

    /// The function's value at `x` in f64 (the CPU reference); for `f(x, aux)`, `aux` is
    /// 0.
    ///
    /// # Errors
    /// Never for an epilogue that was built successfully; kept a `Result` because the
    /// evaluator's API is fallible.
    pub fn eval_f64(&self, x: f64) -> Result<f64, Error> {
        self.eval_aux_f64(x, 0.0)
    }

    /// The value of `f(x, aux)` in f64 (the CPU reference); a one-input epilogue ignores
    /// `aux`.
    ///
    /// # Errors
    /// As [`Epilogue::eval_f64`].
    pub fn eval_aux_f64(&self, x: f64, aux: f64) -> Result<f64, Error> {
        let inputs = [x, aux];
        Ok(tang_expr::eval_f64(&self.graph, &[self.root], &inputs[..self.arity], &[])?[0])
    }

    /// The generated WGSL (`fn tang_epilogue(x: f32) -> f32`, or `(x: f32, y: f32)` for
    /// `f(x, aux)`, and its helpers).
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }

    /// A stable hash of the generated WGSL (part of the matmul shader cache key).
    pub fn hash(&self) -> u64 {
        self.hash
    }
}
