//! [`DataLoader`]: batches of a [`Dataset`] in a seeded order per epoch, collated by a
//! user function (into tensors, typically), resumable from a [`LoaderState`].

use serde::{Deserialize, Serialize};

use super::{DataError, Dataset, DistributedSampler};
use crate::rng::SplitMix64;

/// How a [`DataLoader`] batches, with PyTorch's names and defaults (`batch_size` 1, no
/// shuffling, keep the last short batch). `seed` replaces PyTorch's `generator`; under
/// `mpirun` each rank visits its own shard (`sampler`).
///
/// ```
/// use tang_nn::data::{DataError, DataLoader, LoaderOptions};
/// // DataLoader(range(10), batch_size=4, shuffle=True, drop_last=True, generator=seeded)
/// let opts = LoaderOptions { batch_size: 4, shuffle: true, drop_last: true, seed: 42, sampler: None };
/// let loader = DataLoader::new((0..10u32).collect::<Vec<_>>(), |b| Ok::<_, DataError>(b), opts)?;
/// assert_eq!(loader.len(), 2); // the short last batch is dropped
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoaderOptions {
    /// Samples per batch (at least 1).
    pub batch_size: usize,
    /// Whether each epoch visits the samples in a fresh random order.
    pub shuffle: bool,
    /// Whether an epoch's last batch is dropped when it is shorter than `batch_size`.
    pub drop_last: bool,
    /// Fixes every epoch's order: epoch `e` is shuffled by `SplitMix64::derive(seed, e)`.
    pub seed: u64,
    /// Which shard of each epoch this loader visits (PyTorch's
    /// `sampler=DistributedSampler(...)`). `None`, the default: this process's rank of
    /// the MPI job it runs in ([`DistributedSampler::from_env`]), so every rank of a
    /// data-parallel run sees its own samples, and the whole data set in one process.
    pub sampler: Option<DistributedSampler>,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            batch_size: 1,
            shuffle: false,
            drop_last: false,
            seed: 0,
            sampler: None,
        }
    }
}

/// Where a loader is: everything needed to continue its stream of batches exactly. Saved
/// as JSON in a checkpoint's trainer state.
///
/// ```
/// use tang_nn::data::{DataError, DataLoader, LoaderOptions};
/// let opts = LoaderOptions { batch_size: 2, shuffle: true, ..LoaderOptions::default() };
/// let data: Vec<u32> = (0..6).collect();
/// let mut a = DataLoader::new(data.clone(), |b| Ok::<_, DataError>(b), opts)?;
/// a.next_batch()?;
/// let saved = a.state(); // stored in a checkpoint
/// let mut b = DataLoader::new(data, |b| Ok::<_, DataError>(b), opts)?;
/// b.resume(saved)?;
/// assert_eq!(a.next_batch()?, b.next_batch()?); // the same stream from here on
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderState {
    /// The seed of the shuffles.
    pub seed: u64,
    /// The current epoch (0-based).
    pub epoch: u64,
    /// How many samples of the current epoch have been handed out.
    pub position: u64,
}

/// Batches of a data set, as PyTorch's `DataLoader`: each epoch visits every sample once
/// (in a seeded random order when `shuffle` is on), groups them into batches of
/// `batch_size` indices, and passes each batch's samples, in order, to `collate`.
///
/// [`DataLoader::next_batch`] returns `None` once at the end of each epoch and then
/// starts the next one, so `while let Some(batch) = loader.next_batch()? { .. }` is one
/// epoch; [`DataLoader::next_batch_cycled`] never ends (a loop counted in steps), and
/// in a [`Trainer`](crate::train::Trainer) step `ctx.next_batch(&mut loader)` also
/// checkpoints the position
/// ([`StepContext::next_batch`](crate::train::StepContext::next_batch)).
///
/// ```
/// use tang_nn::data::{DataError, DataLoader, LoaderOptions};
/// // (feature, label) samples; collate stacks a batch into two vectors.
/// let samples: Vec<([f32; 2], u32)> = vec![([0.0, 1.0], 0), ([1.0, 0.0], 1), ([1.0, 1.0], 1)];
/// let collate = |rows: Vec<([f32; 2], u32)>| {
///     let x: Vec<f32> = rows.iter().flat_map(|(f, _)| *f).collect();
///     let y: Vec<u32> = rows.iter().map(|(_, l)| *l).collect();
///     Ok::<_, DataError>((x, y)) // upload with Tensor::from_slice / from_u32 here
/// };
/// let opts = LoaderOptions { batch_size: 2, shuffle: true, seed: 0, ..LoaderOptions::default() };
/// let mut loader = DataLoader::new(samples, collate, opts)?;
/// let mut rows = 0;
/// while let Some((_x, y)) = loader.next_batch()? { // for x, y in loader: (one epoch)
///     rows += y.len();
/// }
/// assert_eq!(rows, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DataLoader<D, C> {
    dataset: D,
    collate: C,
    options: LoaderOptions,
    epoch: u64,
    position: usize,
    /// The current epoch's visiting order (a permutation of `0..len`).
    order: Vec<usize>,
}

impl<D, C, B> DataLoader<D, C>
where
    D: Dataset,
    C: FnMut(Vec<D::Item>) -> Result<B, DataError>,
{
    /// A loader at the start of epoch 0.
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let opts = LoaderOptions { batch_size: 2, ..LoaderOptions::default() };
    /// let loader = DataLoader::new(vec![1u32, 2, 3], collate, opts)?;
    /// assert_eq!(loader.len(), 2);
    /// assert!(DataLoader::new(vec![1u32], |b: Vec<u32>| Ok::<_, DataError>(b), LoaderOptions { batch_size: 0, ..opts }).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when `batch_size` is 0, or when the data set is too
    /// large for its visiting order (one index per sample) to fit in memory;
    /// [`DataError::Distributed`] when `sampler` is `None` and MPI fails to start.
    pub fn new(dataset: D, collate: C, mut options: LoaderOptions) -> Result<Self, DataError> {
        if options.batch_size == 0 {
            return Err(DataError::InvalidOption {
                what: "batch_size",
                detail: "batch_size is 0; pass at least 1".into(),
            });
        }
        if options.sampler.is_none() {
            options.sampler = Some(DistributedSampler::from_env()?);
        }
        let len = dataset.len();
        let mut order = Vec::new();
        order
            .try_reserve_exact(len)
            .map_err(|_| DataError::InvalidOption {
                what: "dataset",
                detail: format!(
                    "{len} samples need a visiting order larger than memory; use a smaller data set"
                ),
            })?;
        let mut loader = DataLoader {
            dataset,
            collate,
            options,
            epoch: 0,
            position: 0,
            order,
        };
        loader.set_epoch(0);
        Ok(loader)
    }

    /// The options the loader was made with (the seed as last resumed).
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let loader = DataLoader::new(vec![1u32, 2, 3], collate, LoaderOptions::default())?;
    /// assert_eq!(loader.options().batch_size, 1); // PyTorch's default
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn options(&self) -> LoaderOptions {
        self.options
    }

    /// The data set.
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let loader = DataLoader::new(vec![1u32, 2, 3], collate, LoaderOptions::default())?;
    /// assert_eq!(loader.dataset(), &[1, 2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// Batches per epoch (PyTorch's `len(loader)`): of this rank's shard under `mpirun`.
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let opts = LoaderOptions { batch_size: 2, ..LoaderOptions::default() };
    /// assert_eq!(DataLoader::new(vec![1u32, 2, 3], collate, opts)?.len(), 2); // len(loader)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        let (n, b) = (self.shard_len(), self.options.batch_size);
        if self.options.drop_last {
            n / b
        } else {
            n.div_ceil(b)
        }
    }

    /// Whether an epoch has no batches.
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// assert!(DataLoader::new(Vec::<u32>::new(), collate, LoaderOptions::default())?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the loader is; [`DataLoader::resume`] with it continues from here.
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let mut loader = DataLoader::new(vec![1u32, 2, 3], collate, LoaderOptions::default())?;
    /// loader.next_batch()?;
    /// assert_eq!((loader.state().epoch, loader.state().position), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> LoaderState {
        LoaderState {
            seed: self.options.seed,
            epoch: self.epoch,
            position: self.position as u64,
        }
    }

    /// Continues from a saved [`LoaderState`]: the next batch is the one that followed it.
    ///
    /// ```
    /// use tang_nn::data::{DataError, DataLoader, LoaderOptions, LoaderState};
    /// let mut loader = DataLoader::new(vec![1u32, 2, 3], |b| Ok::<_, DataError>(b), LoaderOptions::default())?;
    /// loader.resume(LoaderState { seed: 0, epoch: 0, position: 2 })?;
    /// assert_eq!(loader.next_batch()?, Some(vec![3]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::Resume`] when the position lies beyond this data set's length.
    pub fn resume(&mut self, state: LoaderState) -> Result<(), DataError> {
        let len = self.shard_len();
        let position = usize::try_from(state.position)
            .ok()
            .filter(|&p| p <= len)
            .ok_or_else(|| DataError::Resume {
                detail: format!(
                    "position {} is beyond the {len} samples of an epoch",
                    state.position
                ),
            })?;
        self.options.seed = state.seed;
        self.set_epoch(state.epoch);
        self.position = position;
        Ok(())
    }

    /// The indices of the next batch, or `None` at the end of the epoch (the loader then
    /// moves to the next epoch).
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let opts = LoaderOptions { batch_size: 2, ..LoaderOptions::default() };
    /// let mut loader = DataLoader::new(vec![10u32, 20, 30], collate, opts)?;
    /// assert_eq!(loader.next_indices(), Some(vec![0, 1])); // a sampler's indices, no collate
    /// assert_eq!(loader.next_indices(), Some(vec![2]));
    /// assert_eq!(loader.next_indices(), None); // end of the epoch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_indices(&mut self) -> Option<Vec<usize>> {
        let remaining = self.order.len() - self.position;
        let take = remaining.min(self.options.batch_size);
        if take == 0 || (self.options.drop_last && take < self.options.batch_size) {
            self.set_epoch(self.epoch.wrapping_add(1));
            return None;
        }
        let batch = self.order[self.position..self.position + take].to_vec();
        self.position += take;
        Some(batch)
    }

    /// The next batch: its samples, in order, through `collate`; `None` at the end of the
    /// epoch (the loader then moves to the next epoch).
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let opts = LoaderOptions { batch_size: 2, ..LoaderOptions::default() };
    /// let mut loader = DataLoader::new(vec![10u32, 20, 30], collate, opts)?;
    /// assert_eq!(loader.next_batch()?, Some(vec![10, 20]));
    /// assert_eq!(loader.next_batch()?, Some(vec![30]));
    /// assert_eq!(loader.next_batch()?, None); // the next call starts epoch 1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// What the data set's `get` or the collate function returns. The loader has then
    /// already moved past the batch.
    pub fn next_batch(&mut self) -> Result<Option<B>, DataError> {
        let Some(indices) = self.next_indices() else {
            return Ok(None);
        };
        let samples = indices
            .into_iter()
            .map(|i| self.dataset.get(i))
            .collect::<Result<Vec<_>, _>>()?;
        (self.collate)(samples).map(Some)
    }

    /// The next batch, going on into the next epoch (in its own shuffled order) when this
    /// one ends, so it never runs out: a training loop counted in steps rather than epochs
    /// (PyTorch: `next(it)`, restarting `it = iter(loader)` on `StopIteration`).
    ///
    /// ```
    /// # use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let collate = |rows: Vec<u32>| Ok::<_, DataError>(rows);
    /// let opts = LoaderOptions { batch_size: 2, ..LoaderOptions::default() };
    /// let mut loader = DataLoader::new(vec![10u32, 20, 30], collate, opts)?;
    /// let batches: Vec<Vec<u32>> = (0..3).map(|_| loader.next_batch_cycled()).collect::<Result<_, _>>()?;
    /// assert_eq!(batches, [vec![10, 20], vec![30], vec![10, 20]]); // epoch 1 begins
    /// assert_eq!(loader.state().epoch, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::NoBatches`] when an epoch has no batch (an empty data set, or fewer
    /// samples than `batch_size` with `drop_last`); as [`DataLoader::next_batch`].
    pub fn next_batch_cycled(&mut self) -> Result<B, DataError> {
        let no_batches = DataError::NoBatches {
            samples: self.shard_len(),
            batch_size: self.options.batch_size,
            drop_last: self.options.drop_last,
        };
        if self.is_empty() {
            return Err(no_batches);
        }
        match self.next_batch()? {
            Some(batch) => Ok(batch),
            // The end of an epoch: `next_batch` has moved to the next one, which has a
            // batch because the loader is not empty.
            None => self.next_batch()?.ok_or(no_batches),
        }
    }

    /// Moves to the start of `epoch` and computes its visiting order in place: `0..len`,
    /// shuffled by the epoch's own stream when `shuffle` is on, so any epoch's order is
    /// computed without replaying earlier ones.
    fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.position = 0;
        // The data set's length is fixed, so this reuses the memory reserved in `new`.
        self.order.clear();
        self.order.extend(0..self.dataset.len());
        if self.options.shuffle {
            SplitMix64::derive(self.options.seed, epoch).shuffle(&mut self.order);
        }
        // Every rank shuffled the same way; each keeps its own shard of the order.
        if let Some(sampler) = self.options.sampler {
            sampler.shard(&mut self.order);
        }
    }

    /// Samples per epoch on this rank: the data set's, or its shard's.
    fn shard_len(&self) -> usize {
        let len = self.dataset.len();
        self.options.sampler.map_or(len, |s| s.num_samples(len))
    }
}
