//! Row kernels over `[65536, 1024]`: softmax and layer norm, forward and forward +
//! backward, the cases `torch_anchors.py` times under the same names.
//!
//! Each repeat records `inner` steps and waits for the GPU once, so the per-step time is
//! GPU time plus the amortised submit (PyTorch's CUDA events also exclude the host).

use std::time::Instant;

use tang_runtime::dense::{norm, softmax};
use tang_runtime::{Device, Error, Tensor};

use super::Report;

const R: usize = 65536;
const C: usize = 1024;

/// Uniform numbers in [-2, 2) from a 64-bit LCG: random data, reproducible.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// Median milliseconds per step: warm-up, then `reps` repeats of `inner` steps each
/// followed by a wait for completion.
fn time(
    dev: &Device,
    quick: bool,
    mut step: impl FnMut() -> Result<(), Error>,
) -> Result<f64, Error> {
    let (warm, reps, inner) = if quick { (2, 5, 4) } else { (5, 21, 10) };
    for _ in 0..warm {
        step()?;
    }
    dev.sync()?;
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..inner {
            step()?;
        }
        dev.sync()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3 / inner as f64);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms[reps / 2])
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
    if !report.wants("softmax_65536x1024") && !report.wants("layer_norm_65536x1024") {
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
    let fwd = 2.0 * (R * C * 4) as f64;
    let fwd_bwd = 5.0 * (R * C * 4) as f64;
    let name = "softmax_65536x1024_fwd";
    if report.wants(name) {
        case(
            report,
            name,
            fwd,
            time(dev, quick, || softmax::softmax(&x).map(drop)),
        );
    }
    let name = "layer_norm_65536x1024_fwd";
    if report.wants(name) {
        case(
            report,
            name,
            fwd,
            time(dev, quick, || norm::layer_norm(&x, &w, &b, 1e-5).map(drop)),
        );
    }
    let name = "softmax_65536x1024_fwd_bwd";
    if report.wants(name) {
        let step = || {
            let y = softmax::softmax(&x)?;
            softmax::softmax_backward(&y, &g).map(drop)
        };
        case(report, name, fwd_bwd, time(dev, quick, step));
    }
    let name = "layer_norm_65536x1024_fwd_bwd";
    if report.wants(name) {
        let step = || {
            let o = norm::layer_norm(&x, &w, &b, 1e-5)?;
            norm::layer_norm_backward(&x, &w, &o.stats, &g).map(drop)
        };
        case(report, name, fwd_bwd, time(dev, quick, step));
    }
}
