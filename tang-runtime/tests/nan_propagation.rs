//! NaN propagates as in PyTorch through the reductions, softmax, the norms and the loss,
//! on every kernel path (vec4 and scalar units, subgroup teams and the workgroup
//! fallback, row and column reductions), so a diverging training run is visible.
//!
//! GPU drivers may drop NaN in `max`/`min`/`clamp`, comparisons and `select` (see
//! DESIGN.md); these tests run the real kernels on the adapter at hand, so the same file
//! run on a hardware GPU checks that driver too.

use tang_runtime::Tensor;
use tang_runtime::ops;
use tang_runtime::ops::rows_team;
use tang_testing::device;

/// A `[rows, cols]` matrix of finite values with NaN at the given `(row, col)` places.
fn with_nans(rows: usize, cols: usize, nans: &[(usize, usize)]) -> Vec<f32> {
    let mut v: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7) % 11) as f32 * 0.25 - 1.0)
        .collect();
    for &(r, c) in nans {
        v[r * cols + c] = f32::NAN;
    }
    v
}

/// Row widths that take the vec4 and the scalar units, short (subgroup team) and long
/// (workgroup fallback and its register tail) rows.
const COLS: [usize; 5] = [3, 8, 13, 300, 4100];

/// Runs `f` on the default path and on the workgroup fallback.
fn both_paths(mut f: impl FnMut(&str)) {
    f("default path");
    rows_team::with_workgroup_path(|| f("workgroup path"));
}

#[test]
fn max_and_max_all_propagate_nan() {
    let dev = device();
    for cols in COLS {
        // Row 0: NaN first; row 1: NaN in the middle; row 2: NaN last; row 3: none.
        let nans = [(0, 0), (1, cols / 2), (2, cols - 1)];
        let data = with_nans(4, cols, &nans);
        let x = Tensor::from_slice(&dev, &data, &[4, cols]).unwrap();
        let m = ops::max(&x, 1).unwrap().to_vec().unwrap();
        assert!(m[..3].iter().all(|v| v.is_nan()), "cols {cols}: {m:?}");
        assert_eq!(
            m[3],
            data[3 * cols..].iter().copied().fold(f32::MIN, f32::max)
        );
        // Along the column axis (one thread per column).
        let mc = ops::max(&x, 0).unwrap().to_vec().unwrap();
        for (c, v) in mc.iter().enumerate() {
            let has_nan = nans.iter().any(|&(_, nc)| nc == c);
            assert_eq!(v.is_nan(), has_nan, "cols {cols}, column {c}: {v}");
        }
        let all = ops::max_all(&x).unwrap().item().unwrap();
        assert!(all.is_nan(), "cols {cols}: max_all {all}");
    }
    let x = Tensor::from_slice(&dev, &[1.0, f32::NAN, 3.0], &[3]).unwrap();
    assert!(ops::max(&x, 0).unwrap().item().unwrap().is_nan());
}

#[test]
fn max_backward_points_at_the_nan_that_max_returns() {
    let dev = device();
    let data = [1.0, f32::NAN, 3.0, f32::NAN];
    let x = Tensor::from_slice(&dev, &data, &[1, 4]).unwrap();
    let y = ops::max(&x, 1).unwrap();
    let dy = Tensor::from_slice(&dev, &[2.0], &[1]).unwrap();
    let dx = ops::max_backward(&dy, &x, &y, 1).unwrap().to_vec().unwrap();
    // The documented rule: a NaN maximum sends the gradient to the first NaN.
    assert_eq!(dx, [0.0, 2.0, 0.0, 0.0]);
}

#[test]
fn sum_and_mean_propagate_nan() {
    let dev = device();
    for cols in COLS {
        let data = with_nans(3, cols, &[(1, cols / 3)]);
        let x = Tensor::from_slice(&dev, &data, &[3, cols]).unwrap();
        for r in [ops::sum(&x, 1), ops::mean(&x, 1)] {
            let v = r.unwrap().to_vec().unwrap();
            assert!(!v[0].is_nan() && v[1].is_nan() && !v[2].is_nan(), "{v:?}");
        }
        for r in [ops::sum_all(&x), ops::mean_all(&x)] {
            assert!(r.unwrap().item().unwrap().is_nan());
        }
    }
}

#[test]
fn softmax_and_log_softmax_rows_with_nan_are_nan() {
    let dev = device();
    for cols in COLS {
        let data = with_nans(3, cols, &[(0, 0), (1, cols - 1)]);
        let x = Tensor::from_slice(&dev, &data, &[3, cols]).unwrap();
        both_paths(|path| {
            for y in [ops::softmax(&x), ops::log_softmax(&x)] {
                let y = y.unwrap().to_vec().unwrap();
                let (nan_rows, clean) = y.split_at(2 * cols);
                assert!(nan_rows.iter().all(|v| v.is_nan()), "{path}, cols {cols}");
                assert!(clean.iter().all(|v| v.is_finite()), "{path}, cols {cols}");
            }
        });
    }
}

#[test]
fn norms_of_rows_with_nan_are_nan() {
    let dev = device();
    for cols in COLS {
        let data = with_nans(3, cols, &[(0, 0), (1, cols / 2)]);
        let x = Tensor::from_slice(&dev, &data, &[3, cols]).unwrap();
        let w = Tensor::full(&dev, &[cols], 1.5).unwrap();
        let b = Tensor::full(&dev, &[cols], 0.5).unwrap();
        both_paths(|path| {
            for out in [
                ops::layer_norm(&x, &w, &b, 1e-5).unwrap(),
                ops::rms_norm(&x, &w, 1e-5).unwrap(),
            ] {
                let y = out.y.to_vec().unwrap();
                let (nan_rows, clean) = y.split_at(2 * cols);
                assert!(nan_rows.iter().all(|v| v.is_nan()), "{path}, cols {cols}");
                assert!(clean.iter().all(|v| v.is_finite()), "{path}, cols {cols}");
                let rstd = out.stats.to_vec().unwrap();
                assert!(rstd[1].is_nan() && rstd[3].is_nan() && rstd[5].is_finite());
            }
        });
    }
}

#[test]
fn cross_entropy_loss_with_nan_logits_is_nan_unless_the_row_is_ignored() {
    let dev = device();
    for cols in COLS {
        let data = with_nans(3, cols, &[(1, cols / 2)]);
        let x = Tensor::from_slice(&dev, &data, &[3, cols]).unwrap();
        both_paths(|path| {
            let t = Tensor::from_u32(&dev, &[0, 1, 2 % cols as u32], &[3]).unwrap();
            let ce = ops::cross_entropy(&x, &t, None).unwrap();
            let rows = ce.row_loss.to_vec().unwrap();
            assert!(rows[1].is_nan() && rows[0].is_finite(), "{path}: {rows:?}");
            assert!(ce.loss.item().unwrap().is_nan(), "{path}, cols {cols}");
            // PyTorch leaves ignored rows out of the mean, NaN logits included.
            let t = Tensor::from_u32(&dev, &[0, 99, 1], &[3]).unwrap();
            let ce = ops::cross_entropy(&x, &t, Some(99)).unwrap();
            let loss = ce.loss.item().unwrap();
            assert!(loss.is_finite(), "{path}, cols {cols}: {loss}");
        });
    }
}
