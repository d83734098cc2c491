//! The two paths of the row kernels (subgroup teams and the workgroup fallback, see
//! `ops::rows_team`) on the software adapter: the
//! path choice follows the adapter, and both paths match f64 references on row lengths
//! that exercise every team size, partial teams, scalar and `vec4` units.

use tang_runtime::Tensor;
use tang_runtime::ops;
use tang_runtime::ops::rows_team::{self, RowOp, RowPath};
use tang_testing::{Rng, assert_close, devices};

fn to64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&a| f64::from(a)).collect()
}

/// Row lengths around every team size and register limit: scalar and `vec4` units, full
/// and partial teams, one unit per lane up to the most, and past it (the fallback).
const COLS: [usize; 24] = [
    1, 2, 3, 4, 5, 8, 12, 17, 31, 32, 33, 64, 100, 127, 128, 129, 256, 500, 512, 513, 1000, 1024,
    2048, 2052,
];

/// Runs `f` on the automatic path and on the forced fallback.
fn both<T>(f: impl Fn() -> T) -> [(&'static str, T); 2] {
    [
        ("auto", f()),
        ("workgroup", rows_team::with_workgroup_path(&f)),
    ]
}

#[test]
fn path_choice_follows_the_adapter() {
    for dev in devices() {
        let info = dev.info();
        eprintln!(
            "{}: subgroups {} (sizes {}..={})",
            info.name,
            info.features.contains(wgpu::Features::SUBGROUP),
            info.subgroup_min_size,
            info.subgroup_max_size
        );
        let ops = [
            RowOp::Softmax,
            RowOp::SoftmaxBackward,
            RowOp::Norm,
            RowOp::NormBackward,
            RowOp::CrossEntropy,
        ];
        let has = info.features.contains(wgpu::Features::SUBGROUP);
        let smin = info.subgroup_min_size.max(1);
        let tmax = (1u32 << smin.ilog2()).min(32);
        let mut teams = 0;
        for op in ops {
            let most = if op == RowOp::NormBackward { 8 } else { 16 };
            for cols in COLS {
                let p = rows_team::row_path(&dev, op, cols);
                assert_eq!(
                    rows_team::with_workgroup_path(|| rows_team::row_path(&dev, op, cols)),
                    RowPath::Workgroup
                );
                // The documented rule: a power-of-two team of at most the smallest subgroup
                // (and 32), no larger than the row, holding at most `most` units per lane.
                let vec4 = cols % 4 == 0;
                let units = (if vec4 { cols / 4 } else { cols }) as u32;
                let team = units.next_power_of_two().min(tmax);
                let per_lane = units.div_ceil(team);
                let wg = if op == RowOp::NormBackward { 128 } else { 256 };
                let want = if has && per_lane <= most {
                    teams += 1;
                    RowPath::Subgroup {
                        team,
                        per_lane,
                        vec4,
                        rows_per_group: wg / team,
                    }
                } else {
                    RowPath::Workgroup
                };
                assert_eq!(p, want, "{op:?} {cols}");
            }
            // Short rows always fit a team; very long rows never do.
            assert_eq!(
                matches!(rows_team::row_path(&dev, op, 16), RowPath::Subgroup { .. }),
                has
            );
            assert_eq!(rows_team::row_path(&dev, op, 100_000), RowPath::Workgroup);
        }
        assert!(
            !has || teams >= 5 * 12,
            "only {teams} cases on the subgroup path"
        );
    }
}

fn softmax_ref(x: &[f32], cols: usize, log: bool) -> Vec<f64> {
    to64(x)
        .chunks(cols)
        .flat_map(|r| {
            let m = r.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
            let s: f64 = r.iter().map(|&v| (v - m).exp()).sum();
            r.iter()
                .map(|&v| {
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

/// The softmax (log-softmax) backward in f64 from the f32 forward output `y`.
fn softmax_bwd_ref(y: &[f32], g: &[f32], cols: usize, log: bool) -> Vec<f64> {
    y.chunks(cols)
        .zip(g.chunks(cols))
        .flat_map(|(y, g)| {
            let (y, g) = (to64(y), to64(g));
            if log {
                let s: f64 = g.iter().sum();
                y.iter()
                    .zip(&g)
                    .map(|(y, g)| g - y.exp() * s)
                    .collect::<Vec<_>>()
            } else {
                let s: f64 = y.iter().zip(&g).map(|(y, g)| y * g).sum();
                y.iter().zip(&g).map(|(y, g)| y * (g - s)).collect()
            }
        })
        .collect()
}

#[test]
fn softmax_paths_match_reference() {
    for dev in devices() {
        let mut rng = Rng::new(11);
        for cols in COLS {
            // 37 rows: no row count divides the rows per workgroup, so the last workgroup
            // has dead teams.
            let rows = 37;
            let x = rng.vec(rows * cols, 8.0);
            let g = rng.vec(rows * cols, 1.0);
            let xt = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
            let gt = Tensor::from_slice(&dev, &g, &[rows, cols]).unwrap();
            for log in [false, true] {
                let want = softmax_ref(&x, cols, log);
                for (path, (y, dx)) in both(|| {
                    let (y, dx) = if log {
                        let y = ops::log_softmax(&xt).unwrap();
                        let dx = ops::log_softmax_backward(&gt, &y).unwrap();
                        (y, dx)
                    } else {
                        let y = ops::softmax(&xt).unwrap();
                        let dx = ops::softmax_backward(&gt, &y).unwrap();
                        (y, dx)
                    };
                    (y.to_vec().unwrap(), dx.to_vec().unwrap())
                }) {
                    let what = format!("softmax log={log} {rows}x{cols} {path}");
                    assert_close(&what, &y, &want, 1e-6, 2e-5);
                    let wdx = softmax_bwd_ref(&y, &g, cols, log);
                    assert_close(&format!("{what} backward"), &dx, &wdx, 1e-6, 1e-4);
                }
            }
        }
        // A row of -inf gives NaN and a row with one -inf a zero there, on both paths.
        let mut x = vec![f32::NEG_INFINITY; 64];
        x[32 + 5] = 1.0;
        x[32 + 7] = f32::NEG_INFINITY;
        let xt = Tensor::from_slice(&dev, &x, &[2, 32]).unwrap();
        for (path, y) in both(|| ops::softmax(&xt).unwrap().to_vec().unwrap()) {
            assert!(y[..32].iter().all(|v| v.is_nan()), "{path}: {y:?}");
            assert_eq!(y[32 + 5], 1.0, "{path}");
            assert_eq!(y[32 + 7], 0.0, "{path}");
        }
    }
}

/// Layer norm (RMS norm) forward and backward in f64: `(y, grad_x, grad_w, grad_b)`.
#[allow(clippy::type_complexity)]
fn norm_ref(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    g: &[f32],
    cols: usize,
    eps: f64,
    rms: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (w, b) = (to64(w), to64(b));
    let (mut y, mut dx) = (Vec::new(), Vec::new());
    let (mut gw, mut gb) = (vec![0.0; cols], vec![0.0; cols]);
    let n = cols as f64;
    for (r, gr) in x.chunks(cols).zip(g.chunks(cols)) {
        let (r, gr) = (to64(r), to64(gr));
        let mean = if rms { 0.0 } else { r.iter().sum::<f64>() / n };
        let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let rstd = 1.0 / (var + eps).sqrt();
        let xh: Vec<f64> = r.iter().map(|v| (v - mean) * rstd).collect();
        let gwx: Vec<f64> = gr.iter().zip(&w).map(|(g, w)| g * w).collect();
        let mg = if rms {
            0.0
        } else {
            gwx.iter().sum::<f64>() / n
        };
        let mgx = gwx.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>() / n;
        for j in 0..cols {
            y.push(xh[j] * w[j] + if rms { 0.0 } else { b[j] });
            dx.push(rstd * (gwx[j] - mg - xh[j] * mgx));
            gw[j] += gr[j] * xh[j];
            gb[j] += gr[j];
        }
    }
    (y, dx, gw, gb)
}

#[test]
fn norm_paths_match_reference_and_are_deterministic() {
    for dev in devices() {
        let mut rng = Rng::new(12);
        for cols in COLS {
            // 37 rows: dead teams. 40,000 rows of 64: more rows than 2048 workgroups of
            // teams, so each team of the backward walks several rows and sums them.
            let rows = match cols {
                64 => 40_000,
                1..=8 => 3000,
                _ => 37,
            };
            let x = rng.vec(rows * cols, 3.0);
            let w = rng.vec(cols, 1.5);
            let b = rng.vec(cols, 1.0);
            let g = rng.vec(rows * cols, 1.0);
            let xt = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
            let wt = Tensor::from_slice(&dev, &w, &[cols]).unwrap();
            let bt = Tensor::from_slice(&dev, &b, &[cols]).unwrap();
            let gt = Tensor::from_slice(&dev, &g, &[rows, cols]).unwrap();
            for rms in [false, true] {
                let (wy, wdx, wgw, wgb) = norm_ref(&x, &w, &b, &g, cols, 1e-5, rms);
                let run = || {
                    let (y, dx, gw, gb) = if rms {
                        let o = ops::rms_norm(&xt, &wt, 1e-5).unwrap();
                        let r = ops::rms_norm_backward(&gt, &xt, &wt, &o.stats).unwrap();
                        (o.y, r.grad_x, r.grad_weight, None)
                    } else {
                        let o = ops::layer_norm(&xt, &wt, &bt, 1e-5).unwrap();
                        let r = ops::layer_norm_backward(&gt, &xt, &wt, &o.stats).unwrap();
                        (o.y, r.grad_x, r.grad_weight, Some(r.grad_bias))
                    };
                    (
                        y.to_vec().unwrap(),
                        dx.to_vec().unwrap(),
                        gw.to_vec().unwrap(),
                        gb.map(|t| t.to_vec().unwrap()),
                    )
                };
                for (path, (y, dx, gw, gb)) in both(run) {
                    let what = format!("norm rms={rms} {rows}x{cols} {path}");
                    // cols == 1: x - mean is a rounding residue amplified by 1/sqrt(eps).
                    let loose = cols == 1 && !rms;
                    let atol = if loose { 1e-2 } else { 1e-4 };
                    assert_close(&what, &y, &wy, atol, 1e-4);
                    if !loose {
                        assert_close(&format!("{what}: grad_x"), &dx, &wdx, 1e-3, 1e-3);
                    }
                    let tol = 1e-4 * (rows as f64).sqrt();
                    assert_close(&format!("{what}: grad_weight"), &gw, &wgw, tol, 1e-4);
                    if let Some(gb) = gb {
                        assert_close(&format!("{what}: grad_bias"), &gb, &wgb, tol, 1e-4);
                    }
                }
                // The weight gradient is a fixed-order sum: the same bits on every run.
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let (a, b) = (run(), run());
                assert_eq!(
                    bits(&a.2),
                    bits(&b.2),
                    "rms={rms} {rows}x{cols}: runs differ"
                );
            }
        }
    }
}

#[test]
fn cross_entropy_paths_match_reference() {
    for dev in devices() {
        let mut rng = Rng::new(13);
        let ignore = 1;
        for classes in COLS {
            let rows = 37;
            let x = rng.vec(rows * classes, 4.0);
            let mut t: Vec<u32> = (0..rows).map(|_| rng.below(classes) as u32).collect();
            t[3] = ignore;
            let xt = Tensor::from_slice(&dev, &x, &[rows, classes]).unwrap();
            let tt = Tensor::from_u32(&dev, &t, &[rows]).unwrap();
            let sm = softmax_ref(&x, classes, false);
            let ls = softmax_ref(&x, classes, true);
            let count = t.iter().filter(|&&v| v != ignore).count() as f64;
            let mut loss = Vec::new();
            let mut grad = vec![0.0; rows * classes];
            for (r, &ti) in t.iter().enumerate() {
                let ti = ti as usize;
                if ti == ignore as usize {
                    loss.push(0.0);
                } else if ti >= classes {
                    loss.push(f64::NAN);
                } else {
                    loss.push(-ls[r * classes + ti]);
                    for j in 0..classes {
                        let hot = f64::from(u8::from(j == ti));
                        grad[r * classes + j] = (sm[r * classes + j] - hot) / count;
                    }
                }
            }
            for (path, (rl, gr, mean)) in both(|| {
                let o = ops::cross_entropy(&xt, &tt, Some(ignore)).unwrap();
                (
                    o.row_loss.to_vec().unwrap(),
                    o.grad.to_vec().unwrap(),
                    o.loss.to_vec().unwrap(),
                )
            }) {
                let what = format!("cross_entropy {rows}x{classes} {path}");
                assert_close(&format!("{what}: row_loss"), &rl, &loss, 1e-5, 1e-5);
                assert_close(&format!("{what}: grad"), &gr, &grad, 1e-7, 1e-4);
                let want = loss.iter().sum::<f64>() / count;
                assert_close(&format!("{what}: mean"), &mean, &[want], 1e-5, 1e-5);
            }
        }
    }
}

/// More workgroups than one grid dimension holds on the subgroup path (2-D grid).
#[test]
fn subgroup_path_spans_a_2d_grid() {
    for dev in devices() {
        let cols = 2;
        let RowPath::Subgroup { rows_per_group, .. } =
            rows_team::row_path(&dev, RowOp::Softmax, cols)
        else {
            // Without subgroups the fallback's 2-D grid is tested in dense_rows.
            assert!(!dev.info().features.contains(wgpu::Features::SUBGROUP));
            return;
        };
        let maxd = dev.info().limits.max_compute_workgroups_per_dimension as usize;
        let rows = maxd * rows_per_group as usize + 3 * rows_per_group as usize + 1;
        let mut rng = Rng::new(14);
        let x = rng.vec(rows * cols, 4.0);
        let xt = Tensor::from_slice(&dev, &x, &[rows, cols]).unwrap();
        let y = ops::softmax(&xt).unwrap().to_vec().unwrap();
        assert_close(
            &format!("softmax {rows}x{cols}"),
            &y,
            &softmax_ref(&x, cols, false),
            1e-6,
            2e-5,
        );
    }
}
