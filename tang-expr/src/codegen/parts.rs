//! Splitting a long kernel body into WGSL functions of at most [`PART_LEN`] statements.
//!
//! naga's type resolver re-walks a function's whole expression list each time it types a
//! new expression (`Typifier::grow` skips the resolved prefix one item at a time), so
//! validating one function of `n` statements costs time quadratic in `n`: 20,000
//! statements took minutes. Split into functions of a bounded length, the same kernel
//! validates in time linear in `n`. Each part takes the values it reads from earlier parts
//! (and the inputs it reads) as parameters and returns, in a struct, the values later
//! parts or the stores read. Drivers inline the calls; short kernels are not split, so
//! their WGSL is unchanged.

use std::fmt::Write as _;

use crate::graph::{Graph, Node, NodeId};

use crate::op::lanes::Lanes;
use crate::ty::Ty;

/// Most statements of one part (and the length from which a body is split).
pub(crate) const PART_LEN: usize = 256;

/// A body split into parts: the part functions (module scope) and the new body.
pub(crate) struct Parts {
    /// `struct PartK { .. }` and `fn part_k(..) -> PartK { .. }` for each part.
    pub functions: String,
    /// The body's other statements (input reads) in order, then one call per part.
    pub body: String,
}

/// One `let v<N> = <rhs>;` line of a printed body.
fn statement(line: &str) -> Option<(usize, &str)> {
    let rest = line.trim_start().strip_prefix("let v")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let node = rest.get(..digits)?.parse().ok()?;
    let rhs = rest.get(digits..)?.strip_prefix(" = ")?.strip_suffix(';')?;
    Some((node, rhs))
}

/// Splits `body` (printed from `g`: one `let v<N> = ...;` line per op node, `names` the
/// WGSL expression of every node) when it has more than [`PART_LEN`] statements; `roots`
/// are the nodes the code after the body reads. `None` when the body is short enough.
pub(crate) fn split(
    g: &Graph,
    body: &str,
    names: &[String],
    roots: &[NodeId],
    lanes: Lanes,
) -> Option<Parts> {
    let mut others = String::new();
    let mut stmts: Vec<(usize, &str)> = Vec::new();
    for line in body.lines() {
        match statement(line) {
            Some(s) if s.0 < g.len() => stmts.push(s),
            _ => {
                others.push_str(line);
                others.push('\n');
            }
        }
    }
    if stmts.len() <= PART_LEN {
        return None;
    }
    let ty = |id: usize| match g.ty(NodeId(id as u32)) {
        Ok(Ty::Bool) => lanes.bool(),
        _ => lanes.float(),
    };
    // Which part defines each statement's value.
    let mut part_of: Vec<Option<usize>> = vec![None; g.len()];
    for (k, &(node, _)) in stmts.iter().enumerate() {
        part_of[node] = Some(k / PART_LEN);
    }
    let args = |node: usize| -> Vec<usize> {
        match g.node(NodeId(node as u32)) {
            Ok(n @ Node::Apply(..)) => n.args().iter().map(|a| a.index()).collect(),
            _ => Vec::new(),
        }
    };
    let is_input = |a: usize| matches!(g.node(NodeId(a as u32)), Ok(Node::Input(_)));
    // Values read outside the part that defines them.
    let mut exported = vec![false; g.len()];
    for &(node, _) in &stmts {
        for a in args(node) {
            if part_of[a].is_some() && part_of[a] != part_of[node] {
                exported[a] = true;
            }
        }
    }
    for r in roots {
        if let Some(e) = exported.get_mut(r.index()) {
            *e = true;
        }
    }
    let mut functions = String::new();
    let mut calls = String::new();
    for (p, chunk) in stmts.chunks(PART_LEN).enumerate() {
        // Parameters: values of earlier parts and inputs, each once, in order of use.
        let mut params: Vec<usize> = Vec::new();
        for &(node, _) in chunk {
            for a in args(node) {
                let outside = match part_of[a] {
                    Some(q) => q != p,
                    None => is_input(a),
                };
                if outside && !params.contains(&a) {
                    params.push(a);
                }
            }
        }
        let outs: Vec<usize> = chunk
            .iter()
            .map(|&(n, _)| n)
            .filter(|&n| exported[n])
            .collect();
        if outs.is_empty() {
            // Nothing after the part reads it (no live graph prints such a part).
            continue;
        }
        let _ = writeln!(functions, "struct Part{p} {{");
        for &n in &outs {
            let _ = writeln!(functions, "    v{n}: {},", ty(n));
        }
        functions.push_str("}\n\n");
        let list: Vec<String> = params
            .iter()
            .map(|&a| format!("{}: {}", names[a], ty(a)))
            .collect();
        let _ = writeln!(functions, "fn part_{p}({}) -> Part{p} {{", list.join(", "));
        for &(node, rhs) in chunk {
            let _ = writeln!(functions, "    let v{node} = {rhs};");
        }
        let fields: Vec<String> = outs.iter().map(|n| format!("v{n}")).collect();
        let _ = writeln!(
            functions,
            "    return Part{p}({});\n}}\n",
            fields.join(", ")
        );
        let args: Vec<&str> = params.iter().map(|&a| names[a].as_str()).collect();
        let _ = writeln!(calls, "    let part{p} = part_{p}({});", args.join(", "));
        for n in outs {
            let _ = writeln!(calls, "    let v{n} = part{p}.v{n};");
        }
    }
    others.push_str(&calls);
    Some(Parts {
        functions,
        body: others,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_statement_lines_only() {
        assert_eq!(
            statement("    let v12 = (v3 * v4);"),
            Some((12, "(v3 * v4)"))
        );
        assert_eq!(statement("    let x_a = io_a[q];"), None);
        assert_eq!(statement("    var x_b: vec4<f32>;"), None);
    }
}

#[cfg(test)]
mod split_tests {
    use crate::codegen::{ElementwiseSpec, emit_elementwise};
    use crate::graph::Graph;
    use crate::op::Op;

    #[test]
    fn a_long_body_becomes_valid_parts_and_a_short_one_stays_whole() {
        // A chain of `PART_LEN * 3` ops, with a condition carried across parts and a value
        // from the first part read at the end.
        let mut g = Graph::new();
        let x = g.input(0);
        let half = g.constant(0.5);
        let first = g.apply(Op::Mul, &[x, half]).unwrap();
        let cond = g.apply(Op::Lt, &[x, half]).unwrap();
        let mut v = first;
        for _ in 0..super::PART_LEN * 3 {
            v = g.apply(Op::Add, &[v, half]).unwrap();
        }
        let out = g.apply(Op::Select, &[cond, v, first]).unwrap();
        let spec = |out| ElementwiseSpec {
            name: "chain".into(),
            graph: &g,
            inputs: vec!["x".into()],
            uniforms: vec![],
            inouts: vec![],
            outputs: vec![("out".into(), out)],
        };
        let long = emit_elementwise(&spec(out)).unwrap();
        assert!(long.wgsl.contains("fn part_3("), "{}", long.wgsl);
        assert!(
            long.wgsl.contains("vec4<bool>,"),
            "the condition crosses parts"
        );
        let short = emit_elementwise(&spec(first)).unwrap();
        assert!(!short.wgsl.contains("fn part_"));
    }
}
