//! Autocast: the guard (nesting, turning it off inside, per thread, f16 only), `linear`
//! and `matmul` under it against a host reference that rounds the operands through
//! `half`'s f16 (forward and backward), gradients against central differences of the
//! f32 function within f16's rounding, and a GPT trained in mixed precision against the
//! same GPT in f32.

mod gradcheck_common;

use gradcheck_common::{Wrt, compare};
use half::f16;
use tang_nn::Module;
use tang_nn::amp::{
    AmpError, GradScaler, GradScalerOptions, autocast, autocast_disabled, is_autocast_enabled,
};
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, Sgd, SgdOptions};
use tang_nn::tang_runtime::{DType, Device};
use tang_testing::{Rng, assert_close};

/// `x` rounded to the nearest f16 (ties to even), as a product's operand under autocast.
fn r16(x: f32) -> f64 {
    f64::from(f16::from_f32(x).to_f32())
}

/// The relative spacing of f16 values (2^-10): an f16 result is within one step of the
/// value it rounds.
const F16_STEP: f64 = 1.0 / 1024.0;

/// `a [m, k] · b [k, n]` in f64 over f16-rounded operands.
fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| r16(a[i * k + p]) * r16(b[p * n + j])).sum();
        }
    }
    c
}

/// `t [r, c]` transposed.
fn transpose(t: &[f32], r: usize, c: usize) -> Vec<f32> {
    (0..c * r).map(|i| t[(i % r) * c + i / r]).collect()
}

#[test]
fn the_guard_nests_turns_off_inside_and_restores() {
    assert!(!is_autocast_enabled());
    {
        let _outer = autocast(DType::F16).unwrap();
        assert!(is_autocast_enabled());
        {
            let _off = autocast_disabled();
            assert!(!is_autocast_enabled());
            {
                let _inner = autocast(DType::F16).unwrap();
                assert!(is_autocast_enabled());
            }
            assert!(!is_autocast_enabled());
        }
        assert!(is_autocast_enabled());
        // Another thread has its own setting.
        let other = std::thread::spawn(is_autocast_enabled).join().unwrap();
        assert!(!other);
    }
    assert!(!is_autocast_enabled());
}

#[test]
fn only_f16_is_accepted() {
    for dtype in [DType::F32, DType::U32] {
        let err = autocast(dtype).unwrap_err();
        assert!(matches!(err, AmpError::UnsupportedDtype { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains("F16") && message.contains("bf16"),
            "{message}"
        );
        assert!(!is_autocast_enabled());
    }
}

#[test]
fn linear_under_autocast_multiplies_f16_rounded_operands() {
    let dev = Device::new().unwrap();
    let (m, k, n) = (5, 37, 6);
    let mut rng = Rng::new(3);
    let x = rng.vec(m * k, 2.0);
    let w = rng.vec(n * k, 2.0);
    let bias = rng.vec(n, 1.0);
    let g = rng.vec(m * n, 1.0);
    let xt = Tensor::parameter(RawTensor::from_slice(&dev, &x, &[m, k]).unwrap());
    let wt = Tensor::parameter(RawTensor::from_slice(&dev, &w, &[n, k]).unwrap());
    let bt = Tensor::parameter(RawTensor::from_slice(&dev, &bias, &[n]).unwrap());
    let y = {
        let _autocast = autocast(DType::F16).unwrap();
        xt.linear(&wt, Some(&bt)).unwrap()
    };
    // x · wᵀ over rounded operands, the bias added in f32.
    let mut want = matmul_ref(&x, &transpose(&w, n, k), m, k, n);
    for (i, v) in want.iter_mut().enumerate() {
        *v += f64::from(bias[i % n]);
    }
    // The result is f16, as PyTorch's autocast returns: the f32 accumulation rounded
    // once (within one f16 step of the reference).
    assert_eq!(y.dtype(), DType::F16);
    let got = y.to_vec().unwrap();
    assert_close("linear under autocast", &got, &want, 1e-5, F16_STEP);
    // The rounding is visible: the f32 product is further from the reference than that.
    let f32_y = xt.linear(&wt, Some(&bt)).unwrap().to_vec().unwrap();
    let off = f32_y
        .iter()
        .zip(&want)
        .map(|(&a, &b)| (f64::from(a) - b).abs())
        .fold(0.0, f64::max);
    assert!(off > 1e-3, "f32 and f16-rounded products differ by {off}");
    // Backward multiplies in f16 too: dx = g · w, dw = gᵀ · x, over rounded operands; the
    // bias gradient is the f32 column sum.
    let grads = y
        .backward_with(RawTensor::from_slice(&dev, &g, &[m, n]).unwrap())
        .unwrap();
    let dx = matmul_ref(&g, &w, m, n, k);
    let dw = matmul_ref(&transpose(&g, m, n), &x, n, m, k);
    let db: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| f64::from(g[i * n + j])).sum())
        .collect();
    let read = |t: &Tensor| grads.get(t).unwrap().to_vec().unwrap();
    assert_close("d/dx", &read(&xt), &dx, 1e-5, 1e-5);
    assert_close("d/dw", &read(&wt), &dw, 1e-5, 1e-5);
    assert_close("d/db", &read(&bt), &db, 1e-5, 1e-5);
}

#[test]
fn batched_matmul_under_autocast_multiplies_f16_rounded_operands() {
    let dev = Device::new().unwrap();
    let (batch, m, k, n) = (3, 4, 19, 5);
    let mut rng = Rng::new(8);
    let a = rng.vec(batch * m * k, 3.0);
    let b = rng.vec(batch * k * n, 3.0);
    let at = Tensor::parameter(RawTensor::from_slice(&dev, &a, &[batch, m, k]).unwrap());
    let bt = Tensor::parameter(RawTensor::from_slice(&dev, &b, &[batch, k, n]).unwrap());
    let y = {
        let _autocast = autocast(DType::F16).unwrap();
        at.matmul(&bt).unwrap()
    };
    let want: Vec<f64> = (0..batch)
        .flat_map(|i| {
            matmul_ref(
                &a[i * m * k..(i + 1) * m * k],
                &b[i * k * n..(i + 1) * k * n],
                m,
                k,
                n,
            )
        })
        .collect();
    assert_eq!(y.dtype(), DType::F16);
    assert_close(
        "matmul under autocast",
        &y.to_vec().unwrap(),
        &want,
        1e-5,
        F16_STEP,
    );
    // Outside autocast the same tensors multiply in f32 again.
    let f32_y = at.matmul(&bt).unwrap().to_vec().unwrap();
    assert!(
        f32_y
            .iter()
            .zip(&want)
            .any(|(&a, &b)| (f64::from(a) - b).abs() > 1e-3),
        "the product outside autocast is f32"
    );
}

#[test]
fn gradients_under_autocast_match_central_differences_within_f16_rounding() {
    let dev = Device::new().unwrap();
    // A two-layer network, `tanh(x · w1ᵀ) · w2ᵀ`: smooth, so the f32 function's central
    // differences are the true gradient, which autocast's approximates to f16's rounding.
    let (m, k, h, n) = (3, 8, 6, 4);
    let mut rng = Rng::new(21);
    let values = [
        rng.vec(m * k, 1.0),
        rng.vec(h * k, 1.0),
        rng.vec(n * h, 1.0),
    ];
    let shapes: [&[usize]; 3] = [&[m, k], &[h, k], &[n, h]];
    let params: Vec<Tensor> = values
        .iter()
        .zip(shapes)
        .map(|(v, s)| Tensor::parameter(RawTensor::from_slice(&dev, v, s).unwrap()))
        .collect();
    let out = {
        let _autocast = autocast(DType::F16).unwrap();
        params[0]
            .linear(&params[1], None)
            .unwrap()
            .tanh()
            .unwrap()
            .linear(&params[2], None)
            .unwrap()
    };
    let x64: Vec<Vec<f64>> = values
        .iter()
        .map(|v| v.iter().map(|&x| f64::from(x)).collect())
        .collect();
    let cpu = |xs: &[Vec<f64>]| -> Vec<f64> {
        let (x, w1, w2) = (&xs[0], &xs[1], &xs[2]);
        let mut y = vec![0.0; m * n];
        for i in 0..m {
            let hidden: Vec<f64> = (0..h)
                .map(|j| {
                    (0..k)
                        .map(|p| x[i * k + p] * w1[j * k + p])
                        .sum::<f64>()
                        .tanh()
                })
                .collect();
            for o in 0..n {
                y[i * n + o] = (0..h).map(|j| hidden[j] * w2[o * h + j]).sum();
            }
        }
        y
    };
    let r = rng.vec(m * n, 1.0);
    let wrt: Vec<Wrt<'_>> = params
        .iter()
        .enumerate()
        .map(|(index, tensor)| Wrt {
            label: format!("param{index}"),
            index,
            tensor,
        })
        .collect();
    // f16 keeps 11 significant bits: products of rounded operands are within about 1e-3
    // relative of the exact ones.
    compare(
        &dev,
        "two layers under autocast",
        &out,
        &x64,
        &wrt,
        &cpu,
        &r,
        (1e-2, 1e-2),
        (1e-2, 1e-2),
    );
}

/// The losses of 20 steps of a tiny GPT on one batch, in f32 or mixed precision.
fn gpt_losses(dev: &Device, amp: bool) -> Vec<f32> {
    let config = GptConfig {
        vocab_size: 17,
        block_size: 16,
        n_layer: 2,
        n_head: 2,
        n_kv_head: 2,
        n_embd: 32,
        dropout: 0.0,
        bias: true,
        ..GptConfig::gpt2()
    };
    let gpt = Gpt::new(dev, &config, 7).unwrap();
    let mut opt = AdamW::new(gpt.named_parameters(), AdamWOptions::default().lr(3e-3)).unwrap();
    let mut scaler = GradScaler::new(GradScalerOptions {
        enabled: amp,
        ..GradScalerOptions::default()
    })
    .unwrap();
    let mut rng = Rng::new(4);
    let (batch, t) = (4, 16);
    let ids: Vec<u32> = (0..batch * (t + 1)).map(|_| rng.below(17) as u32).collect();
    let x: Vec<u32> = (0..batch)
        .flat_map(|b| ids[b * (t + 1)..b * (t + 1) + t].to_vec())
        .collect();
    let y: Vec<u32> = (0..batch)
        .flat_map(|b| ids[b * (t + 1) + 1..(b + 1) * (t + 1)].to_vec())
        .collect();
    let x = Tensor::from_u32(dev, &x, &[batch, t]).unwrap();
    let y = Tensor::from_u32(dev, &y, &[batch * t]).unwrap();
    let mut losses = Vec::new();
    for _ in 0..20 {
        let loss = {
            let _autocast = amp.then(|| autocast(DType::F16).unwrap());
            let logits = gpt
                .forward(&x)
                .unwrap()
                .reshape(&[(batch * t) as i64, -1])
                .unwrap();
            // The head's logits are f16 under autocast, the loss f32 (as PyTorch's).
            let want = if amp { DType::F16 } else { DType::F32 };
            assert_eq!(logits.dtype(), want);
            cross_entropy(&logits, &y).unwrap()
        };
        assert_eq!(loss.dtype(), DType::F32);
        losses.push(loss.item().unwrap());
        let grads = scaler.scale(&loss).unwrap().backward().unwrap();
        assert!(
            scaler.step(&mut opt, &grads).unwrap(),
            "no overflow at this scale"
        );
        scaler.update().unwrap();
    }
    losses
}

#[test]
fn a_gpt_trained_in_mixed_precision_follows_the_f32_run() {
    let dev = Device::new().unwrap();
    let f32_losses = gpt_losses(&dev, false);
    let amp_losses = gpt_losses(&dev, true);
    let (a, b) = (f32_losses[19], amp_losses[19]);
    println!(
        "loss after 20 steps: f32 {a}, amp {b} (from {})",
        f32_losses[0]
    );
    assert!(
        a < 0.8 * f32_losses[0],
        "the f32 run trains: {f32_losses:?}"
    );
    assert!(((a - b) / a).abs() < 1e-2, "f32 {a}, amp {b}");
    // The runs differ at all: the products were rounded.
    assert_ne!(f32_losses, amp_losses);
}

/// autocast casts an f32 parameter to f16 once per region and reuses the copy (PyTorch's
/// autocast cache); the copy must never outlive the values it was made from: an in-place
/// write, an optimizer step and the region's end each drop it.
#[test]
fn a_parameter_cast_for_a_region_never_outlives_its_values() {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[1, 2]).unwrap();
    let w = Tensor::parameter(RawTensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0], &[2, 2]).unwrap());
    let y = |w: &Tensor| x.linear(w, None).unwrap().to_vec().unwrap();
    let autocast_region = autocast(DType::F16).unwrap();
    assert_eq!(y(&w), [1.0, 2.0]);
    assert_eq!(y(&w), [1.0, 2.0]); // the cached copy
    // In place, inside the region: w = [[2, 1], [1, 2]].
    let ones = Tensor::full(&dev, &[2, 2], 1.0).unwrap();
    tang_nn::autograd::no_grad(|| w.add_(&ones, 1.0)).unwrap();
    assert_eq!(y(&w), [4.0, 5.0]);
    // An optimizer step, inside the region: w -= 1 * [[1, 1], [1, 1]] = [[1, 0], [0, 1]].
    let mut opt = Sgd::new(
        [("w", w.clone())],
        SgdOptions {
            lr: 1.0,
            ..SgdOptions::default()
        },
    )
    .unwrap();
    opt.step(&[("w", ones.data())]).unwrap();
    assert_eq!(y(&w), [1.0, 2.0]);
    drop(autocast_region);
    // A write the autograd tensor does not see (its buffer, through the runtime), between
    // two regions: the next region casts again.
    tang_nn::tang_runtime::ops::fill_(w.data(), 3.0).unwrap();
    let _autocast = autocast(DType::F16).unwrap();
    assert_eq!(y(&w), [9.0, 9.0]);
    // The weight's gradient is the f32 product (the master weight's dtype): x summed.
    x.requires_grad_(true).unwrap();
    let grads = x
        .linear(&w, None)
        .unwrap()
        .backward_with(RawTensor::full(&dev, &[1, 2], 1.0).unwrap())
        .unwrap();
    let gw = grads.get(&w).unwrap();
    assert_eq!(gw.dtype(), DType::F32);
    assert_eq!(gw.to_vec().unwrap(), [1.0, 2.0, 1.0, 2.0]);
    // x's gradient multiplies the cached f16 copy: the columns of w summed.
    assert_eq!(grads.get(&x).unwrap().to_vec().unwrap(), [6.0, 6.0]);
}
