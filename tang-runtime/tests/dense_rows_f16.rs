//! f16 inputs of the row ops (softmax, log-softmax, layer norm, RMS norm, cross-entropy)
//! and the reductions, forward and backward: each against its f32 twin on the same
//! f16-representable inputs. The f16 op computes in f32 and rounds its result once, so it
//! must agree with the twin's result to f16 precision; the dtypes follow PyTorch's for
//! `torch.float16` (f16 results, f32 statistics, gradients of f32 weights in f32). Row
//! lengths cover scalar and `vec4` units, odd lengths (rows that start inside a 32-bit
//! word), the subgroup team path and the workgroup fallback with its streamed tail.

use half::f16;
use tang_runtime::ops::{self, rows_team};
use tang_runtime::{DType, Device, Error, Tensor};
use tang_testing::{Rng, devices};

/// Row lengths: one element, odd lengths (rows start at odd elements), `vec4` rows on the
/// team path, long rows of both units on the fallback, past its registers (4100, 2053).
const COLS: [usize; 9] = [1, 3, 4, 17, 64, 257, 1027, 2053, 4100];

/// Rows: odd, so odd-length rows meet inside words.
const ROWS: usize = 3;

/// `v` rounded to f16 and back: values both dtypes hold exactly.
fn representable(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()
}

/// `v` rounded to f16 as an f32 and an f16 tensor of `shape`: the same values.
fn twins(dev: &Device, v: &[f32], shape: &[usize]) -> (Tensor, Tensor) {
    let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
    (
        Tensor::from_slice(dev, &representable(v), shape).unwrap(),
        Tensor::from_f16(dev, &h, shape).unwrap(),
    )
}

/// f16-representable random values in `[-a, a)`, as twins.
fn random_twins(dev: &Device, rng: &mut Rng, shape: &[usize], a: f32) -> (Tensor, Tensor) {
    let n = shape.iter().product();
    twins(dev, &rng.vec(n, a), shape)
}

/// An f16 tensor's values as an f32 tensor (exact).
fn widened(t: &Tensor) -> Tensor {
    assert_eq!(t.dtype(), DType::F16);
    ops::to_dtype(t, DType::F32).unwrap()
}

/// `got` (of `dtype`) against the f32 twin `want`: within one f16 rounding of the twin
/// plus `atol` (f16 subnormals near zero), elementwise, NaN where the twin has NaN.
fn assert_twin(what: &str, got: &Tensor, dtype: DType, want: &Tensor, atol: f32) {
    assert_eq!(got.dtype(), dtype, "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec().unwrap(), want.to_vec().unwrap());
    // f16 has an 11-bit significand: one rounding is at most 2^-11 relative; 2^-10 allows
    // for a last-bit difference in the f32 arithmetic on other adapters.
    let rtol = if dtype == DType::F16 { 1.0e-3 } else { 1.0e-5 };
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || (a - b).abs() <= atol + rtol * b.abs();
        assert!(ok, "{what}: element {i}: got {a}, twin {b}");
    }
}

/// Runs `f` on the automatic path (the team path where the row fits) and on the forced
/// workgroup fallback.
fn both_paths(f: impl Fn(&str)) {
    f("auto");
    rows_team::with_workgroup_path(|| f("workgroup"));
}

/// An op of one tensor (a forward, or a whole-tensor reduction).
type Unary = fn(&Tensor) -> Result<Tensor, Error>;
/// A backward of two tensors (the upstream gradient first).
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor, Error>;

#[test]
fn softmax_and_log_softmax_f16_match_f32() {
    for dev in devices() {
        let mut rng = Rng::new(1);
        for cols in COLS {
            let shape = [ROWS, cols];
            let (x32, x16) = random_twins(&dev, &mut rng, &shape, 6.0);
            let (g32, g16) = random_twins(&dev, &mut rng, &shape, 1.0);
            for log in [false, true] {
                let (fwd, bwd): (Unary, Binary) = if log {
                    (ops::log_softmax, ops::log_softmax_backward)
                } else {
                    (ops::softmax, ops::softmax_backward)
                };
                both_paths(|path| {
                    let what = format!("softmax log={log} {ROWS}x{cols} {path}");
                    let y16 = fwd(&x16).unwrap();
                    assert_twin(&what, &y16, DType::F16, &fwd(&x32).unwrap(), 1e-6);
                    // The backward of both from the same (f16) forward output.
                    let dx16 = bwd(&g16, &y16).unwrap();
                    let dx32 = bwd(&g32, &widened(&y16)).unwrap();
                    assert_twin(&format!("{what} backward"), &dx16, DType::F16, &dx32, 1e-5);
                });
            }
        }
    }
}

/// The weight and bias dtypes of the norm cases: f32 master weights (autocast's), f16
/// ones, and one of each.
const AFFINE: [(DType, DType); 3] = [
    (DType::F32, DType::F32),
    (DType::F16, DType::F16),
    (DType::F32, DType::F16),
];

/// One of `twins` by dtype.
fn pick(twins: &(Tensor, Tensor), dtype: DType) -> &Tensor {
    if dtype == DType::F16 {
        &twins.1
    } else {
        &twins.0
    }
}

#[test]
fn norms_f16_match_f32_with_f32_and_f16_weights() {
    for dev in devices() {
        let mut rng = Rng::new(2);
        for cols in COLS {
            let shape = [ROWS, cols];
            let (x32, x16) = random_twins(&dev, &mut rng, &shape, 3.0);
            let (g32, g16) = random_twins(&dev, &mut rng, &shape, 1.0);
            let w = random_twins(&dev, &mut rng, &[cols], 2.0);
            let b = random_twins(&dev, &mut rng, &[cols], 1.0);
            for (wd, bd) in AFFINE {
                let (w16, b16) = (pick(&w, wd), pick(&b, bd));
                both_paths(|path| {
                    for rms in [false, true] {
                        let what = format!("rms={rms} {ROWS}x{cols} w {wd:?} b {bd:?} {path}");
                        let got = norm_outputs(rms, &x16, w16, b16, &g16);
                        let want = norm_outputs(rms, &x32, &w.0, &b.0, &g32);
                        for ((name, got), (_, want)) in got.iter().zip(&want) {
                            // Statistics stay f32 (the same bits: the same arithmetic on the
                            // same values); weight gradients come in the weight's dtype.
                            let (dtype, atol) = match *name {
                                "stats" => (DType::F32, 0.0),
                                "y" | "grad_x" => (DType::F16, 1e-4),
                                _ => (wd, 1e-5),
                            };
                            assert_twin(&format!("{what} {name}"), got, dtype, want, atol);
                        }
                    }
                });
            }
        }
    }
}

/// Layer norm (`rms` false) or RMS norm forward and backward, by name: `y`, `stats`,
/// `grad_x`, `grad_weight` and (layer norm) `grad_bias`.
fn norm_outputs(
    rms: bool,
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    g: &Tensor,
) -> Vec<(&'static str, Tensor)> {
    if rms {
        let o = ops::rms_norm(x, w, 1e-6).unwrap();
        let d = ops::rms_norm_backward(g, x, w, &o.stats).unwrap();
        vec![
            ("y", o.y),
            ("stats", o.stats),
            ("grad_x", d.grad_x),
            ("grad_weight", d.grad_weight),
        ]
    } else {
        let o = ops::layer_norm(x, w, b, 1e-5).unwrap();
        let d = ops::layer_norm_backward(g, x, w, &o.stats).unwrap();
        vec![
            ("y", o.y),
            ("stats", o.stats),
            ("grad_x", d.grad_x),
            ("grad_weight", d.grad_weight),
            ("grad_bias", d.grad_bias),
        ]
    }
}

/// Rows of the cross-entropy cases; row 1's target is the ignore index, 7.
const CE_ROWS: usize = 5;

/// Random logits of `classes` as f32 and f16 twins, and targets (row 1 ignored).
fn cross_entropy_case(dev: &Device, rng: &mut Rng, classes: usize) -> (Tensor, Tensor, Tensor) {
    let (x32, x16) = random_twins(dev, rng, &[CE_ROWS, classes], 4.0);
    let mut t: Vec<u32> = (0..CE_ROWS).map(|_| rng.below(classes) as u32).collect();
    t[1] = 7; // ignored
    (x32, x16, Tensor::from_u32(dev, &t, &[CE_ROWS]).unwrap())
}

#[test]
fn cross_entropy_f16_matches_f32() {
    for dev in devices() {
        let mut rng = Rng::new(3);
        for classes in COLS {
            let rows = CE_ROWS;
            let (x32, x16, targets) = cross_entropy_case(&dev, &mut rng, classes);
            both_paths(|path| {
                let what = format!("cross_entropy {rows}x{classes} {path}");
                let c16 = ops::cross_entropy(&x16, &targets, Some(7)).unwrap();
                let c32 = ops::cross_entropy(&x32, &targets, Some(7)).unwrap();
                assert_twin(
                    &format!("{what} loss"),
                    &c16.loss,
                    DType::F16,
                    &c32.loss,
                    1e-4,
                );
                let rl = format!("{what} row_loss");
                assert_twin(&rl, &c16.row_loss, DType::F16, &c32.row_loss, 1e-4);
                assert_twin(
                    &format!("{what} grad"),
                    &c16.grad,
                    DType::F16,
                    &c32.grad,
                    1e-6,
                );
                assert_twin(
                    &format!("{what} count"),
                    &c16.count,
                    DType::F32,
                    &c32.count,
                    0.0,
                );
            });
        }
    }
}

/// The forward without the gradient and the backward that recomputes it, times an
/// upstream gradient (a loss scale of 4096, applied before f16 rounds), in both dtypes:
/// against the f32 forward's gradient times the same scale. Odd class counts put two rows
/// in one f16 word of the backward's threads.
#[test]
fn cross_entropy_backward_recomputes_the_scaled_gradient() {
    const SCALE: f32 = 4096.0;
    for dev in devices() {
        let mut rng = Rng::new(5);
        let g = Tensor::from_slice(&dev, &[SCALE], &[1]).unwrap();
        for classes in COLS {
            let rows = CE_ROWS;
            let (x32, x16, targets) = cross_entropy_case(&dev, &mut rng, classes);
            let c32 = ops::cross_entropy(&x32, &targets, Some(7)).unwrap();
            let want = ops::mul_scalar(&c32.grad, SCALE).unwrap();
            both_paths(|path| {
                for (x, dtype) in [(&x32, DType::F32), (&x16, DType::F16)] {
                    let what = format!("cross_entropy_backward {rows}x{classes} {dtype:?} {path}");
                    let f = ops::cross_entropy_forward(x, &targets, Some(7), DType::F32).unwrap();
                    assert_twin(
                        &format!("{what} loss"),
                        &f.loss,
                        DType::F32,
                        &c32.loss,
                        1e-4,
                    );
                    let grad = ops::cross_entropy_backward(
                        x,
                        &targets,
                        Some(7),
                        &f.row_loss_f32,
                        &f.count,
                        &g,
                    )
                    .unwrap();
                    assert_twin(&format!("{what} grad"), &grad, dtype, &want, 1e-4);
                }
            });
        }
        // The backward says what it was given wrongly.
        let x = Tensor::zeros(&dev, &[2, 3]).unwrap();
        let targets = Tensor::from_u32(&dev, &[0, 1], &[2]).unwrap();
        let f = ops::cross_entropy_forward(&x, &targets, None, DType::F32).unwrap();
        let wrong_rows = Tensor::zeros(&dev, &[3]).unwrap();
        let e = ops::cross_entropy_backward(&x, &targets, None, &wrong_rows, &f.count, &g)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row_loss_f32"), "{e}");
    }
}

/// `[outer, axis, inner]` shapes and the dim reduced: the last axis (scalar and `vec4`
/// rows, a row long enough to be cut into chunks), a middle axis (one thread per column,
/// and the tree kernel over few columns), the first axis.
const REDUCE_CASES: [(&[usize], usize); 10] = [
    (&[3, 1], 1),
    (&[3, 17], 1),
    (&[5, 64], 1),
    (&[2, 1027], 1),
    (&[1, 20_003], 1),
    (&[3, 257, 3], 1),
    (&[2, 33, 8], 1),
    (&[9, 1100, 4], 1),
    (&[1027, 5], 0),
    (&[300, 520], 0),
];

type Reduce = fn(&Tensor, usize) -> Result<Tensor, Error>;
/// The backward of a whole-tensor reduction: `grad_out` and the input's shape.
type AllBackward = fn(&Tensor, &[usize]) -> Result<Tensor, Error>;

#[test]
fn reductions_f16_match_f32_forward_and_backward() {
    let ops: [(&str, Reduce); 3] = [("sum", ops::sum), ("mean", ops::mean), ("max", ops::max)];
    for dev in devices() {
        let mut rng = Rng::new(4);
        for (shape, dim) in REDUCE_CASES {
            let (x32, x16) = random_twins(&dev, &mut rng, shape, 1.0);
            for (name, f) in ops {
                let what = format!("{name} {shape:?} dim {dim}");
                let y16 = f(&x16, dim).unwrap();
                let y32 = f(&x32, dim).unwrap();
                // A sum of n values of at most 1 in magnitude: the f32 sums differ from an
                // f64 sum by ~n * 2^-24; the f16 rounding dominates.
                assert_twin(&what, &y16, DType::F16, &y32, 1e-4);
                let (g32, g16) = random_twins(&dev, &mut rng, y16.shape(), 1.0);
                let (dx16, dx32) = match name {
                    "sum" => (
                        ops::sum_backward(&g16, shape, dim).unwrap(),
                        ops::sum_backward(&g32, shape, dim).unwrap(),
                    ),
                    "mean" => (
                        ops::mean_backward(&g16, shape, dim).unwrap(),
                        ops::mean_backward(&g32, shape, dim).unwrap(),
                    ),
                    _ => (
                        ops::max_backward(&g16, &x16, &y16, dim).unwrap(),
                        ops::max_backward(&g32, &x32, &widened(&y16), dim).unwrap(),
                    ),
                };
                assert_twin(&format!("{what} backward"), &dx16, DType::F16, &dx32, 1e-6);
            }
        }
        // The whole-tensor forms.
        let (x32, x16) = random_twins(&dev, &mut rng, &[7, 129], 1.0);
        for (name, f, df) in [
            (
                "sum_all",
                ops::sum_all as Unary,
                ops::sum_all_backward as AllBackward,
            ),
            ("mean_all", ops::mean_all, ops::mean_all_backward),
        ] {
            let y16 = f(&x16).unwrap();
            assert_twin(name, &y16, DType::F16, &f(&x32).unwrap(), 1e-3);
            let dx16 = df(&y16, &[7, 129]).unwrap();
            let dx32 = df(&widened(&y16), &[7, 129]).unwrap();
            assert_twin(&format!("{name} backward"), &dx16, DType::F16, &dx32, 1e-6);
        }
        let y16 = ops::max_all(&x16).unwrap();
        assert_twin(
            "max_all",
            &y16,
            DType::F16,
            &ops::max_all(&x32).unwrap(),
            0.0,
        );
        let g = Tensor::from_f16(&dev, &[f16::from_f32(0.5)], &[1]).unwrap();
        let dx16 = ops::max_all_backward(&g, &x16, &y16).unwrap();
        let dx32 = ops::max_all_backward(&widened(&g), &x32, &widened(&y16)).unwrap();
        assert_twin("max_all backward", &dx16, DType::F16, &dx32, 0.0);
    }
}

#[test]
fn f16_values_survive_odd_row_boundaries() {
    // Rows of odd length share a 32-bit word with their neighbour: a write of one row
    // must leave the next row's half intact. Each row is constant but for its own
    // values, so a torn word shows as a wrong element.
    for dev in devices() {
        for cols in [1, 3, 5, 257] {
            let rows = 9;
            let x: Vec<f32> = (0..rows * cols)
                .map(|i| ((i / cols) as f32) + (i % cols) as f32 / 1024.0)
                .collect();
            let (x32, x16) = twins(&dev, &x, &[rows, cols]);
            both_paths(|path| {
                let what = format!("log_softmax {rows}x{cols} {path}");
                let y16 = ops::log_softmax(&x16).unwrap();
                assert_twin(
                    &what,
                    &y16,
                    DType::F16,
                    &ops::log_softmax(&x32).unwrap(),
                    1e-6,
                );
            });
        }
    }
}

#[test]
fn f16_dtype_errors_say_what_to_pass() {
    for dev in devices() {
        let (x32, x16) = twins(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let ids = Tensor::from_u32(&dev, &[1, 2, 3, 4], &[2, 2]).unwrap();
        let dtype_err = |e: Error, want: DType, got: DType| match e {
            Error::DType {
                expected, got: g, ..
            } => {
                assert_eq!((expected, g), (want, got), "{e}");
                assert!(e.to_string().contains("to_dtype"), "{e}");
            }
            other => panic!("expected a dtype error, got {other}"),
        };
        // u32 is not a float.
        dtype_err(ops::softmax(&ids).unwrap_err(), DType::F32, DType::U32);
        dtype_err(ops::sum(&ids, 0).unwrap_err(), DType::F32, DType::U32);
        // The upstream gradient comes in the forward output's dtype.
        let y16 = ops::softmax(&x16).unwrap();
        let e = ops::softmax_backward(&x32, &y16).unwrap_err();
        dtype_err(e, DType::F16, DType::F32);
        let e = ops::log_softmax_backward(&x16, &ops::log_softmax(&x32).unwrap()).unwrap_err();
        dtype_err(e, DType::F32, DType::F16);
        let w = Tensor::full(&dev, &[2], 1.0).unwrap();
        let b = Tensor::zeros(&dev, &[2]).unwrap();
        let o = ops::layer_norm(&x16, &w, &b, 1e-5).unwrap();
        let e = ops::layer_norm_backward(&x32, &x16, &w, &o.stats).unwrap_err();
        dtype_err(e, DType::F16, DType::F32);
        // Statistics stay f32.
        let stats16 = ops::to_dtype(&o.stats, DType::F16).unwrap();
        let e = ops::rms_norm_backward(&x16, &x16, &w, &stats16).unwrap_err();
        dtype_err(e, DType::F32, DType::F16);
        // The max backward's y and grad_out have x's dtype.
        let y = ops::max(&x16, 1).unwrap();
        let g32 = Tensor::full(&dev, &[2], 1.0).unwrap();
        dtype_err(
            ops::max_backward(&g32, &x16, &y, 1).unwrap_err(),
            DType::F16,
            DType::F32,
        );
        let e = ops::max_backward(&widened(&y), &x32, &y, 1).unwrap_err();
        dtype_err(e, DType::F32, DType::F16);
        // Targets stay u32.
        let e = ops::cross_entropy(&x16, &x16.reshape(&[4]).unwrap(), None).unwrap_err();
        dtype_err(e, DType::U32, DType::F16);
    }
}
