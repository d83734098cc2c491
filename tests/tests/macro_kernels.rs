//! The kernel library compiled by the macros, on the CPU: every shader passes naga, every
//! lowered graph computes what the Rust function computes, and every CPU twin of GRAD and
//! VJP matches central finite differences taken in f64.

use tang_tests::kernels::table::{FusedCase, fused_cases, optimizer_descs};
use tang_tests::{Rng, close};

#[test]
fn at_least_25_kernels_and_every_shader_passes_naga() {
    let cases = fused_cases();
    let mut descs: Vec<_> = cases.iter().flat_map(|c| c.descs).collect();
    descs.extend(optimizer_descs());
    let kernels = cases.len() + optimizer_descs().len();
    assert!(kernels >= 25, "only {kernels} kernels");
    for d in descs {
        tang_expr::validate(d.wgsl()).unwrap_or_else(|e| panic!("{}: {e}", d.name()));
        assert_eq!(d.id(), tang_expr::stable_hash(d.wgsl()), "{}", d.name());
        assert!(d.is_trusted(), "{}: macro kernels run trusted", d.name());
    }
}

/// A few fixed points plus random ones, per input.
fn points(c: &FusedCase, rng: &mut Rng) -> Vec<Vec<f32>> {
    let fixed = [0.3f32, -0.7, 1.9, -2.6, 4.1, -4.4];
    let mut pts: Vec<Vec<f32>> = fixed
        .iter()
        .map(|&x| (0..c.inputs).map(|k| x * (1.0 - 0.37 * k as f32)).collect())
        .collect();
    for _ in 0..60 {
        pts.push((0..c.inputs).map(|_| rng.range_f32(-5.0, 5.0)).collect());
    }
    pts
}

/// Central difference of output `o` in input `i` at `x`, in f64; `None` at a kink (the
/// one-sided slopes disagree), where the derivative is a convention, not a limit.
fn central(c: &FusedCase, x: &[f32], o: usize, i: usize) -> Option<f64> {
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let h = 1e-5 * x64[i].abs().max(1.0);
    let at = |d: f64| {
        let mut p = x64.clone();
        p[i] += d;
        (c.value_f64)(&p)[o]
    };
    let (lo, mid, hi) = (at(-h), at(0.0), at(h));
    let (left, right) = ((mid - lo) / h, (hi - mid) / h);
    if (left - right).abs() > 1e-3 * (1.0 + left.abs()) {
        return None;
    }
    Some((hi - lo) / (2.0 * h))
}

#[test]
fn lowered_graph_computes_the_rust_function() {
    let mut rng = Rng::new(1);
    for c in fused_cases() {
        for x in points(&c, &mut rng) {
            let want = (c.value)(&x);
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let f64v = (c.value_f64)(&x64);
            let (twin, _) = (c.grad)(&x);
            for o in 0..c.outputs {
                assert!(
                    close(f64v[o], want[o] as f64, 1e-6, 1e-5),
                    "{} at {x:?}: f64 graph {} vs Rust {}",
                    c.name,
                    f64v[o],
                    want[o]
                );
                assert!(
                    close(twin[o] as f64, want[o] as f64, 1e-6, 1e-5),
                    "{} at {x:?}: f32 twin {} vs Rust {}",
                    c.name,
                    twin[o],
                    want[o]
                );
            }
        }
    }
}

#[test]
fn grad_and_vjp_twins_match_finite_differences() {
    let mut rng = Rng::new(2);
    let mut checked = 0;
    for c in fused_cases() {
        let n = c.wrt.len();
        for x in points(&c, &mut rng) {
            let (_, partials) = (c.grad)(&x);
            assert_eq!(partials.len(), c.outputs * n, "{}", c.name);
            let g: Vec<f32> = (0..c.outputs).map(|_| rng.range_f32(-2.0, 2.0)).collect();
            let vjp = (c.vjp)(&x, &g);
            assert_eq!(vjp.len(), n, "{}", c.name);
            for (k, &i) in c.wrt.iter().enumerate() {
                let mut want_vjp = Some(0.0);
                for o in 0..c.outputs {
                    let got = partials[o * n + k] as f64;
                    match central(&c, &x, o, i) {
                        Some(fd) => {
                            assert!(
                                close(got, fd, 2e-5, 2e-4),
                                "{}: d out{o} / d in{i} at {x:?}: twin {got}, finite difference {fd}",
                                c.name
                            );
                            checked += 1;
                            want_vjp = want_vjp.map(|s| s + g[o] as f64 * fd);
                        }
                        None => want_vjp = None,
                    }
                }
                if let Some(want) = want_vjp {
                    assert!(
                        close(vjp[k] as f64, want, 5e-5, 5e-4),
                        "{}: vjp[{k}] at {x:?} with g {g:?}: {} vs {want}",
                        c.name,
                        vjp[k]
                    );
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} partials checked");
}

#[test]
fn in_place_kernels_update_like_the_rust_function() {
    use tang_tests::kernels::{adam, adamw, sgd_momentum};
    let (mut p, mut m, mut v) = (1.0f32, 0.0f32, 0.0f32);
    adam(
        &mut p, &mut m, &mut v, 0.5, 0.1, 0.9, 0.999, 1e-8, 0.1, 0.001,
    );
    // First Adam step moves by lr in the gradient's direction (bias-corrected).
    assert!(close(p as f64, 0.9, 1e-6, 0.0), "{p}");
    let (mut p, mut m, mut v) = (1.0f32, 0.0f32, 0.0f32);
    adamw(
        &mut p, &mut m, &mut v, 0.5, 0.1, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.001,
    );
    assert!(close(p as f64, 0.999 - 0.1, 1e-6, 0.0), "{p}");
    let (mut p, mut b) = (1.0f32, 0.5f32);
    sgd_momentum(&mut p, &mut b, 1.0, 0.1, 0.9, 0.0);
    assert_eq!((p, b), (1.0 - 0.1 * 1.45, 1.45));
    assert_eq!(adam::KERNEL.inouts, &["p", "m", "v"]);
    assert_eq!(adamw::KERNEL.uniforms.len(), 7);
}
