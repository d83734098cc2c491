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

/// One tensor whose gradient is checked: its label in messages, and the index of its
/// values among the reference's inputs.
pub struct Wrt<'a> {
    /// How messages name it (`d/d{label}`).
    pub label: String,
    /// Its values' index in the `x64` given to the reference.
    pub index: usize,
    /// The tensor whose gradient is read.
    pub tensor: &'a Tensor,
}

/// The comparison every gradient check of tang-nn's tests shares: `out` against
/// `cpu(x64)` within `forward_tol` (absolute, relative), then, with `r` passed as the
/// output's gradient, each `wrt` tensor's gradient against central differences of
/// `sum(cpu(x64) * r)` within `grad_tol`.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    dev: &Device,
    name: &str,
    out: &Tensor,
    x64: &[Vec<f64>],
    wrt: &[Wrt<'_>],
    cpu: Cpu<'_>,
    r: &[f32],
    forward_tol: (f64, f64),
    grad_tol: (f64, f64),
) {
    let want = cpu(x64);
    assert_close(
        &format!("{name} forward"),
        &out.to_vec().unwrap(),
        &want,
        forward_tol.0,
        forward_tol.1,
    );
    assert_eq!(r.len(), want.len(), "{name}: one weight per output");
    let grads = out
        .backward_with(RawTensor::from_slice(dev, r, out.shape()).unwrap())
        .unwrap();
    for w in wrt {
        let objective = |xi: &[f64]| {
            let mut xs = x64.to_vec();
            xs[w.index] = xi.to_vec();
            cpu(&xs)
                .iter()
                .zip(r)
                .map(|(y, &r)| y * f64::from(r))
                .sum::<f64>()
        };
        let want = numeric_gradient(objective, &x64[w.index], 1e-5);
        let got = grads
            .get(w.tensor)
            .unwrap_or_else(|| panic!("{name}: no gradient for {}", w.label))
            .to_vec()
            .unwrap();
        assert_close(
            &format!("{name} d/d{}", w.label),
            &got,
            &want,
            grad_tol.0,
            grad_tol.1,
        );
    }
}

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
    let r = rng.vec(out.shape().iter().product(), 1.0);
    let labelled = params
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("param{i}"), t));
    compare_every(dev, name, &out, &x64, labelled, cpu, &r);
}

/// [`compare`] of every parameter, in the order of `x64`, each with its label, with the
/// tolerances the op and attention checks use.
pub fn compare_every<'a>(
    dev: &Device,
    name: &str,
    out: &Tensor,
    x64: &[Vec<f64>],
    labelled: impl Iterator<Item = (String, &'a Tensor)>,
    cpu: Cpu<'_>,
    r: &[f32],
) {
    let wrt: Vec<Wrt<'_>> = labelled
        .enumerate()
        .map(|(index, (label, tensor))| Wrt {
            label,
            index,
            tensor,
        })
        .collect();
    compare(
        dev,
        name,
        out,
        x64,
        &wrt,
        cpu,
        r,
        (1e-4, 1e-4),
        (1e-4, 1e-3),
    );
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
