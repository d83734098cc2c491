//! Every layer's forward and gradients (its input and its own parameters) on the GPU
//! against central differences of an f64 reference, through the layer's `forward`:
//! shapes include 1, 3, 17 and batched inputs; dropout against the mask it drew.

mod nn_common;

use nn_common::{Case, linear_cpu};
use tang_nn::Module;
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::nn::{
    Approximate, AvgPool2d, Conv2d, Dropout, Embedding, GELU, LayerNorm, Linear, MaxPool2d,
    RMSNorm, ReLU, Sequential, SiLU, Sigmoid, Tanh,
};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::ops::{Conv2d as Conv2dOptions, Pool2d};

#[test]
fn linear_with_and_without_bias_and_batched() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(1);
    let cases: [(&[usize], usize, bool); 4] = [
        (&[3, 17], 1, true),
        (&[1, 3], 17, false),
        (&[2, 3, 3], 3, true),
        (&[17, 1], 3, true),
    ];
    for (k, (x_shape, m, bias)) in cases.into_iter().enumerate() {
        let n = *x_shape.last().unwrap();
        let fc = Linear::new(&dev, n, m, bias, &mut rng).unwrap();
        let (w, b) = ([m, n], [m]);
        let mut shapes = vec![x_shape, &w[..]];
        if bias {
            shapes.push(&b);
        }
        let name = format!("linear {x_shape:?} -> {m} bias={bias}");
        let case = Case::random(&name, &shapes, 1.0, 10 + k as u64);
        let cpu = |x: &[Vec<f64>]| linear_cpu(&x[0], &x[1], x.get(2).map(Vec::as_slice), n, m);
        case.check_layer(&dev, &fc, &cpu);
    }
}

fn layer_norm_cpu(x: &[f64], w: &[f64], b: Option<&[f64]>, n: usize, eps: f64) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|r| {
            let mean = r.iter().sum::<f64>() / n as f64;
            let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let inv = 1.0 / (var + eps).sqrt();
            r.iter()
                .enumerate()
                .map(|(j, v)| (v - mean) * inv * w[j] + b.map_or(0.0, |b| b[j]))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn layer_norm_with_and_without_bias_and_rms_norm() {
    let dev = tang_testing::device();
    for (k, (rows, n, bias)) in [(3usize, 17usize, true), (1, 3, false), (17, 1, true)]
        .into_iter()
        .enumerate()
    {
        let ln = LayerNorm::new(&dev, n, 1e-5, bias).unwrap();
        let (x, w) = ([rows, n], [n]);
        let mut shapes: Vec<&[usize]> = vec![&x, &w];
        if bias {
            shapes.push(&w);
        }
        let name = format!("layer_norm [{rows},{n}] bias={bias}");
        let mut case = Case::random(&name, &shapes, 1.0, 20 + k as u64);
        if n == 1 {
            // One value per row: the output is the bias alone and every input's
            // gradient 0; central differences of a constant are exact.
            case.grad_tol = 1e-3;
        }
        let cpu =
            |t: &[Vec<f64>]| layer_norm_cpu(&t[0], &t[1], t.get(2).map(Vec::as_slice), n, 1e-5);
        case.check_layer(&dev, &ln, &cpu);
    }
    for (k, (rows, n)) in [(3usize, 17usize), (1, 3), (2, 1)].into_iter().enumerate() {
        let norm = RMSNorm::new(&dev, n, None).unwrap();
        let name = format!("rms_norm [{rows},{n}]");
        let case = Case::random(&name, &[&[rows, n], &[n]], 1.0, 30 + k as u64);
        let eps = f64::from(f32::EPSILON);
        let cpu = |t: &[Vec<f64>]| {
            t[0].chunks(n)
                .flat_map(|r| {
                    let ms = r.iter().map(|v| v * v).sum::<f64>() / n as f64;
                    let inv = 1.0 / (ms + eps).sqrt();
                    r.iter()
                        .enumerate()
                        .map(move |(j, v)| v * inv * t[1][j])
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        case.check_layer(&dev, &norm, &cpu);
    }
}

#[test]
fn activations_as_modules() {
    let dev = tang_testing::device();
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let erf_gelu = |v: f64| 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2));
    let tanh_gelu = |v: f64| {
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044_715 * v.powi(3))).tanh())
    };
    type F = Box<dyn Fn(f64) -> f64>;
    let cases: Vec<(&str, Box<dyn tang_nn::nn::Layer>, F)> = vec![
        ("relu", Box::new(ReLU), Box::new(|v: f64| v.max(0.0))),
        ("gelu none", Box::new(GELU::default()), Box::new(erf_gelu)),
        (
            "gelu tanh",
            Box::new(GELU::new(Approximate::Tanh)),
            Box::new(tanh_gelu),
        ),
        (
            "silu",
            Box::new(SiLU),
            Box::new(move |v: f64| v * sigmoid(v)),
        ),
        ("sigmoid", Box::new(Sigmoid), Box::new(sigmoid)),
        ("tanh", Box::new(Tanh), Box::new(f64::tanh)),
    ];
    for (k, (name, layer, f)) in cases.iter().enumerate() {
        for (j, shape) in [&[1usize][..], &[3, 17]].into_iter().enumerate() {
            let name = format!("{name} {shape:?}");
            let case = Case::random(&name, &[shape], 3.0, 40 + 2 * k as u64 + j as u64);
            let cpu = |t: &[Vec<f64>]| t[0].iter().map(|&v| f(v)).collect();
            case.check_layer(&dev, layer, &cpu);
        }
    }
    assert!("exact".parse::<Approximate>().is_err());
}

/// erf by its series/continued fraction to double precision (Abramowitz–Stegun 7.1.26 is
/// too coarse for a gradient check): the Maclaurin series, which converges fast for the
/// |x| < 3 used here.
fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..200 {
        term *= -x * x / n as f64;
        let add = term / (2 * n + 1) as f64;
        sum += add;
        if add.abs() < 1e-17 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn embedding_gradient_sums_repeated_ids() {
    let dev = tang_testing::device();
    let emb = Embedding::new(&dev, 17, 3, &mut SplitMix64::new(2)).unwrap();
    let ids = [3u32, 0, 3, 16, 1];
    let ids_t = Tensor::from_u32(&dev, &ids, &[5]).unwrap();
    let case = Case::random("embedding [17,3]", &[&[17, 3]], 1.0, 50);
    let params = emb.parameters();
    tang_nn::autograd::no_grad(|| {
        params[0].copy_(&Tensor::constant(
            RawTensor::from_slice(&dev, &case.inputs[0].0, &[17, 3]).unwrap(),
        ))
    })
    .unwrap();
    let gpu = |_: &[Tensor]| emb.forward(&ids_t);
    let out = gpu(&[]).unwrap();
    assert_eq!(out.shape(), &[5, 3]);
    let r: Vec<f32> = (0..15).map(|i| i as f32).collect();
    let grads = out
        .backward_with(RawTensor::from_slice(&dev, &r, &[5, 3]).unwrap())
        .unwrap();
    let mut want = vec![0.0f64; 51];
    for (row, &id) in ids.iter().enumerate() {
        for j in 0..3 {
            want[id as usize * 3 + j] += f64::from(r[row * 3 + j]);
        }
    }
    let got = grads.get(&emb.weight).unwrap().to_vec().unwrap();
    tang_testing::assert_close("embedding grad", &got, &want, 0.0, 0.0);
}

#[test]
fn sequential_mlp_end_to_end() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(3);
    let (n, h, m) = (3usize, 17usize, 1usize);
    let mlp = Sequential::new()
        .append(Linear::new(&dev, n, h, true, &mut rng).unwrap())
        .append(Tanh)
        .append(Linear::new(&dev, h, m, true, &mut rng).unwrap());
    let case = Case::random(
        "sequential",
        &[&[4, n], &[h, n], &[h], &[m, h], &[m]],
        1.0,
        60,
    );
    let cpu = |t: &[Vec<f64>]| {
        let a: Vec<f64> = linear_cpu(&t[0], &t[1], Some(&t[2]), n, h)
            .into_iter()
            .map(f64::tanh)
            .collect();
        linear_cpu(&a, &t[3], Some(&t[4]), h, m)
    };
    case.check_layer(&dev, &mlp, &cpu);
}

#[test]
fn dropout_gradient_is_the_mask_it_drew_and_eval_is_identity() {
    let dev = tang_testing::device();
    tang_nn::nn::manual_seed(7);
    let p = 0.25f32;
    let drop = Dropout::new(p).unwrap();
    let n = 4096;
    // Inputs away from 0, so a kept element is exactly the nonzero outputs.
    let xs: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32).collect();
    let x = Tensor::parameter(RawTensor::from_slice(&dev, &xs, &[64, 64]).unwrap());
    let y = drop.forward(&x).unwrap();
    let ys = y.to_vec().unwrap();
    let scale = 1.0 / (1.0 - p);
    let kept: Vec<bool> = ys.iter().map(|&v| v != 0.0).collect();
    for (i, (&yv, &k)) in ys.iter().zip(&kept).enumerate() {
        if k {
            assert!((yv - xs[i] * scale).abs() < 1e-5, "kept element scaled");
        }
    }
    // About 1 - p kept: within 5 standard deviations of a binomial.
    let count = kept.iter().filter(|&&k| k).count() as f64;
    let (mean, sd) = (n as f64 * 0.75, (n as f64 * 0.25 * 0.75).sqrt());
    assert!((count - mean).abs() < 5.0 * sd, "{count} kept of {n}");
    // The backward regenerates the same mask: the gradient is r where kept, times scale.
    let r: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
    let grads = y
        .backward_with(RawTensor::from_slice(&dev, &r, &[64, 64]).unwrap())
        .unwrap();
    let got = grads.get(&x).unwrap().to_vec().unwrap();
    let want: Vec<f64> = r
        .iter()
        .zip(&kept)
        .map(|(&g, &k)| if k { f64::from(g * scale) } else { 0.0 })
        .collect();
    tang_testing::assert_close("dropout grad", &got, &want, 1e-6, 1e-6);

    // A second forward draws another mask; after manual_seed the first one again.
    let again = drop.forward(&x).unwrap().to_vec().unwrap();
    assert_ne!(again, ys);
    tang_nn::nn::manual_seed(7);
    assert_eq!(drop.forward(&x).unwrap().to_vec().unwrap(), ys);

    drop.eval();
    assert_eq!(drop.forward(&x).unwrap().to_vec().unwrap(), xs);
    drop.train();
    assert!(Dropout::new(1.5).is_err());
    assert!(Dropout::new(-0.1).is_err());
}

#[test]
fn gather_and_mul_constant_with_broadcast_pairs() {
    let dev = tang_testing::device();
    // gather along dim 1 and dim 0 (an index past the end is an error: index_errors.rs).
    let idx = [2u32, 0, 16, 9, 5, 5];
    let index = Tensor::from_u32(&dev, &idx, &[3, 2]).unwrap();
    let case = Case::random("gather dim 1", &[&[3, 17]], 1.0, 70);
    let cpu = |t: &[Vec<f64>]| {
        (0..6)
            .map(|k| {
                let (row, i) = (k / 2, idx[k] as usize);
                if i < 17 { t[0][row * 17 + i] } else { 0.0 }
            })
            .collect()
    };
    case.check(&dev, &|t| t[0].gather(1, &index), &cpu, &[0]);
    let idx0 = [1u32, 0, 2, 2, 0, 1];
    let index0 = Tensor::from_u32(&dev, &idx0, &[2, 3]).unwrap();
    let case = Case::random("gather dim 0", &[&[3, 3]], 1.0, 71);
    let cpu0 = |t: &[Vec<f64>]| {
        (0..6)
            .map(|k| {
                let (i, col) = (idx0[k] as usize, k % 3);
                if i < 3 { t[0][i * 3 + col] } else { 0.0 }
            })
            .collect()
    };
    case.check(&dev, &|t| t[0].gather(0, &index0), &cpu0, &[0]);

    // A constant of the same shape, one element, or a trailing row.
    for (k, m_shape) in [&[3usize, 17][..], &[1], &[17]].into_iter().enumerate() {
        let m: Vec<f32> = tang_testing::random(m_shape.iter().product(), 80 + k as u64);
        let mt = RawTensor::from_slice(&dev, &m, m_shape).unwrap();
        let name = format!("mul_constant [3,17] x {m_shape:?}");
        let case = Case::random(&name, &[&[3, 17]], 1.0, 90 + k as u64);
        let cpu = |t: &[Vec<f64>]| {
            t[0].iter()
                .enumerate()
                .map(|(i, v)| v * f64::from(m[i % m.len()]))
                .collect()
        };
        case.check(&dev, &|t| t[0].mul_constant(&mt), &cpu, &[0]);
    }
}

/// `x [n, c, h, w]` convolved with `w [o, c/g, kh, kw]` (+ `b`) in f64.
#[allow(clippy::too_many_arguments)]
fn conv2d_cpu(
    x: &[f64],
    w: &[f64],
    b: Option<&[f64]>,
    [n, c, h, wd]: [usize; 4],
    [o, kh, kw]: [usize; 3],
    opts: &Conv2dOptions,
) -> Vec<f64> {
    let g = opts.groups;
    let (cg, og) = (c / g, o / g);
    let [sh, sw] = opts.stride;
    let [ph, pw] = opts.padding;
    let [dh, dw] = opts.dilation;
    let oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    let ow = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    let mut out = Vec::with_capacity(n * o * oh * ow);
    for ni in 0..n {
        for oc in 0..o {
            let grp = oc / og;
            for y in 0..oh {
                for xo in 0..ow {
                    let mut acc = b.map_or(0.0, |b| b[oc]);
                    for ci in 0..cg {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (y * sh + ky * dh) as isize - ph as isize;
                                let ix = (xo * sw + kx * dw) as isize - pw as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let cin = grp * cg + ci;
                                let xv = x[((ni * c + cin) * h + iy as usize) * wd + ix as usize];
                                acc += xv * w[((oc * cg + ci) * kh + ky) * kw + kx];
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    out
}

#[test]
fn conv2d_layers_and_pooling() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(4);
    let cases = [
        (
            [1usize, 1, 3, 3],
            1usize,
            [1usize, 1],
            Conv2dOptions::default(),
            true,
        ),
        (
            [2, 2, 5, 4],
            4,
            [3, 2],
            Conv2dOptions {
                stride: [2, 1],
                padding: [1, 1],
                dilation: [1, 1],
                groups: 2,
            },
            true,
        ),
        (
            [1, 3, 6, 6],
            2,
            [2, 2],
            Conv2dOptions {
                dilation: [2, 2],
                ..Conv2dOptions::default()
            },
            false,
        ),
    ];
    for (k, (xs, o, [kh, kw], opts, bias)) in cases.into_iter().enumerate() {
        let layer_opts = tang_nn::nn::Conv2dOptions {
            stride: opts.stride,
            padding: opts.padding,
            dilation: opts.dilation,
            groups: opts.groups,
            bias,
        };
        let conv = Conv2d::new(&dev, xs[1], o, [kh, kw], layer_opts, &mut rng).unwrap();
        let ws = [o, xs[1] / opts.groups, kh, kw];
        let bs = [o];
        let mut shapes: Vec<&[usize]> = vec![&xs, &ws];
        if bias {
            shapes.push(&bs);
        }
        let name = format!("conv2d {xs:?} -> {o} k={kh}x{kw} {opts:?} bias={bias}");
        let case = Case::random(&name, &shapes, 1.0, 110 + k as u64);
        let cpu = |t: &[Vec<f64>]| {
            conv2d_cpu(
                &t[0],
                &t[1],
                t.get(2).map(Vec::as_slice),
                xs,
                [o, kh, kw],
                &opts,
            )
        };
        case.check_layer(&dev, &conv, &cpu);
    }
    assert!(
        Conv2d::new(
            &dev,
            3,
            4,
            [3, 3],
            tang_nn::nn::Conv2dOptions {
                groups: 2,
                ..Default::default()
            },
            &mut rng
        )
        .is_err()
    );

    // Pools: distinct inputs so each window has one maximum.
    let (n, c, h, w) = (1usize, 2usize, 4usize, 5usize);
    let mut case = Case::random("max_pool2d 2x2", &[&[n, c, h, w]], 1.0, 120);
    case.inputs[0].0 = tang_testing::Rng::new(3).distinct(n * c * h * w);
    let pool = Pool2d::new([2, 2]);
    let max_cpu = |t: &[Vec<f64>]| {
        let mut out = Vec::new();
        for p in 0..n * c {
            for y in 0..h / 2 {
                for x in 0..w / 2 {
                    let at = |dy: usize, dx: usize| t[0][(p * h + 2 * y + dy) * w + 2 * x + dx];
                    out.push(at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1)));
                }
            }
        }
        out
    };
    case.check_layer(&dev, &MaxPool2d(pool), &max_cpu);
    let avg = AvgPool2d {
        pool: Pool2d {
            kernel_size: [3, 3],
            stride: [1, 2],
            padding: [1, 1],
            dilation: [1, 1],
        },
        count_include_pad: false,
    };
    let case = Case::random("avg_pool2d 3x3 pad 1", &[&[n, c, h, w]], 1.0, 121);
    let avg_cpu = |t: &[Vec<f64>]| {
        let ow = (w + 2 - 3) / 2 + 1;
        let mut out = Vec::new();
        for p in 0..n * c {
            for y in 0..h {
                for x in 0..ow {
                    let (mut sum, mut count) = (0.0, 0.0);
                    for dy in 0..3 {
                        for dx in 0..3 {
                            let (iy, ix) = ((y + dy) as isize - 1, (2 * x + dx) as isize - 1);
                            if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                sum += t[0][(p * h + iy as usize) * w + ix as usize];
                                count += 1.0;
                            }
                        }
                    }
                    out.push(sum / count);
                }
            }
        }
        out
    };
    case.check_layer(&dev, &avg, &avg_cpu);
}
