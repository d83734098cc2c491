//! The error type of data-parallel training.

/// What can go wrong in [`crate::distributed`].
///
/// ```
/// use tang_nn::distributed::DistError;
/// let err = DistError::Communication("the MPI thread has stopped".into());
/// assert!(err.to_string().contains("MPI"));
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum DistError {
    /// MPI could not be started (the launcher's environment is there, the library failed).
    #[error(
        "MPI could not be started: {0}; check that the program was built against \
         the MPI that `mpirun` belongs to (`mpirun --version`, `ldd` on the binary)"
    )]
    Init(String),
    /// A collective operation could not be carried out.
    #[error(
        "a collective operation failed: {0}; the other ranks' output says which \
         one stopped first"
    )]
    Communication(String),
    /// Reading or writing a tensor on the device failed.
    #[error("moving gradients through the host failed: {0}")]
    Runtime(#[from] tang_runtime::Error),
    /// Backward failed.
    #[error("{0}")]
    Autograd(#[from] crate::autograd::Error),
    /// An option is out of its range.
    #[error("{detail}")]
    InvalidOption {
        /// What is wrong and what is accepted.
        detail: String,
    },
}

crate::macros::debug_as_display!(DistError);
