//! AdamW: Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's
//! `torch.optim.AdamW`. Same update as [`super::Adam`] with `decoupled_weight_decay`
//! (PyTorch's AdamW is that too); what differs is the default weight decay, 1e-2 (Burn
//! and others use other defaults; tang keeps PyTorch's).

use tang_runtime::Tensor;

use super::adam::{AdamOptions, adam_hyperparameters, adam_step, set_adam_hyperparameter};
use super::algorithm::Algorithm;
use super::error::OptimError;
use super::optimizer::Optimizer;
use super::param::{Hyper, ParamState};

/// AdamW over named parameters (PyTorch's `torch.optim.AdamW`).
///
/// ```
/// use tang_nn::optim::{AdamW, AdamWOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0], &[1])?;
/// let opts = AdamWOptions::default().lr(0.1).weight_decay(0.1);
/// let mut opt = AdamW::new([("w", w.clone())], opts)?; // AdamW([w], lr=0.1, weight_decay=0.1)
/// opt.step(&[("w", &Tensor::from_slice(&dev, &[0.5], &[1])?)])?;
/// assert!((w.to_vec()?[0] - (0.99 - 0.1)).abs() < 1e-6); // decay, then the Adam step
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type AdamW = Optimizer<AdamWOptions>;

/// AdamW's hyperparameters: Adam's options ([`AdamOptions`]) with decoupled weight
/// decay always on and PyTorch's AdamW default weight decay, 1e-2 (PyTorch's `AdamW` is
/// `Adam(decoupled_weight_decay=True)` with that default). Read Adam's fields through it
/// (`opts.lr`), set them with the setters as PyTorch's keyword arguments, or make one
/// from Adam's options with `AdamWOptions::from`.
///
/// ```
/// use tang_nn::optim::{AdamOptions, AdamWOptions};
/// // nanoGPT: AdamW(lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
/// let opts = AdamWOptions::default().lr(6e-4).betas((0.9, 0.95)).weight_decay(0.1);
/// assert_eq!(AdamWOptions::default().weight_decay, 1e-2); // PyTorch's default
/// assert!(opts.decoupled_weight_decay); // what makes it AdamW
/// let same = AdamWOptions::from(AdamOptions { lr: 6e-4, betas: (0.9, 0.95), weight_decay: 0.1, ..AdamOptions::default() });
/// assert_eq!(opts, same);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWOptions {
    adam: AdamOptions,
}

impl Default for AdamWOptions {
    fn default() -> Self {
        AdamWOptions::from(AdamOptions {
            weight_decay: 1e-2,
            ..AdamOptions::default()
        })
    }
}

/// Adam's options as AdamW's: `decoupled_weight_decay` is set (AdamW always decouples),
/// every other field kept, the weight decay included.
impl From<AdamOptions> for AdamWOptions {
    fn from(adam: AdamOptions) -> Self {
        AdamWOptions {
            adam: AdamOptions {
                decoupled_weight_decay: true,
                ..adam
            },
        }
    }
}

/// Adam's fields (`opts.lr`, `opts.weight_decay`), readable and, through
/// [`DerefMut`](std::ops::DerefMut), writable as PyTorch's `param_groups[0]["lr"] = ..`
/// is (`opt.groups_mut()[0].options.lr = 3e-4`).
impl std::ops::Deref for AdamWOptions {
    type Target = AdamOptions;

    fn deref(&self) -> &AdamOptions {
        &self.adam
    }
}

/// Writes to Adam's fields; AdamW decouples its weight decay whatever
/// `decoupled_weight_decay` is set to (use [`super::Adam`] for the L2 penalty).
impl std::ops::DerefMut for AdamWOptions {
    fn deref_mut(&mut self) -> &mut AdamOptions {
        &mut self.adam
    }
}

impl AdamWOptions {
    /// The same options as Adam's with decoupled weight decay.
    fn as_adam(&self) -> AdamOptions {
        AdamOptions {
            decoupled_weight_decay: true,
            ..self.adam
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
        self.adam = o;
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
