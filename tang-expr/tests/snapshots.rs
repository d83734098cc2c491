//! WGSL snapshots: the exact text of three representative kernels and of one applying
//! every op of the table, and the f16-storage variants of two, is pinned in
//! `tests/snapshots/*.wgsl`, so any change to code generation shows up in review.
//! Run with `TANG_BLESS=1` to rewrite the files after an intended change.

use std::path::PathBuf;

use tang_expr::{
    ALL_OPS, ElementwiseSpec, FusedSpec, Graph, Kernel, NodeId, Op, Ty, emit_elementwise,
    fused_grad_kernels, validate,
};

/// Pins `wgsl` as `tests/snapshots/<name>.wgsl`.
fn check_snapshot(name: &str, wgsl: &str) {
    validate(wgsl).expect("generated WGSL validates");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.wgsl"));
    if std::env::var_os("TANG_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, wgsl).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with TANG_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        want == wgsl,
        "{} changed; if intended, rerun with TANG_BLESS=1\n--- generated ---\n{wgsl}",
        path.display(),
    );
}

/// `y = a * x + b` with uniforms `a`, `b`.
fn axpb() -> Kernel {
    let mut g = Graph::new();
    let x = g.input(0);
    let a = g.uniform(0);
    let b = g.uniform(1);
    let y = g.apply(Op::MulAdd, &[a, x, b]).unwrap();
    emit_elementwise(&ElementwiseSpec {
        name: "axpb".into(),
        graph: &g,
        inputs: vec!["x".into()],
        uniforms: vec!["a".into(), "b".into()],
        inouts: vec![],
        outputs: vec![("y".into(), y)],
    })
    .unwrap()
}

/// SGD with momentum, updating `p` and `m` in place from the gradient `g`.
fn sgd_momentum() -> Kernel {
    let mut gr = Graph::new();
    let grad = gr.input(0);
    let p = gr.input(1);
    let m = gr.input(2);
    let lr = gr.uniform(0);
    let mu = gr.uniform(1);
    let m_new = gr.apply(Op::MulAdd, &[mu, m, grad]).unwrap();
    let step = gr.apply(Op::Mul, &[lr, m_new]).unwrap();
    let p_new = gr.apply(Op::Sub, &[p, step]).unwrap();
    emit_elementwise(&ElementwiseSpec {
        name: "sgd_momentum".into(),
        graph: &gr,
        inputs: vec!["g".into()],
        uniforms: vec!["lr".into(), "mu".into()],
        inouts: vec![("p".into(), p_new), ("m".into(), m_new)],
        outputs: vec![],
    })
    .unwrap()
}

/// GELU's fused value-and-gradient kernel.
fn gelu_grad() -> Kernel {
    let mut g = Graph::new();
    let x = g.input(0);
    let y = g.apply(Op::GeluTanh, &[x]).unwrap();
    fused_grad_kernels(&FusedSpec {
        name: "gelu".into(),
        graph: &g,
        inputs: vec!["x".into()],
        uniforms: vec![],
        outputs: vec![("y".into(), y)],
        wrt: vec![0],
    })
    .unwrap()
    .grad
}

/// Every op of the table (from `ALL_OPS`), one output each: the WGSL of every op and of
/// every helper function is pinned. Boolean arguments are `x > y`, a boolean result picks
/// between `x` and `y`.
fn all_ops() -> Kernel {
    let mut g = Graph::new();
    let (x, y, z) = (g.input(0), g.input(1), g.input(2));
    let c = g.apply(Op::Gt, &[x, y]).unwrap();
    let mut outputs = Vec::new();
    for &op in ALL_OPS {
        let args: Vec<NodeId> = op
            .arg_types()
            .zip([x, y, z])
            .map(|(t, v)| if t == Ty::Bool { c } else { v })
            .collect();
        let mut r = g.apply(op, &args).unwrap();
        if op.result_type() == Ty::Bool {
            r = g.apply(Op::Select, &[r, x, y]).unwrap();
        }
        outputs.push((op.name().to_string(), r));
    }
    emit_elementwise(&ElementwiseSpec {
        name: "all_ops".into(),
        graph: &g,
        inputs: vec!["x".into(), "y".into(), "z".into()],
        uniforms: vec![],
        inouts: vec![],
        outputs,
    })
    .unwrap()
}

#[test]
fn kernels_match_their_snapshots_and_are_deterministic() {
    for make in [axpb, sgd_momentum, gelu_grad, all_ops] {
        let k = make();
        assert_eq!(k, make(), "generating {} twice differs", k.name);
        check_snapshot(&k.name, &k.wgsl);
    }
    // The f16-storage variants of an out-of-place and an in-place kernel.
    for k in [axpb(), sgd_momentum()] {
        let f16 = k
            .wgsl_f16
            .as_deref()
            .expect("every kernel has an f16 variant");
        check_snapshot(&format!("{}_f16", k.name), f16);
    }
}
