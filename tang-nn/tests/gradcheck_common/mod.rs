//! The gradient check every autograd test shares: the GPU gradient of `<op(params), r>`
//! for a random `r` (passed as the output's gradient) against central differences of the
//! same sum over an f64 CPU reference; and row-major helpers for the references.

#![allow(dead_code)]

use tang_nn::autograd::{Error, RawTensor, Tensor};
use tang_nn::tang_runtime::Device;
use tang_testing::{Rng, assert_close, numeric_gradient};

/// The f64 reference of an op over its parameters' values.
pub type Cpu<'a> = &'a dyn Fn(&[Vec<f64>]) -> Vec<f64>;
/// The op on the GPU over its parameters.
pub type Gpu<'a> = &'a dyn Fn(&[Tensor]) -> Result<Tensor, Error>;

/// Checks the forward against `cpu` and every parameter's gradient against central
/// differences of `sum(cpu(params) * r)`.
pub fn check(dev: &Device, name: &str, shapes: &[&[usize]], gpu: Gpu<'_>, cpu: Cpu<'_>, seed: u64) {
    let mut rng = Rng::new(seed);
    let values: Vec<Vec<f32>> = shapes
        .iter()
        .map(|s| rng.vec(s.iter().product(), 1.0))
        .collect();
    let params: Vec<Tensor> = values
        .iter()
        .zip(shapes)
        .map(|(v, s)| Tensor::parameter(RawTensor::from_slice(dev, v, s).unwrap()))
        .collect();
    let x64: Vec<Vec<f64>> = values
        .iter()
        .map(|v| v.iter().map(|&x| f64::from(x)).collect())
        .collect();
    let out = gpu(&params).unwrap();
    let want = cpu(&x64);
    assert_close(
        &format!("{name} forward"),
        &out.to_vec().unwrap(),
        &want,
        1e-4,
        1e-4,
    );
    let r = rng.vec(want.len(), 1.0);
    let grads = out
        .backward_with(RawTensor::from_slice(dev, &r, out.shape()).unwrap())
        .unwrap();
    for (i, p) in params.iter().enumerate() {
        let objective = |xi: &[f64]| {
            let mut xs = x64.clone();
            xs[i] = xi.to_vec();
            cpu(&xs)
                .iter()
                .zip(&r)
                .map(|(y, &r)| y * f64::from(r))
                .sum::<f64>()
        };
        let want = numeric_gradient(objective, &x64[i], 1e-5);
        let got = grads
            .get(p)
            .expect("every parameter reached")
            .to_vec()
            .unwrap();
        assert_close(&format!("{name} d/dparam{i}"), &got, &want, 1e-4, 1e-3);
    }
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The coordinates of flat index `i` in `shape`.
pub fn coords(i: usize, shape: &[usize]) -> Vec<usize> {
    strides(shape)
        .iter()
        .zip(shape)
        .map(|(s, n)| i / s % n)
        .collect()
}

/// `x` of shape `xs` broadcast to `out` (NumPy rules).
pub fn broadcast(x: &[f64], xs: &[usize], out: &[usize]) -> Vec<f64> {
    let st = strides(xs);
    let lead = out.len() - xs.len();
    (0..out.iter().product())
        .map(|i| {
            let c = coords(i, out);
            let k: usize = (0..xs.len())
                .map(|d| if xs[d] == 1 { 0 } else { c[d + lead] * st[d] })
                .sum();
            x[k]
        })
        .collect()
}
