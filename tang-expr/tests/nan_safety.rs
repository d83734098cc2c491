//! Derivatives through branches never leak a NaN from the side not taken, and kinks have
//! the conventional derivative: relu'(0) = 0, abs'(0) = 0.

use tang_expr::{
    Expr, FusedSpec, Graph, NodeId, Op, eval_f32, eval_f64, fused_grad_kernels, grad, jvp, select,
    trace,
};

/// f, f' and f'' at `x` (reverse over reverse), in f64 and f32.
fn derivatives(f: impl Fn(&[Expr]) -> Expr, x: f64) -> ([f64; 3], [f32; 3]) {
    let t = trace(1, f);
    t.check().unwrap();
    let mut g = t.graph;
    let y = t.outputs[0];
    let x0 = g.input(0);
    let d = grad(&mut g, y, &[x0]).unwrap()[0];
    let dd = grad(&mut g, d, &[x0]).unwrap()[0];
    let v64 = eval_f64(&g, &[y, d, dd], &[x], &[]).unwrap();
    let v32 = eval_f32(&g, &[y, d, dd], &[x as f32], &[]).unwrap();
    ([v64[0], v64[1], v64[2]], [v32[0], v32[1], v32[2]])
}

fn assert_exact(f: impl Fn(&[Expr]) -> Expr + Copy, x: f64, want_d: f64, want_dd: f64) {
    let (d64, d32) = derivatives(f, x);
    assert_eq!([d64[1], d64[2]], [want_d, want_dd], "f64 at {x}");
    assert_eq!(
        [d32[1] as f64, d32[2] as f64],
        [want_d, want_dd],
        "f32 at {x}"
    );
}

#[test]
fn untaken_branch_nan_does_not_leak() {
    let sqrt_branch = |v: &[Expr]| select(v[0].gt(0.0), v[0].sqrt(), 0.0);
    assert_exact(sqrt_branch, -1.0, 0.0, 0.0);
    assert_exact(sqrt_branch, 4.0, 0.25, -1.0 / 32.0);
    // the same value reached through two branches (its adjoint is a sum of routed terms)
    let twice = |v: &[Expr]| {
        let s = v[0].sqrt();
        select(v[0].gt(0.0), s, 0.0) + select(v[0].gt(1.0), s * 3.0, 0.0)
    };
    assert_exact(twice, -1.0, 0.0, 0.0);
    // log and reciprocal guarded by a branch, then further arithmetic above the branch
    let guarded = |v: &[Expr]| {
        let l = select(v[0].gt(0.0), v[0].ln(), 0.0);
        let r = select(v[0].ne(0.0), v[0].recip(), 1.0);
        (l * 2.0 + r).tanh()
    };
    assert_exact(guarded, 0.0, 0.0, 0.0);
    let (d, _) = derivatives(guarded, -2.0);
    assert!(d[1].is_finite() && d[2].is_finite());
}

#[test]
fn relu_and_abs_at_zero() {
    let relu_max = |v: &[Expr]| v[0].max(0.0);
    let relu_select = |v: &[Expr]| select(v[0].gt(0.0), v[0], 0.0);
    let min_form = |v: &[Expr]| -(-v[0]).min(0.0);
    let abs = |v: &[Expr]| v[0].abs();
    for f in [relu_max, relu_select, min_form] {
        assert_exact(f, 0.0, 0.0, 0.0);
        assert_exact(f, 2.0, 1.0, 0.0);
        assert_exact(f, -2.0, 0.0, 0.0);
    }
    assert_exact(abs, 0.0, 0.0, 0.0);
    assert_exact(abs, -3.0, -1.0, 0.0);
    // a tie between two equal expressions is not a kink: max(x, x) = x
    assert_exact(|v: &[Expr]| v[0].max(v[0]), 0.5, 1.0, 0.0);
}

#[test]
fn forward_mode_and_fused_kernels_are_safe_too() {
    let mut g = Graph::new();
    let x = g.input(0);
    let zero = g.constant(0.0);
    let one = g.constant(1.0);
    let c = g.apply(Op::Gt, &[x, zero]).unwrap();
    let s = g.apply(Op::Sqrt, &[x]).unwrap();
    let y = g.apply(Op::Select, &[c, s, zero]).unwrap();
    let t = jvp(&mut g, &[y], &[x], &[one]).unwrap();
    assert_eq!(eval_f64(&g, &t, &[-1.0], &[]).unwrap(), vec![0.0]);

    let k = fused_grad_kernels(&FusedSpec {
        name: "sqrt_branch".into(),
        graph: &g,
        inputs: vec!["x".into()],
        uniforms: vec![],
        outputs: vec![("y".into(), y)],
        wrt: vec![0],
    })
    .unwrap();
    assert_eq!(k.grad_at::<f32>(&[-1.0], &[]).unwrap(), vec![0.0, 0.0]);
    assert_eq!(k.vjp_at::<f32>(&[-1.0, 5.0], &[]).unwrap(), vec![0.0]);
    assert_eq!(k.grad_at::<f32>(&[4.0], &[]).unwrap(), vec![2.0, 0.25]);
    let unused: Vec<NodeId> = Vec::new();
    assert!(grad(&mut g, y, &unused).unwrap().is_empty());
}
