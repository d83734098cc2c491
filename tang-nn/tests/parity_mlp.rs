//! Parity with PyTorch on the MLP fixture (`nn.Sequential(Linear(64, 128), ReLU(),
//! Linear(128, 10))`, see the fixtures' README): the state dict loads strictly into a tang
//! `Sequential`; logits within 1e-4; cross-entropy and MSE losses within 1e-5 relative;
//! every parameter's gradient within 1e-4 · max|g| for both losses.

mod safetensors_common;

use safetensors_common::fixture;
use tang_nn::Module;
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::nn::functional::{Reduction, class_indices_from_i64, cross_entropy, mse_loss_with};
use tang_nn::nn::{Linear, ReLU, Sequential};
use tang_nn::rng::SplitMix64;
use tang_nn::safetensors::{StateDict, load_file};
use tang_nn::tang_runtime::Device;

fn mlp(dev: &Device) -> Sequential {
    // Initialised from another seed than PyTorch's values on purpose: the load must
    // overwrite every parameter.
    let mut rng = SplitMix64::new(42);
    Sequential::new()
        .append(Linear::new(dev, 64, 128, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Linear::new(dev, 128, 10, true, &mut rng).unwrap())
}

fn max_abs(v: &[f32]) -> f32 {
    v.iter().fold(0.0f32, |m, x| m.max(x.abs()))
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// Checks the loss and every parameter's gradient against the fixture's
/// `{prefix}{name}` entries; prints the figures.
fn check_loss_and_grads(
    model: &Sequential,
    loss: &Tensor,
    want: f32,
    io: &StateDict,
    prefix: &str,
) {
    let got = loss.to_vec().unwrap()[0];
    let rel = (got - want).abs() / want.abs();
    let label = prefix.trim_end_matches("grad.");
    println!("{label}loss: tang {got}, torch {want}, relative difference {rel:e}");
    assert!(rel <= 1e-5, "{prefix}loss {got} vs {want}");
    let grads = loss.backward().unwrap();
    for (name, p) in model.named_parameters() {
        let want = io.f32_values(&format!("{prefix}{name}")).unwrap();
        let got = grads.get(&p).unwrap().to_vec().unwrap();
        let (diff, scale) = (max_diff(&got, &want), max_abs(&want));
        println!(
            "{prefix}{name}: max|diff| {diff:e}, 1e-4·max|g| {:e}",
            1e-4 * scale
        );
        assert!(
            diff <= 1e-4 * scale,
            "{prefix}{name}: {diff} > 1e-4 * {scale}"
        );
    }
}

#[test]
fn mlp_logits_losses_and_gradients_match_pytorch() {
    let dev = tang_testing::device();
    let model = mlp(&dev);
    let weights = load_file(fixture("mlp.safetensors"), &dev).unwrap();
    let report = model.load_state_dict(&weights.tensors, true).unwrap();
    assert!(report.is_empty());
    let io = load_file(fixture("mlp_io.safetensors"), &dev)
        .unwrap()
        .tensors;

    let x = Tensor::constant(
        RawTensor::from_slice(&dev, &io.f32_values("x").unwrap(), &[32, 64]).unwrap(),
    );
    let y = class_indices_from_i64(&dev, &io.i64_values("y").unwrap(), &[32]).unwrap();
    let logits = model.forward(&x).unwrap();
    let want = io.f32_values("logits").unwrap();
    let diff = max_diff(&logits.to_vec().unwrap(), &want);
    println!("logits: max|diff| {diff:e}");
    assert!(diff <= 1e-4, "logits differ by {diff}");

    let ce = cross_entropy(&logits, &y).unwrap();
    check_loss_and_grads(&model, &ce, io.f32_values("loss").unwrap()[0], &io, "grad.");

    let target = Tensor::constant(
        RawTensor::from_slice(&dev, &io.f32_values("mse_target").unwrap(), &[32, 10]).unwrap(),
    );
    let mse = mse_loss_with(&model.forward(&x).unwrap(), &target, Reduction::Mean).unwrap();
    let want = io.f32_values("mse_loss").unwrap()[0];
    check_loss_and_grads(&model, &mse, want, &io, "mse_grad.");
}
