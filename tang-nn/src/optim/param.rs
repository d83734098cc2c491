//! A parameter as the optimizer holds it (name, tensor shared with the model, state) and
//! its per-parameter state: the step count, the state buffers and the hyperparameter
//! values saved with them.

use std::collections::BTreeMap;
use std::fmt;

use tang_runtime::Tensor;

use super::error::OptimError;
use crate::autograd::TensorId;

/// A registered parameter: its name, tensor (shared with the model), group and state.
#[derive(Debug)]
pub(crate) struct Param {
    pub name: String,
    pub tensor: Tensor,
    /// The autograd identity of the model's parameter, when it was built from one.
    pub id: Option<TensorId>,
    pub state: ParamState,
}

/// One parameter's optimizer state: its step count (Adam, AdamW) and its buffers by
/// PyTorch's state key.
///
/// ```
/// use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions { momentum: 0.9, ..SgdOptions::default() })?;
/// opt.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
/// let state = opt.state("w").ok_or("w is registered")?;
/// assert_eq!(state.buffer("momentum_buffer").ok_or("made on the first step")?.to_vec()?, [1.0, 1.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ParamState {
    pub(crate) step: u64,
    pub(crate) buffers: BTreeMap<&'static str, Tensor>,
}

impl ParamState {
    /// Steps taken (Adam's `state["step"]`; 0 for SGD, which does not count).
    ///
    /// ```
    /// use tang_nn::optim::{AdamW, AdamWOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = AdamW::new([("w", Tensor::zeros(&dev, &[2])?)], AdamWOptions::default())?;
    /// let g = Tensor::full(&dev, &[2], 1.0)?;
    /// opt.step(&[("w", &g)])?;
    /// opt.step(&[("w", &g)])?;
    /// assert_eq!(opt.state("w").map(|s| s.step()), Some(2)); // state["step"]
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The state buffer `key` (`"exp_avg"`, `"momentum_buffer"`, ...), if created.
    ///
    /// ```
    /// use tang_nn::optim::{Adam, AdamOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = Adam::new([("w", Tensor::zeros(&dev, &[2])?)], AdamOptions::default())?;
    /// opt.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
    /// let state = opt.state("w").ok_or("w is registered")?;
    /// assert!(state.buffer("exp_avg").is_some() && state.buffer("max_exp_avg_sq").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buffer(&self, key: &str) -> Option<&Tensor> {
        self.buffers.get(key)
    }

    /// Whether the parameter has any state yet (it has had a step).
    ///
    /// ```
    /// use tang_nn::optim::{Adam, AdamOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Adam::new([("w", Tensor::zeros(&dev, &[2])?)], AdamOptions::default())?;
    /// assert!(opt.state("w").is_some_and(|s| s.is_empty())); // no step yet
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.step == 0 && self.buffers.is_empty()
    }

    /// The buffer `key`, created as zeros shaped like `param` when absent (PyTorch's
    /// `torch.zeros_like(p)` on a parameter's first step).
    pub(crate) fn buffer_or_zeros(
        &mut self,
        key: &'static str,
        param: &Tensor,
    ) -> Result<Tensor, OptimError> {
        if let Some(t) = self.buffers.get(key) {
            return Ok(t.clone());
        }
        let t = Tensor::zeros(param.device(), param.shape())?;
        self.buffers.insert(key, t.clone());
        Ok(t)
    }
}

/// A hyperparameter's value as saved with the state.
///
/// ```
/// use tang_nn::optim::{AdamW, AdamWOptions, Hyper};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let opt = AdamW::new([("w", Tensor::zeros(&dev, &[2])?)], AdamWOptions::default())?;
/// let state = opt.state_dict()?;
/// assert_eq!(state.metadata["param_groups.0.betas"], Hyper::Pair(0.9, 0.999).to_string());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hyper {
    /// A number (`lr`, `eps`, `weight_decay`, ...).
    Float(f64),
    /// A flag (`nesterov`, `maximize`, `amsgrad`, ...).
    Bool(bool),
    /// A pair (`betas`).
    Pair(f64, f64),
}

impl fmt::Display for Hyper {
    // Rust prints the shortest text that parses back to the same f64.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hyper::Float(x) => write!(f, "{x:?}"),
            Hyper::Bool(b) => write!(f, "{b}"),
            Hyper::Pair(a, b) => write!(f, "{a:?},{b:?}"),
        }
    }
}

impl Hyper {
    /// Parses what [`Hyper`]'s `Display` writes.
    pub(crate) fn parse(s: &str) -> Option<Hyper> {
        match s {
            "true" => Some(Hyper::Bool(true)),
            "false" => Some(Hyper::Bool(false)),
            _ => match s.split_once(',') {
                Some((a, b)) => Some(Hyper::Pair(a.parse().ok()?, b.parse().ok()?)),
                None => s.parse().ok().map(Hyper::Float),
            },
        }
    }
}
