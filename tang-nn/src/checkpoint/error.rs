//! The checkpoint store's error type.

use std::io;
use std::path::PathBuf;

/// What can go wrong while saving, listing or loading checkpoints.
///
/// ```
/// use tang_nn::checkpoint::{CheckpointDir, CheckpointError, Retention};
/// let root = std::env::temp_dir().join(format!("tang-doc-ckpt-error-{}", std::process::id()));
/// let err = CheckpointDir::open(&root, Retention { keep_last: 0, ..Retention::default() })
///     .err()
///     .ok_or("keep_last 0 is refused")?;
/// assert!(matches!(err, CheckpointError::InvalidOption { .. }));
/// println!("{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A file system operation failed.
    #[error(
        "could not {action} {path}: {source}; check that the directory exists, is writable and has space"
    )]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A file name for a checkpoint is not a plain file name, or is reserved.
    #[error("invalid checkpoint file name {name:?}: {detail}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        detail: &'static str,
    },
    /// A retention option or a trainer-state value is out of range.
    #[error("invalid checkpoint option: {detail}")]
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
    /// The path given as a checkpoint does not exist, or is not a directory.
    #[error(
        "checkpoint {path} does not exist (or is not a directory); pass a checkpoint-<step> directory, as CheckpointDir::latest and CheckpointDir::list return them"
    )]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// A checkpoint of this step already exists.
    #[error("checkpoint {path} already exists; save under a later step, or delete it first")]
    Exists {
        /// Its directory.
        path: PathBuf,
    },
    /// A checkpoint directory is not a complete checkpoint (edited or damaged by hand:
    /// the store itself never leaves one behind).
    #[error(
        "checkpoint {path} is damaged ({detail}); delete that directory to fall back to the previous checkpoint"
    )]
    Corrupt {
        /// Its directory.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The function that writes a checkpoint's files failed.
    #[error("writing the checkpoint's files failed: {0}")]
    Writer(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A checkpoint's file could not be loaded into the model or the optimizer.
    #[error(
        "could not load {path}: {source}; resume with the model and optimizer the checkpoint was saved from"
    )]
    Load {
        /// The file.
        path: PathBuf,
        /// Why (a safetensors, state-dict or optimizer-state error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

crate::macros::debug_as_display!(CheckpointError);

crate::macros::io_error!(CheckpointError);
