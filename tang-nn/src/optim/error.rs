//! The typed errors of building optimizers, stepping them, clipping gradients and saving
//! or loading optimizer state. Each message says what is wrong and what to do.

use crate::safetensors::SafetensorsError;

/// Everything that can go wrong in `tang_nn::optim`.
///
/// ```
/// use tang_nn::optim::{OptimError, Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let err = Sgd::new([("w", Tensor::zeros(&dev, &[1])?)], SgdOptions { lr: -1.0, ..SgdOptions::default() })
///     .err()
///     .ok_or("a negative lr is refused")?;
/// assert!(matches!(err, OptimError::InvalidOption { option: "lr", .. }));
/// println!("{err}"); // names the option and what it must be
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum OptimError {
    /// A hyperparameter is outside its valid range (PyTorch raises `ValueError` for the
    /// same values).
    #[error("{optimizer}: invalid {option} value {value}: it must be {requirement}")]
    InvalidOption {
        /// The optimizer or function ("SGD", "Adam", "AdamW", "clip_grad_norm_").
        optimizer: &'static str,
        /// The option's PyTorch name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What the option must satisfy.
        requirement: &'static str,
    },
    /// The optimizer was given no parameters (PyTorch: "optimizer got an empty parameter
    /// list").
    #[error("optimizer got an empty parameter list; pass the model's named parameters")]
    EmptyParameterList,
    /// A clipping function was given no gradients. PyTorch's `clip_grad_norm_` returns
    /// `tensor(0.)` on the CPU then; tang's norm is a tensor on the gradients' device, and
    /// with no gradient there is no device to put it on.
    #[error(
        "{function} got no gradients, so there is no device for its norm (PyTorch returns a zero norm on the CPU here); skip clipping when there are none (NamedGradients::is_empty), as the Trainer does"
    )]
    NoGradients {
        /// The function ("grad_norm", "clip_grad_norm_", "scale_grads_").
        function: &'static str,
    },
    /// One name was registered twice.
    #[error("parameter {name:?} is registered twice; give each parameter to one group once")]
    DuplicateParameter {
        /// The name.
        name: String,
    },
    /// Two names share one tensor (a tied parameter registered twice would be updated
    /// twice per step).
    #[error(
        "parameters {first:?} and {second:?} share one tensor (tied); register a tied \
         parameter once, under one name"
    )]
    SharedParameter {
        /// The name registered first.
        first: String,
        /// The name that shares its buffer.
        second: String,
    },
    /// A parameter, gradient, state or coefficient tensor is not f32.
    #[error("the {what} of {name:?} is not an f32 tensor; optimizers update f32 tensors only")]
    NotF32 {
        /// The parameter (or "clip coefficient").
        name: String,
        /// What the tensor is ("parameter", "gradient", ...).
        what: &'static str,
    },
    /// A gradient's shape differs from its parameter's.
    #[error(
        "the gradient of {name:?} has shape {grad:?} but the parameter has shape \
         {param:?}; pass each parameter's own gradient under its name"
    )]
    GradientShape {
        /// The parameter.
        name: String,
        /// The parameter's shape.
        param: Vec<usize>,
        /// The gradient's shape.
        grad: Vec<usize>,
    },
    /// A gradient shares its buffer with its parameter (an update would read what it
    /// writes).
    #[error(
        "the gradient of {name:?} is the parameter's own tensor; pass the gradient \
         tensor that backward returned"
    )]
    GradientIsParameter {
        /// The parameter.
        name: String,
    },
    /// A tensor lives on another device than the parameters.
    #[error(
        "a tensor of {name:?} lives on another device than the parameters; create \
         gradients and state on the parameters' device"
    )]
    DeviceMismatch {
        /// The parameter (or "clip coefficient").
        name: String,
    },
    /// A clip coefficient (or other broadcast scale) is not a one-element tensor.
    #[error("the {what} must be a one-element tensor (shape [1] or []), got shape {shape:?}")]
    NotScalar {
        /// What the tensor is.
        what: &'static str,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// Saved optimizer state does not fit this optimizer.
    #[error(
        "the optimizer state does not fit this optimizer: {detail}; build the \
         optimizer with the same kind, parameter names and groups as the one saved"
    )]
    State {
        /// What does not fit, in words.
        detail: String,
    },
    /// The device failed.
    #[error("{0}")]
    Runtime(#[from] tang_runtime::Error),
    /// Reading or writing the state file failed.
    #[error("optimizer state file: {0}")]
    Safetensors(#[from] SafetensorsError),
}

crate::macros::debug_as_display!(OptimError);
