//! What [`super::Optimizer::step`] reads the gradients from.
//!
//! An optimizer owns its parameters (registered by name at construction, as PyTorch's
//! `named_parameters()`). Built from a model (`AdamW::new(model.named_parameters(), ..)`)
//! it also knows each parameter's autograd identity, so `opt.step(&grads)` takes what
//! `loss.backward()` returned as it is. Anything that can answer "the gradient of
//! `name`" implements [`Gradients`] too (a map, a slice of pairs), for parameters given
//! as bare device tensors. A parameter without a gradient is skipped, as PyTorch skips a
//! parameter whose `.grad` is `None`.

use std::collections::{BTreeMap, HashMap};

use tang_runtime::Tensor;

/// The gradient of each parameter, looked up by the parameter's name.
///
/// ```
/// use std::collections::HashMap;
/// use tang_nn::optim::{Gradients, Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0], &[1])?;
/// let mut opt = Sgd::new([("w", w.clone())], SgdOptions { lr: 0.5, ..SgdOptions::default() })?;
/// let mut grads: HashMap<String, Tensor> = HashMap::new(); // any name -> gradient map
/// grads.insert("w".into(), Tensor::from_slice(&dev, &[1.0], &[1])?);
/// assert!(grads.grad("w").is_some());
/// opt.step(&grads)?;
/// assert_eq!(w.to_vec()?, [0.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Gradients {
    /// The gradient of parameter `name`, or `None` when it has none this step.
    ///
    /// ```
    /// use tang_nn::optim::Gradients;
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let g = Tensor::zeros(&dev, &[2])?;
    /// let grads = [("fc.weight", &g)]; // a slice of pairs is a Gradients too
    /// assert!(grads.grad("fc.weight").is_some() && grads.grad("fc.bias").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn grad(&self, name: &str) -> Option<&Tensor>;

    /// The gradient of the parameter `name` whose autograd identity is `id` (when the
    /// optimizer was built from a model's parameters): what a step looks up. By name
    /// unless the source is keyed by identity, as `backward()`'s result is.
    ///
    /// ```
    /// use tang_nn::optim::Gradients;
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let g = Tensor::zeros(&dev, &[2])?;
    /// assert!([("w", &g)].grad_of("w", None).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn grad_of(&self, name: &str, id: Option<crate::autograd::TensorId>) -> Option<&Tensor> {
        let _ = id;
        self.grad(name)
    }
}

/// `backward()`'s result, as `opt.step(&grads)` reads it: looked up by the identity of
/// each parameter the optimizer was built from (`AdamW::new(model.named_parameters(),
/// ..)`); it has no names, so a parameter given as a bare device tensor finds nothing.
///
/// ```
/// # use tang_nn::{Device, Module, Tensor, rng::SplitMix64};
/// use tang_nn::nn::Linear;
/// use tang_nn::optim::{Sgd, SgdOptions};
/// # let dev = Device::new()?;
/// let fc = Linear::new(&dev, 2, 1, true, &mut SplitMix64::new(0))?;
/// let mut opt = Sgd::new(fc.named_parameters(), SgdOptions::default())?; // SGD(fc.parameters())
/// let grads = fc.forward(&Tensor::zeros(&dev, &[1, 2])?)?.sum_all()?.backward()?;
/// opt.step(&grads)?; // optimizer.step()
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl Gradients for crate::autograd::Gradients {
    fn grad(&self, _name: &str) -> Option<&Tensor> {
        None
    }

    fn grad_of(&self, _name: &str, id: Option<crate::autograd::TensorId>) -> Option<&Tensor> {
        self.get_id(id?)
    }
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

/// The gradients that `loss.backward()` returned, in the order of the parameters they
/// belong to and looked up by name: what the trainer hands to clipping (a norm summed in
/// a fixed order) and to the step. Users step with `backward()`'s result directly.
#[derive(Debug)]
pub(crate) struct NamedGradients<'a> {
    /// In the parameters' order, so that a norm over them sums in a fixed order.
    ordered: Vec<(&'a str, &'a Tensor)>,
    index: HashMap<&'a str, usize>,
}

impl<'a> NamedGradients<'a> {
    /// The gradient of each of `params` (name and parameter, as a module's
    /// `named_parameters()` lists them) found in `grads`.
    pub(crate) fn new(
        params: &'a [(String, crate::autograd::Tensor)],
        grads: &'a crate::autograd::Gradients,
    ) -> Self {
        let ordered: Vec<(&str, &Tensor)> = params
            .iter()
            .filter_map(|(name, p)| Some((name.as_str(), grads.get_id(p.id())?)))
            .collect();
        let index = ordered
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (*name, i))
            .collect();
        NamedGradients { ordered, index }
    }

    /// The gradients in the parameters' order (for [`super::grad_norm`]).
    pub(crate) fn tensors(&self) -> impl Iterator<Item = &'a Tensor> + '_ {
        self.ordered.iter().map(|(_, t)| *t)
    }

    /// Whether no parameter has a gradient.
    pub(crate) fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }
}

impl Gradients for NamedGradients<'_> {
    fn grad(&self, name: &str) -> Option<&Tensor> {
        self.index.get(name).map(|&i| self.ordered[i].1)
    }
}
