//! Row kernels over `[65536, 1024]`: softmax and layer norm, forward and forward +
//! backward, the cases `torch_anchors.py` times under the same names; tang-only cases
//! for RMS norm, cross-entropy, and the workgroup-per-row fallback (`_workgroup`, the
//! path of adapters without subgroups) for comparison in the same run. Before timing,
//! sampled rows of every output are checked against f64 on the CPU: a case whose result
//! is wrong fails instead of reporting a time.
//!
//! Timing is the bench's common method (`elementwise::time`): each repeat records enough
//! steps for about 20 ms of GPU work and waits once, so the per-step time is GPU time plus
//! a small share of the submit (PyTorch's CUDA events also exclude the host).

use tang_runtime::ops;
use tang_runtime::ops::rows_team::{self, RowOp};
use tang_runtime::{DType, Device, Error, Tensor};

use super::Report;

const R: usize = 65536;
const C: usize = 1024;

/// Uniform numbers in [-2, 2): random data, reproducible (the bench's common generator).
fn random(n: usize, seed: u64) -> Vec<f32> {
    super::elementwise::random(n, seed)
        .into_iter()
        .map(|v| 2.0 * v)
        .collect()
}

/// Median milliseconds per step (the bench's common method: see `elementwise::time`).
fn time(dev: &Device, quick: bool, step: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    let (warm, reps) = if quick { (2, 5) } else { (5, 21) };
    super::elementwise::time(dev, warm, reps, step)
}

/// Rows checked against the CPU: first, last and a few between.
const CHECK_ROWS: [usize; 5] = [0, 1, R / 3, R / 2 + 7, R - 1];

/// Worst |got - want| / (1e-5 + |want|) over the checked rows; `want` maps a row's
/// index to its expected values.
fn worst(got: &[f32], want: impl Fn(usize) -> Vec<f64>) -> f64 {
    let mut w: f64 = 0.0;
    for r in CHECK_ROWS {
        for (g, e) in got[r * C..(r + 1) * C].iter().zip(want(r)) {
            let err = (f64::from(*g) - e).abs() / (1e-5 + e.abs());
            w = w.max(if err.is_nan() { f64::INFINITY } else { err });
        }
    }
    w
}

/// Checks softmax, its backward, layer norm and its backward on sampled rows.
fn check(x: &Tensor, g: &Tensor, w: &Tensor, b: &Tensor) -> Result<Result<(), String>, Error> {
    let (xv, gv, wv, bv) = (x.to_vec()?, g.to_vec()?, w.to_vec()?, b.to_vec()?);
    let row = |v: &[f32], r: usize| -> Vec<f64> {
        v[r * C..(r + 1) * C]
            .iter()
            .map(|&a| f64::from(a))
            .collect()
    };
    let sm = |r: usize| {
        let x = row(&xv, r);
        let m = x.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
        let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
        x.iter().map(|v| (v - m).exp() / s).collect::<Vec<f64>>()
    };
    let y = ops::softmax(x)?;
    let yv = y.to_vec()?;
    let dx = ops::softmax_backward(g, &y)?.to_vec()?;
    let ln = ops::layer_norm(x, w, b, 1e-5)?;
    let lv = ln.y.to_vec()?;
    let lg = ops::layer_norm_backward(g, x, w, &ln.stats)?
        .grad_x
        .to_vec()?;
    let n = C as f64;
    let xhat = |r: usize| {
        let x = row(&xv, r);
        let mean = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let rstd = 1.0 / (var + 1e-5).sqrt();
        (
            x.iter().map(|v| (v - mean) * rstd).collect::<Vec<f64>>(),
            rstd,
        )
    };
    let errs = [
        ("softmax", worst(&yv, sm)),
        (
            "softmax_backward",
            worst(&dx, |r| {
                let (y, g) = (row(&yv, r), row(&gv, r));
                let d: f64 = y.iter().zip(&g).map(|(a, b)| a * b).sum();
                y.iter().zip(&g).map(|(y, g)| y * (g - d)).collect()
            }),
        ),
        (
            "layer_norm",
            worst(&lv, |r| {
                let (xh, _) = xhat(r);
                (0..C)
                    .map(|j| xh[j] * f64::from(wv[j]) + f64::from(bv[j]))
                    .collect()
            }),
        ),
        (
            "layer_norm_backward",
            worst(&lg, |r| {
                let (xh, rstd) = xhat(r);
                let gw: Vec<f64> = (0..C)
                    .map(|j| f64::from(gv[r * C + j]) * f64::from(wv[j]))
                    .collect();
                let mg = gw.iter().sum::<f64>() / n;
                let mgx = gw.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>() / n;
                (0..C).map(|j| rstd * (gw[j] - mg - xh[j] * mgx)).collect()
            }),
        ),
    ];
    // Relative to 1e-5 + |want|: outputs near zero are judged by an absolute 1e-5 scale.
    match errs.iter().find(|(_, e)| *e > 2e-2) {
        Some((what, e)) => Ok(Err(format!(
            "{what}: wrong result (relative error {e:.3e})"
        ))),
        None => Ok(Ok(())),
    }
}

fn case(report: &mut Report, name: &str, bytes: f64, r: Result<f64, Error>) {
    match r {
        Ok(ms) => report.add_rate(
            name,
            ms,
            bytes / ms / 1e6,
            if name.ends_with("bwd") {
                "GB/s(min traffic)"
            } else {
                "GB/s"
            },
        ),
        Err(e) => report.fail(name, &e),
    }
}

/// Runs the row-kernel cases and records them in `report`.
pub fn run(dev: &Device, quick: bool, report: &mut Report) {
    let group = [
        "softmax_65536x1024",
        "layer_norm_65536x1024",
        "rms_norm_65536x1024",
        "cross_entropy_65536x1024",
        "softmax_65536x1024_fwd_f16",
        "layer_norm_65536x1024_fwd_bwd_f16",
    ];
    if !group.iter().any(|n| report.wants(n)) {
        return;
    }
    let setup = || -> Result<(Tensor, Tensor, Tensor, Tensor), Error> {
        Ok((
            Tensor::from_slice(dev, &random(R * C, 1), &[R, C])?,
            Tensor::from_slice(dev, &random(R * C, 2), &[R, C])?,
            Tensor::from_slice(dev, &random(C, 3), &[C])?,
            Tensor::from_slice(dev, &random(C, 4), &[C])?,
        ))
    };
    let (x, g, w, b) = match setup() {
        Ok(t) => t,
        Err(e) => return report.fail("softmax_65536x1024_fwd", &e),
    };
    for op in [
        RowOp::Softmax,
        RowOp::SoftmaxBackward,
        RowOp::Norm,
        RowOp::NormBackward,
    ] {
        eprintln!(
            "rows: {op:?} over {C} columns: {:?}",
            rows_team::row_path(dev, op, C)
        );
    }
    for (path, r) in [
        ("auto", check(&x, &g, &w, &b)),
        (
            "workgroup",
            rows_team::with_workgroup_path(|| check(&x, &g, &w, &b)),
        ),
    ] {
        let bad = match r {
            Ok(Ok(())) => continue,
            Ok(Err(msg)) => msg,
            Err(e) => e.to_string(),
        };
        return report.fail("softmax_65536x1024_fwd", &format!("{path} path: {bad}"));
    }
    // The checks above leave the GPU idle for a second or more while the CPU verifies
    // rows, and an idle GPU clocks down: warm it again before the first timed case.
    if let Err(e) = super::elementwise::warm_up(dev, if quick { 0.1 } else { 0.5 }) {
        return report.fail("softmax_65536x1024_fwd", &e);
    }
    let fwd = 2.0 * (R * C * 4) as f64;
    let fwd_bwd = 5.0 * (R * C * 4) as f64;
    let name = "softmax_65536x1024_fwd";
    if report.wants(name) {
        case(
            report,
            name,
            fwd,
            time(dev, quick, || ops::softmax(&x).map(drop)),
        );
    }
    let name = "layer_norm_65536x1024_fwd";
    if report.wants(name) {
        case(
            report,
            name,
            fwd,
            time(dev, quick, || ops::layer_norm(&x, &w, &b, 1e-5).map(drop)),
        );
    }
    let name = "softmax_65536x1024_fwd_workgroup";
    if report.wants(name) {
        let step = || rows_team::with_workgroup_path(|| ops::softmax(&x).map(drop));
        case(report, name, fwd, time(dev, quick, step));
    }
    let name = "layer_norm_65536x1024_fwd_workgroup";
    if report.wants(name) {
        let step =
            || rows_team::with_workgroup_path(|| ops::layer_norm(&x, &w, &b, 1e-5).map(drop));
        case(report, name, fwd, time(dev, quick, step));
    }
    let name = "softmax_65536x1024_fwd_bwd";
    if report.wants(name) {
        let step = || {
            let y = ops::softmax(&x)?;
            ops::softmax_backward(&g, &y).map(drop)
        };
        case(report, name, fwd_bwd, time(dev, quick, step));
    }
    let name = "layer_norm_65536x1024_fwd_bwd";
    if report.wants(name) {
        let step = || {
            let o = ops::layer_norm(&x, &w, &b, 1e-5)?;
            ops::layer_norm_backward(&g, &x, &w, &o.stats).map(drop)
        };
        case(report, name, fwd_bwd, time(dev, quick, step));
    }
    let name = "rms_norm_65536x1024_fwd_bwd";
    if report.wants(name) {
        let step = || {
            let o = ops::rms_norm(&x, &w, 1e-5)?;
            ops::rms_norm_backward(&g, &x, &w, &o.stats).map(drop)
        };
        case(report, name, fwd_bwd, time(dev, quick, step));
    }
    f16_cases(dev, quick, report, [&x, &g, &w, &b]);
    let name = "cross_entropy_65536x1024";
    if report.wants(name) {
        let t: Vec<u32> = (0..R as u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % C as u32)
            .collect();
        match Tensor::from_u32(dev, &t, &[R]) {
            Ok(tt) => {
                let step = || ops::cross_entropy(&x, &tt, None).map(drop);
                // Logits read once, gradient written once.
                case(report, name, fwd, time(dev, quick, step));
            }
            Err(e) => report.fail(name, &e),
        }
    }
}

/// Softmax and layer norm on f16 rows (f16 in and out, f32 statistics; f32 weights as
/// autocast leaves them): the bytes are half the f32 cases'.
fn f16_cases(dev: &Device, quick: bool, report: &mut Report, [x, g, w, b]: [&Tensor; 4]) {
    let names = [
        "softmax_65536x1024_fwd_f16",
        "layer_norm_65536x1024_fwd_f16",
        "layer_norm_65536x1024_fwd_bwd_f16",
    ];
    if !names.iter().any(|n| report.wants(n)) {
        return;
    }
    let (x, g) =
        match ops::to_dtype(x, DType::F16).and_then(|x| Ok((x, ops::to_dtype(g, DType::F16)?))) {
            Ok(t) => t,
            Err(e) => return report.fail(names[0], &e),
        };
    let fwd = 2.0 * (R * C * 2) as f64;
    let fwd_bwd = 5.0 * (R * C * 2) as f64;
    if report.wants(names[0]) {
        let step = || ops::softmax(&x).map(drop);
        case(report, names[0], fwd, time(dev, quick, step));
    }
    if report.wants(names[1]) {
        let step = || ops::layer_norm(&x, w, b, 1e-5).map(drop);
        case(report, names[1], fwd, time(dev, quick, step));
    }
    if report.wants(names[2]) {
        let step = || {
            let o = ops::layer_norm(&x, w, b, 1e-5)?;
            ops::layer_norm_backward(&g, &x, w, &o.stats).map(drop)
        };
        case(report, names[2], fwd_bwd, time(dev, quick, step));
    }
}

/// Linear's bias gradient (`ops::bias_backward`: the column sums of `G [16384, n]`) at the
/// GPT's widths, f32 and f16 `G` (autocast's), against PyTorch's `g.sum(0)` in
/// `examples/scripts/torch_ops_anchors.py`. Sampled columns are checked against f64 sums
/// first.
pub fn bias_grads(dev: &Device, quick: bool, report: &mut Report) {
    const ROWS: usize = 16384;
    for n in [384usize, 1152, 1536] {
        for half in [false, true] {
            let name = format!("bias_grad_{ROWS}x{n}{}", if half { "_f16" } else { "" });
            if !report.wants(&name) {
                continue;
            }
            let run = || -> Result<f64, Error> {
                let v = super::elementwise::rounded_f16(random(ROWS * n, 5));
                let g = Tensor::from_slice(dev, &v, &[ROWS, n])?;
                let g = if half {
                    ops::to_dtype(&g, DType::F16)?
                } else {
                    g
                };
                let got = ops::bias_backward(&g)?.to_vec()?;
                for j in [0, 1, n / 2, n - 1] {
                    let want: f64 = (0..ROWS).map(|r| f64::from(v[r * n + j])).sum();
                    if (f64::from(got[j]) - want).abs() > 1e-3 * (1.0 + want.abs()) {
                        return Err(Error::ShapeMismatch {
                            op: "bench bias_grad".into(),
                            detail: format!("column {j}: {} against {want}", got[j]),
                        });
                    }
                }
                time(dev, quick, || ops::bias_backward(&g).map(drop))
            };
            let bytes = (ROWS * n * if half { 2 } else { 4 }) as f64;
            case(report, &name, bytes, run());
        }
    }
}
