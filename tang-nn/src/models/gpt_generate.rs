//! Sampling from a [`Gpt`] as nanoGPT's `generate` does (temperature, top-k, the context
//! cropped to the block size; and Hugging Face's top-p), with a KV cache: each new token costs one position of
//! compute, not a pass over the whole context.

use crate::autograd::Error;
use crate::autograd::Tensor;
use crate::rng::SplitMix64;

use super::gpt::{Gpt, GptCache};

/// How [`Gpt::generate`] samples.
///
/// ```
/// # use tang_nn::models::gpt::{Gpt, GptConfig};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
/// use tang_nn::models::gpt::SampleOptions;
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// // model.generate(idx, max_new_tokens=3, temperature=0.8, top_k=2)
/// let options = SampleOptions { max_new_tokens: 3, temperature: 0.8, top_k: Some(2), ..SampleOptions::default() };
/// let out = gpt.generate(&[vec![1, 2]], &options)?;
/// assert_eq!(out[0].len(), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleOptions {
    /// Tokens to append to each prompt.
    pub max_new_tokens: usize,
    /// Logits are divided by this before the softmax (> 0; below 1 sharpens).
    pub temperature: f32,
    /// Sample only among the `k` most likely tokens (`None`: all of them).
    pub top_k: Option<usize>,
    /// Nucleus sampling (Hugging Face's `top_p`): sample only among the most likely
    /// tokens whose probabilities, after temperature and top-k, first sum to at least
    /// `p` (in `(0, 1]`; `None`: no cut).
    pub top_p: Option<f32>,
    /// Seed of the sampler's random stream.
    pub seed: u64,
}

impl Default for SampleOptions {
    /// nanoGPT's `generate` defaults: temperature 1, no top-k, no top-p; 100 new tokens,
    /// seed 1337.
    fn default() -> Self {
        SampleOptions {
            max_new_tokens: 100,
            temperature: 1.0,
            top_k: None,
            top_p: None,
            seed: 1337,
        }
    }
}

// Chained setters, as the optimizers' options have: nanoGPT's
// `generate(idx, 100, temperature=0.8, top_k=40)` takes
// `SampleOptions::default().temperature(0.8).top_k(Some(40))`.
crate::macros::setters!(SampleOptions in models::gpt {
    max_new_tokens: usize,
    temperature: f32,
    top_k: Option<usize>,
    top_p: Option<f32>,
    seed: u64,
});

fn invalid(detail: String) -> Error {
    crate::nn::invalid("Gpt::generate", detail)
}

/// One token drawn from `logits` (one row): scaled by `1 / temperature`, cut to the top
/// `k` (ties with the k-th value kept, as nanoGPT's `logits < v[:, [-1]]` mask does), cut
/// to the top-p nucleus, softmax, then a draw from `rng`.
fn sample(logits: &[f32], options: &SampleOptions, rng: &mut SplitMix64) -> u32 {
    let t = f64::from(options.temperature);
    let mut scaled: Vec<f64> = logits.iter().map(|&l| f64::from(l) / t).collect();
    if let Some(k) = options.top_k {
        let mut sorted = scaled.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let kth = sorted[k.clamp(1, sorted.len()) - 1];
        for l in &mut scaled {
            if *l < kth {
                *l = f64::NEG_INFINITY;
            }
        }
    }
    let max = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut weights: Vec<f64> = scaled.iter().map(|l| (l - max).exp()).collect();
    if let Some(p) = options.top_p {
        nucleus(&mut weights, f64::from(p));
    }
    let mut u = rng.next_f64() * weights.iter().sum::<f64>();
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i as u32;
        }
        u -= w;
    }
    // Rounding left `u` past the last weight: the last token with any weight.
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0) as u32
}

/// Zeroes the weights outside the nucleus: the most likely tokens are kept until their
/// share of the total reaches `p`; the most likely token always stays, as in Hugging
/// Face's `TopPLogitsWarper` (`min_tokens_to_keep = 1`).
fn nucleus(weights: &mut [f64], p: f64) {
    let total: f64 = weights.iter().sum();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
    let mut before = 0.0;
    for i in order {
        // A token stays when the more likely ones before it have not reached `p` yet.
        if before >= p * total {
            weights[i] = 0.0;
        } else {
            before += weights[i];
        }
    }
}

impl Gpt {
    /// The logits of the last position, `[B][vocab]` on the host, after feeding `tokens`
    /// (the same count per row) through the cache.
    fn last_logits(
        &self,
        rows: &[Vec<u32>],
        from: usize,
        cache: &mut GptCache,
    ) -> Result<Vec<f32>, Error> {
        let b = rows.len();
        let t = rows[0].len() - from;
        let ids: Vec<u32> = rows
            .iter()
            .flat_map(|r| r[from..].iter().copied())
            .collect();
        let dev = self.lm_head.weight.data().device();
        let idx = Tensor::from_u32(dev, &ids, &[b, t])?;
        let logits = self.forward_with_cache(&idx, cache)?;
        logits.narrow(1, t - 1, 1)?.to_vec()
    }

    /// Continues each prompt (equal lengths, ids below `vocab_size`) by
    /// `options.max_new_tokens` sampled tokens, as nanoGPT's `generate`: the model sees at
    /// most the last `block_size` tokens; logits are scaled by `1 / temperature`, cut to
    /// the `top_k` most likely, then to the `top_p` nucleus. A KV cache holds the context, so each token runs one
    /// position through the model until the context passes the block size (then, as
    /// nanoGPT, the cropped window is recomputed each step). Run it in evaluation mode
    /// ([`crate::Module::eval`]) unless dropout is wanted. Returns the prompts with their
    /// continuations.
    ///
    /// ```
    /// use tang_nn::models::gpt::{Gpt, GptConfig, SampleOptions};
    /// use tang_nn::Module;
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let gpt = Gpt::new(&dev, &GptConfig { vocab_size: 81, block_size: 64, n_layer: 2, n_head: 4,
    ///                                       n_kv_head: 4, n_embd: 64, dropout: 0.0, bias: false, ..GptConfig::gpt2() }, 0)?;
    /// gpt.eval();
    /// let out = gpt.generate(&[vec![1, 2, 3]], &SampleOptions { max_new_tokens: 10, top_k: Some(5),
    ///                                                            ..SampleOptions::default() })?;
    /// assert_eq!(out[0].len(), 13);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for no prompts, prompts of different or zero lengths, an id not
    /// below `vocab_size`, a temperature that is not a positive number, `top_k = Some(0)`,
    /// a `top_p` outside `(0, 1]`, or a device failure.
    pub fn generate(
        &self,
        prompts: &[Vec<u32>],
        options: &SampleOptions,
    ) -> Result<Vec<Vec<u32>>, Error> {
        let vocab = self.config().vocab_size;
        let len = prompts.first().map_or(0, Vec::len);
        if len == 0 || prompts.iter().any(|p| p.len() != len) {
            return Err(invalid(
                "give at least one prompt; every prompt must have the same, non-zero length".into(),
            ));
        }
        if let Some(bad) = prompts.iter().flatten().find(|&&id| id as usize >= vocab) {
            return Err(invalid(format!(
                "token id {bad} is not below vocab_size {vocab}"
            )));
        }
        if !(options.temperature > 0.0 && options.temperature.is_finite()) {
            return Err(invalid(format!(
                "temperature must be a positive number, got {}",
                options.temperature
            )));
        }
        if options.top_k == Some(0) {
            return Err(invalid("top_k must be at least 1 (or None)".into()));
        }
        if let Some(p) = options.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(invalid(format!(
                "top_p must be in (0, 1] (or None), got {p}"
            )));
        }
        let block = self.config().block_size;
        let dev = self.lm_head.weight.data().device().clone();
        let mut rows = prompts.to_vec();
        let mut cache = self.new_cache(&dev, rows.len())?;
        let mut rng = SplitMix64::new(options.seed);
        // Prefill with the cropped context.
        let mut logits = self.last_logits(&crop(&rows, block), 0, &mut cache)?;
        for step in 0..options.max_new_tokens {
            for (row, l) in rows.iter_mut().zip(logits.chunks(vocab)) {
                row.push(sample(l, options, &mut rng));
            }
            if step + 1 == options.max_new_tokens {
                break;
            }
            logits = if cache.len() < block {
                let n = rows[0].len();
                self.last_logits(&rows, n - 1, &mut cache)?
            } else {
                // Positions are absolute: past the block size the window slides and
                // every position moves, so the cropped context is recomputed.
                cache.clear();
                self.last_logits(&crop(&rows, block), 0, &mut cache)?
            };
        }
        Ok(rows)
    }
}

/// The last `block` tokens of each row.
fn crop(rows: &[Vec<u32>], block: usize) -> Vec<Vec<u32>> {
    rows.iter()
        .map(|r| r[r.len().saturating_sub(block)..].to_vec())
        .collect()
}
