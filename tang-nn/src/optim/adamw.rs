//! AdamW: Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's
//! `torch.optim.AdamW`. Same update as [`super::Adam`] with `decoupled_weight_decay`
//! (PyTorch's AdamW is that too); what differs is the default weight decay, 1e-2 (Burn
//! and others use other defaults; tang keeps PyTorch's).

use tang_runtime::Tensor;

use super::adam::{AdamOptions, adam_hyperparameters, adam_step, set_adam_hyperparameter};
use super::error::OptimError;
use super::optimizer::{Algorithm, Optimizer};
use super::state::{Hyper, ParamState};

/// AdamW over named parameters (PyTorch's `torch.optim.AdamW`).
///
/// ```
/// use tang_nn::optim::{AdamW, AdamWOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0], &[1])?;
/// let opts = AdamWOptions { lr: 0.1, weight_decay: 0.1, ..AdamWOptions::default() };
/// let mut opt = AdamW::new([("w", w.clone())], opts)?; // AdamW([w], lr=0.1, weight_decay=0.1)
/// opt.step(&[("w", &Tensor::from_slice(&dev, &[0.5], &[1])?)])?;
/// assert!((w.to_vec()?[0] - (0.99 - 0.1)).abs() < 1e-6); // decay, then the Adam step
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type AdamW = Optimizer<AdamWOptions>;

/// AdamW's hyperparameters, with PyTorch's defaults.
///
/// ```
/// use tang_nn::optim::AdamWOptions;
/// // nanoGPT: AdamW(lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
/// let opts = AdamWOptions { lr: 6e-4, betas: (0.9, 0.95), weight_decay: 0.1, ..AdamWOptions::default() };
/// assert_eq!(AdamWOptions::default().weight_decay, 1e-2); // PyTorch's default
/// # let _ = opts;
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Decay rates of the first and second moment estimates (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator for stability (default 1e-8).
    pub eps: f64,
    /// Decoupled weight decay: each step multiplies the parameter by `1 - lr *
    /// weight_decay` (default 1e-2).
    pub weight_decay: f64,
    /// Use the maximum of past second moments (AMSGrad; default false).
    pub amsgrad: bool,
    /// Maximize the objective instead of minimizing it (default false).
    pub maximize: bool,
}

impl Default for AdamWOptions {
    fn default() -> Self {
        AdamWOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 1e-2,
            amsgrad: false,
            maximize: false,
        }
    }
}

impl AdamWOptions {
    /// The same options as Adam's with decoupled weight decay.
    fn as_adam(&self) -> AdamOptions {
        AdamOptions {
            lr: self.lr,
            betas: self.betas,
            eps: self.eps,
            weight_decay: self.weight_decay,
            amsgrad: self.amsgrad,
            maximize: self.maximize,
            decoupled_weight_decay: true,
        }
    }
}

impl Algorithm for AdamWOptions {
    const NAME: &'static str = "AdamW";
    const COUNTS_STEPS: bool = true;
    const BUFFERS: &'static [&'static str] = AdamOptions::BUFFERS;
    const REQUIRED: &'static [&'static str] = AdamOptions::REQUIRED;

    fn validate(&self) -> Result<(), OptimError> {
        self.as_adam().validate_as(Self::NAME)
    }

    fn hyperparameters(&self) -> Vec<(&'static str, Hyper)> {
        adam_hyperparameters(&self.as_adam(), false)
    }

    fn set_hyperparameter(&mut self, name: &str, value: Hyper) -> bool {
        let mut o = self.as_adam();
        if name == "decoupled_weight_decay" || !set_adam_hyperparameter(&mut o, name, value) {
            return false;
        }
        *self = AdamWOptions {
            lr: o.lr,
            betas: o.betas,
            eps: o.eps,
            weight_decay: o.weight_decay,
            amsgrad: o.amsgrad,
            maximize: o.maximize,
        };
        true
    }

    fn update(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        state: &mut ParamState,
    ) -> Result<(), OptimError> {
        adam_step(&self.as_adam(), param, grad, clip_coef, state)
    }

    fn flat_buffers(&self) -> &'static [&'static str] {
        self.as_adam().flat_buffers()
    }

    fn update_flat(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        buffers: &[&Tensor],
        step: u64,
    ) -> Result<(), OptimError> {
        self.as_adam()
            .update_flat(param, grad, clip_coef, buffers, step)
    }
}
