//! Reverse mode on the shared DAG does not swell: the full gradient of a 200-node
//! expression of 64 inputs (value and all 64 partials together) stays within a small
//! multiple of the expression's size.

use tang_expr::{Graph, NodeId, Op, grad, simplify};

/// SplitMix64, seeded.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// A random DAG over 64 inputs: every input is used, values are reused (a DAG, not a
/// tree), and ops mix arithmetic, transcendental functions and branches.
fn expression(rng: &mut Rng) -> (Graph, NodeId, Vec<NodeId>) {
    let mut g = Graph::new();
    let inputs: Vec<NodeId> = (0..64).map(|i| g.input(i)).collect();
    let mut frontier = inputs.clone();
    let mut all = inputs.clone();
    let unary = [
        Op::Tanh,
        Op::Exp,
        Op::Sin,
        Op::Sigmoid,
        Op::Abs,
        Op::Softplus,
        Op::Neg,
    ];
    let binary = [Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::LogAddExp];
    let take = |rng: &mut Rng, frontier: &mut Vec<NodeId>, all: &[NodeId]| {
        if frontier.is_empty() || rng.below(8) == 0 {
            all[rng.below(all.len())]
        } else {
            frontier.swap_remove(rng.below(frontier.len()))
        }
    };
    while frontier.len() > 1 || g.count_reachable(&frontier) < 200 {
        let id = match rng.below(8) {
            0..=2 if frontier.len() == 1 || g.len() < 110 => {
                let a = take(rng, &mut frontier, &all);
                g.apply(unary[rng.below(unary.len())], &[a]).unwrap()
            }
            3 => {
                // relu-like branch: select(a > b, a, b * 0.1)
                let a = take(rng, &mut frontier, &all);
                let b = take(rng, &mut frontier, &all);
                let c = g.apply(Op::Gt, &[a, b]).unwrap();
                let k = g.constant(0.1);
                let s = g.apply(Op::Mul, &[b, k]).unwrap();
                g.apply(Op::Select, &[c, a, s]).unwrap()
            }
            _ => {
                let a = take(rng, &mut frontier, &all);
                let b = take(rng, &mut frontier, &all);
                g.apply(binary[rng.below(binary.len())], &[a, b]).unwrap()
            }
        };
        frontier.push(id);
        all.push(id);
    }
    (g, frontier[0], inputs)
}

#[test]
fn gradient_graph_is_a_small_multiple_of_the_expression() {
    let (mut g, y, xs) = expression(&mut Rng(42));
    let size = g.count_reachable(&[y]);
    assert!((200..=260).contains(&size), "expression has {size} nodes");
    assert_eq!(g.input_count(), 64);
    let grads = grad(&mut g, y, &xs).unwrap();
    let roots: Vec<NodeId> = std::iter::once(y).chain(grads).collect();
    let full = g.count_reachable(&roots);
    let (s, sr) = simplify(&g, &roots);
    let simplified = s.count_reachable(&sr);
    println!(
        "expression: {size} nodes, 64 inputs; value + full gradient: {full} nodes ({:.2}x), \
         {simplified} after simplify ({:.2}x)",
        full as f64 / size as f64,
        simplified as f64 / size as f64
    );
    assert!(
        full <= 4 * size,
        "{full} nodes for a {size}-node expression"
    );
    assert!(simplified <= full);
}
