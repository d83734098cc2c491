//! The error type of the training-loop pieces.

use std::fmt;
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
#[non_exhaustive]
pub enum TrainError {
    /// A file could not be read or written.
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line of a metrics file is not a metrics record.
    BadMetricsLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The parser's message.
        detail: String,
    },
    /// An option is out of its range.
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
    /// There is nothing to plot yet.
    NothingToPlot,
    /// Drawing or encoding the plot failed.
    Plot(String),
    /// The Ctrl-C handler could not be installed.
    Interrupt(String),
    /// The user's forward or evaluation function failed at a step.
    Step {
        /// The step (0-based).
        step: u64,
        /// Its error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Backward, clipping or the optimizer step failed.
    Optim(crate::optim::OptimError),
    /// Loss scaling in a mixed-precision run failed (boxed: it may hold an optimizer
    /// error, and every other variant stays small).
    Amp(Box<crate::amp::AmpError>),
    /// Computing gradients or reading a value back failed.
    Autograd(crate::autograd::Error),
    /// Saving or resuming a checkpoint failed.
    Checkpoint(crate::checkpoint::CheckpointError),
    /// The optimizer does not hold the model's parameters.
    ParameterMismatch {
        /// Which parameter and what differs.
        detail: String,
    },
    /// Averaging over the ranks of a data-parallel job failed.
    Distributed(crate::distributed::DistError),
}

crate::macros::debug_as_display!(TrainError);

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::Io {
                action,
                path,
                source,
            } => write!(
                f,
                "could not {action} {}: {source}; check that the directory exists and is writable",
                path.display()
            ),
            TrainError::BadMetricsLine { path, line, detail } => write!(
                f,
                "line {line} of {} is not a metrics record ({detail}); remove that line or point to the right file",
                path.display()
            ),
            TrainError::InvalidOption { detail } => write!(f, "invalid option: {detail}"),
            TrainError::NothingToPlot => {
                write!(
                    f,
                    "no finite loss or val_loss values to plot yet; log some steps first"
                )
            }
            TrainError::Plot(detail) => write!(f, "could not draw the loss curve: {detail}"),
            TrainError::Step { step, source } => {
                write!(f, "the step function failed at step {step}: {source}")
            }
            TrainError::Optim(e) => write!(f, "the optimizer step failed: {e}"),
            TrainError::Amp(e) => write!(f, "loss scaling failed: {e}"),
            TrainError::Autograd(e) => write!(f, "backward or a read of the loss failed: {e}"),
            TrainError::Checkpoint(e) => write!(f, "{e}"),
            TrainError::Distributed(e) => write!(f, "{e}"),
            TrainError::ParameterMismatch { detail } => write!(
                f,
                "the optimizer does not hold the model's parameters ({detail}); build it from \
                 `model.named_parameters()` (`AdamW::new(model.named_parameters(), ..)`)"
            ),
            TrainError::Interrupt(detail) => write!(
                f,
                "could not install the Ctrl-C handler ({detail}); another signal handler for SIGINT may be installed"
            ),
        }
    }
}

impl std::error::Error for TrainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrainError::Io { source, .. } => Some(source),
            TrainError::Step { source, .. } => Some(source.as_ref()),
            TrainError::Optim(e) => Some(e),
            TrainError::Amp(e) => Some(e.as_ref()),
            TrainError::Autograd(e) => Some(e),
            TrainError::Checkpoint(e) => Some(e),
            TrainError::Distributed(e) => Some(e),
            _ => None,
        }
    }
}

/// Attaches what was being done, and to which path, to an I/O error.
pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> TrainError {
    let path = path.into();
    move |source| TrainError::Io {
        action,
        path,
        source,
    }
}

crate::macros::wrap_errors!(TrainError {
    crate::optim::OptimError => Optim,
    crate::autograd::Error => Autograd,
    crate::distributed::DistError => Distributed,
    crate::checkpoint::CheckpointError => Checkpoint,
});

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
