//! Which selects the printer writes as `if`/`else` blocks.
//!
//! A `select` computes both of its arms. Where the condition depends on uniforms and
//! constants alone it is the same for every invocation, and an arm whose values nothing
//! else reads is work for nothing on the side not taken. The optimizers' exact
//! multiply-add is the case that pays: it computes the rounding errors of a product and a
//! sum (about thirty operations) to stand in for `fma` on devices whose `fma` is not
//! fused, and selects the plain `fma` where it is; as a select, every device computed
//! both, and Adam's update was bound by that arithmetic, not by memory. As a block on a
//! uniform condition, a device runs only the arm it takes.
//!
//! An arm's own nodes are the operations that no output reads and whose every user is
//! the arm's own or the select through that arm; leaves stay outside (they print no
//! statement, or read an input). A select inside another's arm is claimed by the inner
//! one first, so blocks nest.

use crate::graph::{Graph, Node, NodeId};
use crate::op::Op;

/// Fewest own operations (both arms together) for which a select becomes a block: a
/// short arm costs less than the branch around it, and leaving small selects alone keeps
/// the text of kernels that gain nothing as it was.
pub(crate) const MIN_OWN_OPS: usize = 8;

/// The blocks of a printed graph.
pub(crate) struct Branches {
    /// For each node: the select (and arm, `true` for the taken-if-true one) whose block
    /// computes it, or `None` for the body's top level.
    pub owner: Vec<Option<(usize, bool)>>,
    /// Whether each node is a select printed as a block.
    pub block: Vec<bool>,
}

impl Branches {
    /// Whether any select became a block.
    pub fn any(&self) -> bool {
        self.block.iter().any(|&b| b)
    }

    /// The nodes of `arm` of block `select` (`None`: the top level) among `live`, in
    /// node order.
    pub fn list(&self, live: &[bool], place: Option<(usize, bool)>) -> Vec<usize> {
        (0..self.owner.len())
            .filter(|&i| live[i] && self.owner[i] == place)
            .collect()
    }
}

/// The blocks of graph `g`'s `live` nodes, whose `roots` are read after the body.
pub(crate) fn find(g: &Graph, live: &[bool], roots: &[NodeId]) -> Branches {
    let n = g.len();
    let mut uniform = vec![false; n];
    let mut users: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    let mut read_after = vec![false; n];
    for r in roots {
        if let Some(flag) = read_after.get_mut(r.index()) {
            *flag = true;
        }
    }
    for id in g.ids() {
        let i = id.index();
        if !live.get(i).copied().unwrap_or(false) {
            continue;
        }
        let node = g.get(id);
        uniform[i] = match node {
            Node::Input(_) => false,
            Node::Uniform(_) | Node::Const(_) | Node::Bool(_) => true,
            Node::Apply(..) => node.args().iter().all(|a| uniform[a.index()]),
        };
        for (position, a) in node.args().iter().enumerate() {
            users[a.index()].push((i, position));
        }
    }
    let mut owner = vec![None; n];
    let mut block = vec![false; n];
    let mut own = vec![false; n];
    // Increasing ids: a select inside another's arm has the smaller id, so it claims
    // its own nodes before the outer one.
    for id in g.ids() {
        let s = id.index();
        if !live.get(s).copied().unwrap_or(false) || uniform[s] {
            continue;
        }
        let Node::Apply(Op::Select, args) = g.get(id) else {
            continue;
        };
        if !uniform[args[0].index()] {
            continue;
        }
        let mut arms: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
        for (arm, position) in [(0usize, 1usize), (1, 2)] {
            let top = args[position].index();
            // Users have larger ids than what they read: walking down from the arm's
            // value, each node's users are decided before it.
            for i in (0..=top).rev() {
                own[i] = live[i]
                    && matches!(g.get(NodeId(i as u32)), Node::Apply(..))
                    && !read_after[i]
                    && !users[i].is_empty()
                    && users[i]
                        .iter()
                        .all(|&(u, p)| (u == s && p == position) || (u < s && own[u]));
                if own[i] {
                    arms[arm].push(i);
                }
            }
            for &i in &arms[arm] {
                own[i] = false;
            }
        }
        if arms[0].len() + arms[1].len() < MIN_OWN_OPS {
            continue;
        }
        block[s] = true;
        for (arm, nodes) in arms.iter().enumerate() {
            for &i in nodes {
                if owner[i].is_none() {
                    owner[i] = Some((s, arm == 0));
                }
            }
        }
    }
    Branches { owner, block }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `select(u > 0, chain(x), x + 1)` with a uniform `u`: the chain is the true arm's
    /// own, `x + 1` the false arm's; a value the output also reads stays outside.
    #[test]
    fn arms_own_what_only_they_read() {
        let mut g = Graph::new();
        let x = g.input(0);
        let u = g.uniform(0);
        let zero = g.constant(0.0);
        let one = g.constant(1.0);
        let cond = g.apply(Op::Gt, &[u, zero]).unwrap();
        let shared = g.apply(Op::Mul, &[x, x]).unwrap();
        let mut v = shared;
        for _ in 0..MIN_OWN_OPS {
            v = g.apply(Op::Add, &[v, one]).unwrap();
        }
        let other = g.apply(Op::Add, &[x, one]).unwrap();
        let sel = g.apply(Op::Select, &[cond, v, other]).unwrap();
        let out = g.apply(Op::Add, &[sel, shared]).unwrap();
        let live = g.reachable(&[out]);
        let b = find(&g, &live, &[out]);
        assert!(b.block[sel.index()]);
        assert_eq!(b.owner[v.index()], Some((sel.index(), true)));
        assert_eq!(b.owner[other.index()], Some((sel.index(), false)));
        assert_eq!(b.owner[shared.index()], None, "read after the select too");
        assert_eq!(b.owner[cond.index()], None);
        assert_eq!(b.owner[x.index()], None, "leaves stay at the top level");
    }

    /// A condition that depends on an input varies between invocations: no block.
    #[test]
    fn a_varying_condition_stays_a_select() {
        let mut g = Graph::new();
        let x = g.input(0);
        let one = g.constant(1.0);
        let cond = g.apply(Op::Gt, &[x, one]).unwrap();
        let mut v = x;
        for _ in 0..2 * MIN_OWN_OPS {
            v = g.apply(Op::Mul, &[v, x]).unwrap();
        }
        let sel = g.apply(Op::Select, &[cond, v, one]).unwrap();
        let live = g.reachable(&[sel]);
        assert!(!find(&g, &live, &[sel]).any());
    }
}
