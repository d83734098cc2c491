//! CPU twins: Rust code emitted from a simplified graph, one `let` per node, each calling
//! the op's own evaluation (`Op::eval`), so the twin computes exactly what the IR defines
//! without building a graph at run time.
//!
//! The code is printed as text and tokenized once: twins have one statement per node of
//! the derivative graph, and building them token by token dominated expansion time.

use std::fmt::Write as _;

use crate::graph::{Graph, Node, NodeId};
use crate::op::Op;

/// The Rust expression naming `op` as a value of `tang_expr::Op`.
fn op_text(op: Op) -> String {
    match op {
        Op::PowI(i32::MIN) => "PowI(i32::MIN)".to_string(),
        Op::PowI(n) => format!("PowI({n}i32)"),
        other => format!("{other:?}"),
    }
}

/// Statements computing `roots` in `g`, and the expression of each root, as Rust source.
/// `leaf` names an input or uniform node (a parameter); `f64` picks the precision (the
/// f32 twins match the GPU; the f64 one is a reference for finite differences). `None`
/// when a leaf has no name.
pub(crate) fn twin_body(
    g: &Graph,
    roots: &[NodeId],
    leaf: &dyn Fn(Node) -> Option<String>,
    f64: bool,
) -> Option<(String, Vec<String>)> {
    let ty = if f64 { "f64" } else { "f32" };
    let live = g.reachable(roots);
    let mut names: Vec<String> = vec![String::new(); g.len()];
    // Every local starts with `__`: parameter names cannot (WGSL reserves the prefix, and
    // the kernel emitter rejects it), so a parameter is never shadowed.
    let mut body = format!(
        "use ::tang_runtime::__private::Op as __O;\n\
         #[inline(always)] fn __e(o: __O, a: &[{ty}]) -> {ty} {{ o.eval::<{ty}>(a) }}\n"
    );
    for (id, node) in g.ids().zip(g.nodes()) {
        if !live.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        let v = format!("__v{}", id.index());
        match *node {
            Node::Input(_) | Node::Uniform(_) => {
                if let Some(slot) = names.get_mut(id.index()) {
                    *slot = leaf(*node)?;
                }
                continue;
            }
            Node::Const(bits) if f64 => {
                let _ = writeln!(body, "let {v} = f32::from_bits({bits}u32) as f64;");
            }
            Node::Const(bits) => {
                let _ = writeln!(body, "let {v} = f32::from_bits({bits}u32);");
            }
            Node::Bool(b) => {
                let _ = writeln!(body, "let {v} = {}.0{ty};", b as u8);
            }
            Node::Apply(op, _) => {
                let _ = write!(body, "let {v} = __e(__O::{}, &[", op_text(op));
                for (k, a) in node.args().iter().enumerate() {
                    if k > 0 {
                        body.push_str(", ");
                    }
                    body.push_str(names.get(a.index())?);
                }
                body.push_str("]);\n");
            }
        }
        if let Some(slot) = names.get_mut(id.index()) {
            *slot = v;
        }
    }
    let exprs = roots
        .iter()
        .map(|r| names.get(r.index()).cloned())
        .collect::<Option<Vec<_>>>()?;
    Some((body, exprs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_let_per_operation() {
        let mut g = Graph::new();
        let x = g.input(0);
        let two = g.constant(2.0);
        let y = g.apply(Op::Mul, &[x, two]).unwrap();
        let z = g.apply(Op::PowI(-3), &[y]).unwrap();
        let name = |n| match n {
            Node::Input(0) => Some("x".to_string()),
            _ => None,
        };
        let (body, roots) = twin_body(&g, &[z, x], &name, false).unwrap();
        assert_eq!(body.matches("let").count(), 3, "{body}");
        assert!(body.contains("PowI(-3i32)"), "{body}");
        assert!(body.contains("f32::from_bits(1073741824u32)"), "{body}");
        assert_eq!(roots[1], "x");
        let u = g.uniform(0);
        // A leaf the caller does not name is a failure, not a panic.
        assert!(twin_body(&g, &[u], &|_| None, false).is_none());
        let (body, _) = twin_body(&g, &[y], &name, true).unwrap();
        assert!(
            body.contains("eval::<f64>") && body.contains("as f64"),
            "{body}"
        );
        assert!(body.parse::<proc_macro2::TokenStream>().is_ok());
    }
}
