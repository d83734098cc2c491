//! Every op of the table on the GPU (the software adapter in CI), from `ALL_OPS` alone:
//!
//! - accuracy: on arguments in `[-10, 10]` (uniform, and log-uniform magnitudes down to
//!   1e-6 where `exp_m1`, `ln_1p`, `sinh`, `asinh`, ... lose digits in naive forms) the GPU
//!   and the f32 CPU evaluation are within the op's stated [`Accuracy`] of the f64
//!   reference (whose conditioning term, for `tan`, takes the derivative from the op's
//!   own partials), or within it of the reference at an argument one ulp away;
//! - extreme arguments (±0, ±1e-6, ±1, ±20, ±1e4, ±f32::MAX, ±inf, NaN, every pair of them
//!   for binary ops): the GPU gives what the CPU twin gives, NaN and infinities and the
//!   sign of zero included, within the same bound;
//! - exact values at the corners the issue names (erf at ±inf and NaN, atan2 at ±0 and
//!   ±inf, exp_m1 and ln_1p near 0) and PyTorch's exact GELU and its gradient.
//!
//! Subnormal arguments have a test of their own: GPUs may flush them to zero, and the
//! result must then be the twin's at the flushed arguments.
//!
//! Run on a real GPU with `cargo test --release -p tang-tests --test op_table_gpu`.

use tang_expr::{ALL_OPS, ElementwiseSpec, Graph, NodeId, Op, Ty, emit_elementwise, eval_batch};
use tang_runtime::{Device, Tensor};
use tang_tests::{Rng, neighbours};

const EXTREMES: [f32; 16] = [
    0.0,
    -0.0,
    1e-6,
    -1e-6,
    1.0,
    -1.0,
    0.5,
    20.0,
    -20.0,
    1e4,
    -1e4,
    f32::MAX,
    f32::MIN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
];

/// `op` applied to inputs `x0, x1, x2` as a float-valued graph: boolean arguments are
/// `x_k > 0`, a boolean result becomes `select(r, 1, -1)`.
fn op_graph(op: Op) -> (Graph, NodeId, usize) {
    let (g, r, arity, _) = op_graph_with_slopes(op);
    (g, r, arity)
}

/// [`op_graph`] and, for an op whose accuracy includes its conditioning
/// ([`tang_expr::Accuracy::arg_ulps`]), the derivatives of the result by each input.
fn op_graph_with_slopes(op: Op) -> (Graph, NodeId, usize, Vec<NodeId>) {
    let mut g = Graph::new();
    let zero = g.constant(0.0);
    let args: Vec<NodeId> = op
        .arg_types()
        .enumerate()
        .map(|(k, t)| {
            let x = g.input(k as u32);
            match t {
                Ty::F32 => x,
                Ty::Bool => g.apply(Op::Gt, &[x, zero]).unwrap(),
            }
        })
        .collect();
    let mut r = g.apply(op, &args).unwrap();
    if op.result_type() == Ty::Bool {
        let (one, minus) = (g.constant(1.0), g.constant(-1.0));
        r = g.apply(Op::Select, &[r, one, minus]).unwrap();
    }
    let slopes = if op.accuracy().arg_ulps > 0.0 {
        let inputs: Vec<NodeId> = (0..op.arity()).map(|k| g.input(k as u32)).collect();
        tang_expr::grad(&mut g, r, &inputs).unwrap()
    } else {
        vec![]
    };
    (g, r, op.arity(), slopes)
}

/// The GPU's value of `root` at every element of `cols`.
fn run_gpu(dev: &Device, g: &Graph, roots: &[NodeId], cols: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let kernel = emit_elementwise(&ElementwiseSpec {
        name: "op".into(),
        graph: g,
        inputs: (0..cols.len()).map(|i| format!("x{i}")).collect(),
        uniforms: vec![],
        inouts: vec![],
        outputs: roots
            .iter()
            .enumerate()
            .map(|(i, &r)| (format!("y{i}"), r))
            .collect(),
    })
    .unwrap()
    .leak();
    let ts: Vec<Tensor> = cols
        .iter()
        .map(|c| Tensor::from_slice(dev, c, &[c.len()]).unwrap())
        .collect();
    let refs: Vec<&Tensor> = ts.iter().collect();
    dev.launch(kernel, &refs, &[], &[])
        .unwrap()
        .iter()
        .map(|t| t.to_vec().unwrap())
        .collect()
}

/// Whether `got` is within `tol` of `want` (NaN only for NaN, infinities exactly, and the
/// sign of an exact zero where the tolerance is zero).
fn within(got: f32, want: f64, tol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    let got = got as f64;
    if want.is_infinite() || got.is_infinite() {
        // an f64 reference beyond f32's range is an f32 infinity
        return got == want || (got.is_infinite() && want.abs() > f32::MAX as f64);
    }
    // the sign of an exact zero is part of the result
    if want == 0.0 && got == 0.0 && tol == 0.0 {
        return want.is_sign_negative() == got.is_sign_negative();
    }
    (got - want).abs() <= tol
}

/// The f64 reference of `root` at `x`, and of the derivative nodes `slopes`.
fn reference_and_slopes(g: &Graph, root: NodeId, slopes: &[NodeId], x: &[f32]) -> (f64, Vec<f64>) {
    let cols: Vec<Vec<f64>> = x.iter().map(|&v| vec![v as f64]).collect();
    let refs: Vec<&[f64]> = cols.iter().map(|c| c.as_slice()).collect();
    let roots: Vec<NodeId> = std::iter::once(root)
        .chain(slopes.iter().copied())
        .collect();
    let v = eval_batch::<f64>(g, &roots, &refs, &[]).unwrap();
    (v[0][0], v[1..].iter().map(|c| c[0]).collect())
}

/// Moderate arguments: uniform in [-10, 10], and random signs with magnitudes
/// log-uniform in [1e-6, 10].
fn moderate(rng: &mut Rng, n: usize, arity: usize) -> Vec<Vec<f32>> {
    (0..arity)
        .map(|_| {
            (0..n)
                .map(|i| {
                    if i % 2 == 0 {
                        rng.range_f32(-10.0, 10.0)
                    } else {
                        let m = 10f64.powf(rng.unit_f64() * 7.0 - 6.0) as f32;
                        if rng.below(2) == 0 { m } else { -m }
                    }
                })
                .collect()
        })
        .collect()
}

/// Every combination of extreme arguments.
fn extremes(arity: usize) -> Vec<Vec<f32>> {
    let n = EXTREMES.len().pow(arity as u32);
    (0..arity)
        .map(|k| {
            (0..n)
                .map(|e| EXTREMES[(e / EXTREMES.len().pow(k as u32)) % EXTREMES.len()])
                .collect()
        })
        .collect()
}

#[test]
fn every_op_is_within_its_stated_accuracy_on_the_gpu_and_the_cpu() {
    let dev = Device::new().unwrap();
    let mut rng = Rng::new(0x0b7a_b1e5);
    let mut failures = Vec::new();
    for &op in ALL_OPS {
        let (g, root, arity, slope_nodes) = op_graph_with_slopes(op);
        let acc = op.accuracy();
        let cols = moderate(&mut rng, 2048, arity);
        let refs: Vec<&[f32]> = cols.iter().map(|c| c.as_slice()).collect();
        let cpu = eval_batch::<f32>(&g, &[root], &refs, &[])
            .unwrap()
            .remove(0);
        let gpu = run_gpu(&dev, &g, &[root], &cols).remove(0);
        let (mut worst_gpu, mut worst_cpu) = (0f64, 0f64);
        for e in 0..cpu.len() {
            let x: Vec<f32> = cols.iter().map(|c| c[e]).collect();
            let (want, slopes) = reference_and_slopes(&g, root, &slope_nodes, &x);
            let tol = acc.bound(want, &slopes, &x);
            for (side, got, worst) in [
                ("GPU", gpu[e], &mut worst_gpu),
                ("CPU", cpu[e], &mut worst_cpu),
            ] {
                if want.is_finite() && got.is_finite() {
                    let err = (got as f64 - want).abs();
                    *worst = worst.max(err / tol.max(1e-30));
                }
                if !within(got, want, tol)
                    && !neighbours(&x).iter().any(|n| {
                        let (w, d) = reference_and_slopes(&g, root, &slope_nodes, n);
                        within(got, w, acc.bound(w, &d, n))
                    })
                {
                    failures.push(format!(
                        "{} {side} at {x:?}: {got:e}, reference {want:e} (bound {acc:?})",
                        op.name()
                    ));
                }
            }
        }
        println!(
            "{:>14}: worst error {worst_gpu:.3} (GPU) / {worst_cpu:.3} (CPU) of the stated bound {acc:?}",
            op.name()
        );
    }
    for f in failures.iter().take(20) {
        println!("FAIL {f}");
    }
    assert!(failures.is_empty(), "{} failures", failures.len());
}

#[test]
fn every_op_matches_its_cpu_twin_at_extreme_arguments() {
    let dev = Device::new().unwrap();
    let mut failures = Vec::new();
    for &op in ALL_OPS {
        let (g, root, arity, slope_nodes) = op_graph_with_slopes(op);
        let acc = op.accuracy();
        let cols = extremes(arity);
        let refs: Vec<&[f32]> = cols.iter().map(|c| c.as_slice()).collect();
        let cpu = eval_batch::<f32>(&g, &[root], &refs, &[])
            .unwrap()
            .remove(0);
        let gpu = run_gpu(&dev, &g, &[root], &cols).remove(0);
        for e in 0..cpu.len() {
            let x: Vec<f32> = cols.iter().map(|c| c[e]).collect();
            // the CPU twin is the reference here; a finite result may differ by the
            // op's bound (both are within it of the exact value)
            let want = cpu[e] as f64;
            let tol = if want.is_finite() && want != 0.0 {
                let slopes = reference_and_slopes(&g, root, &slope_nodes, &x).1;
                2.0 * acc.bound(want, &slopes, &x)
            } else {
                0.0
            };
            let twin_near = || {
                neighbours(&x).iter().any(|n| {
                    let c: Vec<Vec<f32>> = n.iter().map(|&v| vec![v]).collect();
                    let r: Vec<&[f32]> = c.iter().map(|v| v.as_slice()).collect();
                    let t = eval_batch::<f32>(&g, &[root], &r, &[]).unwrap()[0][0];
                    within(gpu[e], t as f64, tol)
                })
            };
            let beyond = x.iter().any(|v| v.abs() > acc.args_up_to);
            let same_class =
                gpu[e].is_nan() == cpu[e].is_nan() && gpu[e].is_finite() == cpu[e].is_finite();
            if beyond && same_class {
                continue;
            }
            if !within(gpu[e], want, tol) && !twin_near() {
                failures.push(format!(
                    "{} at {x:?}: GPU {:e}, CPU {:e}",
                    op.name(),
                    gpu[e],
                    cpu[e]
                ));
            }
        }
    }
    // the first three of each op
    let mut shown = std::collections::BTreeMap::new();
    for f in &failures {
        let n = shown.entry(f.split(' ').next().unwrap_or("")).or_insert(0);
        *n += 1;
        if *n <= 3 {
            println!("FAIL {f}");
        }
    }
    assert!(failures.is_empty(), "{} failures", failures.len());
}

/// Subnormal arguments (alone, and beside zero, normal and huge values): the GPU gives the
/// CPU twin's value, or, where the driver flushes subnormals to zero (NVIDIA does), the
/// twin's value at the flushed arguments, a subnormal result flushed to zero included;
/// never anything else (a NaN from a helper that divides by a flushed zero, say).
#[test]
fn subnormal_arguments_give_the_twins_value_or_the_flushed_one() {
    const SUBNORMALS: [f32; 4] = [1e-40, -1e-40, 1.4e-45, -3e-39];
    const OTHERS: [f32; 5] = [0.0, 1.0, -2.0, 3e38, 1e-40];
    let dev = Device::new().unwrap();
    let flush = |v: f32| {
        if v.is_subnormal() {
            0.0f32.copysign(v)
        } else {
            v
        }
    };
    let mut failures = Vec::new();
    for &op in ALL_OPS {
        let (g, root, arity, slope_nodes) = op_graph_with_slopes(op);
        let acc = op.accuracy();
        let args: Vec<Vec<f32>> = match arity {
            1 => SUBNORMALS.iter().map(|&s| vec![s]).collect(),
            2 => SUBNORMALS
                .iter()
                .flat_map(|&s| OTHERS.iter().flat_map(move |&o| [vec![s, o], vec![o, s]]))
                .collect(),
            _ => SUBNORMALS
                .iter()
                .flat_map(|&s| OTHERS.iter().map(move |&o| vec![s, o, 1.0]))
                .collect(),
        };
        let cols: Vec<Vec<f32>> = (0..arity)
            .map(|k| args.iter().map(|a| a[k]).collect())
            .collect();
        let gpu = run_gpu(&dev, &g, &[root], &cols).remove(0);
        for (x, got) in args.iter().zip(gpu) {
            let flushed: Vec<f32> = x.iter().map(|&v| flush(v)).collect();
            let fine = [x.clone(), flushed].iter().any(|a| {
                let c: Vec<Vec<f32>> = a.iter().map(|&v| vec![v]).collect();
                let r: Vec<&[f32]> = c.iter().map(|v| v.as_slice()).collect();
                let twin = eval_batch::<f32>(&g, &[root], &r, &[]).unwrap()[0][0];
                let tol = if twin.is_finite() && twin != 0.0 {
                    let slopes = reference_and_slopes(&g, root, &slope_nodes, a).1;
                    2.0 * acc.bound(twin as f64, &slopes, a)
                } else {
                    0.0
                };
                within(got, twin as f64, tol)
                    || within(got, flush(twin) as f64, tol)
                    || (twin.is_subnormal() && got == 0.0)
            });
            if !fine {
                failures.push(format!("{}{x:?}: GPU {got:e}", op.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `(op, arguments, exact result)`: the corners where naive forms or undefined WGSL
/// builtins go wrong, compared bit for bit on the GPU and the CPU.
fn corners() -> Vec<(Op, Vec<f32>, f32)> {
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let mut c = vec![
        (Op::Erf, vec![inf], 1.0),
        (Op::Erf, vec![-inf], -1.0),
        (Op::Erf, vec![nan], nan),
        (Op::Erf, vec![0.0], 0.0),
        (Op::Erf, vec![-0.0], -0.0),
        (Op::Erfc, vec![inf], 0.0),
        (Op::Erfc, vec![-inf], 2.0),
        (Op::Erfc, vec![nan], nan),
        (Op::GeluErf, vec![inf], inf),
        (Op::GeluErf, vec![0.0], 0.0),
        (Op::ExpM1, vec![0.0], 0.0),
        (Op::ExpM1, vec![-0.0], -0.0),
        (Op::ExpM1, vec![-inf], -1.0),
        (Op::ExpM1, vec![inf], inf),
        (Op::Ln1p, vec![0.0], 0.0),
        (Op::Ln1p, vec![-0.0], -0.0),
        (Op::Ln1p, vec![-1.0], -inf),
        (Op::Ln1p, vec![-2.0], nan),
        (Op::Ln1p, vec![inf], inf),
        (Op::Atanh, vec![1.0], inf),
        (Op::Atanh, vec![-1.0], -inf),
        (Op::Atanh, vec![2.0], nan),
        (Op::Acosh, vec![0.5], nan),
        (Op::Acosh, vec![1.0], 0.0),
        (Op::Asin, vec![1.5], nan),
        (Op::Rsqrt, vec![0.0], inf),
        (Op::Rsqrt, vec![-0.0], -inf),
        (Op::Rsqrt, vec![-1.0], nan),
        (Op::Rsqrt, vec![inf], 0.0),
        (Op::Hypot, vec![inf, nan], inf),
        (Op::Hypot, vec![nan, -inf], inf),
        (Op::Hypot, vec![0.0, 0.0], 0.0),
        (Op::Hypot, vec![3e38, 3e38], inf),
        (Op::Hypot, vec![3e30, 4e30], 5e30),
        // 1/m is subnormal above 2^126 and 1/m overflows below 2^-126: the helper scales
        (Op::Hypot, vec![3e38, 1e38], 3.162_277_7e38),
        (Op::Hypot, vec![-3e38, 0.0], 3e38),
        (Op::Hypot, vec![3e-20, 4e-20], 5e-20),
        (Op::Hypot, vec![3e-38, -4e-38], 5e-38),
        (Op::Atan2, vec![3e38, 3e38], FRAC_PI_4),
        (Op::Atan2, vec![-1e38, 3e38], (-1e38f32).atan2(3e38)),
        (Op::Atan, vec![3e38], FRAC_PI_2),
        // the reduction by pi/2 is the GPU's own up to 1e5, and sin/tan keep -0
        (Op::Sin, vec![-0.0], -0.0),
        (Op::Tan, vec![-0.0], -0.0),
        (Op::Cos, vec![-0.0], 1.0),
        (Op::Sin, vec![1e4], 1e4f64.sin() as f32),
        (Op::Cos, vec![1e4], 1e4f64.cos() as f32),
        (Op::Sin, vec![-9.9e4], (-9.9e4f64).sin() as f32),
        (Op::Cos, vec![65_536.0], 65_536f64.cos() as f32),
        (Op::Tan, vec![1e4], 1e4f64.tan() as f32),
        (Op::Sin, vec![inf], nan),
        (Op::Cos, vec![-inf], nan),
        (Op::Tan, vec![nan], nan),
        (Op::Copysign, vec![2.0, -0.0], -2.0),
        (Op::Copysign, vec![-2.0, 0.0], 2.0),
        (Op::Sinh, vec![-0.0], -0.0),
        (Op::Sinh, vec![89.0], 89f32.sinh()),
        (Op::Cosh, vec![89.0], 89f32.cosh()),
        (Op::Sinh, vec![-89.4], (-89.4f32).sinh()),
        (Op::Cosh, vec![89.4], 89.4f32.cosh()),
        (Op::Sinh, vec![89.5], inf),
        (Op::Cosh, vec![-inf], inf),
        (Op::Sinh, vec![nan], nan),
        (Op::Cosh, vec![nan], nan),
        (Op::Asinh, vec![-0.0], -0.0),
        // Rust's f32::asinh overflows above f32::MAX / 2; the GPU does the same
        (Op::Asinh, vec![3e38], f32::INFINITY),
        (Op::Asinh, vec![1e38], 1e38f32.asinh()),
    ];
    for (y, x, want) in [
        (0.0, 0.0, 0.0),
        (-0.0, 0.0, -0.0),
        (0.0, -0.0, PI),
        (-0.0, -0.0, -PI),
        (0.0, -1.0, PI),
        (-0.0, -1.0, -PI),
        (0.0, 1.0, 0.0),
        (-0.0, 1.0, -0.0),
        (1.0, 0.0, FRAC_PI_2),
        (-1.0, -0.0, -FRAC_PI_2),
        (inf, inf, FRAC_PI_4),
        (-inf, inf, -FRAC_PI_4),
        (inf, -inf, 3.0 * FRAC_PI_4),
        (-inf, -inf, -3.0 * FRAC_PI_4),
        (inf, 1.0, FRAC_PI_2),
        (-inf, -1.0, -FRAC_PI_2),
        (1.0, inf, 0.0),
        (-1.0, inf, -0.0),
        (1.0, -inf, PI),
        (-1.0, -inf, -PI),
        (nan, 1.0, nan),
        (1.0, nan, nan),
    ] {
        c.push((Op::Atan2, vec![y, x], want));
    }
    // near 0 the naive forms lose every digit; the correctly rounded results are these
    for x in [1e-10f32, -1e-10, 1e-7, -3e-5, 1e-3] {
        c.push((Op::ExpM1, vec![x], (x as f64).exp_m1() as f32));
        c.push((Op::Ln1p, vec![x], (x as f64).ln_1p() as f32));
    }
    c
}

#[test]
fn corners_are_exact_on_the_gpu_and_the_cpu() {
    let dev = Device::new().unwrap();
    let mut failures = Vec::new();
    for (op, x, want) in corners() {
        let (g, root, _) = op_graph(op);
        let cols: Vec<Vec<f32>> = x.iter().map(|&v| vec![v]).collect();
        let refs: Vec<&[f32]> = cols.iter().map(|c| c.as_slice()).collect();
        let cpu = eval_batch::<f32>(&g, &[root], &refs, &[]).unwrap()[0][0];
        let gpu = run_gpu(&dev, &g, &[root], &cols)[0][0];
        // non-finite and zero results bit for bit; finite ones within the op's bound
        let acc = op.accuracy();
        let same = |v: f32| {
            (v.is_nan() && want.is_nan())
                || v.to_bits() == want.to_bits()
                || (want != 0.0
                    && want.is_finite()
                    && within(v, want as f64, acc.bound(want as f64, &[], &x)))
        };
        if !same(cpu) || !same(gpu) {
            failures.push(format!(
                "{}{x:?}: want {want:e}, CPU {cpu:e}, GPU {gpu:e}",
                op.name()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// PyTorch's exact GELU, `torch.nn.functional.gelu(x)` = `x/2 (1 + erf(x / sqrt 2))`,
/// and its derivative `Phi(x) + x phi(x)`, in f64 from the reference `erf` (series and
/// continued fraction, checked against 40-digit values in tang-expr).
fn torch_gelu(x: f64) -> (f64, f64) {
    let erf = Op::Erf.eval::<f64>(&[x * std::f64::consts::FRAC_1_SQRT_2]);
    let cdf = 0.5 * (1.0 + erf);
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (x * cdf, cdf + x * pdf)
}

#[test]
fn gelu_erf_matches_pytorch_exact_gelu_and_its_gradient() {
    let dev = Device::new().unwrap();
    let mut g = Graph::new();
    let x = g.input(0);
    let y = g.apply(Op::GeluErf, &[x]).unwrap();
    let d = tang_expr::grad(&mut g, y, &[x]).unwrap()[0];
    let xs: Vec<f32> = (0..=20_000).map(|i| -10.0 + i as f32 * 1e-3).collect();
    let gpu = run_gpu(&dev, &g, &[y, d], std::slice::from_ref(&xs));
    let cpu = eval_batch::<f32>(&g, &[y, d], &[&xs], &[]).unwrap();
    let mut worst = [0f64; 4];
    for (e, &xv) in xs.iter().enumerate() {
        let (v, dv) = torch_gelu(xv as f64);
        for (k, (got, want)) in [
            (gpu[0][e], v),
            (cpu[0][e], v),
            (gpu[1][e], dv),
            (cpu[1][e], dv),
        ]
        .into_iter()
        .enumerate()
        {
            worst[k] = worst[k].max((got as f64 - want).abs());
        }
    }
    println!(
        "gelu_erf over [-10, 10]: value {:e} (GPU) {:e} (CPU), gradient {:e} (GPU) {:e} (CPU)",
        worst[0], worst[1], worst[2], worst[3]
    );
    assert!(worst[0] <= 1e-6 && worst[1] <= 1e-6, "value: {worst:?}");
    assert!(worst[2] <= 1e-5 && worst[3] <= 1e-5, "gradient: {worst:?}");
}

/// The cost of tang's `sin`, `cos` and `tan` (their own range reduction and polynomials)
/// against the driver's builtins, for a real GPU (ignored in `cargo test`: timings on a
/// shared CI machine say nothing). Each kernel applies the function 16 times in a chain to
/// 2^24 elements, so the arithmetic is not hidden behind the memory traffic; the builtin
/// kernel is the same WGSL with the helper calls replaced by the builtins. Run:
///
/// ```text
/// cargo test --release -p tang-tests --test op_table_gpu -- --ignored --nocapture
/// ```
#[test]
#[ignore = "a benchmark for a real GPU: run with --ignored --nocapture"]
fn trig_cost_against_the_builtins() {
    use std::time::Instant;
    let dev = Device::new().unwrap();
    println!("device: {}", dev.info().name);
    let n = 1 << 24;
    let mut rng = Rng::new(7);
    let xs: Vec<f32> = (0..n).map(|_| rng.range_f32(-100.0, 100.0)).collect();
    let x = Tensor::from_slice(&dev, &xs, &[n]).unwrap();
    let median_ms = |k: &'static tang_expr::KernelDesc| {
        let mut ms: Vec<f64> = (0..12)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..10 {
                    dev.launch(k, &[&x], &[], &[]).unwrap();
                }
                dev.sync().unwrap();
                t.elapsed().as_secs_f64() * 1e3 / 10.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    for (op, name) in [
        (Op::Neg, "neg"),
        (Op::Sin, "sin"),
        (Op::Cos, "cos"),
        (Op::Tan, "tan"),
    ] {
        let mut g = Graph::new();
        let mut v = g.input(0);
        for _ in 0..16 {
            v = g.apply(op, &[v]).unwrap();
        }
        let kernel = emit_elementwise(&ElementwiseSpec {
            name: format!("chain_{name}"),
            graph: &g,
            inputs: vec!["x".into()],
            uniforms: vec![],
            inouts: vec![],
            outputs: vec![("y".into(), v)],
        })
        .unwrap();
        let mut builtin = kernel.clone();
        let helper = format!("tang_{name}(");
        builtin.wgsl = builtin
            .wgsl
            .replace(&helper, &format!("{name}("))
            .replace(&format!("fn {name}("), &format!("fn {helper}"));
        builtin.id ^= 0x5eed;
        let ours = median_ms(kernel.leak());
        if op == Op::Neg {
            println!("16 x neg (the memory traffic alone): {ours:.3} ms");
            continue;
        }
        let theirs = median_ms(builtin.leak());
        println!("16 x {name}: tang {ours:.3} ms, builtin {theirs:.3} ms");
    }
}
