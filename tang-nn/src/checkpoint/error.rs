//! The checkpoint store's error type.

use std::fmt;
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
#[non_exhaustive]
pub enum CheckpointError {
    /// A file system operation failed.
    Io {
        /// What was being done.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A file name for a checkpoint is not a plain file name, or is reserved.
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        detail: &'static str,
    },
    /// A retention option or a trainer-state value is out of range.
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
    /// The path given as a checkpoint does not exist, or is not a directory.
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// A checkpoint of this step already exists.
    Exists {
        /// Its directory.
        path: PathBuf,
    },
    /// A checkpoint directory is not a complete checkpoint (edited or damaged by hand:
    /// the store itself never leaves one behind).
    Corrupt {
        /// Its directory.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The function that writes a checkpoint's files failed.
    Writer(Box<dyn std::error::Error + Send + Sync>),
    /// A checkpoint's file could not be loaded into the model or the optimizer.
    Load {
        /// The file.
        path: PathBuf,
        /// Why (a safetensors, state-dict or optimizer-state error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

crate::macros::debug_as_display!(CheckpointError);

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::Io {
                action,
                path,
                source,
            } => write!(
                f,
                "could not {action} {}: {source}; check that the directory exists, is writable and has space",
                path.display()
            ),
            CheckpointError::InvalidName { name, detail } => {
                write!(f, "invalid checkpoint file name {name:?}: {detail}")
            }
            CheckpointError::InvalidOption { detail } => {
                write!(f, "invalid checkpoint option: {detail}")
            }
            CheckpointError::NotFound { path } => write!(
                f,
                "checkpoint {} does not exist (or is not a directory); pass a checkpoint-<step> directory, as CheckpointDir::latest and CheckpointDir::list return them",
                path.display()
            ),
            CheckpointError::Exists { path } => write!(
                f,
                "checkpoint {} already exists; save under a later step, or delete it first",
                path.display()
            ),
            CheckpointError::Corrupt { path, detail } => write!(
                f,
                "checkpoint {} is damaged ({detail}); delete that directory to fall back to the previous checkpoint",
                path.display()
            ),
            CheckpointError::Writer(e) => write!(f, "writing the checkpoint's files failed: {e}"),
            CheckpointError::Load { path, source } => write!(
                f,
                "could not load {}: {source}; resume with the model and optimizer the checkpoint was saved from",
                path.display()
            ),
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Io { source, .. } => Some(source),
            CheckpointError::Writer(e) => Some(e.as_ref()),
            CheckpointError::Load { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Attaches what was being done, and to which path, to an I/O error.
pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> CheckpointError {
    let path = path.into();
    move |source| CheckpointError::Io {
        action,
        path,
        source,
    }
}
