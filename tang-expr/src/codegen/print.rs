//! The one graph-to-WGSL printer: one SSA `let` per live node, in node order, and the
//! helper functions the printed ops call. The elementwise kernels (`mod.rs`, vec4
//! values) and the scalar functions (`scalar_fn.rs`, f32 values) differ only in how they
//! read leaves, which they pass in.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::codegen::literal::wgsl_literal;
use crate::error::ExprError;
use crate::graph::{Graph, Node, NodeId};
use crate::op::lanes::Lanes;

/// A leaf the caller reads: element input `i` or uniform `j`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Leaf {
    /// `Node::Input(i)`
    Input(u32),
    /// `Node::Uniform(j)`
    Uniform(u32),
}

/// A graph printed as WGSL statements.
pub(crate) struct Printed {
    /// The helper functions the statements call, by name (each once, in a fixed order).
    pub helpers: BTreeMap<&'static str, String>,
    /// The statements, one `let` per live op node (and whatever the leaf reader wrote).
    pub body: String,
    /// The WGSL expression of every node (empty for nodes not live).
    pub names: Vec<String>,
}

/// Prints the nodes of `g` marked in `live` for values of `lanes`.
///
/// `leaf` prints an input or uniform node: it may append statements to the body (the
/// second argument) and returns the expression that reads the value. `opaque` is a `u32`
/// expression that is 0 at run time but unknown to the shader compiler (a word of a
/// uniform the host writes): the constants drivers must not see (zeros and non-finite
/// values) are their bits OR'ed with it, so that they are not constants to naga or the
/// driver. naga's constant evaluator rejects infinities and NaN, and drivers fold `x * 0.0`
/// to 0 and `x + 0.0` to `x` even where `x` is infinite, NaN or `-0.0`, also when the zero
/// is an expression they can prove is 0 (`n & 0u`): only a value from outside the shader
/// stops that.
pub(crate) fn print_graph(
    g: &Graph,
    live: &[bool],
    lanes: Lanes,
    opaque: &str,
    leaf: &mut dyn FnMut(Leaf, &mut String) -> Result<String, ExprError>,
) -> Result<Printed, ExprError> {
    let t = lanes.float();
    let splat = |v: String| match lanes {
        Lanes::Scalar => v,
        Lanes::Vec4 => format!("{t}({v})"),
    };
    let mut helpers = BTreeMap::new();
    let mut body = String::new();
    let mut names: Vec<String> = vec![String::new(); g.len()];
    for id in g.ids() {
        if !live.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        let node = g.node(id)?;
        let expr = match node {
            Node::Input(i) => {
                names[id.index()] = leaf(Leaf::Input(i), &mut body)?;
                continue;
            }
            Node::Uniform(j) => {
                names[id.index()] = leaf(Leaf::Uniform(j), &mut body)?;
                continue;
            }
            Node::Const(bits) => {
                let v = f32::from_bits(bits);
                names[id.index()] = splat(if v.is_finite() && v != 0.0 {
                    wgsl_literal(v)
                } else {
                    format!("bitcast<f32>(0x{bits:08x}u | {opaque})")
                });
                continue;
            }
            Node::Bool(b) => {
                names[id.index()] = match lanes {
                    Lanes::Scalar => b.to_string(),
                    Lanes::Vec4 => format!("{}({b})", lanes.bool()),
                };
                continue;
            }
            Node::Apply(op, args) => {
                op.wgsl_helpers(lanes, &mut helpers);
                let printed: Vec<String> = args[..op.arity()]
                    .iter()
                    .map(|a: &NodeId| names[a.index()].clone())
                    .collect();
                op.wgsl(&printed, t)
            }
        };
        let v = format!("v{}", id.index());
        let _ = writeln!(body, "    let {v} = {expr};");
        names[id.index()] = v;
    }
    Ok(Printed {
        helpers,
        body,
        names,
    })
}
