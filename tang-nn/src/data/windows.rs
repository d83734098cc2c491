//! nanoGPT's `get_batch`: random windows of a token corpus as language-model batches.
//!
//! [`WindowSampler`] draws a step's window offsets, uniformly in `0..len - block_size`
//! as `torch.randint(len(data) - block_size, (batch_size,))` does, from a stream that
//! depends only on `(seed, step)`: resuming at step `n` needs only `n`. [`TokenBatcher`]
//! cuts the windows out on the host (input `corpus[i..i + block]`, target shifted by one):
//! the reference that [`super::DeviceTokenBatcher`], which keeps the corpus on the GPU and
//! gathers the same windows there, is tested against.

use tang_runtime::Device;

use super::{DataError, DeviceTokenBatcher};
use crate::rng::SplitMix64;

/// Seeded window offsets for a corpus of `corpus_len` tokens: a pure function of the
/// step.
///
/// ```
/// use tang_nn::data::WindowSampler;
/// // nanoGPT's get_batch: 4 windows of 8 tokens from a 100-token corpus.
/// let sampler = WindowSampler::new(1337, 4, 8, 100)?;
/// let offsets = sampler.offsets(0)?; // torch.randint(len(data) - block_size, (batch_size,))
/// assert!(offsets.len() == 4 && offsets.iter().all(|&o| o < 92));
/// assert_eq!(sampler.offsets(0)?, offsets); // a function of (seed, step)
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSampler {
    seed: u64,
    batch_size: usize,
    block_size: usize,
    corpus_len: usize,
    /// The rank whose own stream this draws from in a data-parallel job; `None` in one
    /// process.
    rank: Option<usize>,
}

impl WindowSampler {
    /// A sampler of `batch_size` windows of `block_size` tokens (plus the one-token shift
    /// of the target) in a corpus of `corpus_len` tokens.
    ///
    /// ```
    /// use tang_nn::data::WindowSampler;
    /// assert!(WindowSampler::new(0, 4, 8, 100).is_ok());
    /// assert!(WindowSampler::new(0, 4, 8, 8).is_err()); // no room for a target token
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when `batch_size` or `block_size` is 0 or a batch's
    /// token count overflows; [`DataError::CorpusTooShort`] when the corpus has no
    /// window (`corpus_len <= block_size`).
    pub fn new(
        seed: u64,
        batch_size: usize,
        block_size: usize,
        corpus_len: usize,
    ) -> Result<Self, DataError> {
        for (what, value) in [("batch_size", batch_size), ("block_size", block_size)] {
            if value == 0 {
                return Err(DataError::InvalidOption {
                    what,
                    detail: format!("{what} is 0; pass at least 1"),
                });
            }
        }
        if batch_size.checked_mul(block_size).is_none() {
            return Err(DataError::InvalidOption {
                what: "batch_size",
                detail: format!(
                    "{batch_size} windows of {block_size} tokens overflow the address space"
                ),
            });
        }
        if corpus_len <= block_size {
            return Err(DataError::CorpusTooShort {
                len: corpus_len,
                block_size,
            });
        }
        Ok(WindowSampler {
            seed,
            batch_size,
            block_size,
            corpus_len,
            rank: None,
        })
    }

    /// The windows rank `rank` of `world_size` draws: a stream of its own, derived from
    /// the seed and the rank, so the ranks of a data-parallel job train on different
    /// windows (and together on `world_size` times the batch); the sampler's own stream
    /// when `world_size` is 1.
    ///
    /// ```
    /// use tang_nn::data::WindowSampler;
    /// let sampler = WindowSampler::new(1337, 4, 8, 1000)?;
    /// let (r0, r1) = (sampler.for_rank(0, 2)?, sampler.for_rank(1, 2)?);
    /// assert_ne!(r0.offsets(0)?, r1.offsets(0)?);
    /// assert_eq!(sampler.for_rank(0, 1)?.offsets(0)?, sampler.offsets(0)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] unless `rank < world_size`.
    pub fn for_rank(self, rank: usize, world_size: usize) -> Result<Self, DataError> {
        if rank >= world_size {
            return Err(DataError::InvalidOption {
                what: "rank",
                detail: format!(
                    "rank {rank} of {world_size}; pass a rank below the world size (at least 1)"
                ),
            });
        }
        Ok(WindowSampler {
            rank: (world_size > 1).then_some(rank),
            ..self
        })
    }

    /// Windows per batch.
    ///
    /// ```
    /// assert_eq!(tang_nn::data::WindowSampler::new(0, 4, 8, 100)?.batch_size(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Tokens per window.
    ///
    /// ```
    /// assert_eq!(tang_nn::data::WindowSampler::new(0, 4, 8, 100)?.block_size(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// How many distinct offsets a window can start at (`corpus_len - block_size`).
    ///
    /// ```
    /// assert_eq!(tang_nn::data::WindowSampler::new(0, 4, 8, 100)?.offset_count(), 92);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offset_count(&self) -> usize {
        self.corpus_len - self.block_size
    }

    /// The start of each window of step `step`, each uniform in `0..offset_count()`.
    ///
    /// ```
    /// let sampler = tang_nn::data::WindowSampler::new(0, 2, 4, 10)?;
    /// let starts = sampler.offsets(3)?; // step 3's windows start here
    /// assert!(starts.iter().all(|&o| o < sampler.offset_count()));
    /// assert_eq!(sampler.offsets(3)?, starts); // resuming at step 3 gives the same batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when `batch_size` offsets do not fit in memory.
    pub fn offsets(&self, step: u64) -> Result<Vec<usize>, DataError> {
        let mut offsets = Vec::new();
        reserve(&mut offsets, self.batch_size, "window offsets")?;
        let seed = match self.rank {
            Some(rank) => SplitMix64::derive(self.seed, rank as u64).next_u64(),
            None => self.seed,
        };
        let mut rng = SplitMix64::derive(seed, step);
        offsets.extend((0..self.batch_size).map(|_| rng.below(self.offset_count())));
        Ok(offsets)
    }
}

/// Language-model batches of random windows of a token corpus (nanoGPT's `get_batch`).
///
/// ```
/// use tang_nn::data::TokenBatcher;
/// let corpus: Vec<u32> = (0..50).collect();
/// let batcher = TokenBatcher::new(corpus, 2, 4, 0)?;
/// let (x, y) = batcher.host_batch(0)?; // targets are the inputs shifted by one
/// assert!(x.iter().zip(&y).all(|(a, b)| b - a == 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TokenBatcher {
    corpus: Vec<u32>,
    sampler: WindowSampler,
}

impl TokenBatcher {
    /// A batcher over `corpus` (token ids) drawing `batch_size` windows of `block_size`
    /// tokens per step from the stream of `seed` (under `mpirun`, this rank's stream of
    /// it: [`WindowSampler::for_rank`]). Use another seed for a validation split.
    ///
    /// ```
    /// use tang_nn::data::TokenBatcher;
    /// let batcher = TokenBatcher::new(vec![1, 2, 3, 4, 5], 2, 3, 7)?; // batch 2, block 3, seed 7
    /// assert_eq!(batcher.sampler().offset_count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`WindowSampler::new`]; [`DataError::Distributed`] when MPI fails to start
    /// under a launcher.
    pub fn new(
        corpus: Vec<u32>,
        batch_size: usize,
        block_size: usize,
        seed: u64,
    ) -> Result<Self, DataError> {
        let sampler =
            WindowSampler::new(seed, batch_size, block_size, corpus.len())?.for_this_rank()?;
        Ok(TokenBatcher { corpus, sampler })
    }

    /// The window sampler.
    ///
    /// ```
    /// let batcher = tang_nn::data::TokenBatcher::new(vec![1, 2, 3, 4, 5], 2, 3, 7)?;
    /// assert_eq!(batcher.sampler().block_size(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sampler(&self) -> &WindowSampler {
        &self.sampler
    }

    /// The corpus.
    ///
    /// ```
    /// let batcher = tang_nn::data::TokenBatcher::new(vec![1, 2, 3, 4, 5], 2, 3, 7)?;
    /// assert_eq!(batcher.corpus().len(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn corpus(&self) -> &[u32] {
        &self.corpus
    }

    /// Step `step`'s inputs and targets on the host, each `batch_size * block_size` tokens
    /// row-major: row `b` is `corpus[o..o + block]` and `corpus[o + 1..o + 1 + block]` for
    /// the `b`-th offset `o`.
    ///
    /// ```
    /// let batcher = tang_nn::data::TokenBatcher::new((0..20).collect(), 2, 3, 7)?;
    /// let (x, y) = batcher.host_batch(5)?; // step 5's batch, row-major [2, 3]
    /// assert_eq!((x.len(), y.len()), (6, 6));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when a batch does not fit in memory.
    pub fn host_batch(&self, step: u64) -> Result<(Vec<u32>, Vec<u32>), DataError> {
        let block = self.sampler.block_size;
        // The product was checked in WindowSampler::new.
        let tokens = self.sampler.batch_size * block;
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        reserve(&mut inputs, tokens, "batch tokens")?;
        reserve(&mut targets, tokens, "batch tokens")?;
        for offset in self.sampler.offsets(step)? {
            // offset < len - block, so offset + 1 + block <= len.
            inputs.extend_from_slice(&self.corpus[offset..offset + block]);
            targets.extend_from_slice(&self.corpus[offset + 1..offset + 1 + block]);
        }
        Ok((inputs, targets))
    }

    /// The same batches with the corpus uploaded to `device` once and the windows gathered
    /// there ([`DeviceTokenBatcher`]).
    ///
    /// ```
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let host = tang_nn::data::TokenBatcher::new((0..20).collect(), 2, 3, 7)?;
    /// let device = host.to_device(&dev)?;
    /// let (x, _y) = device.batch(4)?;
    /// assert_eq!(x.to_vec_u32()?, host.host_batch(4)?.0); // the same windows
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`DeviceTokenBatcher::new`].
    pub fn to_device(&self, device: &Device) -> Result<DeviceTokenBatcher, DataError> {
        DeviceTokenBatcher::new(
            device,
            &self.corpus,
            self.sampler.batch_size,
            self.sampler.block_size,
            self.sampler.seed,
        )
    }
}

impl WindowSampler {
    /// This process's stream in the MPI job it runs in (see
    /// [`crate::distributed::rank_and_world_size`]).
    pub(super) fn for_this_rank(self) -> Result<Self, DataError> {
        let (rank, world) = crate::distributed::rank_and_world_size()?;
        self.for_rank(rank, world)
    }
}

/// Reserves room for `count` items, or says that they do not fit in memory.
fn reserve<T>(buffer: &mut Vec<T>, count: usize, what: &str) -> Result<(), DataError> {
    buffer
        .try_reserve_exact(count)
        .map_err(|_| DataError::InvalidOption {
            what: "batch_size",
            detail: format!(
                "{count} {what} do not fit in memory; use a smaller batch_size or block_size"
            ),
        })
}
