//! Backward passes of the reductions (sum, mean, max; along an axis and over everything)
//! on the software adapter: against central finite differences of an f64 forward, against
//! an f64 reference of the backward at every element, the tie and NaN rules of the max
//! with exact expected values, grids past 65,535 workgroups, and the typed errors. (The
//! many-tensor reductions are in `dense_foreach.rs`.)

use tang_runtime::ops;
use tang_runtime::{Device, Error, Tensor};
use tang_testing::{Rng, assert_close, devices, vjp_at};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Sum,
    Mean,
    Max,
}

const OPS: [Op; 3] = [Op::Sum, Op::Mean, Op::Max];

/// `[outer, len, inner]` around `axis`.
fn view(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// The forward's output shape: the axis removed, `[1]` for rank 1.
fn out_shape(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut s: Vec<usize> = shape.to_vec();
    s.remove(axis);
    if s.is_empty() {
        s.push(1);
    }
    s
}

/// The forward in f64.
fn fwd64(x: &[f64], shape: &[usize], axis: usize, op: Op) -> Vec<f64> {
    let (outer, len, inner) = view(shape, axis);
    let mut out = vec![0.0; outer * inner];
    for o in 0..outer {
        for i in 0..inner {
            let vals = (0..len).map(|a| x[(o * len + a) * inner + i]);
            out[o * inner + i] = match op {
                Op::Sum => vals.sum(),
                Op::Mean => vals.sum::<f64>() / len as f64,
                Op::Max => vals.fold(f64::NEG_INFINITY, f64::max),
            };
        }
    }
    out
}

/// The backward in f64; for the max, the first index attaining the maximum gets `dy`.
fn bwd64(x: &[f32], dy: &[f32], shape: &[usize], axis: usize, op: Op) -> Vec<f64> {
    let (outer, len, inner) = view(shape, axis);
    let mut dx = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let g = f64::from(dy[o * inner + i]);
            let at = |a: usize| (o * len + a) * inner + i;
            match op {
                Op::Sum => (0..len).for_each(|a| dx[at(a)] = g),
                Op::Mean => (0..len).for_each(|a| dx[at(a)] = g / len as f64),
                Op::Max => {
                    let mut best = 0;
                    for a in 1..len {
                        if x[at(a)] > x[at(best)] {
                            best = a;
                        }
                    }
                    dx[at(best)] = g;
                }
            }
        }
    }
    dx
}

fn forward(x: &Tensor, axis: usize, op: Op) -> Tensor {
    match op {
        Op::Sum => ops::sum(x, axis),
        Op::Mean => ops::mean(x, axis),
        Op::Max => ops::max(x, axis),
    }
    .unwrap()
}

fn backward(x: &Tensor, y: &Tensor, dy: &Tensor, axis: usize, op: Op) -> Tensor {
    let dx = match op {
        Op::Sum => ops::sum_backward(dy, x.shape(), axis),
        Op::Mean => ops::mean_backward(dy, x.shape(), axis),
        Op::Max => ops::max_backward(dy, x, y, axis),
    }
    .unwrap();
    assert_eq!(dx.shape(), x.shape());
    dx
}

/// Shapes with awkward lengths (1, 3, 17, 33, 65, 127, 1000, not multiples of 4) and
/// lengths that take the `vec4` kernels; every axis of each is tested. Long last axes
/// take the workgroup-per-row search of the max, several of them split into chunks.
const SHAPES: &[&[usize]] = &[
    &[1],
    &[3],
    &[17],
    &[33],
    &[65],
    &[127],
    &[1000],
    &[1024],
    &[9001],
    &[1, 1],
    &[3, 17],
    &[17, 3],
    &[33, 65],
    &[65, 4],
    &[4, 127],
    &[2, 1000],
    &[1000, 2],
    &[2, 1024],
    &[8, 12],
    &[3, 17, 4],
    &[2, 33, 5],
    &[5, 3, 8],
    &[1, 1000, 3],
    &[4, 65, 1],
    &[7, 1, 9],
    &[2, 300, 4],
];

/// Central differences in f64 of `sum(dy * forward(x))` at the indices `at`.
fn fd_vjp(
    x: &[f32],
    dy: &[f32],
    shape: &[usize],
    axis: usize,
    op: Op,
    h: f64,
    at: &[usize],
) -> Vec<f64> {
    let xv: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let g: Vec<f64> = dy.iter().map(|&v| f64::from(v)).collect();
    vjp_at(|p| fwd64(p, shape, axis, op), &xv, &g, at, h)
}

#[test]
fn backwards_match_finite_differences() {
    for dev in devices() {
        let mut rng = Rng::new(11);
        for &shape in SHAPES {
            let n: usize = shape.iter().product();
            // Distinct values, so the max has one arg-max and a small step never crosses a tie.
            let x = rng.distinct(n);
            let h = 0.25 / n as f64;
            let xt = Tensor::from_slice(&dev, &x, shape).unwrap();
            for axis in 0..shape.len() {
                let os = out_shape(shape, axis);
                let dy = rng.vec(os.iter().product(), 1.0);
                let dyt = Tensor::from_slice(&dev, &dy, &os).unwrap();
                for op in OPS {
                    let y = forward(&xt, axis, op);
                    let got = backward(&xt, &y, &dyt, axis, op).to_vec().unwrap();
                    // Every index of small tensors; of large ones a sample, and for the max
                    // every index that received a gradient.
                    let at: Vec<usize> = if n <= 1200 {
                        (0..n).collect()
                    } else {
                        (0..n)
                            .filter(|&j| {
                                j % 61 == 0 || j + 1 == n || (op == Op::Max && got[j] != 0.0)
                            })
                            .collect()
                    };
                    if op == Op::Max {
                        let (outer, _, inner) = view(shape, axis);
                        let nonzero = got.iter().filter(|&&g| g != 0.0).count();
                        assert!(nonzero <= outer * inner, "{op:?} {shape:?} axis {axis}");
                    }
                    let want = fd_vjp(&x, &dy, shape, axis, op, h, &at);
                    let g: Vec<f32> = at.iter().map(|&j| got[j]).collect();
                    assert_close(
                        &format!("{op:?} backward {shape:?} axis {axis} vs finite differences"),
                        &g,
                        &want,
                        1e-6,
                        1e-5,
                    );
                }
            }
        }
    }
}

#[test]
fn backward_of_gpu_forward_matches_f64_reference_everywhere() {
    for dev in devices() {
        let mut rng = Rng::new(12);
        for &shape in SHAPES {
            let n: usize = shape.iter().product();
            // Random values (the max's ties are rare), then values from {0, 1, 2}: ties
            // everywhere, which the max must resolve to the first index.
            let random = rng.vec(n, 3.0);
            let coarse: Vec<f32> = (0..n).map(|_| rng.below(3) as f32).collect();
            for (kind, x) in [("random", random), ("ties", coarse)] {
                let xt = Tensor::from_slice(&dev, &x, shape).unwrap();
                for axis in 0..shape.len() {
                    let os = out_shape(shape, axis);
                    let dy = rng.vec(os.iter().product(), 2.0);
                    let dyt = Tensor::from_slice(&dev, &dy, &os).unwrap();
                    for op in OPS {
                        let y = forward(&xt, axis, op);
                        let got = backward(&xt, &y, &dyt, axis, op).to_vec().unwrap();
                        let want = bwd64(&x, &dy, shape, axis, op);
                        let what = format!("{op:?} backward {shape:?} axis {axis} {kind}");
                        if op == Op::Mean {
                            assert_close(&what, &got, &want, 0.0, 1e-6);
                        } else {
                            // A copy of dy or 0: exact.
                            assert_close(&what, &got, &want, 0.0, 0.0);
                        }
                    }
                }
            }
        }
    }
}

/// `max_backward` of `x` (shape `shape`) with an explicit forward output `y`.
fn max_bwd(dev: &Device, x: &[f32], shape: &[usize], axis: usize, y: &[f32]) -> Vec<f32> {
    let os = out_shape(shape, axis);
    let dy: Vec<f32> = (0..y.len()).map(|k| 10.0 + k as f32).collect();
    let xt = Tensor::from_slice(dev, x, shape).unwrap();
    let yt = Tensor::from_slice(dev, y, &os).unwrap();
    let dyt = Tensor::from_slice(dev, &dy, &os).unwrap();
    ops::max_backward(&dyt, &xt, &yt, axis)
        .unwrap()
        .to_vec()
        .unwrap()
}

/// A vector of `n` zeros with `v` at each of `at`.
fn onehots(n: usize, at: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0; n];
    for &(i, g) in at {
        v[i] = g;
    }
    v
}

#[test]
fn max_backward_tie_and_nan_rules() {
    for dev in devices() {
        let nan = f32::NAN;
        // dy is 10, 11, 12, ... per output.
        // Ties: the first index along the axis, on both search kernels (short and long rows,
        // scalar and vec4), and across the chunks of a split axis.
        assert_eq!(
            max_bwd(&dev, &[1.0, 3.0, 3.0, 2.0], &[4], 0, &[3.0]),
            [0.0, 10.0, 0.0, 0.0]
        );
        assert_eq!(
            max_bwd(
                &dev,
                &[5.0, 5.0, 5.0, 1.0, 7.0, 7.0],
                &[2, 3],
                1,
                &[5.0, 7.0]
            ),
            [10.0, 0.0, 0.0, 0.0, 11.0, 0.0]
        );
        assert_eq!(
            max_bwd(
                &dev,
                &[5.0, 5.0, 5.0, 1.0, 7.0, 5.0],
                &[2, 3],
                0,
                &[5.0, 7.0, 5.0]
            ),
            [10.0, 0.0, 12.0, 0.0, 11.0, 0.0]
        );
        for n in [256, 257, 300_001, 300_004] {
            let x = vec![2.5; n];
            assert_eq!(
                max_bwd(&dev, &x, &[1, n], 1, &[2.5]),
                onehots(n, &[(0, 10.0)]),
                "all equal, {n}"
            );
            // The later maximum lies in a later chunk than the earlier one.
            let mut x = vec![0.0; n];
            x[n - 3] = 4.0;
            x[n / 2 + 1] = 4.0;
            assert_eq!(
                max_bwd(&dev, &x, &[1, n], 1, &[4.0]),
                onehots(n, &[(n / 2 + 1, 10.0)]),
                "two maxima, {n}"
            );
        }
        // A column search split into chunks: column 1 has maxima at 900 and 100.
        let (len, inner) = (1000, 3);
        let mut x = vec![0.0; len * inner];
        x[900 * inner + 1] = 9.0;
        x[100 * inner + 1] = 9.0;
        x[999 * inner + 2] = 9.0;
        let got = max_bwd(&dev, &x, &[len, inner], 0, &[0.0, 9.0, 9.0]);
        assert_eq!(
            got,
            onehots(
                len * inner,
                &[(0, 10.0), (100 * inner + 1, 11.0), (999 * inner + 2, 12.0)]
            )
        );
        // The same with vec4 columns: inner 8, ties at different rows per column.
        let (len, inner) = (700, 8);
        let mut x = vec![-1.0; len * inner];
        let mut y = vec![-1.0; inner];
        let mut want = Vec::new();
        for i in 0..inner {
            let (a, b) = (650 - 80 * i, 690 - 10 * i);
            x[a * inner + i] = i as f32;
            x[b * inner + i] = i as f32;
            y[i] = i as f32;
            want.push((a * inner + i, 10.0 + i as f32));
        }
        assert_eq!(
            max_bwd(&dev, &x, &[len, inner], 0, &y),
            onehots(len * inner, &want)
        );
        // -0.0 and +0.0 are equal: the first of them, whichever y is.
        assert_eq!(
            max_bwd(&dev, &[-1.0, -0.0, 0.0], &[3], 0, &[0.0]),
            [0.0, 10.0, 0.0]
        );
        assert_eq!(
            max_bwd(&dev, &[-1.0, 0.0, -0.0], &[3], 0, &[-0.0]),
            [0.0, 10.0, 0.0]
        );
        // NaN: a NaN y goes to the first NaN; a numeric y ignores NaNs; no match gives 0.
        let x = [1.0, nan, 5.0, nan, 5.0];
        assert_eq!(
            max_bwd(&dev, &x, &[5], 0, &[nan]),
            [0.0, 10.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(
            max_bwd(&dev, &x, &[5], 0, &[5.0]),
            [0.0, 0.0, 10.0, 0.0, 0.0]
        );
        assert_eq!(max_bwd(&dev, &x, &[5], 0, &[42.0]), [0.0; 5]);
        // NaN in lanes 2 and 3 of a vec4 of a long row, and in a column of vec4 columns.
        for n in [256, 259] {
            let mut x = vec![0.0; n];
            x[130] = nan;
            x[131] = nan;
            x[200] = nan;
            assert_eq!(
                max_bwd(&dev, &x, &[n], 0, &[nan]),
                onehots(n, &[(130, 10.0)])
            );
        }
        let mut x = vec![0.0; 5 * 4];
        x[2 * 4 + 3] = nan;
        x[4 * 4 + 3] = nan;
        assert_eq!(
            max_bwd(&dev, &x, &[5, 4], 0, &[0.0, 0.0, 0.0, nan]),
            onehots(20, &[(0, 10.0), (1, 11.0), (2, 12.0), (2 * 4 + 3, 13.0)])
        );
    }
}

#[test]
fn whole_tensor_backwards() {
    for dev in devices() {
        let mut rng = Rng::new(13);
        for shape in [&[7usize, 33, 5][..], &[4, 1000], &[1], &[]] {
            let n: usize = shape.iter().product();
            let x = rng.distinct(n);
            let xt = Tensor::from_slice(&dev, &x, shape).unwrap();
            let dyt = Tensor::from_slice(&dev, &[1.5], &[1]).unwrap();
            let flat = [n];
            let s = ops::sum_all_backward(&dyt, shape).unwrap();
            let m = ops::mean_all_backward(&dyt, shape).unwrap();
            let y = ops::max_all(&xt).unwrap();
            let mx = ops::max_all_backward(&dyt, &xt, &y).unwrap();
            for (op, dx) in [(Op::Sum, s), (Op::Mean, m), (Op::Max, mx)] {
                assert_eq!(dx.shape(), shape);
                let got = dx.to_vec().unwrap();
                let want = bwd64(&x, &[1.5], &flat, 0, op);
                assert_close(&format!("{op:?}_all {shape:?}"), &got, &want, 0.0, 1e-6);
                let at: Vec<usize> = (0..n)
                    .filter(|&j| j % 37 == 0 || (op == Op::Max && got[j] != 0.0))
                    .collect();
                let fd = fd_vjp(&x, &[1.5], &flat, 0, op, 0.25 / n as f64, &at);
                let g: Vec<f32> = at.iter().map(|&j| got[j]).collect();
                assert_close(&format!("{op:?}_all {shape:?} vs FD"), &g, &fd, 1e-9, 1e-6);
            }
        }
        // Ties over the whole tensor: the first in row-major order.
        let xt = Tensor::from_slice(&dev, &[1.0, 4.0, 2.0, 4.0, 4.0, 0.0], &[2, 3]).unwrap();
        let y = ops::max_all(&xt).unwrap();
        let dyt = Tensor::from_slice(&dev, &[3.0], &[1]).unwrap();
        let dx = ops::max_all_backward(&dyt, &xt, &y).unwrap();
        assert_eq!(dx.to_vec().unwrap(), [0.0, 3.0, 0.0, 0.0, 0.0, 0.0]);
        // Empty inputs give empty gradients.
        for shape in [&[0usize][..], &[3, 0], &[0, 4]] {
            let dyt = Tensor::from_slice(&dev, &[1.0], &[1]).unwrap();
            assert_eq!(ops::sum_all_backward(&dyt, shape).unwrap().shape(), shape);
        }
        let dyt = Tensor::from_slice(&dev, &[1.0; 3], &[3]).unwrap();
        let dx = ops::sum_backward(&dyt, &[3, 0], 1).unwrap();
        assert_eq!(dx.shape(), &[3, 0]);
    }
}

#[test]
fn large_backwards_use_a_2d_grid_and_repeat_bit_for_bit() {
    for dev in devices() {
        let mut rng = Rng::new(14);
        // 65,536 workgroups of 256 scalar units: more than one grid dimension holds.
        let n = 65_535 * 256 + 3;
        let dyt = Tensor::from_slice(&dev, &[-2.75], &[1]).unwrap();
        let dx = ops::sum_backward(&dyt, &[n], 0).unwrap().to_vec().unwrap();
        assert!(dx.iter().all(|&v| v == -2.75), "sum_backward {n}");
        let dx = ops::mean_all_backward(&dyt, &[n])
            .unwrap()
            .to_vec()
            .unwrap();
        let want = -2.75 * (1.0 / n as f32);
        assert!(dx.iter().all(|&v| v == want), "mean_all_backward {n}");

        // One long row: the search splits it into chunks; the maximum appears twice. Two runs
        // give the same bits.
        let mut x = rng.vec(n, 1.0);
        x[n - 5] = 2.0;
        x[n / 3] = 2.0;
        let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
        let y = ops::max(&xt, 0).unwrap();
        let a = ops::max_backward(&dyt, &xt, &y, 0).unwrap();
        let b = ops::max_backward(&dyt, &xt, &y, 0).unwrap();
        let (a, b) = (a.to_vec().unwrap(), b.to_vec().unwrap());
        assert_eq!(a[n / 3], -2.75);
        assert_eq!(a.iter().filter(|&&v| v != 0.0).count(), 1);
        assert!(
            a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
            "max_backward runs differ"
        );

        // n rows of one element: one search thread and one scatter thread per row, on a 2-D
        // grid. The forward output of an axis of length 1 is x itself; x serves as dy too.
        let x1 = xt.reshape(&[n, 1]).unwrap();
        let dx = ops::max_backward(&xt, &x1, &xt, 1).unwrap();
        assert!(dx.to_vec().unwrap() == x, "max_backward {n}x1");
    }
}

fn is_shape(r: Result<Tensor, Error>) -> bool {
    matches!(r, Err(Error::ShapeMismatch { .. }))
}

fn is_dtype(r: Result<Tensor, Error>) -> bool {
    matches!(r, Err(Error::DType { .. }))
}

#[test]
fn errors_are_typed() {
    for dev in devices() {
        let x = Tensor::from_slice(&dev, &[1.0; 6], &[2, 3]).unwrap();
        let y2 = Tensor::from_slice(&dev, &[1.0; 2], &[2]).unwrap();
        let y3 = Tensor::from_slice(&dev, &[1.0; 3], &[3]).unwrap();
        let one = Tensor::from_slice(&dev, &[1.0], &[1]).unwrap();
        let u2 = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
        let u6 = Tensor::from_u32(&dev, &[1; 6], &[2, 3]).unwrap();

        // Axis out of range.
        assert!(is_shape(ops::sum_backward(&y2, &[2, 3], 2)));
        assert!(is_shape(ops::mean_backward(&y2, &[2, 3], 5)));
        assert!(is_shape(ops::max_backward(&y2, &x, &y2, 2)));
        assert!(is_shape(ops::sum_backward(&one, &[], 0)));
        // dy does not have the forward output's shape.
        assert!(is_shape(ops::sum_backward(&y3, &[2, 3], 1)));
        assert!(is_shape(ops::mean_backward(&y2, &[2, 3], 0)));
        assert!(is_shape(ops::max_backward(&y3, &x, &y2, 1)));
        assert!(is_shape(ops::sum_all_backward(&y2, &[2, 3])));
        assert!(is_shape(ops::mean_all_backward(&y2, &[2, 3])));
        assert!(is_shape(ops::max_all_backward(&y2, &x, &one)));
        // y does not have the forward output's shape of x.
        assert!(is_shape(ops::max_backward(&y2, &x, &y3, 1)));
        assert!(is_shape(ops::max_all_backward(&one, &x, &y2)));
        // u32 tensors.
        assert!(is_dtype(ops::sum_backward(&u2, &[2, 3], 1)));
        assert!(is_dtype(ops::mean_all_backward(&u2, &[2])));
        assert!(is_dtype(ops::max_backward(&y2, &u6, &y2, 1)));
        assert!(is_dtype(ops::max_backward(&y2, &x, &u2, 1)));
        assert!(is_dtype(ops::max_backward(&u2, &x, &y2, 1)));
        assert!(is_dtype(ops::max_all_backward(&one, &u6, &one)));
        // A shape whose element count overflows.
        assert!(matches!(
            ops::sum_backward(&one, &[usize::MAX, 2], 1),
            Err(Error::TooLarge { .. })
        ));
    }
}
