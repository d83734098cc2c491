//! Data loading: a seeded, resumable [`DataLoader`] over an index-based [`Dataset`]
//! (PyTorch's `torch.utils.data`), and nanoGPT's `get_batch` (random windows of a token
//! corpus as `[batch, block]` u32 tensors): [`DeviceTokenBatcher`] with the corpus on the
//! GPU, [`TokenBatcher`] its host-side reference.
//!
//! Both are deterministic functions of their seed and a position, so a checkpoint that
//! stores a [`LoaderState`] (or the step, for [`TokenBatcher`]) resumes the exact same
//! stream of batches.

mod device_windows;
mod error;
mod loader;
mod windows;

pub use device_windows::DeviceTokenBatcher;
pub use error::DataError;
pub use loader::{DataLoader, LoaderOptions, LoaderState};
pub use windows::{TokenBatcher, WindowSampler};

/// A data set addressed by index, as PyTorch's map-style `Dataset`: `len` items, each
/// produced on demand by `get`. The loader asks only for indices below `len`.
pub trait Dataset {
    /// One sample (for example a feature row and its label).
    type Item;

    /// How many samples there are.
    fn len(&self) -> usize;

    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample at `index` (`index < len()`).
    ///
    /// # Errors
    /// Whatever reading the sample can fail with, wrapped in [`DataError::Source`].
    fn get(&self, index: usize) -> Result<Self::Item, DataError>;
}

/// Samples held in memory: `get` clones one.
impl<T: Clone> Dataset for [T] {
    type Item = T;

    fn len(&self) -> usize {
        <[T]>::len(self)
    }

    fn get(&self, index: usize) -> Result<T, DataError> {
        <[T]>::get(self, index)
            .cloned()
            .ok_or(DataError::IndexOutOfRange {
                index,
                len: <[T]>::len(self),
            })
    }
}

/// Samples held in memory: `get` clones one.
impl<T: Clone> Dataset for Vec<T> {
    type Item = T;

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn get(&self, index: usize) -> Result<T, DataError> {
        Dataset::get(self.as_slice(), index)
    }
}

/// A borrowed data set, so a loader can share one that the caller keeps.
impl<D: Dataset + ?Sized> Dataset for &D {
    type Item = D::Item;

    fn len(&self) -> usize {
        (**self).len()
    }

    fn get(&self, index: usize) -> Result<D::Item, DataError> {
        (**self).get(index)
    }
}
