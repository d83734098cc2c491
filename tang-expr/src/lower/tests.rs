//! Unit tests of the lowering, driven with token streams as the macros receive them.

use std::str::FromStr;

use proc_macro2::TokenStream;

use super::body::{FnTable, Lowerer};
use super::{Mode, compile_kernel, expand_kernel, expand_kernels};
use crate::eval::eval_f32;

fn ts(s: &str) -> TokenStream {
    TokenStream::from_str(s).unwrap()
}

fn errors_of(src: &str, mode: Mode) -> Vec<String> {
    match compile_kernel(TokenStream::new(), ts(src), mode) {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

/// Lowers `src` (a function with by-value inputs) and evaluates its outputs at `inputs`.
fn run(src: &str, inputs: &[f32]) -> Vec<f32> {
    let f: syn::ItemFn = syn::parse2(ts(src)).unwrap();
    let mut errors = super::errors::Errors::default();
    let sig = super::sig::check_signature(&f.sig, &Mode::Kernel, &[], &mut errors);
    let fns = FnTable::new();
    let mut lw = Lowerer::new("f", &fns);
    let out = lw.kernel_body(&sig.params, &sig.rejected, sig.ret, &f.block);
    assert!(lw.errors.is_empty() && errors.is_empty());
    // Every node remembers where it came from.
    assert!(lw.spans.len() == lw.g.len() && lw.spans.iter().all(Option::is_some));
    let roots: Vec<_> = out.inouts.iter().chain(&out.outputs).copied().collect();
    eval_f32(&lw.g, &roots, inputs, &[]).unwrap()
}

#[test]
fn every_error_of_a_function_is_reported_at_once() {
    let errs = errors_of(
        "fn f(x: f32, #[uniform] lr: f32) -> f32 {
            let y = x.log10();
            lr = 2.0;
            while y > 0.0 {}
            y
        }",
        Mode::Kernel,
    );
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert!(errs[0].contains("unknown method `log10`"));
    assert!(errs[1].contains("uniform"));
    assert!(errs[2].contains("`while`"));
}

#[test]
fn on_error_the_function_is_reemitted_without_uniform_markers() {
    let out = expand_kernel(
        TokenStream::new(),
        ts("fn f(x: f32, #[uniform] s: f32) -> f32 { x % s }"),
        Mode::Kernel,
    )
    .to_string();
    assert!(out.contains("fn f (x : f32 , s : f32)"), "{out}");
    assert!(out.contains("compile_error"), "{out}");
    assert!(!out.contains("mod f"), "{out}");
}

#[test]
fn statements_assignments_and_branches_lower_to_the_right_values() {
    let src = "fn f(x: f32, y: f32) -> (f32, f32) {
        let x = x * 2.0;
        let mut acc = 0.0;
        for i in 0..3 {
            if i == 1 { acc += 10.0; } else { acc += i as f32; }
        }
        let mut z = y;
        if x > 1.0 { z = -z; } else if x < -1.0 { z *= 3.0; }
        (acc + x, if z > 0.0 { z } else { z.abs() + 100.0 })
    }";
    assert_eq!(run(src, &[1.0, 2.0]), vec![14.0, 102.0]);
    assert_eq!(run(src, &[-1.0, 2.0]), vec![10.0, 6.0]);
    assert_eq!(run(src, &[0.0, 2.0]), vec![12.0, 2.0]);
}

#[test]
fn in_place_parameters_read_and_write_through_deref() {
    let src = "fn f(p: &mut f32, g: f32) { *p -= 0.5 * g; *p *= 2.0; }";
    // Element inputs come first, then the in-out values: (g, p).
    assert_eq!(run(src, &[1.0, 3.0]), vec![5.0]);
}

#[test]
fn constant_conditions_pick_a_branch_without_select() {
    let wgsl = |src: &str| {
        compile_kernel(TokenStream::new(), ts(src), Mode::Kernel)
            .unwrap()
            .kernels
            .remove(0)
            .wgsl
    };
    // The unrolled counter makes `i == 2` a constant: the same shader as no branch at all.
    let unrolled = wgsl(
        "fn f(x: f32) -> f32 { let mut a = x; for i in 0..4 { if i == 2 { a = a.exp(); } } a }",
    );
    assert_eq!(unrolled, wgsl("fn f(x: f32) -> f32 { x.exp() }"));
}

#[test]
fn names_follow_the_signature() {
    let done = compile_kernel(
        TokenStream::new(),
        ts("fn f(a: f32, #[uniform] s: f32, b: f32) -> (f32, f32) { (a * s, b) }"),
        Mode::FusedGrad,
    )
    .unwrap();
    let [value, grad, vjp] = &done.kernels[..] else {
        panic!("three kernels expected");
    };
    assert_eq!(value.inputs, ["a", "b"]);
    assert_eq!(value.uniforms, ["s"]);
    assert_eq!(value.outputs, ["out0", "out1"]);
    assert_eq!(
        grad.outputs,
        [
            "out0", "out1", "d_out0_a", "d_out0_b", "d_out1_a", "d_out1_b"
        ]
    );
    assert_eq!(vjp.inputs, ["a", "b", "g_out0", "g_out1"]);
    assert_eq!(vjp.outputs, ["grad_a", "grad_b"]);
}

#[test]
fn calls_inline_and_recursion_is_caught_through_other_functions() {
    let out = expand_kernels(
        TokenStream::new(),
        ts("mod m {
            fn sq(x: f32) -> f32 { x * x }
            fn ping(x: f32) -> f32 { pong(x) }
            fn pong(x: f32) -> f32 { ping(x) }
            #[kernel] pub fn good(x: f32) -> f32 { sq(x) + 1.0 }
            #[kernel] pub fn bad(x: f32) -> f32 { ping(x) }
        }"),
    )
    .to_string();
    assert!(out.contains("pub mod good"), "{out}");
    assert!(!out.contains("pub mod bad"), "{out}");
    assert!(
        out.contains("recursion is not supported: `ping` calls itself"),
        "{out}"
    );
    assert!(!out.contains("# [kernel]"), "{out}");
}

#[test]
fn name_clashes_and_misuse_are_errors_not_panics() {
    // `out` is a parameter: the output takes the next free name.
    let done = compile_kernel(
        TokenStream::new(),
        ts("fn f(out: f32) -> f32 { out }"),
        Mode::Kernel,
    )
    .unwrap();
    assert_eq!(done.kernels[0].outputs, ["out_"]);
    // A clash left (the VJP's output `grad_x` and the parameter `grad_x`) is an error.
    let errs = errors_of(
        "fn f(x: f32, grad_x: f32) -> f32 { x * grad_x }",
        Mode::FusedGrad,
    );
    assert!(
        errs[0].contains("`grad_x` cannot name a kernel buffer"),
        "{errs:?}"
    );
    let errs = errors_of("fn f(x: f32, y: f32) -> f32 { x }", Mode::Kernel);
    assert!(errs.is_empty(), "{errs:?}");
    let errs = errors_of("fn f(x: f32) -> f32 { (x > 0.0) + 1.0 }", Mode::Kernel);
    assert!(errs[0].contains("found a condition"), "{errs:?}");
    let errs = errors_of(
        "fn f(x: f32) -> f32 { for i in 0..100000 {} x }",
        Mode::Kernel,
    );
    assert!(errs[0].contains("iterations"), "{errs:?}");
    let errs = errors_of("struct S;", Mode::FusedGrad);
    assert!(
        errs[0].contains("`#[fused_grad]` applies to a function"),
        "{errs:?}"
    );
}

#[test]
fn output_is_deterministic_and_ids_are_stable() {
    let src = "fn f(x: f32) -> f32 { if x > 0.0 { x.ln() } else { x.sigmoid() } }";
    let a = compile_kernel(TokenStream::new(), ts(src), Mode::FusedGrad).unwrap();
    let b = compile_kernel(TokenStream::new(), ts(src), Mode::FusedGrad).unwrap();
    assert_eq!(a.tokens.to_string(), b.tokens.to_string());
    for k in &a.kernels {
        assert_eq!(k.id, crate::stable_hash(&k.wgsl));
    }
}
