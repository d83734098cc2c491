//! The f64 CPU reference of causal attention (with dropout on the weights) and the
//! random inputs the attention tests share.

#![allow(dead_code)]

use tang_runtime::ops::{AttentionOptions, DropoutState};
use tang_runtime::ops::{attention, attention_backward};
use tang_runtime::{Device, Tensor};
use tang_testing::{Rng, assert_close};

#[derive(Clone, Copy, Debug)]
pub struct Cfg {
    pub b: usize,
    pub h: usize,
    pub hkv: usize,
    pub t: usize,
    pub d: usize,
    /// Row `i` sees keys `0..=i` (else every key).
    pub causal: bool,
}

/// How many keys row `i` sees.
fn seen(c: Cfg, i: usize) -> usize {
    if c.causal { i + 1 } else { c.t }
}

impl Cfg {
    /// The options of `attention` for this configuration, with `dropout`.
    pub fn options<'a>(&self, dropout: Option<&'a DropoutState>) -> AttentionOptions<'a> {
        AttentionOptions {
            is_causal: self.causal,
            dropout,
            ..AttentionOptions::CAUSAL
        }
    }
}

/// The factor of weight `j` of score row `row` (`(b * H + h) * T + i`): 1 without
/// dropout, else 0 or `1 / (1 - p)` as `dropout` over the `[B, H, T, T]` weights decides.
pub fn drop_factor(drop: Option<&DropoutState>, t: usize, row: usize, j: usize) -> f64 {
    match drop {
        None => 1.0,
        Some(s) if s.keeps(t as u64, (row * t + j) as u64) => f64::from(s.scale()),
        Some(_) => 0.0,
    }
}

/// Naive causal attention in f64, with dropout on the weights when `drop` is given:
/// returns (o, lse, weights per (b, h) before dropout).
pub fn ref_forward(
    c: Cfg,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f64,
    drop: Option<&DropoutState>,
) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
    let Cfg {
        b, h, hkv, t, d, ..
    } = c;
    let mut o = vec![0.0; b * h * t * d];
    let mut lse = vec![0.0; b * h * t];
    let mut probs = Vec::new();
    for bi in 0..b {
        for hi in 0..h {
            let g = hi / (h / hkv);
            let qo = (bi * h + hi) * t * d;
            let ko = (bi * hkv + g) * t * d;
            let mut pm = vec![0.0; t * t];
            for i in 0..t {
                let s: Vec<f64> = (0..seen(c, i))
                    .map(|j| {
                        (0..d)
                            .map(|x| q[qo + i * d + x] as f64 * k[ko + j * d + x] as f64)
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
                lse[(bi * h + hi) * t + i] = m + l.ln();
                for j in 0..seen(c, i) {
                    let pj = (s[j] - m).exp() / l;
                    pm[i * t + j] = pj;
                    let f = drop_factor(drop, t, (bi * h + hi) * t + i, j);
                    for x in 0..d {
                        o[qo + i * d + x] += pj * f * v[ko + j * d + x] as f64;
                    }
                }
            }
            probs.push(pm);
        }
    }
    (o, lse, probs)
}

/// Analytic gradients of sum(o * go) in f64, with the dropout of [`ref_forward`]:
/// (dq, dk, dv).
pub fn ref_backward(
    c: Cfg,
    [q, k, v, go]: [&[f32]; 4],
    scale: f64,
    drop: Option<&DropoutState>,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let Cfg {
        b, h, hkv, t, d, ..
    } = c;
    let (o, _, probs) = ref_forward(c, q, k, v, scale, drop);
    let mut dq = vec![0.0; q.len()];
    let mut dk = vec![0.0; k.len()];
    let mut dv = vec![0.0; v.len()];
    for bi in 0..b {
        for hi in 0..h {
            let g = hi / (h / hkv);
            let qo = (bi * h + hi) * t * d;
            let ko = (bi * hkv + g) * t * d;
            let pm = &probs[bi * h + hi];
            for i in 0..t {
                let delta: f64 = (0..d)
                    .map(|x| go[qo + i * d + x] as f64 * o[qo + i * d + x])
                    .sum();
                for j in 0..seen(c, i) {
                    let pij = pm[i * t + j];
                    let dp: f64 = (0..d)
                        .map(|x| go[qo + i * d + x] as f64 * v[ko + j * d + x] as f64)
                        .sum();
                    let f = drop_factor(drop, t, (bi * h + hi) * t + i, j);
                    let ds = pij * (f * dp - delta) * scale;
                    for x in 0..d {
                        dq[qo + i * d + x] += ds * k[ko + j * d + x] as f64;
                        dk[ko + j * d + x] += ds * q[qo + i * d + x] as f64;
                        dv[ko + j * d + x] += pij * f * go[qo + i * d + x] as f64;
                    }
                }
            }
        }
    }
    (dq, dk, dv)
}

pub struct Inputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub go: Vec<f32>,
}

pub fn inputs(c: Cfg, seed: u64, amp: f32) -> Inputs {
    let mut rng = Rng::new(seed);
    Inputs {
        q: rng.vec(c.b * c.h * c.t * c.d, amp),
        k: rng.vec(c.b * c.hkv * c.t * c.d, amp),
        v: rng.vec(c.b * c.hkv * c.t * c.d, 1.0),
        go: rng.vec(c.b * c.h * c.t * c.d, 1.0),
    }
}

pub fn upload(dev: &Device, c: Cfg, x: &Inputs) -> (Tensor, Tensor, Tensor, Tensor) {
    let qs = [c.b, c.h, c.t, c.d];
    let ks = [c.b, c.hkv, c.t, c.d];
    (
        Tensor::from_slice(dev, &x.q, &qs).unwrap(),
        Tensor::from_slice(dev, &x.k, &ks).unwrap(),
        Tensor::from_slice(dev, &x.v, &ks).unwrap(),
        Tensor::from_slice(dev, &x.go, &qs).unwrap(),
    )
}

/// A causal configuration: batch, heads, kv heads, sequence length, head dim.
pub fn cfg(b: usize, h: usize, hkv: usize, t: usize, d: usize) -> Cfg {
    Cfg {
        b,
        h,
        hkv,
        t,
        d,
        causal: true,
    }
}

/// Forward (and with `backward` the backward) of one configuration, with dropout when
/// `drop` is given, against the f64 reference: inputs from `seed`, q and k scaled by `amp`.
pub fn check(
    dev: &Device,
    c: Cfg,
    seed: u64,
    amp: f32,
    backward: bool,
    drop: Option<&DropoutState>,
) {
    let x = inputs(c, seed, amp);
    let (q, k, v, go) = upload(dev, c, &x);
    let scale = 1.0 / (c.d as f64).sqrt();
    let options = c.options(drop);
    // Kept weights are scaled by 1 / (1 - p): the errors grow with them.
    let tol = if drop.is_some() { 1.5 } else { 1.0 };
    let (o, lse) = attention(&q, &k, &v, &options).unwrap();
    let (o_ref, lse_ref, _) = ref_forward(c, &x.q, &x.k, &x.v, scale, drop);
    assert_close(
        &format!("o {c:?}"),
        &o.to_vec().unwrap(),
        &o_ref,
        2e-5 * tol,
        1e-4,
    );
    assert_close(
        &format!("lse {c:?}"),
        &lse.to_vec().unwrap(),
        &lse_ref,
        2e-5,
        1e-5,
    );
    if !backward {
        return;
    }
    let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
    let (dq_ref, dk_ref, dv_ref) = ref_backward(c, [&x.q, &x.k, &x.v, &x.go], scale, drop);
    // Gradients sum up to T terms (and H/Hkv heads); f32 accumulation error grows with both.
    let atol = 1e-4 * tol * (1.0 + (c.t * c.h / c.hkv) as f64).sqrt();
    for (name, got, want) in [
        ("dq", &dq, &dq_ref),
        ("dk", &dk, &dk_ref),
        ("dv", &dv, &dv_ref),
    ] {
        assert_close(
            &format!("{name} {c:?}"),
            &got.to_vec().unwrap(),
            want,
            atol,
            1e-3,
        );
    }
}
