//! Gradients keyed by parameter name: what [`super::Optimizer::step`] reads.
//!
//! An optimizer owns its parameters (registered by name at construction, as PyTorch's
//! `named_parameters()`), and a step is given the gradients by the same names. Anything
//! that can answer "the gradient of `name`" implements [`Gradients`]: a map, a slice of
//! pairs, or (later) the gradients that `loss.backward()` returns, which then plug into
//! `step` unchanged. A parameter without a gradient is skipped, as PyTorch skips a
//! parameter whose `.grad` is `None`.

use std::collections::{BTreeMap, HashMap};

use tang_runtime::Tensor;

/// The gradient of each parameter, looked up by the parameter's name.
pub trait Gradients {
    /// The gradient of parameter `name`, or `None` when it has none this step.
    fn grad(&self, name: &str) -> Option<&Tensor>;
}

impl<S: std::hash::BuildHasher> Gradients for HashMap<String, Tensor, S> {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.get(name)
    }
}

impl Gradients for BTreeMap<String, Tensor> {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.get(name)
    }
}

impl Gradients for [(&str, &Tensor)] {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }
}

impl<const N: usize> Gradients for [(&str, &Tensor); N] {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.as_slice().grad(name)
    }
}

impl Gradients for [(String, Tensor)] {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

impl Gradients for Vec<(String, Tensor)> {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.as_slice().grad(name)
    }
}
