//! Parameter groups: parameters that share hyperparameters (PyTorch's `param_groups`).
//!
//! A [`ParamGroup`] is what a user passes in: named parameters and the options that
//! differ from the optimizer's defaults (learning rate, weight decay). The optimizer
//! resolves each into a [`Group`] holding a full copy of the options, which a schedule or
//! the user may change between steps (`opt.groups_mut()[i].options.lr = ...`).

use tang_runtime::Tensor;

/// Named parameters with optional per-group overrides of the defaults.
#[derive(Clone, Debug, Default)]
pub struct ParamGroup {
    /// The parameters, by name (as `named_parameters()` names them).
    pub params: Vec<(String, Tensor)>,
    /// This group's learning rate, or `None` for the optimizer's default.
    pub lr: Option<f64>,
    /// This group's weight decay, or `None` for the optimizer's default.
    pub weight_decay: Option<f64>,
}

impl ParamGroup {
    /// A group of `params` with the optimizer's default options.
    pub fn new<N: Into<String>>(params: impl IntoIterator<Item = (N, Tensor)>) -> Self {
        ParamGroup {
            params: params.into_iter().map(|(n, t)| (n.into(), t)).collect(),
            lr: None,
            weight_decay: None,
        }
    }

    /// The same group with its own learning rate.
    pub fn with_lr(mut self, lr: f64) -> Self {
        self.lr = Some(lr);
        self
    }

    /// The same group with its own weight decay.
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = Some(weight_decay);
        self
    }
}

/// A model's trainable parameters by name, as an optimizer takes them: its
/// `named_parameters()` (tied parameters once, frozen ones left out, as PyTorch users
/// write `[p for p in model.parameters() if p.requires_grad]`), each the device tensor
/// the parameter holds (a clone sharing its buffer, so updates reach the model).
pub fn named_parameters_of<M: crate::module::Module + ?Sized>(model: &M) -> Vec<(String, Tensor)> {
    model
        .named_parameters()
        .into_iter()
        .filter(|(_, p)| p.requires_grad())
        .map(|(name, p)| (name, p.data().clone()))
        .collect()
}

/// nanoGPT's two groups (`configure_optimizers`): parameters of two or more dimensions
/// (matmul weights, embeddings) decay by `weight_decay`; the rest (biases, norm weights)
/// do not decay. Order within each group is kept.
pub fn decay_groups<N: Into<String>>(
    params: impl IntoIterator<Item = (N, Tensor)>,
    weight_decay: f64,
) -> [ParamGroup; 2] {
    let (decay, no_decay): (Vec<_>, Vec<_>) = params
        .into_iter()
        .map(|(n, t)| (n.into(), t))
        .partition(|(_, t)| t.shape().len() >= 2);
    [
        ParamGroup {
            params: decay,
            lr: None,
            weight_decay: Some(weight_decay),
        },
        ParamGroup {
            params: no_decay,
            lr: None,
            weight_decay: Some(0.0),
        },
    ]
}

/// One resolved group of an optimizer: its full options and its parameters' names.
#[derive(Clone, Debug, PartialEq)]
pub struct Group<A> {
    /// The options every parameter of the group is updated with; change them between
    /// steps to schedule them.
    pub options: A,
    pub(crate) names: Vec<String>,
}

impl<A> Group<A> {
    /// The names of the group's parameters, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}
