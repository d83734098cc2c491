//! The typed errors of autocast and the gradient scaler. Each message says what is wrong
//! and what to do; the misuses of a [`super::GradScaler`] are the ones PyTorch raises a
//! `RuntimeError` for, in its words.

use tang_runtime::DType;

use crate::optim::OptimError;

/// Everything that can go wrong in `tang_nn::amp`.
///
/// ```
/// use tang_nn::amp::{AmpError, GradScaler, GradScalerOptions};
/// let err = GradScaler::new(GradScalerOptions { growth_factor: 0.5, ..GradScalerOptions::default() })
///     .err()
///     .ok_or("a growth factor under 1 is refused")?;
/// assert!(matches!(err, AmpError::InvalidOption { option: "growth_factor", .. }));
/// println!("{err}"); // names the option and what it must be
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum AmpError {
    /// Autocast was asked for a dtype it cannot compute in.
    #[error(
        "autocast to {dtype:?} is not supported: tang's autocast computes in f16 \
         (DType::F16) only; bf16 has no cooperative-matrix (tensor-core) type in \
         wgpu, so f16 with a GradScaler is the mixed-precision path"
    )]
    UnsupportedDtype {
        /// The dtype asked for.
        dtype: DType,
    },
    /// A scaler option is outside its valid range (PyTorch refuses the same values).
    #[error("GradScaler: invalid {option} value {value}: it must be {requirement}")]
    InvalidOption {
        /// The option's PyTorch name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What the option must satisfy.
        requirement: &'static str,
    },
    /// `unscale_` was called twice for one optimizer between two `update`s.
    #[error(
        "unscale_() has already been called on this optimizer since the last update(); \
         call it at most once per step, before step()"
    )]
    AlreadyUnscaled,
    /// `unscale_` was called after `step` for one optimizer, before `update`.
    #[error(
        "unscale_() is being called after step(); unscale (and clip) before step(), \
         then call update()"
    )]
    UnscaleAfterStep,
    /// `step` was called twice for one optimizer between two `update`s.
    #[error(
        "step() has already been called since the last update(); call update() once \
         after each round of optimizer steps"
    )]
    AlreadyStepped,
    /// `update` was called with no `unscale_` or `step` since the last one: there is no
    /// inf/NaN check to decide the new scale from.
    #[error(
        "no inf checks were recorded prior to update(); call step() (or unscale_()) \
         on the optimizer before update()"
    )]
    NoInfChecks,
    /// The optimizer, clipping or the device failed.
    #[error("{0}")]
    Optim(#[from] OptimError),
    /// Scaling the loss failed.
    #[error("{0}")]
    Autograd(#[from] crate::autograd::Error),
}

crate::macros::debug_as_display!(AmpError);

impl From<tang_runtime::Error> for AmpError {
    fn from(e: tang_runtime::Error) -> Self {
        AmpError::Optim(e.into())
    }
}
