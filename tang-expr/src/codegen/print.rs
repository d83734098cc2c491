//! The one graph-to-WGSL printer: one SSA `let` per live node, in node order, and the
//! helper functions the printed ops call. The elementwise kernels (`mod.rs`, vec4
//! values) and the scalar functions (`scalar_fn.rs`, f32 values) differ only in how they
//! read leaves, which they pass in. A select on a uniform condition whose arms compute
//! values of their own is an `if`/`else` block around them (`branches.rs`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::codegen::branches::{self, Branches};
use crate::codegen::literal::wgsl_literal;
use crate::error::ExprError;
use crate::graph::{Graph, Node, NodeId};
use crate::op::lanes::Lanes;
use crate::ty::Ty;

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
    /// Whether the body has `if`/`else` blocks (then it is not one `let` per line).
    pub branched: bool,
}

/// Prints the nodes of `g` marked in `live` for values of `lanes`; `roots` are the nodes
/// the caller reads after the body (never inside a block).
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
    roots: &[NodeId],
    lanes: Lanes,
    opaque: &str,
    leaf: &mut dyn FnMut(Leaf, &mut String) -> Result<String, ExprError>,
) -> Result<Printed, ExprError> {
    let live: Vec<bool> = (0..g.len())
        .map(|i| live.get(i).copied().unwrap_or(false))
        .collect();
    let branches = branches::find(g, &live, roots);
    let mut p = Printer {
        g,
        live: &live,
        branches: &branches,
        lanes,
        opaque,
        leaf,
        helpers: BTreeMap::new(),
        body: String::new(),
        names: vec![String::new(); g.len()],
    };
    let top = branches.list(&live, None);
    p.list(&top, 1)?;
    Ok(Printed {
        helpers: p.helpers,
        body: p.body,
        names: p.names,
        branched: branches.any(),
    })
}

/// The printer's state while it writes a body.
struct Printer<'a, 'l> {
    g: &'a Graph,
    live: &'a [bool],
    branches: &'a Branches,
    lanes: Lanes,
    opaque: &'a str,
    leaf: &'l mut dyn FnMut(Leaf, &mut String) -> Result<String, ExprError>,
    helpers: BTreeMap<&'static str, String>,
    body: String,
    names: Vec<String>,
}

impl Printer<'_, '_> {
    /// Prints `nodes` (in node order) at nesting `depth` (1: the function's body).
    fn list(&mut self, nodes: &[usize], depth: usize) -> Result<(), ExprError> {
        for &i in nodes {
            if self.branches.block[i] {
                self.block(i, depth)?;
            } else {
                self.node(i, depth)?;
            }
        }
        Ok(())
    }

    /// Prints select `s` as `var`, then `if`/`else` around each arm's own nodes.
    fn block(&mut self, s: usize, depth: usize) -> Result<(), ExprError> {
        let id = NodeId(s as u32);
        let Node::Apply(_, args) = self.g.node(id)? else {
            return self.node(s, depth);
        };
        let ty = match self.g.ty(id)? {
            Ty::Bool => self.lanes.bool(),
            _ => self.lanes.float(),
        };
        let pad = "    ".repeat(depth);
        let v = format!("v{s}");
        // The condition is the same in every lane and invocation (it is uniform).
        let _ = writeln!(
            self.body,
            "{pad}var {v}: {ty};\n{pad}if (all({})) {{",
            self.names[args[0].index()]
        );
        for (arm, position) in [(true, 1usize), (false, 2usize)] {
            if !arm {
                let _ = writeln!(self.body, "{pad}}} else {{");
            }
            let own = self.branches.list(self.live, Some((s, arm)));
            self.list(&own, depth + 1)?;
            let _ = writeln!(
                self.body,
                "{pad}    {v} = {};",
                self.names[args[position].index()]
            );
        }
        let _ = writeln!(self.body, "{pad}}}");
        self.names[s] = v;
        Ok(())
    }

    /// Prints node `i`: a `let` for an operation, nothing (only its name) for a leaf.
    fn node(&mut self, i: usize, depth: usize) -> Result<(), ExprError> {
        let id = NodeId(i as u32);
        let t = self.lanes.float();
        let splat = |v: String| match self.lanes {
            Lanes::Scalar => v,
            Lanes::Vec4 => format!("{t}({v})"),
        };
        let expr = match self.g.node(id)? {
            Node::Input(k) => {
                self.names[i] = (self.leaf)(Leaf::Input(k), &mut self.body)?;
                return Ok(());
            }
            Node::Uniform(j) => {
                self.names[i] = (self.leaf)(Leaf::Uniform(j), &mut self.body)?;
                return Ok(());
            }
            Node::Const(bits) => {
                let v = f32::from_bits(bits);
                self.names[i] = splat(if v.is_finite() && v != 0.0 {
                    wgsl_literal(v)
                } else {
                    format!("bitcast<f32>(0x{bits:08x}u | {})", self.opaque)
                });
                return Ok(());
            }
            Node::Bool(b) => {
                self.names[i] = match self.lanes {
                    Lanes::Scalar => b.to_string(),
                    Lanes::Vec4 => format!("{}({b})", self.lanes.bool()),
                };
                return Ok(());
            }
            Node::Apply(op, args) => {
                op.wgsl_helpers(self.lanes, &mut self.helpers);
                let printed: Vec<String> = args[..op.arity()]
                    .iter()
                    .map(|a: &NodeId| self.names[a.index()].clone())
                    .collect();
                op.wgsl(&printed, t)
            }
        };
        let v = format!("v{i}");
        let _ = writeln!(self.body, "{}let {v} = {expr};", "    ".repeat(depth));
        self.names[i] = v;
        Ok(())
    }
}
