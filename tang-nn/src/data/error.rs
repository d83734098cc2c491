//! The data loaders' error type.

/// What can go wrong while loading data.
///
/// ```
/// use tang_nn::data::{DataError, TokenBatcher};
/// let err = TokenBatcher::new(vec![1, 2, 3], 1, 8, 0).err().ok_or("3 tokens hold no 8-token window")?;
/// assert!(matches!(err, DataError::CorpusTooShort { .. }));
/// println!("{err}"); // says how long the corpus must be
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// An option or argument is out of its range.
    #[error("invalid {what}: {detail}")]
    InvalidOption {
        /// The option.
        what: &'static str,
        /// Its value and what is accepted.
        detail: String,
    },
    /// A saved loader position does not fit this data set.
    #[error(
        "cannot resume the data loader: {detail}; resume with the data set and options the position was saved with"
    )]
    Resume {
        /// What does not fit and why.
        detail: String,
    },
    /// A data set was asked for an index it does not have (a bug in a `Dataset`
    /// implementation whose `len` and `get` disagree).
    #[error(
        "data set index {index} is out of range for length {len}; the data set's `len` and `get` disagree"
    )]
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The data set's length.
        len: usize,
    },
    /// A loader whose epochs have no batch was asked for one that never ends
    /// ([`super::DataLoader::next_batch_cycled`]).
    #[error(
        "the data loader has no batch to give: {samples} samples, batch_size {batch_size}, drop_last {drop_last}; \
         use a non-empty data set, and with drop_last a batch_size of at most the number of samples"
    )]
    NoBatches {
        /// Samples in the data set.
        samples: usize,
        /// The loader's batch size.
        batch_size: usize,
        /// Whether the loader drops a short last batch.
        drop_last: bool,
    },
    /// A token corpus has no complete window (input plus next-token target).
    #[error(
        "a corpus of {len} tokens has no window of {block_size} tokens plus a next-token target; \
         use a longer corpus or a block_size below {len}"
    )]
    CorpusTooShort {
        /// Tokens in the corpus.
        len: usize,
        /// The window length asked for.
        block_size: usize,
    },
    /// Reading a sample or collating a batch failed in user code.
    #[error("reading or collating a batch failed: {0}")]
    Source(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Uploading a batch to the GPU failed.
    // `From` so that a collate function can upload tensors with `?`.
    #[error("uploading a batch failed: {0}")]
    Device(#[from] tang_runtime::Error),
    /// This process's rank could not be learnt from MPI.
    #[error("choosing this rank's shard failed: {0}")]
    Distributed(#[from] crate::distributed::DistError),
}

crate::macros::debug_as_display!(DataError);

/// A collate function that builds [`crate::Tensor`]s uses `?` on their errors: an upload
/// failure is [`DataError::Device`], anything else [`DataError::Source`].
impl From<crate::autograd::Error> for DataError {
    fn from(e: crate::autograd::Error) -> Self {
        match e {
            crate::autograd::Error::Runtime(e) => DataError::Device(e),
            other => DataError::Source(Box::new(other)),
        }
    }
}
