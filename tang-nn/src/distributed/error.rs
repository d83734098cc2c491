//! The error type of data-parallel training.

use std::fmt;

/// What can go wrong in [`crate::distributed`].
///
/// ```
/// use tang_nn::distributed::DistError;
/// let err = DistError::Communication("the MPI thread has stopped".into());
/// assert!(err.to_string().contains("MPI"));
/// ```
#[non_exhaustive]
pub enum DistError {
    /// MPI could not be started (the launcher's environment is there, the library failed).
    Init(String),
    /// A collective operation could not be carried out.
    Communication(String),
    /// Reading or writing a tensor on the device failed.
    Runtime(tang_runtime::Error),
    /// Backward failed.
    Autograd(crate::autograd::Error),
    /// An option is out of its range.
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
}

crate::macros::debug_as_display!(DistError);

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Init(detail) => write!(
                f,
                "MPI could not be started: {detail}; check that the program was built against \
                 the MPI that `mpirun` belongs to (`mpirun --version`, `ldd` on the binary)"
            ),
            DistError::Communication(detail) => write!(
                f,
                "a collective operation failed: {detail}; the other ranks' output says which \
                 one stopped first"
            ),
            DistError::Runtime(e) => write!(f, "moving gradients through the host failed: {e}"),
            DistError::Autograd(e) => write!(f, "{e}"),
            DistError::InvalidOption { detail } => write!(f, "{detail}"),
        }
    }
}

impl std::error::Error for DistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DistError::Runtime(e) => Some(e),
            DistError::Autograd(e) => Some(e),
            _ => None,
        }
    }
}

crate::macros::wrap_errors!(DistError {
    tang_runtime::Error => Runtime,
    crate::autograd::Error => Autograd,
});
