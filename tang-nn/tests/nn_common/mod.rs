//! Shared by the layer and loss tests: gradient checks of GPU results against central
//! differences of an f64 reference.

#![allow(dead_code)] // Each test crate uses part of it.

use tang_nn::autograd::{RawTensor, Tensor, no_grad};
use tang_nn::nn::Layer;
use tang_nn::tang_runtime::Device;
use tang_testing::Rng;

#[path = "../gradcheck_common/mod.rs"]
mod gradcheck_common;

use gradcheck_common::{Wrt, compare};

/// The GPU side (the inputs, in the order of `Case::inputs`, to the output) and its f64
/// reference.
pub use gradcheck_common::{Cpu, Gpu};

/// One gradient check: inputs' values and shapes, and the tolerances.
pub struct Case<'a> {
    /// What is checked, for messages.
    pub name: &'a str,
    /// The input values with their shapes; each becomes a parameter.
    pub inputs: Vec<(Vec<f32>, Vec<usize>)>,
    /// Forward tolerance (absolute and relative).
    pub forward_tol: f64,
    /// Gradient tolerance (absolute and relative).
    pub grad_tol: f64,
}

impl<'a> Case<'a> {
    /// Random inputs in `[-scale, scale)` of the given shapes.
    pub fn random(name: &'a str, shapes: &[&[usize]], scale: f32, seed: u64) -> Case<'a> {
        let mut rng = Rng::new(seed);
        let inputs = shapes
            .iter()
            .map(|s| (rng.vec(s.iter().product(), scale), s.to_vec()))
            .collect();
        Case {
            name,
            inputs,
            forward_tol: 1e-4,
            grad_tol: 1e-3,
        }
    }

    /// The inputs as f64.
    fn values64(&self) -> Vec<Vec<f64>> {
        self.inputs
            .iter()
            .map(|(v, _)| v.iter().map(|&x| f64::from(x)).collect())
            .collect()
    }

    /// The inputs as new parameters on `dev`.
    fn leaves(&self, dev: &Device) -> Vec<Tensor> {
        self.inputs
            .iter()
            .map(|(v, s)| Tensor::parameter(RawTensor::from_slice(dev, v, s).unwrap()))
            .collect()
    }

    /// Checks `gpu`'s forward against `cpu`, and the gradient of every input listed in
    /// `wrt` (indices into `inputs`) against central differences of
    /// `sum(cpu(inputs) * r)` for a random `r` passed as the output's gradient.
    pub fn check(&self, dev: &Device, gpu: Gpu<'_>, cpu: Cpu<'_>, wrt: &[usize]) {
        let leaves = self.leaves(dev);
        let out = gpu(&leaves).unwrap();
        let wrt: Vec<(usize, &Tensor)> = wrt.iter().map(|&i| (i, &leaves[i])).collect();
        self.compare(dev, &out, &wrt, cpu);
    }

    /// Checks a layer: input 0 is the layer's input, the others are copied into the
    /// layer's parameters (in `named_parameters` order); the gradients of the input and
    /// of the layer's own parameters are compared.
    pub fn check_layer<L: Layer + ?Sized>(&self, dev: &Device, layer: &L, cpu: Cpu<'_>) {
        let leaves = self.leaves(dev);
        let params = layer.parameters();
        assert_eq!(
            params.len() + 1,
            leaves.len(),
            "{}: one input per parameter",
            self.name
        );
        for (p, v) in params.iter().zip(&leaves[1..]) {
            no_grad(|| p.copy_(v)).unwrap();
        }
        let out = layer.forward(&leaves[0]).unwrap();
        let wrt: Vec<(usize, &Tensor)> = std::iter::once(&leaves[0])
            .chain(params.iter())
            .enumerate()
            .collect();
        self.compare(dev, &out, &wrt, cpu);
    }

    fn compare(&self, dev: &Device, out: &Tensor, wrt: &[(usize, &Tensor)], cpu: Cpu<'_>) {
        let r = Rng::new(99).vec(out.shape().iter().product(), 1.0);
        let wrt: Vec<Wrt<'_>> = wrt
            .iter()
            .map(|&(index, tensor)| Wrt {
                label: format!("input{index}"),
                index,
                tensor,
            })
            .collect();
        let (f, g) = (self.forward_tol, self.grad_tol);
        let x64 = self.values64();
        compare(dev, self.name, out, &x64, &wrt, cpu, &r, (f, f), (g, g));
    }
}

/// `x [rows, n] · wᵀ [n, m] + b` in f64.
pub fn linear_cpu(x: &[f64], w: &[f64], b: Option<&[f64]>, n: usize, m: usize) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            (0..m).map(move |j| {
                let dot: f64 = row
                    .iter()
                    .zip(&w[j * n..(j + 1) * n])
                    .map(|(a, b)| a * b)
                    .sum();
                dot + b.map_or(0.0, |b| b[j])
            })
        })
        .collect()
}

/// Log-softmax of one row in f64.
pub fn log_softmax_row(r: &[f64]) -> Vec<f64> {
    let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    r.iter().map(|v| v - lse).collect()
}
