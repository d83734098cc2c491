//! The expression graph: a hash-consed DAG of scalar nodes.
//!
//! Nodes are stored in creation order, so every node's arguments come before it (children
//! before parents) and a single forward sweep evaluates, differentiates or prints a graph.
//! Building the same node twice returns the same [`NodeId`] (hash-consing), and the
//! arguments of commutative operations are put in a canonical order so `a + b` and `b + a`
//! are one node. The lookup table is a `HashMap`, but nothing ever iterates over it: output
//! order is always node order, so generated code is deterministic.

use std::collections::HashMap;
use std::fmt;

use crate::error::ExprError;
use crate::op::Op;
use crate::ty::Ty;

/// Index of a node in a [`Graph`]. Only meaningful for the graph that created it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The placeholder in unused argument slots of [`Node::Apply`].
    pub(crate) const NONE: NodeId = NodeId(u32::MAX);

    /// The node's position in the graph (its index in [`Graph::nodes`]).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// One node of the graph.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Node {
    /// The `i`-th per-element input (one value per element of the launch).
    Input(u32),
    /// The `i`-th uniform (one value for the whole launch).
    Uniform(u32),
    /// A float constant, stored as its f32 bits so the node can be hashed.
    Const(u32),
    /// A boolean constant.
    Bool(bool),
    /// An operation applied to `op.arity()` arguments; unused slots hold a placeholder.
    Apply(Op, [NodeId; 3]),
}

impl Node {
    /// The arguments of the node (empty for leaves).
    pub fn args(&self) -> &[NodeId] {
        match self {
            Node::Apply(op, args) => &args[..op.arity()],
            _ => &[],
        }
    }

    /// The constant's value, if the node is a float constant.
    pub fn as_const(&self) -> Option<f32> {
        match *self {
            Node::Const(bits) => Some(f32::from_bits(bits)),
            _ => None,
        }
    }
}

/// A hash-consed DAG of scalar expressions.
#[derive(Clone, Default, Debug)]
pub struct Graph {
    nodes: Vec<Node>,
    types: Vec<Ty>,
    lookup: HashMap<Node, NodeId>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// All nodes, children before parents.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node behind `id`.
    ///
    /// # Errors
    /// [`ExprError::UnknownNode`] if `id` does not belong to this graph.
    pub fn node(&self, id: NodeId) -> Result<Node, ExprError> {
        self.nodes
            .get(id.index())
            .copied()
            .ok_or(ExprError::UnknownNode(id.0))
    }

    /// The node behind `id`, for ids known to come from this graph (internal passes).
    pub(crate) fn get(&self, id: NodeId) -> Node {
        self.nodes[id.index()]
    }

    /// The type of the node behind `id`.
    ///
    /// # Errors
    /// [`ExprError::UnknownNode`] if `id` does not belong to this graph.
    pub fn ty(&self, id: NodeId) -> Result<Ty, ExprError> {
        self.types
            .get(id.index())
            .copied()
            .ok_or(ExprError::UnknownNode(id.0))
    }

    /// The id of every node, in order.
    pub fn ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    fn intern(&mut self, node: Node, ty: Ty) -> NodeId {
        if let Some(&id) = self.lookup.get(&node) {
            return id;
        }
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.types.push(ty);
        self.lookup.insert(node, id);
        id
    }

    /// The `i`-th per-element input.
    pub fn input(&mut self, i: u32) -> NodeId {
        self.intern(Node::Input(i), Ty::F32)
    }

    /// The `i`-th uniform.
    pub fn uniform(&mut self, i: u32) -> NodeId {
        self.intern(Node::Uniform(i), Ty::F32)
    }

    /// A float constant. All NaNs are stored as one canonical NaN.
    pub fn constant(&mut self, value: f32) -> NodeId {
        let bits = if value.is_nan() {
            f32::NAN.to_bits()
        } else {
            value.to_bits()
        };
        self.intern(Node::Const(bits), Ty::F32)
    }

    /// A boolean constant.
    pub fn boolean(&mut self, value: bool) -> NodeId {
        self.intern(Node::Bool(value), Ty::Bool)
    }

    /// Applies `op` to `args`, reusing an identical node if there is one. Arguments of
    /// commutative operations are sorted first, so `a + b` and `b + a` are one node.
    /// This builds exactly what is asked; [`crate::simplify`] rewrites.
    ///
    /// # Errors
    /// [`ExprError::Arity`] if `args.len() != op.arity()`, [`ExprError::UnknownNode`] for
    /// an id from another graph, [`ExprError::Type`] when an argument has the wrong type
    /// (a boolean where a float is needed, or the reverse).
    pub fn apply(&mut self, op: Op, args: &[NodeId]) -> Result<NodeId, ExprError> {
        if args.len() != op.arity() {
            return Err(ExprError::Arity {
                op: op.name(),
                expected: op.arity(),
                got: args.len(),
            });
        }
        for (position, (&arg, want)) in args.iter().zip(op.arg_types()).enumerate() {
            let got = self.ty(arg)?;
            if got != want {
                return Err(ExprError::Type {
                    op: op.name(),
                    position,
                    expected: want,
                    got,
                });
            }
        }
        let mut slots = [NodeId::NONE; 3];
        slots[..args.len()].copy_from_slice(args);
        if op.is_commutative() && slots[1] < slots[0] {
            slots.swap(0, 1);
        }
        Ok(self.intern(Node::Apply(op, slots), op.result_type()))
    }

    /// Applies an operation whose arguments are known to be well typed and to come from
    /// this graph (used by internal passes that build from already-checked nodes).
    pub(crate) fn app(&mut self, op: Op, args: &[NodeId]) -> NodeId {
        match self.apply(op, args) {
            Ok(id) => id,
            // Internal passes only combine nodes of this graph with the types `op`
            // expects; reaching this is a bug in tang-expr, not in the user's input.
            Err(e) => unreachable!("internal graph construction failed: {e}"),
        }
    }

    /// Which nodes the given roots depend on (transitively, roots included).
    pub fn reachable(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        for r in roots {
            if let Some(l) = live.get_mut(r.index()) {
                *l = true;
            }
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for a in self.nodes[i].args() {
                    live[a.index()] = true;
                }
            }
        }
        live
    }

    /// Number of nodes the given roots depend on (a measure of expression size).
    pub fn count_reachable(&self, roots: &[NodeId]) -> usize {
        self.reachable(roots).iter().filter(|&&l| l).count()
    }

    /// Copies the nodes that `roots` depend on into a fresh graph (dead-node removal).
    /// Returns the new graph and the roots' ids in it.
    pub fn extract(&self, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
        let live = self.reachable(roots);
        let mut out = Graph::new();
        let mut map = vec![NodeId::NONE; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            if !live[i] {
                continue;
            }
            map[i] = match *node {
                Node::Apply(op, args) => {
                    let mapped: Vec<NodeId> =
                        args[..op.arity()].iter().map(|a| map[a.index()]).collect();
                    out.app(op, &mapped)
                }
                leaf => {
                    let ty = self.types[i];
                    out.intern(leaf, ty)
                }
            };
        }
        let roots = roots.iter().map(|r| map[r.index()]).collect();
        (out, roots)
    }

    /// The number of element inputs the graph reads (one past the highest input index).
    pub fn input_count(&self) -> u32 {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                Node::Input(i) => Some(i + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// The number of uniforms the graph reads (one past the highest uniform index).
    pub fn uniform_count(&self) -> u32 {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                Node::Uniform(i) => Some(i + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// A stable 64-bit hash of the structure reachable from `roots` (FNV-1a over the
    /// nodes in order). Equal graphs give equal hashes on every machine and every build,
    /// which is what a pipeline cache keyed by graph needs.
    pub fn structural_hash(&self, roots: &[NodeId]) -> u64 {
        let (g, roots) = self.extract(roots);
        let mut h = Fnv::new();
        for node in &g.nodes {
            match *node {
                Node::Input(i) => h.write(&[1]).write(&i.to_le_bytes()),
                Node::Uniform(i) => h.write(&[2]).write(&i.to_le_bytes()),
                Node::Const(b) => h.write(&[3]).write(&b.to_le_bytes()),
                Node::Bool(b) => h.write(&[4, b as u8]),
                Node::Apply(op, args) => {
                    h.write(&[5]).write(op.name().as_bytes());
                    if let Op::PowI(n) = op {
                        h.write(&n.to_le_bytes());
                    }
                    for a in &args[..op.arity()] {
                        h.write(&a.0.to_le_bytes());
                    }
                    &mut h
                }
            };
        }
        for r in roots {
            h.write(&[6]).write(&r.0.to_le_bytes());
        }
        h.finish()
    }
}

/// FNV-1a, 64 bit: a tiny hash with a fixed definition (std's hashers may change between
/// Rust releases, and ids derived from them must not).
pub(crate) struct Fnv(u64);

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a hash `h` over `bytes` (usable in constants).
const fn fnv_extend(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(FNV_OFFSET)
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) -> &mut Self {
        self.0 = fnv_extend(self.0, bytes);
        self
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// The stable id of a piece of text (FNV-1a, 64 bit), e.g. a kernel's WGSL. A `const fn`,
/// so hand-written kernels get their ids at compile time.
pub const fn stable_hash(text: &str) -> u64 {
    fnv_extend(FNV_OFFSET, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_consing_and_commutative_canonical_form() {
        let mut g = Graph::new();
        let a = g.input(0);
        let b = g.input(1);
        let ab = g.apply(Op::Add, &[a, b]).unwrap();
        let ba = g.apply(Op::Add, &[b, a]).unwrap();
        assert_eq!(ab, ba);
        let s1 = g.apply(Op::Sub, &[a, b]).unwrap();
        let s2 = g.apply(Op::Sub, &[b, a]).unwrap();
        assert_ne!(s1, s2);
        assert_eq!(g.input(0), a);
        assert_eq!(g.len(), 5);
    }

    #[test]
    fn type_and_arity_errors() {
        let mut g = Graph::new();
        let a = g.input(0);
        let c = g.apply(Op::Lt, &[a, a]).unwrap();
        assert!(matches!(
            g.apply(Op::Add, &[a, c]),
            Err(ExprError::Type { position: 1, .. })
        ));
        assert!(matches!(
            g.apply(Op::Add, &[a]),
            Err(ExprError::Arity { .. })
        ));
        assert!(matches!(
            g.apply(Op::Neg, &[NodeId(99)]),
            Err(ExprError::UnknownNode(99))
        ));
    }

    #[test]
    fn extract_removes_dead_nodes_and_hash_is_stable() {
        let mut g = Graph::new();
        let a = g.input(0);
        let b = g.input(1);
        let dead = g.apply(Op::Mul, &[a, b]).unwrap();
        let _ = dead;
        let e = g.apply(Op::Exp, &[a]).unwrap();
        let (small, roots) = g.extract(&[e]);
        assert_eq!(small.len(), 2);
        assert_eq!(small.structural_hash(&roots), g.structural_hash(&[e]));
        let other = g.apply(Op::Ln, &[a]).unwrap();
        assert_ne!(g.structural_hash(&[other]), g.structural_hash(&[e]));
    }
}
