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
mod sampler;
mod windows;

pub use device_windows::DeviceTokenBatcher;
pub use error::DataError;
pub use loader::{DataLoader, LoaderOptions, LoaderState};
pub use sampler::DistributedSampler;
pub use windows::{TokenBatcher, WindowSampler};

/// A data set addressed by index, as PyTorch's map-style `Dataset`: `len` items, each
/// produced on demand by `get`. The loader asks only for indices below `len`.
///
/// ```
/// use tang_nn::data::{DataError, DataLoader, Dataset, LoaderOptions};
/// // y = 2x, computed on demand (PyTorch: a map-style Dataset with __len__ / __getitem__).
/// struct Doubles(usize);
/// impl Dataset for Doubles {
///     type Item = (f32, f32);
///     fn len(&self) -> usize {
///         self.0
///     }
///     fn get(&self, index: usize) -> Result<(f32, f32), DataError> {
///         Ok((index as f32, 2.0 * index as f32))
///     }
/// }
/// let mut loader = DataLoader::new(Doubles(5), |b| Ok::<_, DataError>(b), LoaderOptions::default())?;
/// assert_eq!(loader.next_batch()?, Some(vec![(0.0, 0.0)]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Dataset {
    /// One sample (for example a feature row and its label).
    ///
    /// ```
    /// use tang_nn::data::Dataset;
    /// fn first<D: Dataset>(data: &D) -> Option<D::Item> {
    ///     data.get(0).ok()
    /// }
    /// assert_eq!(first(&vec![(1.0f32, 0u32)]), Some((1.0, 0))); // a (features, label) pair
    /// ```
    type Item;

    /// How many samples there are.
    ///
    /// ```
    /// use tang_nn::data::Dataset;
    /// assert_eq!(Dataset::len(&vec![1, 2, 3]), 3); // len(dataset)
    /// ```
    fn len(&self) -> usize;

    /// Whether there are no samples.
    ///
    /// ```
    /// use tang_nn::data::Dataset;
    /// assert!(Dataset::is_empty(&Vec::<u32>::new()));
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample at `index` (`index < len()`).
    ///
    /// ```
    /// use tang_nn::data::Dataset;
    /// let data = vec!["a", "b"];
    /// assert_eq!(Dataset::get(&data, 1)?, "b"); // dataset[1]
    /// assert!(Dataset::get(&data, 2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
