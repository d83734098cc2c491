//! Property tests over randomly generated expressions (seeded, so every run checks the
//! same ones):
//!
//! - simplification never changes a finite value (f64 and f32 evaluation, exactly);
//! - reverse and forward mode agree with each other;
//! - both agree with central finite differences in f64 (Richardson-extrapolated), at
//!   points away from kinks and branch switches;
//! - second derivatives (reverse over reverse) agree with finite differences of the
//!   gradient.
//!
//! `stop_gradient` is honoured by the finite differences too: its value is frozen at the
//! base point, so the difference quotient measures the derivative the IR defines.

use std::collections::BTreeSet;

use tang_expr::{ALL_OPS, Graph, Node, NodeId, Op, Ty, eval_f32, eval_f64, grad, jvp, simplify};

/// SplitMix64: small, seeded, deterministic.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

const CONSTANTS: [f32; 10] = [0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -0.25, 1.5, -2.0, 0.1];
const UNIFORM: f64 = 0.75;

/// Builds random expressions over `n` inputs and one uniform.
struct Gen<'a> {
    rng: &'a mut Rng,
    g: Graph,
    n: u32,
    used: &'a mut BTreeSet<&'static str>,
}

impl Gen<'_> {
    fn leaf(&mut self) -> NodeId {
        let r = self.rng.unit();
        if r < 0.72 {
            let i = self.rng.below(self.n as usize) as u32;
            self.g.input(i)
        } else if r < 0.78 {
            self.g.uniform(0)
        } else {
            let c = CONSTANTS[self.rng.below(CONSTANTS.len())];
            self.g.constant(c)
        }
    }

    fn apply(&mut self, op: Op, depth: u32) -> NodeId {
        let args: Vec<NodeId> = op
            .arg_types()
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| match t {
                Ty::F32 => self.float(depth - 1),
                Ty::Bool => self.boolean(depth - 1),
            })
            .collect();
        self.used.insert(op.name());
        self.g
            .apply(op, &args)
            .expect("generated expressions are well typed")
    }

    fn float(&mut self, depth: u32) -> NodeId {
        if depth == 0 || self.rng.unit() < 0.15 {
            return self.leaf();
        }
        let ops: Vec<Op> = ALL_OPS
            .iter()
            .copied()
            .filter(|o| o.result_type() == Ty::F32)
            .collect();
        let mut op = ops[self.rng.below(ops.len())];
        if let Op::PowI(_) = op {
            op = Op::PowI(self.rng.below(7) as i32 - 2);
        }
        self.apply(op, depth)
    }

    fn boolean(&mut self, depth: u32) -> NodeId {
        let ops: Vec<Op> = ALL_OPS
            .iter()
            .copied()
            .filter(|o| o.result_type() == Ty::Bool)
            .filter(|o| depth > 1 || o.arg_types().all(|t| t == Ty::F32))
            .collect();
        let op = ops[self.rng.below(ops.len())];
        self.apply(op, depth.max(1))
    }
}

/// Evaluates every node of `g` in f64; `StopGradient` nodes take their value from
/// `frozen` when given (the base point's values).
fn values(g: &Graph, x: &[f64], frozen: Option<&[f64]>) -> Vec<f64> {
    let mut v: Vec<f64> = Vec::with_capacity(g.len());
    for (i, node) in g.nodes().iter().enumerate() {
        let val = match *node {
            Node::Input(k) => x[k as usize],
            Node::Uniform(_) => UNIFORM,
            Node::Const(bits) => f32::from_bits(bits) as f64,
            Node::Bool(b) => b as u8 as f64,
            Node::Apply(Op::StopGradient, a) if frozen.is_some() => {
                frozen.map_or(v[a[0].index()], |f| f[i])
            }
            Node::Apply(op, a) => {
                let args: Vec<f64> = a[..op.arity()].iter().map(|id| v[id.index()]).collect();
                op.eval(&args)
            }
        };
        v.push(val);
    }
    v
}

/// Every discrete decision the graph makes at a point: branch conditions, which side of
/// a kink, the integer part of rounding ops. Equal signatures at `x` and around it mean
/// the function is smooth there, so finite differences are meaningful.
fn signature(g: &Graph, v: &[f64]) -> Option<Vec<i64>> {
    let cmp = |a: f64, b: f64| (a > b) as i64 - (a < b) as i64;
    let mut s = Vec::new();
    for node in g.nodes() {
        let Node::Apply(op, a) = *node else { continue };
        let x = |k: usize| v[a[k].index()];
        match op {
            Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Eq | Op::Ne | Op::And | Op::Or | Op::Not => s
                .push(
                    op.eval::<f64>(
                        &a[..op.arity()]
                            .iter()
                            .map(|id| v[id.index()])
                            .collect::<Vec<_>>(),
                    ) as i64,
                ),
            Op::Floor | Op::Ceil | Op::Round | Op::Trunc | Op::Signum => {
                s.push(op.eval::<f64>(&[x(0)]) as i64)
            }
            Op::Abs | Op::Powf | Op::Sqrt | Op::Ln | Op::Log2 | Op::Recip => s.push(cmp(x(0), 0.0)),
            // With a NaN argument WGSL leaves min/max/clamp undefined, and so their
            // derivative: no finite difference is taken at such points.
            Op::Min | Op::Max | Op::Clamp
                if a[..op.arity()].iter().any(|id| v[id.index()].is_nan()) =>
            {
                return None;
            }
            Op::Min | Op::Max | Op::LogAddExp => s.push(cmp(x(0), x(1))),
            Op::Clamp => {
                s.push(cmp(x(0), x(1)));
                s.push(cmp(x(0), x(2)));
            }
            Op::Tan => s.push((x(0) / std::f64::consts::PI).round() as i64),
            _ => {}
        }
    }
    Some(s)
}

/// The derivative of `root` along input `i` at `x` by Richardson-extrapolated central
/// differences, or `None` where that is not trustworthy (a branch switches nearby, a
/// value is not finite, or two step sizes disagree).
fn finite_difference(g: &Graph, root: NodeId, x: &[f64], i: usize, frozen: &[f64]) -> Option<f64> {
    let base = signature(g, &values(g, x, Some(frozen)))?;
    let at = |d: f64| -> Option<f64> {
        let mut p = x.to_vec();
        p[i] += d;
        let v = values(g, &p, Some(frozen));
        (signature(g, &v).as_ref() == Some(&base) && v[root.index()].is_finite())
            .then_some(v[root.index()])
    };
    let h = 1e-3;
    let central = |h: f64| -> Option<f64> { Some((at(h)? - at(-h)?) / (2.0 * h)) };
    let (d1, d2, d3) = (central(h)?, central(h / 2.0)?, central(h / 4.0)?);
    let r1 = (4.0 * d2 - d1) / 3.0;
    let r2 = (4.0 * d3 - d2) / 3.0;
    (r1.is_finite() && (r1 - r2).abs() <= 1e-9 + 1e-8 * r2.abs()).then_some(r2)
}

fn agrees(ad: f64, fd: f64) -> bool {
    (ad - fd).abs() <= 1e-8 || (ad - fd).abs() <= 1e-6 * fd.abs()
}

/// The expression at `id` as an S-expression (for failure messages).
fn show(g: &Graph, id: NodeId) -> String {
    match g.nodes()[id.index()] {
        Node::Input(i) => format!("x{i}"),
        Node::Uniform(j) => format!("u{j}"),
        Node::Const(bits) => format!("{:?}", f32::from_bits(bits)),
        Node::Bool(b) => b.to_string(),
        Node::Apply(op, a) => {
            let args: Vec<String> = a[..op.arity()].iter().map(|&x| show(g, x)).collect();
            format!("({:?} {})", op, args.join(" "))
        }
    }
}

#[derive(Default, Debug)]
struct Counts {
    expressions: usize,
    simplify_compared: usize,
    rev_fwd_compared: usize,
    fd_checked: usize,
    second_order_checked: usize,
    failures: Vec<String>,
}

fn check_expression(rng: &mut Rng, used: &mut BTreeSet<&'static str>, c: &mut Counts) {
    let n = 1 + rng.below(4) as u32;
    let depth = 2 + rng.below(4) as u32;
    let mut gen_ = Gen {
        rng,
        g: Graph::new(),
        n,
        used,
    };
    let y = gen_.float(depth);
    let mut g = gen_.g;
    let rng = gen_.rng;
    c.expressions += 1;
    let desc = |g: &Graph| show(g, y);

    let xs: Vec<NodeId> = (0..n).map(|i| g.input(i)).collect();
    let grads = grad(&mut g, y, &xs).expect("grad");
    let zero = g.constant(0.0);
    let one = g.constant(1.0);
    let fwd: Vec<NodeId> = (0..n as usize)
        .map(|i| {
            let t: Vec<NodeId> = (0..n as usize)
                .map(|k| if k == i { one } else { zero })
                .collect();
            jvp(&mut g, &[y], &xs, &t).expect("jvp")[0]
        })
        .collect();
    let hess: Vec<Vec<NodeId>> = grads
        .iter()
        .map(|&d| grad(&mut g, d, &xs).expect("second order"))
        .collect();

    // Simplification of the expression and of its derivatives keeps every finite value.
    let roots: Vec<NodeId> = std::iter::once(y).chain(grads.iter().copied()).collect();
    let (h, hr) = simplify(&g, &roots);
    let points: Vec<Vec<f64>> = (0..6)
        .map(|_| (0..n).map(|_| rng.unit() * 5.0 - 2.5).collect())
        .collect();
    for p in &points {
        let u = [UNIFORM];
        let want = eval_f64(&g, &roots, p, &u).expect("eval");
        let got = eval_f64(&h, &hr, p, &u).expect("eval simplified");
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        let want32 = eval_f32(&g, &roots, &p32, &[UNIFORM as f32]).expect("eval");
        let got32 = eval_f32(&h, &hr, &p32, &[UNIFORM as f32]).expect("eval simplified");
        for k in 0..roots.len() {
            if want[k].is_finite() {
                c.simplify_compared += 1;
                if got[k] != want[k] {
                    c.failures.push(format!(
                        "simplify f64 root {k} at {p:?}: {} vs {}: {}",
                        got[k],
                        want[k],
                        desc(&g)
                    ));
                }
            }
            if want32[k].is_finite() && got32[k] != want32[k] {
                c.failures.push(format!(
                    "simplify f32 root {k} at {p:?}: {} vs {}",
                    got32[k], want32[k]
                ));
            }
        }
    }

    let mut fd_done = false;
    let mut second_done = false;
    for p in &points {
        let base = values(&g, p, None);
        if !base[y.index()].is_finite() {
            continue;
        }
        let rev: Vec<f64> = grads.iter().map(|d| base[d.index()]).collect();
        let fw: Vec<f64> = fwd.iter().map(|d| base[d.index()]).collect();
        for (r, f) in rev.iter().zip(&fw) {
            if r.is_finite() && f.is_finite() {
                c.rev_fwd_compared += 1;
                if (r - f).abs() > 1e-12 + 1e-9 * r.abs().max(f.abs()) {
                    c.failures
                        .push(format!("reverse {r} vs forward {f} at {p:?}: {}", desc(&g)));
                }
            }
        }
        if !fd_done && rev.iter().all(|r| r.is_finite()) {
            let fds: Option<Vec<f64>> = (0..n as usize)
                .map(|i| finite_difference(&g, y, p, i, &base))
                .collect();
            if let Some(fds) = fds {
                fd_done = true;
                if rev.iter().any(|&r| r != 0.0) {
                    c.fd_checked += 1;
                }
                for (i, (ad, fd)) in rev.iter().zip(&fds).enumerate() {
                    if !agrees(*ad, *fd) {
                        c.failures.push(format!(
                            "d/dx{i}: AD {ad} vs FD {fd} at {p:?}: {}",
                            desc(&g)
                        ));
                    }
                }
            }
        }
        if !second_done {
            let hv: Vec<Vec<f64>> = hess
                .iter()
                .map(|row| row.iter().map(|d| base[d.index()]).collect())
                .collect();
            if hv.iter().flatten().all(|v| v.is_finite()) {
                let fds: Option<Vec<Vec<f64>>> = grads
                    .iter()
                    .map(|&d| {
                        (0..n as usize)
                            .map(|j| finite_difference(&g, d, p, j, &base))
                            .collect()
                    })
                    .collect();
                if let Some(fds) = fds {
                    second_done = true;
                    if hv.iter().flatten().any(|&v| v != 0.0) {
                        c.second_order_checked += 1;
                    }
                    for (i, (row, frow)) in hv.iter().zip(&fds).enumerate() {
                        for (j, (ad, fd)) in row.iter().zip(frow).enumerate() {
                            if !agrees(*ad, *fd) {
                                c.failures.push(format!(
                                    "d2/dx{i}dx{j}: AD {ad} vs FD {fd} at {p:?}: {}",
                                    desc(&g)
                                ));
                            }
                        }
                    }
                }
            }
        }
        if fd_done && second_done {
            break;
        }
    }
}

#[test]
fn random_expressions_simplify_and_differentiate_correctly() {
    // TANG_PROP_SEED explores other expression sets; the default pins the checked one.
    let seed = std::env::var("TANG_PROP_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7a9_2024);
    let mut rng = Rng(seed);
    let mut used = BTreeSet::new();
    let mut c = Counts::default();
    while c.expressions < 3000 {
        check_expression(&mut rng, &mut used, &mut c);
    }
    println!(
        "{} expressions: {} simplified values compared, {} reverse/forward pairs, \
         {} expressions checked against finite differences, {} second-order",
        c.expressions,
        c.simplify_compared,
        c.rev_fwd_compared,
        c.fd_checked,
        c.second_order_checked
    );
    for f in c.failures.iter().take(10) {
        println!("FAIL {f}");
    }
    assert!(c.failures.is_empty(), "{} failures", c.failures.len());
    let missing: Vec<&str> = ALL_OPS
        .iter()
        .map(|o| o.name())
        .filter(|n| !used.contains(n))
        .collect();
    assert!(missing.is_empty(), "ops never generated: {missing:?}");
    assert!(c.fd_checked >= 1000, "{c:?}");
    assert!(c.second_order_checked >= 100, "{c:?}");
}
