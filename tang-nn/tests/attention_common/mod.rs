//! Shared by the attention and GPT tests: a gradient check of GPU tensors against central
//! differences of an f64 CPU reference, and the f64 references of the attention pieces.

#![allow(dead_code)]

use std::path::PathBuf;

use tang_nn::autograd::{Error, RawTensor, Tensor};

#[path = "../gradcheck_common/mod.rs"]
mod gradcheck_common;
pub mod reference;

use gradcheck_common::compare_every;

/// A PyTorch fixture (`../shared/fixtures/torch/` beside the checkout).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/torch")
        .join(name)
}

/// The values of `t` widened to f64.
pub fn values64(t: &Tensor) -> Vec<f64> {
    t.to_vec().unwrap().into_iter().map(f64::from).collect()
}

/// Checks `gpu()`'s output against `cpu(values of params)` and the gradient of every
/// parameter of `<gpu(), r>` (for a random `r`) against central differences of
/// `<cpu(..), r>` in f64. `params` are the tensors the GPU side reads, by name.
pub fn gradcheck(
    name: &str,
    params: &[(String, Tensor)],
    gpu: &dyn Fn() -> Result<Tensor, Error>,
    cpu: &dyn Fn(&[Vec<f64>]) -> Vec<f64>,
    seed: u64,
) {
    let x64: Vec<Vec<f64>> = params.iter().map(|(_, t)| values64(t)).collect();
    let out = gpu().unwrap();
    let r = tang_testing::Rng::new(seed).vec(out.shape().iter().product(), 1.0);
    let dev = out.data().device().clone();
    let labelled = params.iter().map(|(label, t)| (label.clone(), t));
    compare_every(&dev, name, &out, &x64, labelled, cpu, &r);
}

/// A parameter of `shape` filled from `rng` in `[-a, a)`.
pub fn param(
    dev: &tang_nn::tang_runtime::Device,
    rng: &mut tang_testing::Rng,
    shape: &[usize],
    a: f32,
) -> Tensor {
    let v = rng.vec(shape.iter().product(), a);
    Tensor::parameter(RawTensor::from_slice(dev, &v, shape).unwrap())
}

/// Overwrites every parameter of `m` with values in `[-0.5, 0.5)` from `seed` (so norms
/// and biases are not at their identity initialisation).
pub fn randomize(m: &impl tang_nn::Module, seed: u64) {
    let mut rng = tang_testing::Rng::new(seed);
    for (_, p) in m.named_parameters() {
        let v = rng.vec(p.data().len(), 0.5);
        let src = RawTensor::from_slice(p.data().device(), &v, p.shape()).unwrap();
        tang_nn::autograd::no_grad(|| p.copy_(&Tensor::constant(src))).unwrap();
    }
}
