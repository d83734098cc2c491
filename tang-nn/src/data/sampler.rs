//! [`DistributedSampler`]: which samples of each epoch one rank of a data-parallel job
//! visits, as PyTorch's `torch.utils.data.distributed.DistributedSampler`.

use super::DataError;

/// The shard of every epoch one rank visits: the epoch's order (shuffled from the
/// loader's seed and the epoch, the same on every rank) is padded by repeating its
/// first indices until it divides evenly by `num_replicas`, and rank `r` takes positions
/// `r, r + num_replicas, ...` (PyTorch's `DistributedSampler` with `drop_last=False`):
/// disjoint shards of equal length that together cover the data set, the few padded
/// samples twice.
///
/// A [`DataLoader`](super::DataLoader) shards by itself under `mpirun` (its
/// [`LoaderOptions::sampler`](super::LoaderOptions::sampler) defaults to this process's
/// rank); set one to choose the shard, or [`DistributedSampler::whole`] for every sample
/// on every rank.
///
/// ```
/// use tang_nn::data::{DataError, DataLoader, DistributedSampler, LoaderOptions};
/// let shard = |rank| -> Result<Vec<u32>, DataError> {
///     let sampler = Some(DistributedSampler::new(2, rank)?);
///     let opts = LoaderOptions { batch_size: 10, sampler, ..LoaderOptions::default() };
///     let mut loader = DataLoader::new((0..5u32).collect::<Vec<_>>(), |b| Ok::<_, DataError>(b), opts)?;
///     Ok(loader.next_batch()?.unwrap_or_default())
/// };
/// assert_eq!(shard(0)?, [0, 2, 4]);
/// assert_eq!(shard(1)?, [1, 3, 0]); // padded with the first index: 3 samples each
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedSampler {
    num_replicas: usize,
    rank: usize,
}

impl DistributedSampler {
    /// Rank `rank`'s shard of `num_replicas`.
    ///
    /// ```
    /// use tang_nn::data::DistributedSampler;
    /// assert!(DistributedSampler::new(4, 3).is_ok());
    /// assert!(DistributedSampler::new(4, 4).is_err()); // ranks are 0..num_replicas
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when `num_replicas` is 0 or `rank` is not below it.
    pub fn new(num_replicas: usize, rank: usize) -> Result<Self, DataError> {
        if rank >= num_replicas {
            return Err(DataError::InvalidOption {
                what: "rank",
                detail: format!(
                    "rank {rank} of {num_replicas} replicas; pass a rank below num_replicas (at least 1)"
                ),
            });
        }
        Ok(DistributedSampler { num_replicas, rank })
    }

    /// Every sample on every rank (one replica).
    ///
    /// ```
    /// assert_eq!(tang_nn::data::DistributedSampler::whole().num_replicas(), 1);
    /// ```
    pub fn whole() -> Self {
        DistributedSampler {
            num_replicas: 1,
            rank: 0,
        }
    }

    /// This process's shard: its rank of the MPI job it was launched in (see
    /// [`crate::distributed::rank_and_world_size`]), the whole data set outside one.
    ///
    /// ```
    /// let sampler = tang_nn::data::DistributedSampler::from_env()?;
    /// assert!(sampler.rank() < sampler.num_replicas());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::Distributed`] when MPI fails to start under a launcher.
    pub fn from_env() -> Result<Self, DataError> {
        let (rank, world) = crate::distributed::rank_and_world_size()?;
        Self::new(world, rank)
    }

    /// How many shards there are.
    ///
    /// ```
    /// assert_eq!(tang_nn::data::DistributedSampler::new(3, 0)?.num_replicas(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_replicas(&self) -> usize {
        self.num_replicas
    }

    /// Which shard this is.
    ///
    /// ```
    /// assert_eq!(tang_nn::data::DistributedSampler::new(3, 2)?.rank(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Samples per shard of an epoch of `len` samples (PyTorch's `num_samples`).
    ///
    /// ```
    /// let sampler = tang_nn::data::DistributedSampler::new(4, 0)?;
    /// assert_eq!(sampler.num_samples(10), 3); // 10 padded to 12
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_samples(&self, len: usize) -> usize {
        len.div_ceil(self.num_replicas)
    }

    /// Keeps this rank's shard of an epoch's `order`, in place.
    pub(super) fn shard(&self, order: &mut Vec<usize>) {
        if self.num_replicas == 1 || order.is_empty() {
            return;
        }
        let len = order.len();
        let mine: Vec<usize> = (0..self.num_samples(len))
            .map(|k| order[(self.rank + k * self.num_replicas) % len])
            .collect();
        order.clear();
        order.extend(mine);
    }
}
