//! Causal attention at GPT-2-small-like sizes (B=8, H=8, T=1024, D=64): forward + backward,
//! the case `torch_anchors.py` times as explicit T x T attention and as fused SDPA, the
//! forward alone, the backward alone and each backward pass alone (to show where the
//! backward's time goes). TFLOP/s counts the causal half of the work: 4 T^2 D per head
//! forward (QK^T and PV), 2.5x that for the backward (five products); the dq pass does
//! three of those products (S, dP, dQ: 1.5x) and the dk/dv pass four (S and dP again,
//! dV, dK: 2x), so the passes' rates count the recomputation too.
//!
//! With dropout 0.2 on the weights inside the fused kernels (nanoGPT's recipe), forward +
//! backward at that shape, at the GPT step's (B=64, H=6, T=256: the materialized backward)
//! and at GPT-2 small's (B=8, H=12, T=1024); the dropout-free GPT-2 case beside it.
//! The forward alone on f16 tensors and with autocast's f16 rounding (the tensor-core
//! forward where the device has tensor cores), with and without dropout.
//! `examples/scripts/torch_attention_dropout.py` times PyTorch's SDPA under the same names.
//!
//! On devices with tensor cores the f32 cases run there, to f32 accuracy (operands split
//! into two f16 parts, three products each); elsewhere on the FMA units.
//!
//! Before timing, sampled output rows are checked against a CPU f64 computation, so a
//! fast wrong kernel is reported as a failure, not a speed.

use tang_runtime::ops::{
    AttentionOptions, DropoutState, Generator, attention, attention_backward,
    attention_backward_dkv, attention_backward_dq, attention_token_major_is_free, backward_tiles,
    to_dtype,
};
use tang_runtime::{DType, Device, Error, Tensor};

use super::Report;
use super::elementwise::{random, rounded_f16, time};

const FWD_BWD: &str = "attention_B8_H8_T1024_d64_fwd_bwd";
const FWD: &str = "attention_B8_H8_T1024_d64_fwd";
const BWD: &str = "attention_B8_H8_T1024_d64_bwd";
const BWD_DQ: &str = "attention_B8_H8_T1024_d64_bwd_dq";
const BWD_DKV: &str = "attention_B8_H8_T1024_d64_bwd_dkv";
const CASES: [&str; 5] = [FWD_BWD, FWD, BWD, BWD_DQ, BWD_DKV];
const SHAPE: [usize; 4] = [8, 8, 1024, 64];
const CAUSAL: AttentionOptions<'static> = AttentionOptions::CAUSAL;

/// The operands of a case: f32, f16 tensors, or f32 tensors rounded to f16 for the
/// products (`f16_inputs`, what autocast runs). The f16 kinds run on the tensor cores
/// where the device has them.
#[derive(Clone, Copy, PartialEq)]
enum Precision {
    F32,
    F16,
    Autocast,
}

/// Forward + backward cases `(name, [B, H, T, D], dropout, precision)`, dropout 0.2 when
/// set. The f16 names are those of PyTorch's fp16 SDPA cases without `_sdpa`.
const FWD_BWD_CASES: [(&str, [usize; 4], bool, Precision); 12] = {
    use Precision::{Autocast, F16, F32};
    const GPT: [usize; 4] = [64, 6, 256, 64];
    const GPT2: [usize; 4] = [8, 12, 1024, 64];
    [
        (
            "attention_B8_H8_T1024_d64_dropout_fwd_bwd",
            SHAPE,
            true,
            F32,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd",
            GPT,
            true,
            F32,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_fused_fwd_bwd",
            GPT,
            false,
            F32,
        ),
        ("attention_gpt2_B8_H12_T1024_d64_fwd_bwd", GPT2, false, F32),
        (
            "attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd",
            GPT2,
            true,
            F32,
        ),
        ("attention_B8_H8_T1024_d64_fwd_bwd_f16", SHAPE, false, F16),
        (
            "attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16",
            SHAPE,
            true,
            F16,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16",
            GPT,
            false,
            F16,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_autocast",
            GPT,
            false,
            Autocast,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16",
            GPT,
            true,
            F16,
        ),
        (
            "attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16",
            GPT2,
            false,
            F16,
        ),
        (
            "attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16",
            GPT2,
            true,
            F16,
        ),
    ]
};

/// Forward cases on f16 tensors (`f16`) or on f32 ones rounded to f16 on load (`autocast`):
/// the tensor-core forward where the device has tensor cores, `(name, [B, H, T, D],
/// dropout, f16 tensors)`. PyTorch's fp16 SDPA forward has the same names with `_sdpa`.
const HALF_FWD_CASES: [(&str, [usize; 4], bool, Precision); 6] = {
    use Precision::{Autocast, F16};
    const GPT: [usize; 4] = [64, 6, 256, 64];
    [
        ("attention_B8_H8_T1024_d64_f16_fwd", SHAPE, false, F16),
        (
            "attention_B8_H8_T1024_d64_dropout_f16_fwd",
            SHAPE,
            true,
            F16,
        ),
        ("attention_gpt_B64_H6_T256_d64_f16_fwd", GPT, false, F16),
        (
            "attention_gpt_B64_H6_T256_d64_autocast_fwd",
            GPT,
            false,
            Autocast,
        ),
        (
            "attention_gpt_B64_H6_T256_d64_dropout_autocast_fwd",
            GPT,
            true,
            Autocast,
        ),
        (
            "attention_gpt2_B8_H12_T1024_d64_f16_fwd",
            [8, 12, 1024, 64],
            false,
            F16,
        ),
    ]
};

/// The dropout probability of the dropout cases (nanoGPT's recipe).
const DROPOUT: f32 = 0.2;

/// Causal FLOPs of the forward over all heads (the masked half excluded).
fn forward_flops(shape: [usize; 4]) -> f64 {
    let [b, h, t, d] = shape.map(|x| x as f64);
    b * h * 4.0 * t * t * d / 2.0
}

/// Compares sampled rows of `o` with an f64 computation from the host copies, with the
/// weights dropped as `drop` decides (weight `(b, h, i, j)` is element
/// `((b H + h) T + i) T + j` of its stream).
fn check_rows(
    shape: [usize; 4],
    o: &[f32],
    [q, k, v]: [&[f32]; 3],
    drop: Option<&DropoutState>,
) -> Result<(), String> {
    check_rows_within(shape, o, [q, k, v], drop, 1e-3)
}

/// [`check_rows`] within relative error `rtol` (and `rtol / 10` absolute).
fn check_rows_within(
    shape: [usize; 4],
    o: &[f32],
    [q, k, v]: [&[f32]; 3],
    drop: Option<&DropoutState>,
    rtol: f64,
) -> Result<(), String> {
    let [b, h, t, d] = shape;
    let scale = 1.0 / (d as f64).sqrt();
    let factor = |bh: usize, i: usize, j: usize| match drop {
        None => 1.0,
        Some(s) if s.keeps(t as u64, ((bh * t + i) * t + j) as u64) => f64::from(s.scale()),
        Some(_) => 0.0,
    };
    for (bh, i) in [(0, 0), (1, 17), (h + 3, t / 2 - 1), (b * h - 1, t - 1)] {
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
                .map(|j| (s[j] - m).exp() / l * factor(bh, i, j) * v[base + j * d + x] as f64)
                .sum();
            let got = o[base + i * d + x] as f64;
            if (got - want).abs() > rtol / 10.0 + rtol * want.abs() {
                return Err(format!("o[{bh}, {i}, {x}] = {got}, expected {want}"));
            }
        }
    }
    Ok(())
}

/// Compares sampled gradients (dq of one row, dk and dv of two keys, all of one head) with
/// an f64 computation of that head's whole backward for those rows.
fn check_backward(
    grads: [&[f32]; 3],
    q: &[f32],
    k: &[f32],
    v: &[f32],
    go: &[f32],
) -> Result<(), String> {
    let [_, h, t, d] = SHAPE;
    let scale = 1.0 / (d as f64).sqrt();
    let bh = h + 5;
    let base = bh * t * d;
    let row = |x: &[f32], i: usize| -> Vec<f64> {
        x[base + i * d..base + (i + 1) * d]
            .iter()
            .map(|&y| y as f64)
            .collect()
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let (qs, ks, vs, gs): (Vec<_>, Vec<_>, Vec<_>, Vec<_>) = (
        (0..t).map(|i| row(q, i)).collect(),
        (0..t).map(|i| row(k, i)).collect(),
        (0..t).map(|i| row(v, i)).collect(),
        (0..t).map(|i| row(go, i)).collect(),
    );
    // Per query row: probabilities over keys 0..=i and delta = dO . O.
    let mut probs = Vec::with_capacity(t);
    let mut delta = Vec::with_capacity(t);
    for i in 0..t {
        let s: Vec<f64> = (0..=i).map(|j| dot(&qs[i], &ks[j]) * scale).collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
        let p: Vec<f64> = s.iter().map(|x| (x - m).exp() / l).collect();
        let o: Vec<f64> = (0..d)
            .map(|x| (0..=i).map(|j| p[j] * vs[j][x]).sum())
            .collect();
        delta.push(dot(&gs[i], &o));
        probs.push(p);
    }
    let ds = |i: usize, j: usize| probs[i][j] * (dot(&gs[i], &vs[j]) - delta[i]) * scale;
    let close = |what: &str, got: f32, want: f64| -> Result<(), String> {
        if (got as f64 - want).abs() > 1e-3 + 1e-3 * want.abs() {
            return Err(format!("{what} = {got}, expected {want}"));
        }
        Ok(())
    };
    let [dq, dk, dv] = grads;
    let i = t - 3;
    for x in 0..d {
        let want: f64 = (0..=i).map(|j| ds(i, j) * ks[j][x]).sum();
        close(&format!("dq[{bh}, {i}, {x}]"), dq[base + i * d + x], want)?;
    }
    for j in [0, 700] {
        for x in 0..d {
            let want_k: f64 = (j..t).map(|i| ds(i, j) * qs[i][x]).sum();
            let want_v: f64 = (j..t).map(|i| probs[i][j] * gs[i][x]).sum();
            close(&format!("dk[{bh}, {j}, {x}]"), dk[base + j * d + x], want_k)?;
            close(&format!("dv[{bh}, {j}, {x}]"), dv[base + j * d + x], want_v)?;
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
    let hgo = random(n, 24);
    let go = Tensor::from_slice(dev, &hgo, &SHAPE)?;
    let (o, lse) = attention(&q, &k, &v, &CAUSAL)?;
    if let Err(e) = check_rows(SHAPE, &o.to_vec()?, [&hq, &hk, &hv], None) {
        for case in CASES {
            report.fail(case, &e);
        }
        return Ok(());
    }
    let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL)?;
    let grads = [dq.to_vec()?, dk.to_vec()?, dv.to_vec()?];
    if let Err(e) = check_backward([&grads[0], &grads[1], &grads[2]], &hq, &hk, &hv, &hgo) {
        for case in [FWD_BWD, BWD, BWD_DQ, BWD_DKV] {
            report.fail(case, &e);
        }
        return Ok(());
    }
    let (warm, reps) = if quick { (2, 5) } else { (5, 30) };
    if report.wants(FWD_BWD) {
        let ms = time(dev, warm, reps, || {
            let (o, lse) = attention(&q, &k, &v, &CAUSAL)?;
            attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL).map(drop)
        })?;
        report.add_rate(
            FWD_BWD,
            ms,
            forward_flops(SHAPE) * 3.5 / ms / 1e9,
            "TFLOP/s",
        );
    }
    if report.wants(FWD) {
        let ms = time(dev, warm, reps, || attention(&q, &k, &v, &CAUSAL).map(drop))?;
        report.add_rate(FWD, ms, forward_flops(SHAPE) / ms / 1e9, "TFLOP/s");
    }
    if [BWD, BWD_DQ, BWD_DKV].iter().any(|c| report.wants(c)) {
        match backward_tiles(dev, SHAPE[3]) {
            // The f32 kernels on the tensor cores also make the token-major layout free.
            _ if attention_token_major_is_free(dev, SHAPE[3], false) => println!(
                "attention: f32 on the tensor cores, operands split into f16 high and low parts"
            ),
            Some((rows, threads)) => println!(
                "attention backward: register-blocked, dq pass {rows} rows, dk/dv pass {threads} threads"
            ),
            None => println!("attention backward: row-per-thread kernels"),
        }
    }
    if report.wants(BWD) {
        let ms = time(dev, warm, reps, || {
            attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL).map(drop)
        })?;
        report.add_rate(BWD, ms, forward_flops(SHAPE) * 2.5 / ms / 1e9, "TFLOP/s");
    }
    if report.wants(BWD_DQ) {
        let ms = time(dev, warm, reps, || {
            attention_backward_dq(&go, &q, &k, &v, &o, &lse, &CAUSAL).map(drop)
        })?;
        report.add_rate(BWD_DQ, ms, forward_flops(SHAPE) * 1.5 / ms / 1e9, "TFLOP/s");
    }
    if report.wants(BWD_DKV) {
        let (_, delta) = attention_backward_dq(&go, &q, &k, &v, &o, &lse, &CAUSAL)?;
        let ms = time(dev, warm, reps, || {
            attention_backward_dkv(&go, &q, &k, &v, &lse, &delta, &CAUSAL).map(drop)
        })?;
        report.add_rate(
            BWD_DKV,
            ms,
            forward_flops(SHAPE) * 2.0 / ms / 1e9,
            "TFLOP/s",
        );
    }
    Ok(())
}

/// Times the forward (and with `backward` the backward after it) at `shape` (dropout 0.2
/// inside the kernels when `dropout`) with the operands of `precision`, after checking
/// sampled output rows (f16 kinds: on f16-rounded inputs, within f16's rounding of the
/// weights).
fn timed_case(
    dev: &Device,
    name: &str,
    shape: [usize; 4],
    dropout: bool,
    precision: Precision,
    backward: bool,
    quick: bool,
) -> Result<Result<f64, String>, Error> {
    let n = shape.iter().product();
    let round = |x: Vec<f32>| {
        if precision == Precision::F32 {
            x
        } else {
            rounded_f16(x)
        }
    };
    let (hq, hk, hv) = (
        round(random(n, 31)),
        round(random(n, 32)),
        round(random(n, 33)),
    );
    let upload = |x: &[f32]| -> Result<Tensor, Error> {
        let t = Tensor::from_slice(dev, x, &shape)?;
        if precision == Precision::F16 {
            to_dtype(&t, DType::F16)
        } else {
            Ok(t)
        }
    };
    let (q, k, v) = (upload(&hq)?, upload(&hk)?, upload(&hv)?);
    let go = upload(&round(random(n, 34)))?;
    let mut generator = Generator::new(0);
    let state = dropout.then(|| DropoutState {
        stream: generator.next_stream(),
        p: DROPOUT,
    });
    let masked = state.as_ref();
    let options = AttentionOptions {
        dropout: masked,
        f16_inputs: precision == Precision::Autocast,
        ..AttentionOptions::CAUSAL
    };
    let (o, _) = attention(&q, &k, &v, &options)?;
    let o = to_dtype(&o, DType::F32)?.to_vec()?;
    let rtol = if precision == Precision::F32 {
        1e-3
    } else {
        5e-3
    };
    if let Err(e) = check_rows_within(shape, &o, [&hq, &hk, &hv], masked, rtol) {
        return Ok(Err(e));
    }
    let (warm, reps) = if quick { (2, 5) } else { (5, 30) };
    let run = || {
        let (o, lse) = attention(&q, &k, &v, &options)?;
        if backward {
            attention_backward(&go, &q, &k, &v, &o, &lse, &options)?;
        }
        Ok(())
    };
    let ms = time(dev, warm, reps, run)?;
    // Where the time goes, pass by pass (where the device can time its kernels).
    if backward && dev.start_profiling().is_ok() {
        const RUNS: u64 = 10;
        for _ in 0..RUNS {
            run()?;
        }
        let profile = dev.finish_profiling()?;
        println!(
            "  {name}: GPU time of one forward + backward by kernel:\n{}",
            profile.table(8, RUNS)
        );
    }
    Ok(Ok(ms))
}

/// Runs the attention cases and records them in `report` (ms; lower is better).
pub fn run(dev: &Device, quick: bool, report: &mut Report) {
    for (name, shape, dropout, precision) in FWD_BWD_CASES {
        if !report.wants(name) {
            continue;
        }
        match timed_case(dev, name, shape, dropout, precision, true, quick) {
            Ok(Ok(ms)) => {
                report.add_rate(name, ms, forward_flops(shape) * 3.5 / ms / 1e9, "TFLOP/s")
            }
            Ok(Err(e)) => report.fail(name, &e),
            Err(e) => report.fail(name, &e),
        }
    }
    for (name, shape, dropout, precision) in HALF_FWD_CASES {
        if !report.wants(name) {
            continue;
        }
        match timed_case(dev, name, shape, dropout, precision, false, quick) {
            Ok(Ok(ms)) => report.add_rate(name, ms, forward_flops(shape) / ms / 1e9, "TFLOP/s"),
            Ok(Err(e)) => report.fail(name, &e),
            Err(e) => report.fail(name, &e),
        }
    }
    if !CASES.iter().any(|c| report.wants(c)) {
        return;
    }
    if let Err(e) = run_cases(dev, quick, report) {
        report.fail(FWD_BWD, &e);
    }
}
