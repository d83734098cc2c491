//! Causal attention at GPT-2-small-like sizes (B=8, H=8, T=1024, D=64): forward + backward,
//! the case `torch_anchors.py` times as explicit T x T attention and as fused SDPA, and
//! the forward alone. TFLOP/s counts the causal half of the useful work: 4 T^2 D per head
//! forward (QK^T and PV), 2.5x that for the backward.
//!
//! Before timing, sampled output rows are checked against a CPU f64 computation, so a
//! fast wrong kernel is reported as a failure, not a speed.

use tang_runtime::dense::attention::{attention, attention_backward};
use tang_runtime::{Device, Error, Tensor};

use super::Report;
use super::elementwise::{random, time};

const FWD_BWD: &str = "attention_B8_H8_T1024_d64_fwd_bwd";
const FWD: &str = "attention_B8_H8_T1024_d64_fwd";
const SHAPE: [usize; 4] = [8, 8, 1024, 64];

/// Causal FLOPs of the forward over all heads (the masked half excluded).
fn forward_flops() -> f64 {
    let [b, h, t, d] = SHAPE.map(|x| x as f64);
    b * h * 4.0 * t * t * d / 2.0
}

/// Compares sampled rows of `o` with an f64 computation from the host copies.
fn check_rows(o: &[f32], q: &[f32], k: &[f32], v: &[f32]) -> Result<(), String> {
    let [_, h, t, d] = SHAPE;
    let scale = 1.0 / (d as f64).sqrt();
    for (bh, i) in [(0, 0), (1, 17), (h + 3, 511), (SHAPE[0] * h - 1, t - 1)] {
        let base = bh * t * d;
        let s: Vec<f64> = (0..=i)
            .map(|j| {
                (0..d)
                    .map(|x| q[base + i * d + x] as f64 * k[base + j * d + x] as f64)
                    .sum::<f64>()
                    * scale
            })
            .collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
        for x in 0..d {
            let want: f64 = (0..=i)
                .map(|j| (s[j] - m).exp() / l * v[base + j * d + x] as f64)
                .sum();
            let got = o[base + i * d + x] as f64;
            if (got - want).abs() > 1e-4 + 1e-3 * want.abs() {
                return Err(format!("o[{bh}, {i}, {x}] = {got}, expected {want}"));
            }
        }
    }
    Ok(())
}

fn run_cases(dev: &Device, quick: bool, report: &mut Report) -> Result<(), Error> {
    let n = SHAPE.iter().product();
    let (hq, hk, hv) = (random(n, 21), random(n, 22), random(n, 23));
    let q = Tensor::from_slice(dev, &hq, &SHAPE)?;
    let k = Tensor::from_slice(dev, &hk, &SHAPE)?;
    let v = Tensor::from_slice(dev, &hv, &SHAPE)?;
    let go = Tensor::from_slice(dev, &random(n, 24), &SHAPE)?;
    let (o, _) = attention(&q, &k, &v, None)?;
    if let Err(e) = check_rows(&o.to_vec()?, &hq, &hk, &hv) {
        report.fail(FWD_BWD, &e);
        report.fail(FWD, &e);
        return Ok(());
    }
    let (warm, reps) = if quick { (2, 5) } else { (5, 30) };
    if report.wants(FWD_BWD) {
        let ms = time(dev, warm, reps, || {
            let (o, lse) = attention(&q, &k, &v, None)?;
            attention_backward(&q, &k, &v, &o, &lse, &go, None).map(drop)
        })?;
        report.add_rate(FWD_BWD, ms, forward_flops() * 3.5 / ms / 1e9, "TFLOP/s");
    }
    if report.wants(FWD) {
        let ms = time(dev, warm, reps, || attention(&q, &k, &v, None).map(drop))?;
        report.add_rate(FWD, ms, forward_flops() / ms / 1e9, "TFLOP/s");
    }
    Ok(())
}

/// Runs the attention cases and records them in `report` (ms; lower is better).
pub fn run(dev: &Device, quick: bool, report: &mut Report) {
    if !report.wants(FWD_BWD) && !report.wants(FWD) {
        return;
    }
    if let Err(e) = run_cases(dev, quick, report) {
        report.fail(FWD_BWD, &e);
    }
}
