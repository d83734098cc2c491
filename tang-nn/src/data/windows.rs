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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSampler {
    seed: u64,
    batch_size: usize,
    block_size: usize,
    corpus_len: usize,
}

impl WindowSampler {
    /// A sampler of `batch_size` windows of `block_size` tokens (plus the one-token shift
    /// of the target) in a corpus of `corpus_len` tokens.
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
        })
    }

    /// Windows per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Tokens per window.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// How many distinct offsets a window can start at (`corpus_len - block_size`).
    pub fn offset_count(&self) -> usize {
        self.corpus_len - self.block_size
    }

    /// The start of each window of step `step`, each uniform in `0..offset_count()`.
    ///
    /// # Errors
    /// [`DataError::InvalidOption`] when `batch_size` offsets do not fit in memory.
    pub fn offsets(&self, step: u64) -> Result<Vec<usize>, DataError> {
        let mut offsets = Vec::new();
        reserve(&mut offsets, self.batch_size, "window offsets")?;
        let mut rng = SplitMix64::derive(self.seed, step);
        offsets.extend((0..self.batch_size).map(|_| rng.below(self.offset_count())));
        Ok(offsets)
    }
}

/// Language-model batches of random windows of a token corpus (nanoGPT's `get_batch`).
#[derive(Clone, Debug)]
pub struct TokenBatcher {
    corpus: Vec<u32>,
    sampler: WindowSampler,
}

impl TokenBatcher {
    /// A batcher over `corpus` (token ids) drawing `batch_size` windows of `block_size`
    /// tokens per step from the stream of `seed`. Use another seed for a validation split.
    ///
    /// # Errors
    /// As [`WindowSampler::new`].
    pub fn new(
        corpus: Vec<u32>,
        batch_size: usize,
        block_size: usize,
        seed: u64,
    ) -> Result<Self, DataError> {
        let sampler = WindowSampler::new(seed, batch_size, block_size, corpus.len())?;
        Ok(TokenBatcher { corpus, sampler })
    }

    /// The window sampler.
    pub fn sampler(&self) -> &WindowSampler {
        &self.sampler
    }

    /// The corpus.
    pub fn corpus(&self) -> &[u32] {
        &self.corpus
    }

    /// Step `step`'s inputs and targets on the host, each `batch_size * block_size` tokens
    /// row-major: row `b` is `corpus[o..o + block]` and `corpus[o + 1..o + 1 + block]` for
    /// the `b`-th offset `o`.
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
