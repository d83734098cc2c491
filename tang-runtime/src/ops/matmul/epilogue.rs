//! A scalar function applied to every element of a matmul's output as it is stored
//! (`gelu(x @ w + b)` in one pass over C instead of three).

use tang_expr::{Graph, NodeId, Traced, scalar_fn::emit_scalar_fn, stable_hash, try_simplify};

use crate::Error;

/// The WGSL name the matmul shader calls.
pub(crate) const EPILOGUE_FN: &str = "tang_epilogue";

/// An elementwise function `f(x)` fused into a matmul's store. Built from a one-input
/// graph (`Node::Input(0)` is the value being stored, after the bias) or from a traced
/// closure; the WGSL is generated and validated once, here.
#[derive(Clone, Debug)]
pub struct Epilogue {
    graph: Graph,
    root: NodeId,
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
        let (g, roots) = try_simplify(graph, &[root])?;
        let root = roots[0];
        let wgsl = emit_scalar_fn(EPILOGUE_FN, &g, root)?;
        let hash = stable_hash(&wgsl);
        Ok(Epilogue {
            graph: g,
            root,
            wgsl,
            hash,
        })
    }

    /// The epilogue of a traced one-input, one-output closure:
    /// `Epilogue::from_traced(&tang_expr::trace(1, |v| v[0].max(0.0)))`.
    ///
    /// # Errors
    /// [`Error::Shader`] for a trace that recorded a misuse, has uniforms, or does not
    /// have exactly one output; as [`Epilogue::new`] otherwise.
    pub fn from_traced(t: &Traced) -> Result<Epilogue, Error> {
        t.check()?;
        if t.outputs.len() != 1 || t.n_uniforms != 0 || t.n_inputs > 1 {
            return Err(Error::Arity {
                op: "matmul epilogue".into(),
                what: "inputs/outputs (an epilogue is f(x) -> y: one input, one output, no uniforms)",
                expected: 1,
                got: t.outputs.len().max(t.n_inputs) + t.n_uniforms,
            });
        }
        Epilogue::new(&t.graph, t.outputs[0])
    }

    /// The function's value at `x` in f64 (the CPU reference).
    ///
    /// # Errors
    /// Never for an epilogue that was built successfully; kept a `Result` because the
    /// evaluator's API is fallible.
    pub fn eval_f64(&self, x: f64) -> Result<f64, Error> {
        Ok(tang_expr::eval_f64(&self.graph, &[self.root], &[x], &[])?[0])
    }

    /// The generated WGSL (`fn tang_epilogue(x: f32, zero: u32) -> f32` and its helpers;
    /// the matmul passes its uniform's `zero` word).
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }

    /// A stable hash of the generated WGSL (part of the matmul shader cache key).
    pub fn hash(&self) -> u64 {
        self.hash
    }
}
