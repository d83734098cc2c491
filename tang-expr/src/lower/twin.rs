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

/// Most statements a twin writes as one `let` each. Every `let` opens a lexical scope
/// nested in the previous one, and LLVM builds debug info for nested scopes recursively:
/// a few thousand `let`s in one function overflow rustc's stack in a debug build. Longer
/// twins keep their values in a local array instead (see [`twin_body`]).
const MAX_LETS: usize = 256;

/// Statements computing `roots` in `g`, and the expression of each root, as Rust source.
/// `leaf` names an input or uniform node (a parameter); `f64` picks the precision (the
/// f32 twins match the GPU; the f64 one is a reference for finite differences). `None`
/// when a leaf has no name.
///
/// Up to [`MAX_LETS`] operations, each is a `let`. Past that, values live in slots of one
/// array, a slot reused once its value is read for the last time (so the array is as long
/// as the most values alive at once, not as the graph).
pub(crate) fn twin_body(
    g: &Graph,
    roots: &[NodeId],
    leaf: &dyn Fn(Node) -> Option<String>,
    f64: bool,
) -> Option<(String, Vec<String>)> {
    let ty = if f64 { "f64" } else { "f32" };
    let live = g.reachable(roots);
    let ops = g
        .ids()
        .zip(g.nodes())
        .filter(|(id, n)| live[id.index()] && matches!(n, Node::Apply(..)))
        .count();
    let slotted = ops > MAX_LETS;
    // The last node reading each value (roots: read after every node).
    let mut last_use = vec![0usize; g.len()];
    if slotted {
        for (id, node) in g.ids().zip(g.nodes()) {
            if live[id.index()] {
                for a in node.args() {
                    last_use[a.index()] = id.index();
                }
            }
        }
        for r in roots {
            if let Some(l) = last_use.get_mut(r.index()) {
                *l = usize::MAX;
            }
        }
    }
    let mut free: Vec<usize> = Vec::new();
    let mut slots = 0usize;
    let mut names: Vec<String> = vec![String::new(); g.len()];
    let mut slot_of: Vec<Option<usize>> = vec![None; g.len()];
    // Every local starts with `__`: parameter names cannot (WGSL reserves the prefix, and
    // the kernel emitter rejects it), so a parameter is never shadowed.
    let mut body = String::new();
    for (id, node) in g.ids().zip(g.nodes()) {
        if !live.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        let value = match *node {
            Node::Input(_) | Node::Uniform(_) => {
                *names.get_mut(id.index())? = leaf(*node)?;
                continue;
            }
            Node::Const(bits) if f64 => format!("(f32::from_bits({bits}u32) as f64)"),
            Node::Const(bits) => format!("f32::from_bits({bits}u32)"),
            Node::Bool(b) => format!("{}.0{ty}", b as u8),
            Node::Apply(op, _) => {
                let mut call = format!("__e(__O::{}, &[", op_text(op));
                for (k, a) in node.args().iter().enumerate() {
                    if k > 0 {
                        call.push_str(", ");
                    }
                    call.push_str(names.get(a.index())?);
                }
                call.push_str("])");
                call
            }
        };
        let Node::Apply(..) = node else {
            // Constants are written where they are read.
            *names.get_mut(id.index())? = value;
            continue;
        };
        if !slotted {
            let v = format!("__v{}", id.index());
            let _ = writeln!(body, "let {v} = {value};");
            *names.get_mut(id.index())? = v;
            continue;
        }
        // The arguments' slots free up once this node has read them for the last time.
        for a in node.args() {
            if last_use[a.index()] == id.index()
                && let Some(s) = slot_of[a.index()].take()
            {
                free.push(s);
            }
        }
        let s = free.pop().unwrap_or_else(|| {
            slots += 1;
            slots - 1
        });
        slot_of[id.index()] = Some(s);
        let _ = writeln!(body, "__s[{s}] = {value};");
        *names.get_mut(id.index())? = format!("__s[{s}]");
    }
    let mut head = format!(
        "use ::tang_runtime::__private::Op as __O;\n\
         #[inline(always)] fn __e(o: __O, a: &[{ty}]) -> {ty} {{ o.eval::<{ty}>(a) }}\n"
    );
    if slotted {
        let _ = writeln!(head, "let mut __s = [0.0{ty}; {slots}];");
    }
    head.push_str(&body);
    let exprs = roots
        .iter()
        .map(|r| names.get(r.index()).cloned())
        .collect::<Option<Vec<_>>>()?;
    Some((head, exprs))
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
        assert_eq!(body.matches("let").count(), 2, "{body}");
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

    #[test]
    fn a_long_twin_reuses_a_few_array_slots() {
        let mut g = Graph::new();
        let x = g.input(0);
        let half = g.constant(0.5);
        let mut v = x;
        for _ in 0..MAX_LETS * 2 {
            let m = g.apply(Op::Mul, &[v, half]).unwrap();
            v = g.apply(Op::Add, &[m, x]).unwrap();
        }
        let name = |n| match n {
            Node::Input(0) => Some("x".to_string()),
            _ => None,
        };
        let (body, roots) = twin_body(&g, &[v], &name, false).unwrap();
        assert!(!body.contains("let __v"), "{body}");
        assert!(body.contains("let mut __s = [0.0f32; 1];"), "{body}");
        assert_eq!(roots, ["__s[0]"]);
        assert!(body.parse::<proc_macro2::TokenStream>().is_ok());
    }
}
