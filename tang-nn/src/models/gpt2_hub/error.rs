//! What can go wrong reading or writing a Hugging Face GPT-2 directory.

use std::path::PathBuf;

use crate::safetensors::{SafetensorsError, StateDictError};

/// Why [`Gpt::from_pretrained`](crate::models::gpt::Gpt::from_pretrained) or
/// [`Gpt::save_pretrained`](crate::models::gpt::Gpt::save_pretrained) failed. Each
/// message names the file and says what to change.
///
/// ```
/// use tang_nn::models::gpt::Gpt;
/// use tang_nn::models::gpt2_hub::HubError;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let err = Gpt::from_pretrained(&dev, "no/such/dir").err().ok_or("nothing there")?;
/// assert!(matches!(err, HubError::Io { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `config.json` is not a GPT-2 config tang's GPT can build (or does not match the
    /// model it is loaded into).
    #[error("{path}: {detail}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        detail: String,
    },
    /// `model.safetensors.index.json` or its shards do not agree.
    #[error("{path}: {detail}")]
    Index {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A safetensors file is malformed.
    #[error("{path}: {source}")]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// The reader's error.
        source: SafetensorsError,
    },
    /// Missing, unexpected or mis-shaped keys under their Hugging Face names, every one
    /// listed (PyTorch's message).
    #[error("{0}")]
    Keys(#[from] StateDictError),
    /// The model cannot be written as a GPT-2 checkpoint (no biases, grouped-query
    /// attention).
    #[error("cannot save as a GPT-2 checkpoint: {detail}")]
    Unsupported {
        /// What the GPT-2 layout lacks.
        detail: String,
    },
    /// A device operation failed.
    #[error("{0}")]
    Model(#[from] crate::autograd::Error),
}

crate::macros::debug_as_display!(HubError);

impl From<tang_runtime::Error> for HubError {
    fn from(e: tang_runtime::Error) -> Self {
        HubError::Model(e.into())
    }
}

impl From<crate::module::Error> for HubError {
    fn from(e: crate::module::Error) -> Self {
        match e {
            crate::module::Error::Keys(k) => HubError::Keys(k),
            crate::module::Error::Safetensors(source) => HubError::Safetensors {
                path: PathBuf::from("<converted state dict>"),
                source,
            },
            crate::module::Error::Autograd(a) => HubError::Model(a),
        }
    }
}

/// `source` as a [`HubError::Io`] about `path`.
pub(super) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HubError {
    let path = path.into();
    move |source| HubError::Io { path, source }
}
