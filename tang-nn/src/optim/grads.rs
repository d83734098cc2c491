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

/// The gradients that `loss.backward()` returned (keyed by tensor), looked up by the
/// names of the parameters they belong to: what a training loop passes to
/// [`super::Optimizer::step`]. Parameters without a gradient (frozen, or unused by this
/// loss) have none here either.
#[derive(Debug)]
pub struct NamedGradients<'a> {
    /// In the parameters' order, so that a norm over them sums in a fixed order.
    ordered: Vec<(&'a str, &'a Tensor)>,
    index: HashMap<&'a str, usize>,
}

impl<'a> NamedGradients<'a> {
    /// The gradient of each of `params` (name and parameter, as a module's
    /// `named_parameters()` lists them) found in `grads`.
    pub fn new(
        params: &'a [(String, crate::autograd::Tensor)],
        grads: &'a crate::autograd::Gradients,
    ) -> Self {
        let ordered: Vec<(&str, &Tensor)> = params
            .iter()
            .filter_map(|(name, p)| Some((name.as_str(), grads.get(p)?)))
            .collect();
        let index = ordered
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (*name, i))
            .collect();
        NamedGradients { ordered, index }
    }

    /// The gradients in the parameters' order (for [`super::grad_norm`]).
    pub fn tensors(&self) -> impl Iterator<Item = &'a Tensor> + '_ {
        self.ordered.iter().map(|(_, t)| *t)
    }

    /// How many parameters have a gradient.
    pub fn len(&self) -> usize {
        self.ordered.len()
    }

    /// Whether no parameter has a gradient.
    pub fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }
}

impl Gradients for NamedGradients<'_> {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.index.get(name).map(|&i| self.ordered[i].1)
    }
}
