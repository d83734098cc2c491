//! The error type of the training-loop pieces.

use std::io;
use std::path::PathBuf;

/// What can go wrong while logging, plotting or watching for Ctrl-C.
///
/// ```
/// use tang_nn::train::{TrainError, TrainerOptions};
/// let err = TrainerOptions { log_every: 0, ..TrainerOptions::new(10) }.validate().err().ok_or("log_every 0 is refused")?;
/// assert!(matches!(err, TrainError::InvalidOption { .. }));
/// println!("{err}"); // "log_every is 0; pass at least 1"
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// A file could not be read or written.
    #[error("could not {action} {path}: {source}; check that the directory exists and is writable")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line of a metrics file is not a metrics record.
    #[error(
        "line {line} of {path} is not a metrics record ({detail}); remove that line or point to the right file"
    )]
    BadMetricsLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The parser's message.
        detail: String,
    },
    /// An option is out of its range.
    #[error("invalid option: {detail}")]
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
    /// There is nothing to plot yet.
    #[error("no finite loss or val_loss values to plot yet; log some steps first")]
    NothingToPlot,
    /// Drawing or encoding the plot failed.
    #[error("could not draw the loss curve: {0}")]
    Plot(String),
    /// The Ctrl-C handler could not be installed.
    #[error(
        "could not install the Ctrl-C handler ({0}); another signal handler for SIGINT may be installed"
    )]
    Interrupt(String),
    /// The user's forward or evaluation function failed at a step.
    #[error("the step function failed at step {step}: {source}")]
    Step {
        /// The step (0-based).
        step: u64,
        /// Its error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Backward, clipping or the optimizer step failed.
    #[error("the optimizer step failed: {0}")]
    Optim(#[from] crate::optim::OptimError),
    /// Loss scaling in a mixed-precision run failed (boxed: it may hold an optimizer
    /// error, and every other variant stays small).
    #[error("loss scaling failed: {0}")]
    Amp(#[source] Box<crate::amp::AmpError>),
    /// Computing gradients or reading a value back failed.
    #[error("backward or a read of the loss failed: {0}")]
    Autograd(#[from] crate::autograd::Error),
    /// Saving or resuming a checkpoint failed.
    #[error("{0}")]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// The optimizer does not hold the model's parameters.
    #[error(
        "the optimizer does not hold the model's parameters ({detail}); build it from \
         `model.named_parameters()` (`AdamW::new(model.named_parameters(), ..)`)"
    )]
    ParameterMismatch {
        /// Which parameter and what differs.
        detail: String,
    },
    /// Averaging over the ranks of a data-parallel job failed.
    #[error("{0}")]
    Distributed(#[from] crate::distributed::DistError),
}

crate::macros::debug_as_display!(TrainError);

crate::macros::io_error!(TrainError);

impl From<crate::amp::AmpError> for TrainError {
    fn from(e: crate::amp::AmpError) -> Self {
        TrainError::Amp(Box::new(e))
    }
}

impl From<tang_runtime::Error> for TrainError {
    fn from(e: tang_runtime::Error) -> Self {
        TrainError::Autograd(e.into())
    }
}
