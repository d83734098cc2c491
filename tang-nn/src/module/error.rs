//! The error of loading a state dict into a module.

use crate::safetensors::{SafetensorsError, StateDictError};

/// Why [`Module::load_state_dict`](super::Module::load_state_dict) or
/// [`Module::requires_grad_`](super::Module::requires_grad_) failed.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::nn::Linear;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// use tang_nn::module::Error;
/// use tang_nn::safetensors::StateDict;
/// let err = fc.load_state_dict(&StateDict::new(), true).err().ok_or("strict: missing keys")?;
/// assert!(matches!(err, Error::Keys(_)));
/// println!("{err}"); // Error(s) in loading state_dict for Linear: Missing key(s) ...
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Missing, unexpected or shape-mismatched keys, every one listed (PyTorch's
    /// message). Fix the checkpoint or the model, or load non-strictly to accept missing
    /// and unexpected keys.
    #[error("{0}")]
    Keys(#[from] StateDictError),
    /// An entry could not be read as f32 values (an integer tensor under a parameter's
    /// name, say).
    #[error("{0}")]
    Safetensors(#[from] SafetensorsError),
    /// A device copy failed, or a listed tensor is not a leaf.
    #[error("{0}")]
    Autograd(#[from] crate::autograd::Error),
}

crate::macros::debug_as_display!(Error);
