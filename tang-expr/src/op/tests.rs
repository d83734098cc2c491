//! Unit tests of the op table's columns.

use super::*;

#[test]
fn every_op_has_consistent_arity_types_and_wgsl() {
    for &op in ALL_OPS {
        assert_eq!(op.arg_types().count(), op.arity(), "{}", op.name());
        let args: Vec<String> = (0..op.arity()).map(|i| format!("a{i}")).collect();
        let text = op.wgsl(&args, "f32");
        assert!(
            !text.contains('{'),
            "{}: unfilled template {text}",
            op.name()
        );
        for a in &args {
            assert!(
                text.contains(a.as_str()),
                "{}: {a} unused in {text}",
                op.name()
            );
        }
    }
    let names: std::collections::BTreeSet<&str> = ALL_OPS.iter().map(|o| o.name()).collect();
    assert_eq!(names.len(), ALL_OPS.len(), "op names are unique");
}

#[test]
fn missing_arguments_read_as_nan() {
    assert!(Op::Add.eval::<f64>(&[1.0]).is_nan());
    assert!(Op::Exp.eval::<f32>(&[]).is_nan());
    assert_eq!(Op::Add.eval::<f64>(&[1.0, 2.0, 99.0]), 3.0);
}

#[test]
fn stable_forms_do_not_overflow() {
    for x in [-1e4f32, -100.0, 0.0, 100.0, 1e4] {
        for op in [
            Op::Sigmoid,
            Op::Softplus,
            Op::LogSigmoid,
            Op::Silu,
            Op::GeluTanh,
        ] {
            let v: f32 = op.eval(&[x]);
            assert!(v.is_finite(), "{}({x}) = {v}", op.name());
        }
    }
    let v: f64 = Op::LogAddExp.eval(&[1000.0, 999.0]);
    assert!((v - (1000.0 + (1.0 + (-1.0f64).exp()).ln())).abs() < 1e-12);
}

#[test]
fn rust_semantics_for_signum_round_clamp() {
    assert_eq!(Op::Signum.eval(&[0.0f32]), 1.0);
    assert_eq!(Op::Signum.eval(&[-0.0f32]), -1.0);
    assert_eq!(Op::Round.eval(&[2.5f32]), 3.0);
    assert_eq!(Op::Round.eval(&[-2.5f32]), -3.0);
    assert_eq!(Op::Clamp.eval(&[5.0f32, 0.0, 1.0]), 1.0);
    assert_eq!(Op::PowI(3).eval(&[-2.0f64]), -8.0);
}

/// `-2147483648i` is not a WGSL literal (a negated out-of-range one): the exponent
/// `i32::MIN` prints as a subtraction, and the shader validates.
#[test]
fn powi_of_i32_min_emits_valid_wgsl() {
    let text = Op::PowI(i32::MIN).wgsl(&["x".into()], "f32");
    assert_eq!(text, "tang_powi(x, (-2147483647i - 1i))");
    let mut g = Graph::new();
    let x = g.input(0);
    let y = g.apply(Op::PowI(i32::MIN), &[x]).unwrap();
    let k = crate::scalar_fn::emit_scalar_fn("f", &g, y).unwrap();
    assert!(k.contains("(-2147483647i - 1i)"));
    assert_eq!(Op::PowI(i32::MIN).eval(&[2.0f32]), 0.0);
}

/// Every op's WGSL, helpers included, validates in scalar form too (the elementwise
/// kernels use the vec4 form; epilogues and scalar functions this one). A scalar function
/// has one input: argument `k` is `x * (k + 1)`.
#[test]
fn every_op_emits_a_valid_scalar_function() {
    for &op in ALL_OPS {
        let mut g = Graph::new();
        let zero = g.constant(0.0);
        let args: Vec<NodeId> = op
            .arg_types()
            .enumerate()
            .map(|(k, t)| {
                let x = g.input(0);
                let scale = g.constant(k as f32 + 1.0);
                let x = g.apply(Op::Mul, &[x, scale]).unwrap();
                match t {
                    crate::ty::Ty::F32 => x,
                    crate::ty::Ty::Bool => g.apply(Op::Gt, &[x, zero]).unwrap(),
                }
            })
            .collect();
        let mut y = g.apply(op, &args).unwrap();
        if op.result_type() == crate::ty::Ty::Bool {
            let one = g.constant(1.0);
            y = g.apply(Op::Select, &[y, one, zero]).unwrap();
        }
        if let Err(e) = crate::scalar_fn::emit_scalar_fn("f", &g, y) {
            panic!("{}: {e}", op.name());
        }
    }
}
