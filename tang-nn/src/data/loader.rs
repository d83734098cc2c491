//! [`DataLoader`]: batches of a [`Dataset`] in a seeded order per epoch, collated by a
//! user function (into tensors, typically), resumable from a [`LoaderState`].

use serde::{Deserialize, Serialize};

use super::{DataError, Dataset};
use crate::rng::SplitMix64;

/// How a [`DataLoader`] batches, with PyTorch's names and defaults (`batch_size` 1, no
/// shuffling, keep the last short batch). `seed` replaces PyTorch's `generator`.
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
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            batch_size: 1,
            shuffle: false,
            drop_last: false,
            seed: 0,
        }
    }
}

/// Where a loader is: everything needed to continue its stream of batches exactly. Saved
/// as JSON in a checkpoint's trainer state.
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
/// epoch.
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
    /// # Errors
    /// [`DataError::InvalidOption`] when `batch_size` is 0, or when the data set is too
    /// large for its visiting order (one index per sample) to fit in memory.
    pub fn new(dataset: D, collate: C, options: LoaderOptions) -> Result<Self, DataError> {
        if options.batch_size == 0 {
            return Err(DataError::InvalidOption {
                what: "batch_size",
                detail: "batch_size is 0; pass at least 1".into(),
            });
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
    pub fn options(&self) -> LoaderOptions {
        self.options
    }

    /// The data set.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// Batches per epoch (PyTorch's `len(loader)`).
    pub fn len(&self) -> usize {
        let (n, b) = (self.dataset.len(), self.options.batch_size);
        if self.options.drop_last {
            n / b
        } else {
            n.div_ceil(b)
        }
    }

    /// Whether an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the loader is; [`DataLoader::resume`] with it continues from here.
    pub fn state(&self) -> LoaderState {
        LoaderState {
            seed: self.options.seed,
            epoch: self.epoch,
            position: self.position as u64,
        }
    }

    /// Continues from a saved [`LoaderState`]: the next batch is the one that followed it.
    ///
    /// # Errors
    /// [`DataError::Resume`] when the position lies beyond this data set's length.
    pub fn resume(&mut self, state: LoaderState) -> Result<(), DataError> {
        let len = self.dataset.len();
        let position = usize::try_from(state.position)
            .ok()
            .filter(|&p| p <= len)
            .ok_or_else(|| DataError::Resume {
                detail: format!(
                    "position {} is beyond the data set's {len} samples",
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
    }
}
