//! Shared helpers of the runtime tests: small kernels built with `tang_expr`; the devices
//! and the seeded generator come from `tang_testing`.

#![allow(dead_code)]

use tang_expr::{ElementwiseSpec, Graph, KernelDesc, NodeId, Op, emit_elementwise};
pub use tang_testing::{devices, random};

/// Builds an elementwise kernel from a graph-building closure.
pub fn kernel(
    name: &str,
    inputs: &[&str],
    uniforms: &[&str],
    inouts: &[&str],
    outputs: &[&str],
    build: impl FnOnce(&mut Graph) -> Vec<NodeId>,
) -> &'static KernelDesc {
    let mut g = Graph::new();
    let roots = build(&mut g);
    let io = inouts.len();
    let spec = ElementwiseSpec {
        name: name.into(),
        graph: &g,
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        uniforms: uniforms.iter().map(|s| s.to_string()).collect(),
        inouts: inouts
            .iter()
            .zip(&roots[..io])
            .map(|(s, &r)| (s.to_string(), r))
            .collect(),
        outputs: outputs
            .iter()
            .zip(&roots[io..])
            .map(|(s, &r)| (s.to_string(), r))
            .collect(),
    };
    emit_elementwise(&spec).expect("valid test kernel").leak()
}

/// `out = x + y`.
pub fn add() -> &'static KernelDesc {
    kernel("add", &["x", "y"], &[], &[], &["out"], |g| {
        let (x, y) = (g.input(0), g.input(1));
        vec![g.apply(Op::Add, &[x, y]).unwrap()]
    })
}

/// `out = a * x + y` with uniform `a`.
///
/// GPU drivers may fuse `a * x + y` into one fused multiply-add (SPIR-V allows it unless an
/// operation is marked `NoContraction`; NVIDIA's driver does it), which rounds once where
/// the CPU rounds twice. Tests that compare exactly therefore use inputs whose product is
/// exact ([`coarse`] values times a few-bit `a`): both roundings then agree.
pub fn axpy() -> &'static KernelDesc {
    kernel("axpy", &["x", "y"], &["a"], &[], &["out"], |g| {
        let (x, y, a) = (g.input(0), g.input(1), g.uniform(0));
        let ax = g.apply(Op::Mul, &[a, x]).unwrap();
        vec![g.apply(Op::Add, &[ax, y]).unwrap()]
    })
}

/// In place: `p = p - lr * g` (exact tests use a power-of-two `lr`: see [`axpy`]).
pub fn sgd() -> &'static KernelDesc {
    kernel("sgd", &["g"], &["lr"], &["p"], &[], |gr| {
        let (grad, lr, p) = (gr.input(0), gr.uniform(0), gr.input(1));
        let step = gr.apply(Op::Mul, &[lr, grad]).unwrap();
        vec![gr.apply(Op::Sub, &[p, step]).unwrap()]
    })
}

/// Two outputs: `s = x + y`, `d = x - y`.
pub fn sum_diff() -> &'static KernelDesc {
    kernel("sum_diff", &["x", "y"], &[], &[], &["s", "d"], |g| {
        let (x, y) = (g.input(0), g.input(1));
        vec![
            g.apply(Op::Add, &[x, y]).unwrap(),
            g.apply(Op::Sub, &[x, y]).unwrap(),
        ]
    })
}

/// Seeded values in [-2, 2] that are multiples of 1/64 (at most 8 significant bits), so
/// their product with a few-bit factor is exact in f32 (see [`axpy`]).
pub fn coarse(n: usize, seed: u64) -> Vec<f32> {
    random(n, seed)
        .into_iter()
        .map(|v| (v * 128.0).round() / 64.0)
        .collect()
}
