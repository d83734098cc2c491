//! A one-input graph printed as a WGSL function `fn <name>(x: f32, zero: u32) -> f32`,
//! for kernels written by hand that apply a user's scalar function on the way out (the fused
//! epilogue of a matmul: bias + GELU on store). The text is self-contained: the helper
//! functions the graph's ops need come first, each once, in a fixed order, so the same
//! graph always prints the same bytes and the caller can cache by its hash.

use std::fmt::Write as _;

use crate::codegen::print::{Leaf, Printed, print_graph};
use crate::error::ExprError;
use crate::graph::{Graph, NodeId};
use crate::op::lanes::Lanes;
use crate::ty::Ty;

/// Prints the sub-graph under `root` as `fn <name>(x: f32, zero: u32) -> f32`, where
/// `Node::Input(0)` is `x`, preceded by the helper functions its ops call.
///
/// The caller passes as `zero` a word of its uniform that the host sets to 0: zero and
/// non-finite constants are built from it, because shader compilers fold arithmetic on
/// constants they can see (even `n & 0u`) as if NaN, infinities and signed zeros never
/// occurred (`x * 0.0` to 0 at an infinite `x`); see `codegen/print.rs`.
///
/// The host shader must not define functions named `tang_*` itself (the helpers' names).
///
/// # Errors
/// A name that is not a WGSL identifier, a root that is not a float, a node that reads
/// an input other than 0 or any uniform (the function has one argument), a root that
/// does not belong to `graph`, or (a tang bug) text naga rejects.
pub fn emit_scalar_fn(name: &str, graph: &Graph, root: NodeId) -> Result<String, ExprError> {
    let ident_ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("__");
    if !ident_ok {
        return Err(ExprError::BadName(name.to_string()));
    }
    let ty = graph.ty(root)?;
    if ty != Ty::F32 {
        return Err(ExprError::Type {
            op: "return",
            position: 0,
            expected: Ty::F32,
            got: ty,
        });
    }
    let live = graph.reachable(&[root]);
    let mut leaf = |leaf: Leaf, _: &mut String| match leaf {
        Leaf::Input(0) => Ok("x".to_string()),
        Leaf::Input(i) => Err(ExprError::Index {
            what: "input",
            index: i,
            count: 1,
        }),
        Leaf::Uniform(j) => Err(ExprError::Index {
            what: "uniform",
            index: j,
            count: 0,
        }),
    };
    // Constants drivers must not see are built from the caller's zero word.
    let Printed {
        helpers,
        body,
        names,
        ..
    } = print_graph(graph, &live, &[root], Lanes::Scalar, "zero", &mut leaf)?;

    let mut w = String::new();
    for text in helpers.values() {
        w.push_str(text);
        w.push('\n');
    }
    let _ = writeln!(w, "fn {name}(x: f32, zero: u32) -> f32 {{");
    w.push_str(&body);
    let _ = writeln!(w, "    return {};\n}}", names[root.index()]);

    // Validate inside a minimal host so the function and its helpers are checked
    // together, exactly as they will be pasted.
    let host = format!(
        "{w}\n@group(0) @binding(0) var<storage, read_write> tang_scalar_fn_probe: array<f32>;\n\
         @compute @workgroup_size(1)\nfn tang_scalar_fn_main() {{\n    \
         tang_scalar_fn_probe[0] = {name}(tang_scalar_fn_probe[0], 0u);\n}}\n"
    );
    crate::validate::validate(&host)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;

    #[test]
    fn gelu_bias_function_is_valid_and_deterministic() {
        let mut g = Graph::new();
        let x = g.input(0);
        let y = g.apply(Op::GeluTanh, &[x]).unwrap();
        let z = g.apply(Op::Sigmoid, &[y]).unwrap();
        let w = g.apply(Op::Silu, &[z]).unwrap();
        let a = emit_scalar_fn("epi", &g, w).unwrap();
        let b = emit_scalar_fn("epi", &g, w).unwrap();
        assert_eq!(a, b);
        assert!(a.contains("fn epi(x: f32, zero: u32) -> f32"));
        // tang_sigmoid is needed by both Sigmoid and Silu but printed once
        assert_eq!(a.matches("fn tang_sigmoid").count(), 1);
        assert!(a.contains("fn tang_gelu_tanh"));
    }

    #[test]
    fn identity_constants_and_non_finite() {
        let mut g = Graph::new();
        let x = g.input(0);
        let id = emit_scalar_fn("f", &g, x).unwrap();
        assert!(id.contains("return x;"));
        let inf = g.constant(f32::INFINITY);
        let m = g.apply(Op::Min, &[x, inf]).unwrap();
        let text = emit_scalar_fn("f", &g, m).unwrap();
        assert!(text.contains("0x7f800000u | zero"));
        let c = g.constant(2.5);
        let text = emit_scalar_fn("f", &g, c).unwrap();
        assert!(text.contains("return 2.5f;"));
    }

    #[test]
    fn rejects_what_a_one_input_function_cannot_be() {
        let mut g = Graph::new();
        let x = g.input(0);
        let u = g.uniform(0);
        let x1 = g.input(1);
        let xu = g.apply(Op::Add, &[x, u]).unwrap();
        assert!(matches!(
            emit_scalar_fn("f", &g, xu),
            Err(ExprError::Index {
                what: "uniform",
                ..
            })
        ));
        let xx = g.apply(Op::Add, &[x, x1]).unwrap();
        assert!(matches!(
            emit_scalar_fn("f", &g, xx),
            Err(ExprError::Index { what: "input", .. })
        ));
        let b = g.apply(Op::Lt, &[x, x]).unwrap();
        assert!(matches!(
            emit_scalar_fn("f", &g, b),
            Err(ExprError::Type { .. })
        ));
        assert!(matches!(
            emit_scalar_fn("1f", &g, x),
            Err(ExprError::BadName(_))
        ));
        assert!(emit_scalar_fn("f", &g, NodeId(9999)).is_err());
    }
}
