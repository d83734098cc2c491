//! f64 CPU references of the pieces of the attention layers, written from PyTorch's
//! definitions, row-major throughout.

/// `x [rows, inp] · wᵀ + b` for `w [out, inp]` (PyTorch's `F.linear`).
pub fn linear(x: &[f64], w: &[f64], b: Option<&[f64]>, out: usize) -> Vec<f64> {
    let inp = w.len() / out;
    x.chunks(inp)
        .flat_map(|row| {
            (0..out).map(move |o| {
                let dot: f64 = row
                    .iter()
                    .zip(&w[o * inp..][..inp])
                    .map(|(a, b)| a * b)
                    .sum();
                dot + b.map_or(0.0, |b| b[o])
            })
        })
        .collect()
}

/// `x [n0, n1, n2, n3]` with dimensions 1 and 2 swapped: `[B, T, H, D]` (heads split
/// from `[B, T, H*D]`) to `[B, H, T, D]` and back.
pub fn swap12(x: &[f64], [n0, n1, n2, n3]: [usize; 4]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for a in 0..n0 {
        for i in 0..n1 {
            for j in 0..n2 {
                let (src, dst) = (((a * n1 + i) * n2 + j) * n3, ((a * n2 + j) * n1 + i) * n3);
                y[dst..dst + n3].copy_from_slice(&x[src..src + n3]);
            }
        }
    }
    y
}

/// Attention of `q [B, H, L, D]` over `k, v [B, Hkv, S, D]` (query head `h` reads kv head
/// `h / (H / Hkv)`), scores scaled by `1 / sqrt(D)`, plus `mask [L, S]` when given, with
/// keys past the query's position removed when `causal`.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    [b, h, hkv, l, s]: [usize; 5],
    mask: Option<&[f64]>,
    causal: bool,
) -> Vec<f64> {
    let d = q.len() / (b * h * l);
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0.0; q.len()];
    for bi in 0..b {
        for hi in 0..h {
            let kh = hi / (h / hkv);
            for i in 0..l {
                let qrow = &q[((bi * h + hi) * l + i) * d..][..d];
                let keys = if causal { (i + 1).min(s) } else { s };
                let scores: Vec<f64> = (0..keys)
                    .map(|j| {
                        let krow = &k[((bi * hkv + kh) * s + j) * d..][..d];
                        let dot: f64 = qrow.iter().zip(krow).map(|(a, b)| a * b).sum();
                        dot * scale + mask.map_or(0.0, |m| m[i * s + j])
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
                let z: f64 = e.iter().sum();
                let orow = &mut out[((bi * h + hi) * l + i) * d..][..d];
                for (j, w) in e.iter().enumerate() {
                    let vrow = &v[((bi * hkv + kh) * s + j) * d..][..d];
                    for (o, x) in orow.iter_mut().zip(vrow) {
                        *o += w / z * x;
                    }
                }
            }
        }
    }
    out
}

/// Layer norm over rows of `w.len()` with optional bias (PyTorch's `F.layer_norm`).
pub fn layer_norm(x: &[f64], w: &[f64], b: Option<&[f64]>, eps: f64) -> Vec<f64> {
    let n = w.len();
    x.chunks(n)
        .flat_map(|row| {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let inv = 1.0 / (var + eps).sqrt();
            (0..n).map(move |i| (row[i] - mean) * inv * w[i] + b.map_or(0.0, |b| b[i]))
        })
        .collect()
}

/// `erf(x)` in f64: `2/sqrt(pi) exp(-x²) Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))`, a series of
/// positive terms (no cancellation) that converges for every `x`.
pub fn erf(x: f64) -> f64 {
    if x.abs() > 6.0 {
        return x.signum();
    }
    let (mut term, mut sum) = (x, x);
    for n in 1..1000 {
        term *= 2.0 * x * x / (2 * n + 1) as f64;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
}

/// Exact GELU, `x Φ(x)`.
pub fn gelu_erf(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

/// `max(x, 0)`.
pub fn relu(x: f64) -> f64 {
    x.max(0.0)
}

/// `a + b` elementwise.
pub fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a + b).collect()
}

/// `x [B, T, C]` with its first two dimensions swapped.
pub fn swap01(x: &[f64], b: usize, t: usize) -> Vec<f64> {
    let c = x.len() / (b * t);
    let mut y = vec![0.0; x.len()];
    for bi in 0..b {
        for ti in 0..t {
            y[(ti * b + bi) * c..][..c].copy_from_slice(&x[(bi * t + ti) * c..][..c]);
        }
    }
    y
}
