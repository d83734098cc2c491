//! Parameter groups: parameters that share hyperparameters (PyTorch's `param_groups`).
//!
//! A [`ParamGroup`] is what a user passes in: named parameters and the options that
//! differ from the optimizer's defaults (learning rate, weight decay). The optimizer
//! resolves each into a [`Group`] holding a full copy of the options, which a schedule or
//! the user may change between steps (`opt.groups_mut()[i].options.lr = ...`).

use tang_runtime::Tensor;

use crate::autograd::TensorId;

/// What an optimizer can take as a parameter: a model's parameter (the autograd
/// [`crate::Tensor`], whose gradient `opt.step(&grads)` then finds in the
/// [`crate::autograd::Gradients`] that `backward()` returned), or a bare device tensor
/// updated from gradients given by name.
pub trait IntoParam {
    /// The device tensor to update (a clone sharing the parameter's buffer), the
    /// autograd identity its gradient is keyed by, if any, and whether it trains (a
    /// frozen parameter is left out, as PyTorch users write
    /// `[p for p in model.parameters() if p.requires_grad]`).
    fn into_param(self) -> (Tensor, Option<TensorId>, bool);
}

impl IntoParam for Tensor {
    fn into_param(self) -> (Tensor, Option<TensorId>, bool) {
        (self, None, true)
    }
}

impl IntoParam for crate::autograd::Tensor {
    fn into_param(self) -> (Tensor, Option<TensorId>, bool) {
        (self.data().clone(), Some(self.id()), self.requires_grad())
    }
}

impl IntoParam for &crate::autograd::Tensor {
    fn into_param(self) -> (Tensor, Option<TensorId>, bool) {
        self.clone().into_param()
    }
}

/// Named parameters with optional per-group overrides of the defaults.
///
/// ```
/// use tang_nn::optim::{ParamGroup, Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let (w, b) = (Tensor::zeros(&dev, &[2, 2])?, Tensor::zeros(&dev, &[2])?);
/// // torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1)
/// let groups = vec![ParamGroup::new([("w", w)]), ParamGroup::new([("b", b)]).with_lr(0.01)];
/// let opt = Sgd::with_groups(groups, SgdOptions { lr: 0.1, ..SgdOptions::default() })?;
/// assert_eq!(opt.groups()[1].options.lr, 0.01);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ParamGroup {
    /// The parameters, by name (as `named_parameters()` names them).
    pub params: Vec<(String, Tensor)>,
    /// This group's learning rate, or `None` for the optimizer's default.
    pub lr: Option<f64>,
    /// This group's weight decay, or `None` for the optimizer's default.
    pub weight_decay: Option<f64>,
    /// The autograd identity of each of `params` (by position) that came from a model,
    /// so that a step finds its gradient in `backward()`'s result.
    pub(crate) ids: Vec<Option<TensorId>>,
}

impl ParamGroup {
    /// A group of `params` with the optimizer's default options.
    ///
    /// ```
    /// use tang_nn::optim::ParamGroup;
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let group = ParamGroup::new([("fc.weight", Tensor::zeros(&dev, &[2, 2])?)]);
    /// assert_eq!((group.params.len(), group.lr), (1, None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<N: Into<String>, P: IntoParam>(params: impl IntoIterator<Item = (N, P)>) -> Self {
        let mut group = ParamGroup::default();
        for (name, p) in params {
            let (tensor, id, trains) = p.into_param();
            if trains {
                group.params.push((name.into(), tensor));
                group.ids.push(id);
            }
        }
        group
    }

    /// The same group with its own learning rate.
    ///
    /// ```
    /// use tang_nn::optim::ParamGroup;
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let group = ParamGroup::new([("head.weight", Tensor::zeros(&dev, &[2, 2])?)]).with_lr(1e-4);
    /// assert_eq!(group.lr, Some(1e-4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_lr(mut self, lr: f64) -> Self {
        self.lr = Some(lr);
        self
    }

    /// The same group with its own weight decay.
    ///
    /// ```
    /// use tang_nn::optim::ParamGroup;
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let group = ParamGroup::new([("ln.weight", Tensor::zeros(&dev, &[2])?)]).with_weight_decay(0.0);
    /// assert_eq!(group.weight_decay, Some(0.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = Some(weight_decay);
        self
    }
}

/// nanoGPT's two groups (`configure_optimizers`): parameters of two or more dimensions
/// (matmul weights, embeddings) decay by `weight_decay`; the rest (biases, norm weights)
/// do not decay. Order within each group is kept.
///
/// ```
/// use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let params = [("fc.weight", Tensor::zeros(&dev, &[2, 2])?), ("fc.bias", Tensor::zeros(&dev, &[2])?)];
/// let [decay, no_decay] = decay_groups(params, 0.1); // nanoGPT's configure_optimizers
/// assert_eq!((decay.params[0].0.as_str(), no_decay.params[0].0.as_str()), ("fc.weight", "fc.bias"));
/// let opt = AdamW::with_groups(vec![decay, no_decay], AdamWOptions::default())?;
/// assert_eq!(opt.groups()[1].options.weight_decay, 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decay_groups<N: Into<String>, P: IntoParam>(
    params: impl IntoIterator<Item = (N, P)>,
    weight_decay: f64,
) -> [ParamGroup; 2] {
    let all = ParamGroup::new(params);
    let mut decay = ParamGroup::default().with_weight_decay(weight_decay);
    let mut no_decay = ParamGroup::default().with_weight_decay(0.0);
    for ((name, t), id) in all.params.into_iter().zip(all.ids) {
        let to = if t.shape().len() >= 2 {
            &mut decay
        } else {
            &mut no_decay
        };
        to.params.push((name, t));
        to.ids.push(id);
    }
    [decay, no_decay]
}

/// One resolved group of an optimizer: its full options and its parameters' names.
///
/// ```
/// use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
/// opt.groups_mut()[0].options.momentum = 0.9; // optimizer.param_groups[0]["momentum"] = 0.9
/// assert_eq!(opt.groups()[0].names(), ["w"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Group<A> {
    /// The options every parameter of the group is updated with; change them between
    /// steps to schedule them.
    pub options: A,
    pub(crate) names: Vec<String>,
}

impl<A> Group<A> {
    /// The names of the group's parameters, in the order given.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Sgd::new([("a", Tensor::zeros(&dev, &[1])?), ("b", Tensor::zeros(&dev, &[1])?)], SgdOptions::default())?;
    /// assert_eq!(opt.groups()[0].names(), ["a", "b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn names(&self) -> &[String] {
        &self.names
    }
}
