//! The `Algorithm` trait: what SGD, Adam and AdamW each define (options, their checks,
//! the saved hyperparameters and the update of one parameter or of a flat group), with
//! the option checks its implementations share. [`super::Optimizer`] runs the step loop
//! over any `Algorithm`; this file imports nothing that imports it back.

use tang_runtime::Tensor;

use super::error::OptimError;
use super::param::{Hyper, ParamState};

/// One optimization algorithm: its options (one value per group) and its update.
/// Implemented by [`super::SgdOptions`], [`super::AdamOptions`] and
/// [`super::AdamWOptions`]; [`super::Optimizer`] does the rest.
///
/// ```
/// use tang_nn::optim::{Algorithm, AdamWOptions};
/// assert_eq!(AdamWOptions::NAME, "AdamW"); // what saved state records
/// AdamWOptions::default().validate()?;
/// assert!(AdamWOptions::default().lr(-1.0).validate().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Algorithm: Clone + std::fmt::Debug + PartialEq {
    /// PyTorch's class name ("SGD", "Adam", "AdamW"), recorded in saved state.
    ///
    /// ```
    /// use tang_nn::optim::{Algorithm, SgdOptions};
    /// assert_eq!(SgdOptions::NAME, "SGD"); // type(optimizer).__name__
    /// ```
    const NAME: &'static str;
    /// Whether a parameter's state holds a step count (Adam's `state["step"]`).
    ///
    /// ```
    /// use tang_nn::optim::{AdamOptions, Algorithm, SgdOptions};
    /// assert!(AdamOptions::COUNTS_STEPS && !SgdOptions::COUNTS_STEPS);
    /// ```
    const COUNTS_STEPS: bool;
    /// The names of the state buffers a parameter may hold (PyTorch's state keys).
    ///
    /// ```
    /// use tang_nn::optim::{AdamWOptions, Algorithm};
    /// assert_eq!(AdamWOptions::BUFFERS, ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]);
    /// ```
    const BUFFERS: &'static [&'static str];
    /// The buffers every parameter with state has (the others are optional).
    ///
    /// ```
    /// use tang_nn::optim::{AdamOptions, Algorithm};
    /// assert!(!AdamOptions::REQUIRED.contains(&"max_exp_avg_sq")); // AMSGrad's buffer is optional
    /// ```
    const REQUIRED: &'static [&'static str];

    /// Checks every option against PyTorch's rules.
    ///
    /// ```
    /// use tang_nn::optim::{Algorithm, SgdOptions};
    /// // torch.optim.SGD(params, lr=0.1, nesterov=True) raises: nesterov needs momentum.
    /// let bad = SgdOptions { lr: 0.1, nesterov: true, ..SgdOptions::default() };
    /// assert!(bad.validate().is_err());
    /// ```
    ///
    /// # Errors
    /// [`OptimError::InvalidOption`] naming the first bad option.
    fn validate(&self) -> Result<(), OptimError>;
    /// The options by PyTorch name, as saved with the state (every algorithm has `lr`
    /// and `weight_decay`).
    ///
    /// ```
    /// use tang_nn::optim::{Algorithm, Hyper, SgdOptions};
    /// let hyper = SgdOptions::default().hyperparameters();
    /// assert!(hyper.contains(&("lr", Hyper::Float(1e-3))));
    /// ```
    fn hyperparameters(&self) -> Vec<(&'static str, Hyper)>;
    /// Sets the option `name` from saved state; `false` when there is no such option or
    /// the value has the wrong kind.
    ///
    /// ```
    /// use tang_nn::optim::{Algorithm, Hyper, SgdOptions};
    /// let mut opts = SgdOptions::default();
    /// assert!(opts.set_hyperparameter("momentum", Hyper::Float(0.9)));
    /// assert!(!opts.set_hyperparameter("betas", Hyper::Pair(0.9, 0.999))); // not SGD's
    /// assert_eq!(opts.momentum, 0.9);
    /// ```
    fn set_hyperparameter(&mut self, name: &str, value: Hyper) -> bool;
    /// Records the update of one parameter from its gradient times `clip_coef` (a
    /// one-element tensor), creating or advancing its state.
    ///
    /// ```
    /// use tang_nn::optim::{Algorithm, ParamState, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let p = Tensor::from_slice(&dev, &[1.0], &[1])?;
    /// let g = Tensor::from_slice(&dev, &[1.0], &[1])?;
    /// let one = Tensor::from_slice(&dev, &[1.0], &[1])?; // clip coefficient: unclipped
    /// let mut state = ParamState::default();
    /// SgdOptions { lr: 0.5, ..SgdOptions::default() }.update(&p, &g, &one, &mut state)?;
    /// assert_eq!(p.to_vec()?, [0.5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::Runtime`] when the device fails.
    fn update(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        state: &mut ParamState,
    ) -> Result<(), OptimError>;

    /// The state buffers (zeros before the first step) of the multi-tensor step, which
    /// updates a whole group in one launch over flat tensors ([`Algorithm::update_flat`]);
    /// empty (the default) where the algorithm updates one parameter per launch.
    ///
    /// ```
    /// use tang_nn::optim::{AdamOptions, Algorithm, SgdOptions};
    /// assert_eq!(AdamOptions::default().flat_buffers(), ["exp_avg", "exp_avg_sq"]);
    /// assert!(SgdOptions::default().flat_buffers().is_empty());
    /// ```
    fn flat_buffers(&self) -> &'static [&'static str] {
        &[]
    }

    /// [`Algorithm::update`] of many parameters packed into the flat `param`, from the
    /// flat `grad`, with the flat state `buffers` (in [`Algorithm::flat_buffers`] order)
    /// and `step` the step count every one of them reaches. Called only when
    /// `flat_buffers` is not empty; the default does nothing.
    ///
    /// # Errors
    /// [`OptimError::Runtime`] when the device fails.
    fn update_flat(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        buffers: &[&Tensor],
        step: u64,
    ) -> Result<(), OptimError> {
        let _ = (param, grad, clip_coef, buffers, step);
        Ok(())
    }
}

/// 1.0 for true, 0.0 for false: how kernels take flags.
pub(crate) fn flag(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

/// [`OptimError::InvalidOption`] unless `ok`.
pub(crate) fn require(
    ok: bool,
    optimizer: &'static str,
    option: &'static str,
    value: impl std::fmt::Debug,
    requirement: &'static str,
) -> Result<(), OptimError> {
    if ok {
        return Ok(());
    }
    Err(OptimError::InvalidOption {
        optimizer,
        option,
        value: format!("{value:?}"),
        requirement,
    })
}
