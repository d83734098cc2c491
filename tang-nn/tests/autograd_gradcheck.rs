//! Every recording op's gradient against central differences of an f64 reference on the
//! CPU: the GPU gradient of `<op(params), r>` for a random `r` (passed as the output's
//! gradient) must match the numeric gradient of the same sum. Shapes include 1, 3, 17 and
//! broadcast pairs.

mod gradcheck_common;

use gradcheck_common::{broadcast, check, coords, strides};
use tang_nn::autograd::Tensor;

/// Rows of length `n` mapped by `f`.
fn rows(x: &[f64], n: usize, f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    x.chunks(n).flat_map(f).collect()
}

#[test]
fn add_and_sub_broadcast() {
    let dev = tang_testing::device();
    let pairs: [(&[usize], &[usize], &[usize]); 5] = [
        (&[3], &[3], &[3]),
        (&[3, 17], &[17], &[3, 17]),
        (&[1], &[3], &[3]),
        (&[17, 1], &[1, 3], &[17, 3]),
        (&[2, 1, 3], &[17, 1], &[2, 17, 3]),
    ];
    for (k, (a, b, out)) in pairs.into_iter().enumerate() {
        let add = |x: &[Vec<f64>]| {
            let (p, q) = (broadcast(&x[0], a, out), broadcast(&x[1], b, out));
            p.iter().zip(&q).map(|(p, q)| p + q).collect()
        };
        let sub = |x: &[Vec<f64>]| {
            let (p, q) = (broadcast(&x[0], a, out), broadcast(&x[1], b, out));
            p.iter().zip(&q).map(|(p, q)| p - q).collect()
        };
        check(
            &dev,
            &format!("add {a:?}+{b:?}"),
            &[a, b],
            &|t| t[0].add(&t[1]),
            &add,
            k as u64,
        );
        check(
            &dev,
            &format!("sub {a:?}-{b:?}"),
            &[a, b],
            &|t| t[0].sub(&t[1]),
            &sub,
            9 + k as u64,
        );
    }
}

#[test]
fn mul_scalar_reshape_permute() {
    let dev = tang_testing::device();
    let scale = |x: &[Vec<f64>]| x[0].iter().map(|v| v * -2.5).collect();
    check(
        &dev,
        "mul_scalar",
        &[&[3, 17]],
        &|t| t[0].mul_scalar(-2.5),
        &scale,
        1,
    );
    // A reshape followed by a scale, so the view's gradient passes through a kernel.
    let gpu = |t: &[Tensor]| t[0].reshape(&[17, 3])?.mul_scalar(-2.5);
    check(&dev, "reshape", &[&[3, 17]], &gpu, &scale, 2);
    let shape = [2, 3, 17];
    let dims = [2, 0, 1];
    let permute = |x: &[Vec<f64>]| {
        let out: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
        let st = strides(&shape);
        (0..x[0].len())
            .map(|i| {
                let c = coords(i, &out);
                x[0][(0..3).map(|k| c[k] * st[dims[k]]).sum::<usize>()]
            })
            .collect()
    };
    check(
        &dev,
        "permute",
        &[&shape],
        &|t| t[0].permute(&dims),
        &permute,
        3,
    );
}

#[test]
fn matmul_shapes() {
    let dev = tang_testing::device();
    let cases: [(usize, usize, usize, usize); 4] =
        [(1, 3, 17, 1), (1, 17, 1, 3), (1, 1, 3, 17), (2, 3, 4, 5)];
    for (k, (batch, m, kk, n)) in cases.into_iter().enumerate() {
        let cpu = |x: &[Vec<f64>]| {
            let mut c = vec![0.0; batch * m * n];
            for b in 0..batch {
                for i in 0..m {
                    for j in 0..n {
                        c[(b * m + i) * n + j] = (0..kk)
                            .map(|p| x[0][(b * m + i) * kk + p] * x[1][(b * kk + p) * n + j])
                            .sum();
                    }
                }
            }
            c
        };
        let (sa, sb): (Vec<usize>, Vec<usize>) = if batch == 1 {
            (vec![m, kk], vec![kk, n])
        } else {
            (vec![batch, m, kk], vec![batch, kk, n])
        };
        check(
            &dev,
            &format!("matmul {sa:?}x{sb:?}"),
            &[&sa, &sb],
            &|t| t[0].matmul(&t[1]),
            &cpu,
            k as u64,
        );
    }
}

#[test]
fn narrow_cat_index_select() {
    let dev = tang_testing::device();
    let narrow = |x: &[Vec<f64>]| rows(&x[0], 17, |r| r[2..9].to_vec());
    check(
        &dev,
        "narrow",
        &[&[3, 17]],
        &|t| t[0].narrow(1, 2, 7),
        &narrow,
        1,
    );
    let cat = |x: &[Vec<f64>]| {
        (0..3)
            .flat_map(|i| [&x[0][i..i + 1], &x[1][i * 17..(i + 1) * 17]].concat())
            .collect()
    };
    check(
        &dev,
        "cat",
        &[&[3, 1], &[3, 17]],
        &|t| Tensor::cat(&[&t[0], &t[1]], 1),
        &cat,
        2,
    );
    let idx = [2u32, 0, 2, 1];
    let index = Tensor::from_u32(&dev, &idx, &[4]).unwrap();
    let select = |x: &[Vec<f64>]| {
        idx.iter()
            .flat_map(|&i| x[0][i as usize * 17..(i as usize + 1) * 17].to_vec())
            .collect()
    };
    check(
        &dev,
        "index_select",
        &[&[3, 17]],
        &|t| t[0].index_select(0, &index),
        &select,
        3,
    );
}

#[test]
fn reductions() {
    let dev = tang_testing::device();
    let sum1 = |x: &[Vec<f64>]| rows(&x[0], 17, |r| vec![r.iter().sum()]);
    check(&dev, "sum dim 1", &[&[3, 17]], &|t| t[0].sum(1), &sum1, 1);
    let sum0 = |x: &[Vec<f64>]| {
        (0..17)
            .map(|j| (0..3).map(|i| x[0][i * 17 + j]).sum())
            .collect()
    };
    check(&dev, "sum dim 0", &[&[3, 17]], &|t| t[0].sum(0), &sum0, 2);
    let mean1 = |x: &[Vec<f64>]| rows(&x[0], 3, |r| vec![r.iter().sum::<f64>() / 3.0]);
    check(
        &dev,
        "mean dim 1",
        &[&[17, 3]],
        &|t| t[0].mean(1),
        &mean1,
        3,
    );
    let all = |x: &[Vec<f64>]| vec![x[0].iter().sum()];
    check(&dev, "sum_all", &[&[1]], &|t| t[0].sum_all(), &all, 4);
    let mean_all = |x: &[Vec<f64>]| vec![x[0].iter().sum::<f64>() / 51.0];
    check(
        &dev,
        "mean_all",
        &[&[3, 17]],
        &|t| t[0].mean_all(),
        &mean_all,
        5,
    );
}

fn softmax_row(r: &[f64]) -> Vec<f64> {
    let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
    r.iter().map(|v| (v - m).exp() / s).collect()
}

#[test]
fn softmax_log_softmax_norms() {
    let dev = tang_testing::device();
    for (k, n) in [1usize, 3, 17].into_iter().enumerate() {
        let sm = |x: &[Vec<f64>]| rows(&x[0], n, softmax_row);
        check(
            &dev,
            &format!("softmax n={n}"),
            &[&[3, n]],
            &|t| t[0].softmax(),
            &sm,
            k as u64,
        );
        let lsm = |x: &[Vec<f64>]| {
            rows(&x[0], n, |r| {
                softmax_row(r).iter().map(|p| p.ln()).collect()
            })
        };
        check(
            &dev,
            &format!("log_softmax n={n}"),
            &[&[3, n]],
            &|t| t[0].log_softmax(),
            &lsm,
            5 + k as u64,
        );
    }
    for (k, n) in [3usize, 17].into_iter().enumerate() {
        let eps = 1e-5;
        let ln = |x: &[Vec<f64>]| {
            rows(&x[0], n, |r| {
                let mean = r.iter().sum::<f64>() / n as f64;
                let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                let rstd = 1.0 / (var + eps).sqrt();
                (0..n)
                    .map(|j| (r[j] - mean) * rstd * x[1][j] + x[2][j])
                    .collect()
            })
        };
        let gpu = |t: &[Tensor]| t[0].layer_norm(&t[1], &t[2], eps as f32);
        check(
            &dev,
            &format!("layer_norm n={n}"),
            &[&[2, 3, n], &[n], &[n]],
            &gpu,
            &ln,
            10 + k as u64,
        );
        let rms = |x: &[Vec<f64>]| {
            rows(&x[0], n, |r| {
                let ms = r.iter().map(|v| v * v).sum::<f64>() / n as f64;
                let rinv = 1.0 / (ms + eps).sqrt();
                (0..n).map(|j| r[j] * rinv * x[1][j]).collect()
            })
        };
        let gpu = |t: &[Tensor]| t[0].rms_norm(&t[1], eps as f32);
        check(
            &dev,
            &format!("rms_norm n={n}"),
            &[&[2, 3, n], &[n]],
            &gpu,
            &rms,
            20 + k as u64,
        );
    }
}

#[test]
fn embedding_cross_entropy_activations() {
    let dev = tang_testing::device();
    let ids = [3u32, 0, 3, 16, 1];
    let ids_t = Tensor::from_u32(&dev, &ids, &[5]).unwrap();
    let emb = |x: &[Vec<f64>]| {
        ids.iter()
            .flat_map(|&i| x[0][i as usize * 3..(i as usize + 1) * 3].to_vec())
            .collect()
    };
    check(
        &dev,
        "embedding",
        &[&[17, 3]],
        &|t| Tensor::embedding(&ids_t, &t[0]),
        &emb,
        1,
    );

    for (k, classes) in [1usize, 3, 17].into_iter().enumerate() {
        let targets: Vec<u32> = (0..4).map(|i| (i * 7 % classes) as u32).collect();
        let tt = Tensor::from_u32(&dev, &targets, &[4]).unwrap();
        let ce = |x: &[Vec<f64>]| {
            let losses: Vec<f64> = x[0]
                .chunks(classes)
                .zip(&targets)
                .map(|(r, &t)| -softmax_row(r)[t as usize].ln())
                .collect();
            vec![losses.iter().sum::<f64>() / 4.0]
        };
        let gpu = |t: &[Tensor]| t[0].cross_entropy(&tt, None);
        check(
            &dev,
            &format!("cross_entropy classes={classes}"),
            &[&[4, classes]],
            &gpu,
            &ce,
            3 + k as u64,
        );
    }

    let relu = |x: &[Vec<f64>]| x[0].iter().map(|&v| v.max(0.0)).collect();
    check(&dev, "relu", &[&[3, 17]], &|t| t[0].relu(), &relu, 7);
    let gelu = |x: &[Vec<f64>]| {
        x[0].iter()
            .map(|&v| {
                0.5 * v
                    * (1.0
                        + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044_715 * v.powi(3)))
                            .tanh())
            })
            .collect()
    };
    check(&dev, "gelu", &[&[1, 17]], &|t| t[0].gelu(), &gelu, 8);
}

/// Causal attention in f64: `q [b, h, t, d]`, `k`/`v` `[b, hkv, t, d]`.
fn attention_cpu(x: &[Vec<f64>], b: usize, h: usize, hkv: usize, t: usize, d: usize) -> Vec<f64> {
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0; b * h * t * d];
    for bi in 0..b {
        for hi in 0..h {
            let kv = hi / (h / hkv);
            let q_at = |i: usize| ((bi * h + hi) * t + i) * d;
            let kv_at = |j: usize| ((bi * hkv + kv) * t + j) * d;
            for i in 0..t {
                let scores: Vec<f64> = (0..=i)
                    .map(|j| {
                        (0..d)
                            .map(|c| x[0][q_at(i) + c] * x[1][kv_at(j) + c])
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let p = softmax_row(&scores);
                for c in 0..d {
                    o[q_at(i) + c] = (0..=i).map(|j| p[j] * x[2][kv_at(j) + c]).sum();
                }
            }
        }
    }
    o
}

#[test]
fn causal_attention_with_grouped_heads() {
    let dev = tang_testing::device();
    for (k, (b, h, hkv, t, d)) in [(1, 1, 1, 1, 3), (1, 2, 1, 3, 4), (2, 2, 2, 5, 17)]
        .into_iter()
        .enumerate()
    {
        let cpu = |x: &[Vec<f64>]| attention_cpu(x, b, h, hkv, t, d);
        let gpu = |p: &[Tensor]| {
            p[0].attention(
                &p[1],
                &p[2],
                &tang_nn::tang_runtime::ops::AttentionOptions::CAUSAL,
            )
        };
        let (qs, kvs) = ([b, h, t, d], [b, hkv, t, d]);
        check(
            &dev,
            &format!("attention {qs:?} kv {kvs:?}"),
            &[&qs, &kvs, &kvs],
            &gpu,
            &cpu,
            k as u64,
        );
    }
}
