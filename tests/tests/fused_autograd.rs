//! A user's `#[fused_grad]` function is an autograd op with no backward code: a new
//! two-input function with a `#[uniform]` is applied to tensors that broadcast, trained by
//! plain SGD (`add_` inside `no_grad`), and its loss falls. Its gradient is also checked
//! against f64 central differences of the function's own f64 twin.

use tang_nn::autograd::{Tensor, apply, no_grad};
use tang_nn::tang_runtime::Tensor as RawTensor;
use tang_nn::tang_runtime::prelude::*;
use tang_testing::{Rng, assert_close, numeric_gradient};

/// A gated residual: `x + alpha * tanh(x * w)`. Only the forward is written.
#[fused_grad]
fn gated(x: f32, w: f32, #[uniform] alpha: f32) -> f32 {
    x + alpha * (x * w).tanh()
}

const ROWS: usize = 16;
const FEATURES: usize = 5;
const ALPHA: f32 = 0.75;

#[test]
fn a_user_function_trains_without_backward_code() {
    let dev = tang_testing::device();
    let mut rng = Rng::new(42);
    let x: Vec<f32> = rng.vec(ROWS * FEATURES, 2.0);
    let w_true: Vec<f32> = rng.vec(FEATURES, 1.5);
    // Targets from the true weights, on the CPU through the function itself.
    let target: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| gated(v, w_true[i % FEATURES], ALPHA))
        .collect();
    let xt = Tensor::constant(RawTensor::from_slice(&dev, &x, &[ROWS, FEATURES]).unwrap());
    let yt = Tensor::constant(RawTensor::from_slice(&dev, &target, &[ROWS, FEATURES]).unwrap());
    // One weight per feature, broadcast over the rows: its gradient is summed back.
    let w = Tensor::parameter(RawTensor::zeros(&dev, &[FEATURES]).unwrap());
    let loss_of = |w: &Tensor| -> Tensor {
        let pred = apply(&gated::FUSED, &[&xt, w], &[ALPHA]).unwrap();
        let err = pred.sub(&yt).unwrap();
        err.mul(&err).unwrap().mean_all().unwrap()
    };
    let mut losses = Vec::new();
    for _ in 0..60 {
        let loss = loss_of(&w);
        losses.push(loss.to_vec().unwrap()[0]);
        let grads = loss.backward().unwrap();
        let g = grads.get(&w).expect("w is reached");
        assert_eq!(g.shape(), &[FEATURES]);
        no_grad(|| w.add_(&g, -2.0)).unwrap();
    }
    let (first, last) = (losses[0], *losses.last().unwrap());
    assert!(
        last < first * 1e-2,
        "loss fell from {first} to only {last}: {losses:?}"
    );
    let learned = w.to_vec().unwrap();
    let w64: Vec<f64> = w_true.iter().map(|&v| f64::from(v)).collect();
    assert_close("learned weights", &learned, &w64, 0.05, 0.05);
}

#[test]
fn the_generated_backward_matches_finite_differences_with_broadcasting() {
    let dev = tang_testing::device();
    let mut rng = Rng::new(7);
    let x: Vec<f32> = rng.vec(3 * 4, 1.0);
    let w: Vec<f32> = rng.vec(4, 1.0);
    let r: Vec<f32> = rng.vec(3 * 4, 1.0);
    let xt = Tensor::parameter(RawTensor::from_slice(&dev, &x, &[3, 4]).unwrap());
    let wt = Tensor::parameter(RawTensor::from_slice(&dev, &w, &[4]).unwrap());
    let y = apply(&gated::FUSED, &[&xt, &wt], &[ALPHA]).unwrap();
    let grads = y
        .backward_with(RawTensor::from_slice(&dev, &r, &[3, 4]).unwrap())
        .unwrap();
    // <gated(x, w), r> in f64 through the function's f64 twin.
    let objective = |x: &[f64], w: &[f64]| -> f64 {
        (0..12)
            .map(|i| gated::value_f64(x[i], w[i % 4], f64::from(ALPHA)) * f64::from(r[i]))
            .sum()
    };
    let (x64, w64): (Vec<f64>, Vec<f64>) = (
        x.iter().map(|&v| f64::from(v)).collect(),
        w.iter().map(|&v| f64::from(v)).collect(),
    );
    let dx = numeric_gradient(|p| objective(p, &w64), &x64, 1e-6);
    let dw = numeric_gradient(|p| objective(&x64, p), &w64, 1e-6);
    let got_x = grads.get(&xt).unwrap().to_vec().unwrap();
    let got_w = grads.get(&wt).unwrap().to_vec().unwrap();
    assert_close("d/dx", &got_x, &dx, 1e-5, 1e-4);
    assert_close("d/dw", &got_w, &dw, 1e-5, 1e-4);
    // The same op straight on the runtime tensors, without autograd.
    let raw = gated::FUSED
        .backward(
            &RawTensor::from_slice(&dev, &r, &[3, 4]).unwrap(),
            &[xt.data(), wt.data()],
            &[ALPHA],
        )
        .unwrap();
    assert_eq!(raw[1].as_ref().unwrap().to_vec().unwrap(), got_w);
}
