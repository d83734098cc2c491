//! Row kernels (reductions, softmax, norms, embedding, cross-entropy) on the software
//! adapter against CPU f64 references; backwards against central finite differences.

use tang_runtime::Tensor;
use tang_runtime::ops;
use tang_runtime::ops::rows_team;
use tang_testing::{Rng, assert_close, devices, vjp_at};

const SIZES: [usize; 8] = [1, 3, 4, 17, 33, 65, 127, 1000];

fn cpu_reduce(x: &[f32], outer: usize, axis: usize, inner: usize, op: &str) -> Vec<f64> {
    let mut out = vec![0.0; outer * inner];
    for o in 0..outer {
        for i in 0..inner {
            let vals = (0..axis).map(|a| f64::from(x[(o * axis + a) * inner + i]));
            out[o * inner + i] = match op {
                "sum" => vals.sum(),
                "mean" => vals.sum::<f64>() / axis as f64,
                _ => vals.fold(f64::NEG_INFINITY, f64::max),
            };
        }
    }
    out
}

#[test]
fn reductions_match_cpu() {
    for dev in devices() {
        let mut rng = Rng::new(1);
        let shapes: &[(usize, usize, usize)] = &[
            (1, 1, 1),
            (3, 17, 1),
            (17, 1000, 1),
            (2, 33, 4),
            (5, 65, 3),
            (1, 127, 8),
            (4, 1, 5),
            (1, 300_001, 1),
            (2, 3000, 7),
            // Column trees: vec4 columns over chunks, then the partials again.
            (1, 5000, 36),
            (3, 700, 12),
        ];
        for &(o, a, i) in shapes {
            let x = rng.vec(o * a * i, 2.0);
            let t = Tensor::from_slice(&dev, &x, &[o, a, i]).unwrap();
            for op in ["sum", "mean", "max"] {
                let got = match op {
                    "sum" => ops::sum(&t, 1),
                    "mean" => ops::mean(&t, 1),
                    _ => ops::max(&t, 1),
                }
                .unwrap();
                assert_eq!(got.shape(), &[o, i]);
                let want = cpu_reduce(&x, o, a, i, op);
                assert_close(
                    &format!("{op} {o}x{a}x{i}"),
                    &got.to_vec().unwrap(),
                    &want,
                    1e-4 * (a as f64).sqrt(),
                    1e-5,
                );
            }
        }
        // Whole-tensor reductions, including a last axis of more than 65,535 rows.
        let x = rng.vec(70_000 * 3, 1.0);
        let t = Tensor::from_slice(&dev, &x, &[70_000, 3]).unwrap();
        let s = ops::sum(&t, 1).unwrap().to_vec().unwrap();
        assert_close(
            "sum 70000x3",
            &s,
            &cpu_reduce(&x, 70_000, 3, 1, "sum"),
            1e-5,
            1e-5,
        );
        let all = ops::sum_all(&t).unwrap().to_vec().unwrap();
        assert_close(
            "sum_all",
            &all,
            &[x.iter().map(|&v| f64::from(v)).sum()],
            2e-2,
            1e-5,
        );
        let m = ops::max_all(&t).unwrap().to_vec().unwrap();
        assert_close(
            "max_all",
            &m,
            &[x.iter()
                .fold(f64::NEG_INFINITY, |a, &v| a.max(f64::from(v)))],
            0.0,
            0.0,
        );
        let mean = ops::mean_all(&t).unwrap().to_vec().unwrap();
        assert_close(
            "mean_all",
            &mean,
            &[x.iter().map(|&v| f64::from(v)).sum::<f64>() / x.len() as f64],
            1e-6,
            1e-4,
        );
        assert!(ops::sum(&t, 2).is_err());
    }
}

fn cpu_softmax(x: &[f32], cols: usize, log: bool) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|r| {
            let m = r
                .iter()
                .fold(f64::NEG_INFINITY, |a, &v| a.max(f64::from(v)));
            let s: f64 = r.iter().map(|&v| (f64::from(v) - m).exp()).sum();
            r.iter()
                .map(move |&v| {
                    if log {
                        f64::from(v) - m - s.ln()
                    } else {
                        (f64::from(v) - m).exp() / s
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn softmax_forward_matches_cpu() {
    for dev in devices() {
        let mut rng = Rng::new(2);
        let mut cases: Vec<(usize, usize)> =
            SIZES.iter().map(|&c| (SIZES[(c * 7) % 8], c)).collect();
        cases.extend([(2, 5000), (3, 4099), (1, 8193)]);
        for (rows, cols) in cases {
            let x = rng.vec(rows * cols, 8.0);
            let t = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
            for log in [false, true] {
                let y = if log {
                    ops::log_softmax(&t)
                } else {
                    ops::softmax(&t)
                }
                .unwrap();
                assert_close(
                    &format!("softmax log={log} {rows}x{cols}"),
                    &y.to_vec().unwrap(),
                    &cpu_softmax(&x, cols, log),
                    1e-6,
                    2e-5,
                );
            }
        }
        // More rows than one grid dimension holds on the workgroup-per-row fallback (the 2-D
        // grid every row kernel shares; one case, since 66,000 workgroups are slow on a
        // software adapter). dense_rows_paths covers the subgroup path's grid.
        let (rows, cols) = (66_000, 3);
        let x = rng.vec(rows * cols, 4.0);
        let t = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
        let y = rows_team::with_workgroup_path(|| ops::softmax(&t).unwrap().to_vec().unwrap());
        assert_close(
            "softmax 66000x3",
            &y,
            &cpu_softmax(&x, cols, false),
            1e-6,
            2e-5,
        );
    }
}

/// Central differences of `f` at `x` in f64, contracted with `g`: the vector-Jacobian
/// product a backward must produce, at every `step`-th index (long rows are sampled to
/// keep the test fast) and the last.
fn fd_vjp_at(
    x: &[f32],
    g: &[f64],
    step: usize,
    f: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<(usize, f64)> {
    let xv: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let at: Vec<usize> = (0..x.len())
        .filter(|i| i % step == 0 || *i + 1 == x.len())
        .collect();
    let v = vjp_at(f, &xv, g, &at, 1e-5);
    at.into_iter().zip(v).collect()
}

/// Compares a row of a GPU gradient with sampled finite differences.
fn close_at(what: &str, got: &[f32], want: &[(usize, f64)], atol: f64, rtol: f64) {
    let g: Vec<f32> = want.iter().map(|&(i, _)| got[i]).collect();
    let w: Vec<f64> = want.iter().map(|&(_, v)| v).collect();
    assert_close(what, &g, &w, atol, rtol);
}

fn softmax_f64(x: &[f64], cols: usize, log: bool) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|r| {
            let m = r.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
            let s: f64 = r.iter().map(|&v| (v - m).exp()).sum();
            r.iter()
                .map(move |&v| {
                    if log {
                        v - m - s.ln()
                    } else {
                        (v - m).exp() / s
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn softmax_backward_matches_finite_differences() {
    for dev in devices() {
        let mut rng = Rng::new(3);
        for (rows, cols) in [
            (1, 1),
            (3, 17),
            (2, 33),
            (1, 65),
            (2, 128),
            (1, 4100),
            (1, 16_400),
        ] {
            let x = rng.vec(rows * cols, 3.0);
            let g = rng.vec(rows * cols, 1.0);
            let g64: Vec<f64> = g.iter().map(|&v| f64::from(v)).collect();
            let t = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
            let gt = Tensor::from_slice(&dev, &g, &[rows, cols]).unwrap();
            for log in [false, true] {
                let (y, dx) = if log {
                    let y = ops::log_softmax(&t).unwrap();
                    let dx = ops::log_softmax_backward(&gt, &y).unwrap();
                    (y, dx)
                } else {
                    let y = ops::softmax(&t).unwrap();
                    let dx = ops::softmax_backward(&gt, &y).unwrap();
                    (y, dx)
                };
                drop(y);
                // Rows are independent: differentiate row by row to keep the test fast.
                let got = dx.to_vec().unwrap();
                let step = if cols > 1000 { 97 } else { 1 };
                for r in 0..rows {
                    let sl = r * cols..(r + 1) * cols;
                    let want = fd_vjp_at(&x[sl.clone()], &g64[sl.clone()], step, |v| {
                        softmax_f64(v, cols, log)
                    });
                    close_at(
                        &format!("softmax_backward log={log} {rows}x{cols}"),
                        &got[sl],
                        &want,
                        2e-5,
                        1e-3,
                    );
                }
            }
        }
        let a = Tensor::from_slice(&dev, &[1.0; 6], &[2, 3]).unwrap();
        let b = Tensor::from_slice(&dev, &[1.0; 6], &[3, 2]).unwrap();
        assert!(ops::softmax_backward(&b, &a).is_err());
    }
}

/// Layer norm (or RMS norm) in f64: x [rows, cols], w, b [cols].
fn norm_f64(x: &[f64], w: &[f64], b: &[f64], cols: usize, eps: f64, rms: bool) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|r| {
            let n = cols as f64;
            let mean = if rms { 0.0 } else { r.iter().sum::<f64>() / n };
            let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let rstd = 1.0 / (var + eps).sqrt();
            r.iter()
                .enumerate()
                .map(move |(j, v)| (v - mean) * rstd * w[j] + if rms { 0.0 } else { b[j] })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn to64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&a| f64::from(a)).collect()
}

#[test]
fn norms_forward_match_cpu() {
    for dev in devices() {
        let mut rng = Rng::new(4);
        let mut cases: Vec<(usize, usize)> =
            SIZES.iter().map(|&c| (SIZES[(c * 3) % 8], c)).collect();
        cases.extend([(2, 4100), (1, 8195)]);
        for (rows, cols) in cases {
            let x = rng.vec(rows * cols, 3.0);
            let w = rng.vec(cols, 1.5);
            let b = rng.vec(cols, 1.0);
            let (xt, wt, bt) = (
                Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap(),
                Tensor::from_slice(&dev, &w, &[cols]).unwrap(),
                Tensor::from_slice(&dev, &b, &[cols]).unwrap(),
            );
            for rms in [false, true] {
                let out = if rms {
                    ops::rms_norm(&xt, &wt, 1e-5)
                } else {
                    ops::layer_norm(&xt, &wt, &bt, 1e-5)
                }
                .unwrap();
                let want = norm_f64(&to64(&x), &to64(&w), &to64(&b), cols, 1e-5, rms);
                // cols == 1: x - mean is a rounding residue amplified by rstd = 1/sqrt(eps).
                let atol = if cols == 1 && !rms { 1e-2 } else { 1e-4 };
                assert_close(
                    &format!("norm rms={rms} {rows}x{cols}"),
                    &out.y.to_vec().unwrap(),
                    &want,
                    atol,
                    1e-4,
                );
                assert_eq!(out.stats.shape(), &[rows, 2]);
            }
        }
        let x = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        let w = Tensor::from_slice(&dev, &[1.0; 4], &[4]).unwrap();
        assert!(ops::layer_norm(&x, &w, &w, 1e-5).is_err());
    }
}

#[test]
fn norms_backward_match_finite_differences() {
    for dev in devices() {
        let mut rng = Rng::new(5);
        // 2100 rows: several rows per workgroup in the backward's partial sums.
        for (rows, cols) in [
            (1, 3),
            (3, 17),
            (2, 33),
            (5, 64),
            (1, 4101),
            (2, 16_400),
            (2100, 5),
        ] {
            let x = rng.vec(rows * cols, 2.0);
            let w = rng.vec(cols, 1.5);
            let b = rng.vec(cols, 1.0);
            let g = rng.vec(rows * cols, 1.0);
            let (x64, w64, b64, g64) = (to64(&x), to64(&w), to64(&b), to64(&g));
            let xt = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
            let wt = Tensor::from_slice(&dev, &w, &[cols]).unwrap();
            let bt = Tensor::from_slice(&dev, &b, &[cols]).unwrap();
            let gt = Tensor::from_slice(&dev, &g, &[rows, cols]).unwrap();
            let eps = 1e-5;
            for rms in [false, true] {
                let (gx, gw, gb) = if rms {
                    let o = ops::rms_norm(&xt, &wt, eps as f32).unwrap();
                    let r = ops::rms_norm_backward(&gt, &xt, &wt, &o.stats).unwrap();
                    (r.grad_x, r.grad_weight, None)
                } else {
                    let o = ops::layer_norm(&xt, &wt, &bt, eps as f32).unwrap();
                    let r = ops::layer_norm_backward(&gt, &xt, &wt, &o.stats).unwrap();
                    (r.grad_x, r.grad_weight, Some(r.grad_bias))
                };
                let what = format!("norm backward rms={rms} {rows}x{cols}");
                // Input gradient row by row (rows are independent).
                let got = gx.to_vec().unwrap();
                let step = if cols > 1000 { 97 } else { 1 };
                for r in (0..rows).step_by(rows.div_ceil(8)) {
                    let sl = r * cols..(r + 1) * cols;
                    let want = fd_vjp_at(&x[sl.clone()], &g64[sl.clone()], step, |v| {
                        norm_f64(v, &w64, &b64, cols, eps, rms)
                    });
                    close_at(
                        &format!("{what}: grad_x row {r}"),
                        &got[sl],
                        &want,
                        1e-3,
                        1e-3,
                    );
                }
                // The weight and bias gradients are linear in the row terms: exact sums in f64.
                let mut ww = vec![0.0; cols];
                let mut wb = vec![0.0; cols];
                for r in 0..rows {
                    let row = &x64[r * cols..(r + 1) * cols];
                    let ones = vec![1.0; cols];
                    let zeros = vec![0.0; cols];
                    let xhat = norm_f64(row, &ones, &zeros, cols, eps, rms);
                    for j in 0..cols {
                        ww[j] += g64[r * cols + j] * xhat[j];
                        wb[j] += g64[r * cols + j];
                    }
                }
                let tol = 1e-4 * (rows as f64).sqrt();
                assert_close(
                    &format!("{what}: grad_weight"),
                    &gw.to_vec().unwrap(),
                    &ww,
                    tol,
                    1e-4,
                );
                if let Some(gb) = gb {
                    assert_close(
                        &format!("{what}: grad_bias"),
                        &gb.to_vec().unwrap(),
                        &wb,
                        tol,
                        1e-4,
                    );
                }
            }
        }
    }
}

#[test]
fn embedding_forward_and_deterministic_backward() {
    for dev in devices() {
        let mut rng = Rng::new(6);
        // (positions, vocab, dim); the last three put ids at more than 256 positions (the
        // tiled listing), two of them with more columns than a workgroup has threads.
        for (n, vocab, dim) in [
            (1, 1, 1),
            (17, 5, 3),
            (1000, 127, 8),
            (65, 1000, 33),
            (4000, 2, 4),
            (2100, 5, 1100),
            (1500, 3, 259),
        ] {
            let ids: Vec<u32> = (0..n).map(|_| rng.below(vocab) as u32).collect();
            let w = rng.vec(vocab * dim, 1.0);
            let it = Tensor::from_u32(&dev, &ids, &[n]).unwrap();
            let wt = Tensor::from_slice(&dev, &w, &[vocab, dim]).unwrap();
            let out = ops::embedding(&it, &wt).unwrap();
            assert_eq!(out.shape(), &[n, dim]);
            let want: Vec<f64> = ids
                .iter()
                .flat_map(|&id| {
                    (0..dim).map(move |j| {
                        if (id as usize) < vocab {
                            id as usize * dim + j
                        } else {
                            usize::MAX
                        }
                    })
                })
                .map(|k| {
                    if k == usize::MAX {
                        0.0
                    } else {
                        f64::from(w[k])
                    }
                })
                .collect();
            assert_close(
                &format!("embedding {n}x{vocab}x{dim}"),
                &out.to_vec().unwrap(),
                &want,
                0.0,
                0.0,
            );

            let g = rng.vec(n * dim, 1.0);
            let gt = Tensor::from_slice(&dev, &g, &[n, dim]).unwrap();
            let a = ops::embedding_backward(&gt, &it, vocab)
                .unwrap()
                .to_vec()
                .unwrap();
            let b = ops::embedding_backward(&gt, &it, vocab)
                .unwrap()
                .to_vec()
                .unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&a),
                bits(&b),
                "embedding_backward {n}x{vocab}x{dim}: runs differ"
            );
            let mut want = vec![0.0f64; vocab * dim];
            for (i, &id) in ids.iter().enumerate() {
                if (id as usize) < vocab {
                    for j in 0..dim {
                        want[id as usize * dim + j] += f64::from(g[i * dim + j]);
                    }
                }
            }
            assert_close(
                &format!("embedding_backward {n}x{vocab}x{dim}"),
                &a,
                &want,
                1e-5 * (n as f64).sqrt(),
                1e-5,
            );
            // Each row is summed in increasing position order, in f32: the same bits as
            // that sum here.
            let mut sequential = vec![0.0f32; vocab * dim];
            for (i, &id) in ids.iter().enumerate() {
                for j in 0..dim {
                    sequential[id as usize * dim + j] += g[i * dim + j];
                }
            }
            assert_eq!(
                bits(&a),
                bits(&sequential),
                "embedding_backward {n}x{vocab}x{dim}: not the in-order f32 sum"
            );
        }
        let it = Tensor::from_u32(&dev, &[0, 1], &[2]).unwrap();
        let gt = Tensor::from_slice(&dev, &[0.0; 6], &[3, 2]).unwrap();
        assert!(ops::embedding_backward(&gt, &it, 4).is_err());
    }
}

/// Mean cross-entropy in f64 over rows whose target is not `ignore`, and each row's loss.
fn ce_f64(x: &[f64], t: &[u32], classes: usize, ignore: u32) -> (f64, Vec<f64>) {
    let mut rows = Vec::new();
    let mut count = 0.0;
    for (r, &ti) in t.iter().enumerate() {
        if ti == ignore {
            rows.push(0.0);
            continue;
        }
        let row = &x[r * classes..(r + 1) * classes];
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        rows.push(lse - row[ti as usize]);
        count += 1.0;
    }
    (rows.iter().sum::<f64>() / count, rows)
}

#[test]
fn cross_entropy_matches_cpu_and_finite_differences() {
    for dev in devices() {
        let mut rng = Rng::new(7);
        let ignore = 2;
        for (rows, classes) in [
            (1, 1),
            (3, 17),
            (17, 4),
            (33, 65),
            (65, 127),
            (5, 1000),
            (2, 5000),
            (1, 16_400),
        ] {
            let x = rng.vec(rows * classes, 4.0);
            let mut t: Vec<u32> = (0..rows).map(|_| rng.below(classes) as u32).collect();
            if rows > 1 {
                t[1] = ignore;
            }
            let xt = Tensor::from_slice(&dev, &x, &[rows, classes]).unwrap();
            let tt = Tensor::from_u32(&dev, &t, &[rows]).unwrap();
            let out = ops::cross_entropy(&xt, &tt, Some(ignore)).unwrap();
            let x64 = to64(&x);
            let (mean, per_row) = ce_f64(&x64, &t, classes, ignore);
            let what = format!("cross_entropy {rows}x{classes}");
            assert_close(
                &format!("{what}: row_loss"),
                &out.row_loss.to_vec().unwrap(),
                &per_row,
                1e-5,
                1e-5,
            );
            assert_close(
                &format!("{what}: loss"),
                &out.loss.to_vec().unwrap(),
                &[mean],
                1e-5,
                1e-5,
            );
            let count = t.iter().filter(|&&v| v != ignore).count();
            assert_eq!(out.count.to_vec().unwrap(), vec![count as f32]);
            // Gradient: finite differences of the mean loss on small cases, the closed form
            // (softmax - onehot) / count on all.
            let grad = out.grad.to_vec().unwrap();
            if rows * classes <= 600 {
                let want = fd_vjp_at(&x, &[1.0], 1, |v| vec![ce_f64(v, &t, classes, ignore).0]);
                close_at(
                    &format!("{what}: grad (finite differences)"),
                    &grad,
                    &want,
                    1e-5,
                    1e-3,
                );
            }
            let sm = cpu_softmax(&x, classes, false);
            let want: Vec<f64> = (0..rows * classes)
                .map(|i| {
                    let (r, j) = (i / classes, i % classes);
                    if t[r] == ignore {
                        0.0
                    } else {
                        (sm[i] - f64::from(u8::from(t[r] as usize == j))) / count as f64
                    }
                })
                .collect();
            assert_close(&format!("{what}: grad"), &grad, &want, 1e-7, 1e-4);
        }
        // An out-of-range target is an error naming it (uploaded targets: at once).
        let xt = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        let tt = Tensor::from_u32(&dev, &[0, 9], &[2]).unwrap();
        let e = ops::cross_entropy(&xt, &tt, None).unwrap_err();
        assert!(
            matches!(
                e,
                tang_runtime::Error::IndexOutOfRange {
                    value: 9,
                    bound: 3,
                    ..
                }
            ),
            "{e}"
        );
        // Targets made on the GPU: the kernel reads nothing out of bounds (a NaN loss),
        // and the next read reports the error; the read after it sees the values.
        let gpu_made = tang_runtime::ops::clone(&tt).unwrap();
        let out = ops::cross_entropy(&xt, &gpu_made, None).unwrap();
        assert!(matches!(
            out.loss.to_vec(),
            Err(tang_runtime::Error::IndexOutOfRange { .. })
        ));
        assert!(out.loss.to_vec().unwrap()[0].is_nan());
        let bad = Tensor::from_u32(&dev, &[0, 1, 2], &[3]).unwrap();
        assert!(ops::cross_entropy(&xt, &bad, None).is_err());
    }
}
