//! Causal self-attention as nanoGPT writes it (`c_attn` producing queries, keys and values
//! in one matmul, `c_proj`, dropout on the attention weights and on the output), with
//! grouped-query heads and a KV cache for generation.
//!
//! Names: with `n_kv_head == n_head` (nanoGPT, GPT-2) the parameters are nanoGPT's:
//! `c_attn.weight [3C, C]`, `c_attn.bias`, `c_proj.weight [C, C]`, `c_proj.bias`. With
//! fewer kv heads (grouped-query attention, which nanoGPT does not have) the queries, keys
//! and values have different widths, so they get separate projections under the names
//! Llama-style checkpoints use, `q_proj [C, C]`, `k_proj [Hkv·D, C]`, `v_proj [Hkv·D, C]`,
//! and the output projection keeps the name `c_proj`.

use tang_runtime::Device;
use tang_runtime::ops::MAX_HEAD_DIM;

use super::attention_cache::KvCache;
use super::attention_sdpa::{AttnMask, scaled_dot_product_attention};
use super::{Dropout, Linear};
use crate::Module;
use crate::autograd::{Error, Tensor, no_grad};
use crate::rng::SplitMix64;

/// The sizes and options of a [`CausalSelfAttention`].
///
/// ```
/// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// // nanoGPT's attention, with grouped-query heads: 4 query heads share 2 key/value heads.
/// let cfg = CausalSelfAttentionConfig { n_kv_head: 2, ..CausalSelfAttentionConfig::new(16, 4) };
/// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
/// assert_eq!(attn.config().head_dim(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CausalSelfAttentionConfig {
    /// Width of the residual stream, `C`.
    pub n_embd: usize,
    /// Query heads, `H` (divides `n_embd`).
    pub n_head: usize,
    /// Key/value heads, `Hkv` (divides `n_head`; `n_head` for ordinary multi-head
    /// attention).
    pub n_kv_head: usize,
    /// Dropout probability on the attention weights and on the output (training only).
    pub dropout: f32,
    /// Whether the projections have biases.
    pub bias: bool,
}

impl CausalSelfAttentionConfig {
    /// Multi-head attention as nanoGPT's: `n_kv_head = n_head`, no dropout, biases.
    ///
    /// ```
    /// let cfg = tang_nn::nn::CausalSelfAttentionConfig::new(768, 12); // GPT-2 small
    /// assert_eq!((cfg.n_kv_head, cfg.dropout, cfg.bias), (12, 0.0, true));
    /// ```
    pub fn new(n_embd: usize, n_head: usize) -> CausalSelfAttentionConfig {
        CausalSelfAttentionConfig {
            n_embd,
            n_head,
            n_kv_head: n_head,
            dropout: 0.0,
            bias: true,
        }
    }

    /// The width of one head, `C / H`.
    ///
    /// ```
    /// assert_eq!(tang_nn::nn::CausalSelfAttentionConfig::new(768, 12).head_dim(), 64);
    /// ```
    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head.max(1)
    }

    /// `Err` unless `n_head` divides `n_embd` and `n_kv_head` divides `n_head`.
    fn validate(&self) -> Result<(), Error> {
        let ok = self.n_head > 0
            && self.n_kv_head > 0
            && self.n_embd.is_multiple_of(self.n_head)
            && self.n_head.is_multiple_of(self.n_kv_head)
            && (0.0..1.0).contains(&self.dropout);
        if ok {
            return Ok(());
        }
        Err(super::invalid(
            "CausalSelfAttention",
            format!(
                "n_head must divide n_embd and n_kv_head must divide n_head, dropout in [0, 1); \
                 got n_embd {}, n_head {}, n_kv_head {}, dropout {}",
                self.n_embd, self.n_head, self.n_kv_head, self.dropout
            ),
        ))
    }
}

/// Causal self-attention (nanoGPT's `CausalSelfAttention`), grouped-query heads when
/// `n_kv_head < n_head`, with a KV cache for generation
/// ([`CausalSelfAttention::forward_with_cache`]).
///
/// ```
/// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
/// use tang_nn::autograd::Tensor;
/// use tang_nn::{Module, rng::SplitMix64};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let attn = CausalSelfAttention::new(&dev, &CausalSelfAttentionConfig::new(64, 4), &mut SplitMix64::new(0))?;
/// assert_eq!(attn.state_dict().names().collect::<Vec<_>>(),
///            ["c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"]);
/// let x = Tensor::zeros(&dev, &[2, 10, 64])?;
/// assert_eq!(attn.forward(&x)?.shape(), &[2, 10, 64]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct CausalSelfAttention {
    /// Queries, keys and values in one projection `[3C, C]` (when `n_kv_head == n_head`).
    pub c_attn: Option<Linear>,
    /// Query projection `[C, C]` (grouped-query attention only).
    pub q_proj: Option<Linear>,
    /// Key projection `[Hkv·D, C]` (grouped-query attention only).
    pub k_proj: Option<Linear>,
    /// Value projection `[Hkv·D, C]` (grouped-query attention only).
    pub v_proj: Option<Linear>,
    /// Output projection `[C, C]`.
    pub c_proj: Linear,
    /// Dropout on the attention weights.
    pub attn_dropout: Dropout,
    /// Dropout on the output.
    pub resid_dropout: Dropout,
    #[module(skip)]
    config: CausalSelfAttentionConfig,
}

impl CausalSelfAttention {
    /// A layer with PyTorch's `Linear` initialisation, drawn from `rng`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::Module;
    /// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
    /// let cfg = CausalSelfAttentionConfig::new(16, 2);
    /// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(attn.num_params(), 16 * 48 + 48 + 16 * 16 + 16); // c_attn and c_proj
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `n_head` does not divide `n_embd`, `n_kv_head` does not
    /// divide `n_head`, `dropout` is outside `[0, 1)`, or the device fails.
    pub fn new(
        dev: &Device,
        config: &CausalSelfAttentionConfig,
        rng: &mut SplitMix64,
    ) -> Result<CausalSelfAttention, Error> {
        config.validate()?;
        let c = config.n_embd;
        let kv = config.n_kv_head * config.head_dim();
        let linear = |rng: &mut SplitMix64, out: usize| Linear::new(dev, c, out, config.bias, rng);
        let grouped = config.n_kv_head != config.n_head;
        let (c_attn, q_proj, k_proj, v_proj) = if grouped {
            (
                None,
                Some(linear(rng, c)?),
                Some(linear(rng, kv)?),
                Some(linear(rng, kv)?),
            )
        } else {
            (Some(linear(rng, 3 * c)?), None, None, None)
        };
        Ok(CausalSelfAttention {
            c_attn,
            q_proj,
            k_proj,
            v_proj,
            c_proj: linear(rng, c)?,
            attn_dropout: Dropout::new(config.dropout)?,
            resid_dropout: Dropout::new(config.dropout)?,
            config: *config,
        })
    }

    /// The layer's sizes and options.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
    /// let cfg = CausalSelfAttentionConfig::new(16, 2);
    /// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(attn.config(), &cfg);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> &CausalSelfAttentionConfig {
        &self.config
    }

    /// Queries `[B, H, T, D]`, keys and values `[B, Hkv, T, D]` of `x [B, T, C]`.
    fn qkv(&self, x: &Tensor) -> Result<(Tensor, Tensor, Tensor), Error> {
        let cfg = &self.config;
        let (c, d) = (cfg.n_embd, cfg.head_dim());
        let [b, t] = check_input(x, c)?;
        let heads = |y: Tensor, h: usize| y.reshape(&[b, t, h, d])?.permute(&[0, 2, 1, 3]);
        let (q, k, v) = match (&self.c_attn, &self.q_proj, &self.k_proj, &self.v_proj) {
            (Some(c_attn), ..) => {
                let qkv = c_attn.forward(x)?;
                (
                    qkv.narrow(2, 0, c)?,
                    qkv.narrow(2, c, c)?,
                    qkv.narrow(2, 2 * c, c)?,
                )
            }
            (None, Some(q), Some(k), Some(v)) => (q.forward(x)?, k.forward(x)?, v.forward(x)?),
            // The constructor sets either `c_attn` or all three separate projections.
            _ => return Err(shape_error(x.shape(), c)),
        };
        Ok((
            heads(q, cfg.n_head)?,
            heads(k, cfg.n_kv_head)?,
            heads(v, cfg.n_kv_head)?,
        ))
    }

    /// `[B, H, T, D]` heads back to `[B, T, C]`, through `c_proj` and the output dropout.
    fn project_out(&self, y: &Tensor) -> Result<Tensor, Error> {
        let y = y.permute(&[0, 2, 1, 3])?;
        self.project_out_tokens(&y)
    }

    /// [`Self::project_out`] of the heads' outputs already `[B, T, H, D]`.
    fn project_out_tokens(&self, y: &Tensor) -> Result<Tensor, Error> {
        let (b, t) = (y.shape()[0], y.shape()[1]);
        let y = y.reshape(&[b, t, self.config.n_embd])?;
        self.resid_dropout.forward(&self.c_proj.forward(&y)?)
    }

    /// Causal self-attention of `x [B, T, C]`: `[B, T, C]`: one fused flash-attention
    /// kernel per pass, with the attention dropout (in training) inside it.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
    /// let cfg = CausalSelfAttentionConfig::new(16, 2);
    /// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let x = Tensor::zeros(&dev, &[1, 5, 16])?; // [B, T, C]
    /// assert_eq!(attn.forward(&x)?.shape(), &[1, 5, 16]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x` is not `[B, T, n_embd]` or a kernel fails.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let cfg = &self.config;
        // The fused kernel on the packed projection: the heads come out of (and their
        // gradients go back into) c_attn's output in one copy each.
        if let Some(c_attn) = &self.c_attn
            && cfg.head_dim() <= MAX_HEAD_DIM
        {
            check_input(x, cfg.n_embd)?;
            let qkv = c_attn.forward(x)?;
            let (h, hkv, d) = (cfg.n_head, cfg.n_kv_head, cfg.head_dim());
            let drop = self.attn_dropout.next_state();
            let y = qkv.packed_causal_attention(h, hkv, d, drop)?;
            return self.project_out_tokens(&y);
        }
        let (q, k, v) = self.qkv(x)?;
        let drop = Some(&self.attn_dropout);
        let y = scaled_dot_product_attention(&q, &k, &v, AttnMask::Causal, drop)?;
        self.project_out(&y)
    }

    /// Self-attention of `x [B, T, C]`, the `T` positions that follow the `cache.len()`
    /// positions already in `cache`: their keys and values are written into the cache and
    /// each attends every earlier position. The result equals the last `T` positions of
    /// [`forward`](Self::forward) over the whole sequence (in evaluation mode). For
    /// generation: records nothing.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
    /// let cfg = CausalSelfAttentionConfig::new(16, 2);
    /// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let mut cache = attn.new_cache(&dev, 1, 8)?;
    /// let prompt = Tensor::zeros(&dev, &[1, 3, 16])?;
    /// attn.forward_with_cache(&prompt, &mut cache)?; // the prompt's keys and values
    /// let next = Tensor::zeros(&dev, &[1, 1, 16])?;
    /// assert_eq!(attn.forward_with_cache(&next, &mut cache)?.shape(), &[1, 1, 16]);
    /// assert_eq!(cache.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x` is not `[B, T, n_embd]`, the cache was made for other
    /// sizes ([`CausalSelfAttention::new_cache`]), or it has no room for `T` more positions.
    pub fn forward_with_cache(&self, x: &Tensor, cache: &mut KvCache) -> Result<Tensor, Error> {
        no_grad(|| {
            let (q, k, v) = self.qkv(x)?;
            let y = cache.append_and_attend(&q, &k, &v)?;
            // Dropout is off: generation runs the model as in evaluation.
            let (b, t) = (y.shape()[0], y.shape()[2]);
            let y = y
                .permute(&[0, 2, 1, 3])?
                .reshape(&[b, t, self.config.n_embd])?;
            self.c_proj.forward(&y)
        })
    }

    /// An empty cache for `batch` sequences of up to `capacity` positions.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{CausalSelfAttention, CausalSelfAttentionConfig};
    /// let cfg = CausalSelfAttentionConfig { n_kv_head: 1, ..CausalSelfAttentionConfig::new(16, 2) };
    /// let attn = CausalSelfAttention::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let cache = attn.new_cache(&dev, 2, 32)?; // 2 sequences of up to 32 positions
    /// assert_eq!(cache.shape(), &[2, 1, 32, 8]); // [B, Hkv, capacity, head_dim]
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when a size is 0 or the device fails.
    pub fn new_cache(&self, dev: &Device, batch: usize, capacity: usize) -> Result<KvCache, Error> {
        KvCache::new(
            dev,
            batch,
            self.config.n_kv_head,
            capacity,
            self.config.head_dim(),
        )
    }
}

/// `[B, T]` of an input that must be `[B, T, c]`.
fn check_input(x: &Tensor, c: usize) -> Result<[usize; 2], Error> {
    match *x.shape() {
        [b, t, xc] if xc == c => Ok([b, t]),
        _ => Err(shape_error(x.shape(), c)),
    }
}

fn shape_error(shape: &[usize], c: usize) -> Error {
    Error::Runtime(tang_runtime::Error::ShapeMismatch {
        op: format!("CausalSelfAttention(n_embd {c})"),
        detail: format!("the input must be [B, T, n_embd = {c}], got {shape:?}"),
    })
}
