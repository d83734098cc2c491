//! Every loss on the GPU against an f64 reference: values for each reduction and
//! gradients by central differences (of the input, and of the target where PyTorch
//! gives one), with ignored rows, an in-range ignore index, label smoothing, classes 1,
//! 3 and 17, and extreme logits.

mod nn_common;

use nn_common::{Case, log_softmax_row};
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::nn::functional::{
    CrossEntropyOptions, IGNORE_INDEX, NllLossOptions, Reduction, binary_cross_entropy_with_logits,
    class_indices_from_i64, cross_entropy, cross_entropy_with, ignore_index_as_u32, mse_loss_with,
    nll_loss, nll_loss_with,
};

const REDUCTIONS: [Reduction; 3] = [Reduction::None, Reduction::Mean, Reduction::Sum];

fn reduce(v: Vec<f64>, reduction: Reduction, count: usize) -> Vec<f64> {
    match reduction {
        Reduction::None => v,
        Reduction::Sum => vec![v.iter().sum()],
        Reduction::Mean => vec![v.iter().sum::<f64>() / count as f64],
    }
}

#[test]
fn mse_loss_every_reduction_and_shape() {
    let dev = tang_testing::device();
    for (k, shape) in [&[1usize][..], &[3], &[3, 17]].into_iter().enumerate() {
        for (j, reduction) in REDUCTIONS.into_iter().enumerate() {
            let name = format!("mse_loss {shape:?} {reduction:?}");
            let case = Case::random(&name, &[shape, shape], 1.0, 100 + 3 * k as u64 + j as u64);
            let n = shape.iter().product();
            let cpu = |t: &[Vec<f64>]| {
                let sq = t[0]
                    .iter()
                    .zip(&t[1])
                    .map(|(a, b)| (a - b).powi(2))
                    .collect();
                reduce(sq, reduction, n)
            };
            let gpu = |t: &[Tensor]| mse_loss_with(&t[0], &t[1], reduction);
            case.check(&dev, &gpu, &cpu, &[0, 1]);
        }
    }
    let a = Tensor::constant(RawTensor::zeros(&dev, &[3]).unwrap());
    let b = Tensor::constant(RawTensor::zeros(&dev, &[1, 3]).unwrap());
    assert!(mse_loss_with(&a, &b, Reduction::Mean).is_err());
}

#[test]
fn bce_with_logits_every_reduction_and_extremes() {
    let dev = tang_testing::device();
    let softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    for (k, shape) in [&[1usize][..], &[17], &[3, 17]].into_iter().enumerate() {
        for (j, reduction) in REDUCTIONS.into_iter().enumerate() {
            let name = format!("bce_with_logits {shape:?} {reduction:?}");
            let mut case = Case::random(&name, &[shape, shape], 3.0, 200 + 3 * k as u64 + j as u64);
            // Targets in [0, 1] (soft labels are allowed, as in PyTorch).
            for v in &mut case.inputs[1].0 {
                *v = (*v + 3.0) / 6.0;
            }
            let n = shape.iter().product();
            let cpu = |t: &[Vec<f64>]| {
                let l = t[0]
                    .iter()
                    .zip(&t[1])
                    .map(|(x, y)| softplus(*x) - x * y)
                    .collect();
                reduce(l, reduction, n)
            };
            let gpu = |t: &[Tensor]| binary_cross_entropy_with_logits(&t[0], &t[1], reduction);
            case.check(&dev, &gpu, &cpu, &[0, 1]);
        }
    }
    // Logits of ±100 neither overflow nor lose the loss: softplus(100) - 100 = 0 for
    // target 1, softplus(-100) + 0 = ~0 for target 0; softplus(100) = 100 for target 0.
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[100.0, -100.0, 100.0], &[3]).unwrap());
    let y = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 0.0, 0.0], &[3]).unwrap());
    let l = binary_cross_entropy_with_logits(&x, &y, Reduction::None).unwrap();
    let v = l.to_vec().unwrap();
    assert!(
        v[0].abs() < 1e-6 && v[1].abs() < 1e-6 && (v[2] - 100.0).abs() < 1e-4,
        "{v:?}"
    );
}

/// Cross-entropy rows in f64 with PyTorch's label smoothing: `(1 - ε) nll + ε/C Σ -log p`,
/// 0 for ignored rows; returns the rows and how many were kept.
fn ce_rows(x: &[f64], targets: &[u32], classes: usize, ignore: u32, eps: f64) -> (Vec<f64>, usize) {
    let mut kept = 0;
    let rows = x
        .chunks(classes)
        .zip(targets)
        .map(|(r, &t)| {
            if t == ignore {
                return 0.0;
            }
            kept += 1;
            let lp = log_softmax_row(r);
            let smooth = -lp.iter().sum::<f64>() / classes as f64;
            (1.0 - eps) * -lp[t as usize] + eps * smooth
        })
        .collect();
    (rows, kept)
}

#[test]
fn cross_entropy_reductions_ignore_and_label_smoothing() {
    let dev = tang_testing::device();
    let rows = 5;
    for (k, classes) in [1usize, 3, 17].into_iter().enumerate() {
        for (ignore_index, eps) in [
            (IGNORE_INDEX, 0.0f32),
            (IGNORE_INDEX, 0.1),
            (0, 0.0),
            (0, 0.25),
        ] {
            // Row 1 is ignored; with ignore_index 0 every target 0 is ignored too.
            let raw: Vec<i64> = (0..rows as i64)
                .map(|i| {
                    if i == 1 {
                        ignore_index
                    } else {
                        (i * 7) % classes as i64
                    }
                })
                .collect();
            let targets = class_indices_from_i64(&dev, &raw, &[rows]).unwrap();
            let t32: Vec<u32> = raw
                .iter()
                .map(|&v| ignore_index_as_u32(v).unwrap())
                .collect();
            let ignore = ignore_index_as_u32(ignore_index).unwrap();
            for reduction in REDUCTIONS {
                let name = format!(
                    "cross_entropy C={classes} ignore={ignore_index} ε={eps} {reduction:?}"
                );
                let case = Case::random(&name, &[&[rows, classes]], 2.0, 300 + k as u64);
                let opts = CrossEntropyOptions {
                    ignore_index,
                    reduction,
                    label_smoothing: eps,
                };
                let cpu = |t: &[Vec<f64>]| {
                    let (r, kept) = ce_rows(&t[0], &t32, classes, ignore, f64::from(eps));
                    reduce(r, reduction, kept)
                };
                let gpu = |t: &[Tensor]| cross_entropy_with(&t[0], &targets, &opts);
                if t32.iter().all(|&t| t == ignore) && reduction == Reduction::Mean {
                    // Every row ignored: the mean is 0/0, NaN in PyTorch and here.
                    let leaf = Tensor::parameter(RawTensor::zeros(&dev, &[rows, classes]).unwrap());
                    assert!(gpu(&[leaf]).unwrap().to_vec().unwrap()[0].is_nan());
                    continue;
                }
                case.check(&dev, &gpu, &cpu, &[0]);
            }
        }
    }
}

#[test]
fn fused_and_composed_cross_entropy_agree_and_nll_matches() {
    let dev = tang_testing::device();
    let (rows, classes) = (6, 17);
    let raw: Vec<i64> = vec![3, -100, 16, 0, 5, -100];
    let targets = class_indices_from_i64(&dev, &raw, &[rows]).unwrap();
    let x: Vec<f32> = tang_testing::random(rows * classes, 11)
        .iter()
        .map(|v| v * 4.0)
        .collect();
    let logits = Tensor::parameter(RawTensor::from_slice(&dev, &x, &[rows, classes]).unwrap());
    // Fused (the default options) and composed (sum / count) give one mean.
    let fused = cross_entropy(&logits, &targets).unwrap().to_vec().unwrap()[0];
    let sum = cross_entropy_with(
        &logits,
        &targets,
        &CrossEntropyOptions {
            reduction: Reduction::Sum,
            ..CrossEntropyOptions::default()
        },
    )
    .unwrap()
    .to_vec()
    .unwrap()[0];
    assert!(
        (fused - sum / 4.0).abs() < 1e-5 * fused.abs().max(1.0),
        "{fused} vs {sum}/4"
    );
    // nll_loss of log_softmax is cross_entropy.
    let logp = logits.log_softmax().unwrap();
    let nll = nll_loss(&logp, &targets).unwrap().to_vec().unwrap()[0];
    assert!(
        (nll - fused).abs() < 1e-5 * fused.abs().max(1.0),
        "{nll} vs {fused}"
    );
    let none = nll_loss_with(
        &logp,
        &targets,
        &NllLossOptions {
            reduction: Reduction::None,
            ..NllLossOptions::default()
        },
    )
    .unwrap()
    .to_vec()
    .unwrap();
    assert_eq!((none[1], none[5]), (0.0, 0.0), "ignored rows are 0");

    // A target past the classes (not the ignore index) is an error naming the op, the
    // target and the class count, on the fused path and on the gather path alike.
    let bad = Tensor::from_u32(&dev, &[3, 17, 0, 1, 2, 4], &[rows]).unwrap();
    let is_range = |e: tang_nn::autograd::Error| {
        matches!(
            e,
            tang_nn::autograd::Error::Runtime(tang_runtime::Error::IndexOutOfRange {
                value: 17,
                ..
            })
        )
    };
    assert!(is_range(cross_entropy(&logits, &bad).unwrap_err()));
    for opts in [
        CrossEntropyOptions {
            reduction: Reduction::None,
            ..CrossEntropyOptions::default()
        },
        CrossEntropyOptions {
            label_smoothing: 0.1,
            ..CrossEntropyOptions::default()
        },
    ] {
        assert!(is_range(
            cross_entropy_with(&logits, &bad, &opts).unwrap_err()
        ));
    }

    // Shapes and options PyTorch refuses are errors, not panics.
    let bad_rank = Tensor::parameter(RawTensor::zeros(&dev, &[2, 3, 4]).unwrap());
    assert!(cross_entropy(&bad_rank, &targets).is_err());
    let short = Tensor::from_u32(&dev, &[0, 1], &[2]).unwrap();
    assert!(cross_entropy(&logits, &short).is_err());
    let smooth = CrossEntropyOptions {
        label_smoothing: 1.5,
        ..CrossEntropyOptions::default()
    };
    assert!(cross_entropy_with(&logits, &targets, &smooth).is_err());
    assert!(ignore_index_as_u32(1 << 40).is_err());
    assert!(ignore_index_as_u32(-(1 << 40)).is_err());
}

#[test]
fn nll_loss_gradcheck_with_in_range_ignore_index() {
    let dev = tang_testing::device();
    let (rows, classes) = (4, 3);
    let t32 = [2u32, 1, 0, 1];
    let targets = Tensor::from_u32(&dev, &t32, &[rows]).unwrap();
    for reduction in REDUCTIONS {
        let name = format!("nll_loss ignore=1 {reduction:?}");
        let case = Case::random(&name, &[&[rows, classes]], 1.0, 400);
        let opts = NllLossOptions {
            ignore_index: 1,
            reduction,
        };
        let cpu = |t: &[Vec<f64>]| {
            let r: Vec<f64> = t[0]
                .chunks(classes)
                .zip(&t32)
                .map(|(r, &c)| if c == 1 { 0.0 } else { -r[c as usize] })
                .collect();
            reduce(r, reduction, 2)
        };
        let gpu = |t: &[Tensor]| nll_loss_with(&t[0], &targets, &opts);
        case.check(&dev, &gpu, &cpu, &[0]);
    }
}

/// The gradient of f16 logits is scaled by the upstream gradient (a GradScaler's scale)
/// before it is rounded to f16, as PyTorch's is: rounded first, `(softmax - onehot) /
/// rows` falls into f16's subnormals (here about 1e-6, spaced 6e-8) and the scale cannot
/// bring back what the rounding lost. Under autocast (an f32 loss) and without (an f16
/// loss), against an f64 reference of the f16 logits.
#[test]
fn f16_logits_gradients_are_scaled_before_they_are_rounded() {
    use tang_nn::amp::autocast;
    use tang_nn::tang_runtime::DType;
    let dev = tang_testing::device();
    let (rows, classes) = (512usize, 2048usize);
    let case = Case::random("logits", &[&[rows, classes]], 2.0, 77);
    let logits32 = case.inputs[0].0.clone();
    let targets: Vec<u32> = (0..rows).map(|r| ((r * 7919) % classes) as u32).collect();
    for (amp, scale) in [(true, 65536.0f32), (false, 1024.0)] {
        let raw = RawTensor::from_slice(&dev, &logits32, &[rows, classes])
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let x16 = raw.to_vec().unwrap();
        let logits = Tensor::constant(raw).into_parameter();
        let t = Tensor::from_u32(&dev, &targets, &[rows]).unwrap();
        let guard = amp.then(|| autocast(DType::F16).unwrap());
        let loss = logits.cross_entropy(&t, None).unwrap();
        let scaled = loss.mul_scalar(scale).unwrap();
        drop(guard);
        let grads = scaled.backward().unwrap();
        let g = grads.get(&logits).unwrap();
        assert_eq!(g.dtype(), DType::F16, "amp {amp}");
        let got = g.to_vec().unwrap();
        let mut worst = 0.0f64;
        for (r, row) in x16.chunks(classes).enumerate() {
            let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let lp = log_softmax_row(&row);
            for (c, l) in lp.iter().enumerate() {
                let onehot = if c == targets[r] as usize { 1.0 } else { 0.0 };
                let want = (l.exp() - onehot) / rows as f64 * f64::from(scale);
                let err = (f64::from(got[r * classes + c]) - want).abs();
                // f16's rounding (2^-11 relative) and f32 arithmetic, no more.
                let bound = 1.0e-3 * want.abs() + 1.0e-7;
                worst = worst.max(err / bound);
            }
        }
        assert!(
            worst <= 1.0,
            "amp {amp}: worst error {worst} times the f16 bound"
        );
    }
}
