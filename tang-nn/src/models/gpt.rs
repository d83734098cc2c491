//! nanoGPT's GPT: token and position embeddings, `n_layer` pre-norm blocks (causal
//! self-attention and a GELU MLP), a final layer norm and a language-model head tied to
//! the token embedding. The parameters carry nanoGPT's `state_dict` names
//! (`transformer.wte.weight`, `transformer.h.0.attn.c_attn.weight`, `lm_head.weight`, ...),
//! so its checkpoints load as they are; Hugging Face's GPT-2 checkpoints load through
//! [`Gpt::from_pretrained`] (the tanh GELU and the config's layer-norm epsilon are
//! [`GptConfig`] fields).

use tang_runtime::{Device, Tensor as RawTensor};

use crate::Module;
use crate::autograd::{Error, Tensor, no_grad};
use crate::nn::{
    Approximate, CausalSelfAttention, CausalSelfAttentionConfig, Dropout, Embedding, GELU, KvCache,
    LayerNorm, Linear, invalid,
};
use crate::rng::SplitMix64;

pub use super::gpt_generate::SampleOptions;

/// nanoGPT's `GPTConfig` (plus `n_kv_head` for grouped-query attention).
///
/// ```
/// use tang_nn::models::gpt::{Gpt, GptConfig};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// // nanoGPT's shakespeare_char config, scaled down: GPTConfig(n_layer=1, n_head=2, ...)
/// let config = GptConfig { vocab_size: 65, block_size: 16, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 16, ..GptConfig::gpt2() };
/// let gpt = Gpt::new(&dev, &config, 1337)?;
/// assert_eq!(gpt.config().n_embd, 16);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GptConfig {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// The longest context, in tokens (rows of the position embedding).
    pub block_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads per block.
    pub n_head: usize,
    /// Key/value heads per block (`n_head`, as nanoGPT, unless grouped-query attention).
    pub n_kv_head: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
    /// Dropout probability (training only).
    pub dropout: f32,
    /// Biases in the linear layers and layer norms.
    pub bias: bool,
    /// The MLP's GELU: exact (nanoGPT's `nn.GELU()`, the default) or tanh (GPT-2's
    /// `gelu_new`, Hugging Face's `activation_function`).
    pub gelu: Approximate,
    /// The layer norms' epsilon (PyTorch's `eps`, Hugging Face's `layer_norm_epsilon`;
    /// 1e-5 in both nanoGPT and GPT-2).
    pub layer_norm_epsilon: f32,
}

impl GptConfig {
    /// nanoGPT's defaults (GPT-2 small): vocab 50304, block 1024, 12 layers, 12 heads,
    /// width 768, no dropout, biases, exact GELU, layer-norm epsilon 1e-5.
    ///
    /// ```
    /// let config = tang_nn::models::gpt::GptConfig::gpt2(); // GPTConfig()
    /// assert_eq!((config.n_layer, config.n_head, config.n_embd, config.vocab_size), (12, 12, 768, 50304));
    /// ```
    pub fn gpt2() -> GptConfig {
        GptConfig {
            vocab_size: 50304,
            block_size: 1024,
            n_layer: 12,
            n_head: 12,
            n_kv_head: 12,
            n_embd: 768,
            dropout: 0.0,
            bias: true,
            gelu: Approximate::None,
            layer_norm_epsilon: 1e-5,
        }
    }

    /// A config from the JSON object nanoGPT's fields make (as stored in a checkpoint's
    /// metadata, e.g. `{"n_layer": 2, "n_head": 4, "n_embd": 64, "block_size": 64,
    /// "vocab_size": 81, "bias": false}`); absent fields take [`GptConfig::gpt2`]'s values,
    /// an absent `n_kv_head` is `n_head`.
    ///
    /// ```
    /// use tang_nn::models::gpt::GptConfig;
    /// let config = GptConfig::from_json(r#"{"n_layer": 2, "n_head": 4, "n_embd": 64, "block_size": 64, "vocab_size": 81, "bias": false}"#)?;
    /// assert_eq!((config.n_layer, config.n_kv_head, config.bias), (2, 4, false));
    /// assert!(GptConfig::from_json("[1, 2]").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the text is not such an object.
    pub fn from_json(text: &str) -> Result<GptConfig, Error> {
        let bad = |detail: String| invalid("GptConfig::from_json", detail);
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| bad(format!("expected a JSON object, got {value}")))?;
        let mut c = GptConfig::gpt2();
        let size = |key: &str, default: usize| -> Result<usize, Error> {
            match obj.get(key) {
                None => Ok(default),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| bad(format!("{key} must be a non-negative integer, got {v}"))),
            }
        };
        c.vocab_size = size("vocab_size", c.vocab_size)?;
        c.block_size = size("block_size", c.block_size)?;
        c.n_layer = size("n_layer", c.n_layer)?;
        c.n_head = size("n_head", c.n_head)?;
        c.n_kv_head = size("n_kv_head", c.n_head)?;
        c.n_embd = size("n_embd", c.n_embd)?;
        if let Some(v) = obj.get("dropout") {
            c.dropout = v
                .as_f64()
                .ok_or_else(|| bad(format!("dropout must be a number, got {v}")))?
                as f32;
        }
        if let Some(v) = obj.get("bias") {
            c.bias = v
                .as_bool()
                .ok_or_else(|| bad(format!("bias must be true or false, got {v}")))?;
        }
        Ok(c)
    }

    fn attention(&self) -> CausalSelfAttentionConfig {
        CausalSelfAttentionConfig {
            n_embd: self.n_embd,
            n_head: self.n_head,
            n_kv_head: self.n_kv_head,
            dropout: self.dropout,
            bias: self.bias,
        }
    }
}

/// nanoGPT's `MLP`: `c_fc [4C, C]`, GELU (exact unless the config says tanh), `c_proj
/// [C, 4C]`, dropout.
///
/// ```
/// # use tang_nn::models::gpt::{Gpt, GptConfig};
/// # use tang_nn::tang_runtime::Device;
/// # let dev = Device::new()?;
/// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
/// use tang_nn::Module;
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// let mlp = &gpt.transformer.h[0].mlp; // transformer.h.0.mlp
/// assert_eq!(mlp.c_fc.weight.shape(), &[32, 8]); // [4C, C]
/// assert!(mlp.state_dict().contains("c_proj.weight"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Mlp {
    /// The widening projection.
    pub c_fc: Linear,
    /// The narrowing projection.
    pub c_proj: Linear,
    /// The activation between them (no parameters).
    #[module(skip)]
    pub gelu: GELU,
    /// Dropout on the output.
    pub dropout: Dropout,
}

/// nanoGPT's `Block`: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`.
///
/// ```
/// # use tang_nn::models::gpt::{Gpt, GptConfig};
/// # use tang_nn::tang_runtime::Device;
/// # let dev = Device::new()?;
/// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
/// use tang_nn::Module;
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// let names: Vec<String> = gpt.transformer.h[0].state_dict().names().map(str::to_string).collect();
/// assert_eq!(names[0], "ln_1.weight"); // nanoGPT's Block names
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Block {
    /// Layer norm before attention.
    pub ln_1: LayerNorm,
    /// Causal self-attention.
    pub attn: CausalSelfAttention,
    /// Layer norm before the MLP.
    pub ln_2: LayerNorm,
    /// The MLP.
    pub mlp: Mlp,
}

/// nanoGPT's `transformer` `ModuleDict`: embeddings, blocks, final norm.
///
/// ```
/// # use tang_nn::models::gpt::{Gpt, GptConfig};
/// # use tang_nn::tang_runtime::Device;
/// # let dev = Device::new()?;
/// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// assert_eq!(gpt.transformer.wpe.weight.shape(), &[4, 8]); // [block_size, n_embd]
/// assert_eq!(gpt.transformer.h.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct GptTransformer {
    /// Token embedding `[vocab_size, n_embd]` (tied to `lm_head.weight`).
    pub wte: Embedding,
    /// Position embedding `[block_size, n_embd]`.
    pub wpe: Embedding,
    /// Dropout on the embeddings.
    pub drop: Dropout,
    /// The blocks, `h.0`, `h.1`, ...
    pub h: Vec<Block>,
    /// The final layer norm.
    pub ln_f: LayerNorm,
}

/// nanoGPT's `GPT`, with the language-model head tied to the token embedding.
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::models::gpt::{Gpt, GptConfig};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let config = GptConfig { vocab_size: 81, block_size: 64, n_layer: 2, n_head: 4, n_kv_head: 4,
///                          n_embd: 64, dropout: 0.0, bias: false, ..GptConfig::gpt2() };
/// let gpt = Gpt::new(&dev, &config, 1337)?;
/// assert_eq!(gpt.num_params(), 107_904);
/// let idx = tang_nn::Tensor::from_u32(&dev, &[1, 2, 3], &[1, 3])?;
/// assert_eq!(gpt.forward(&idx)?.shape(), &[1, 3, 81]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Gpt {
    /// Embeddings, blocks and final norm.
    pub transformer: GptTransformer,
    /// The head `[vocab_size, n_embd]`, sharing its weight with `transformer.wte`.
    pub lm_head: Linear,
    #[module(skip)]
    config: GptConfig,
}

/// One key/value cache per block, for generation ([`Gpt::forward_with_cache`]).
///
/// ```
/// # use tang_nn::models::gpt::{Gpt, GptConfig};
/// # use tang_nn::tang_runtime::Device;
/// # use tang_nn::Tensor;
/// # let dev = Device::new()?;
/// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// let mut cache = gpt.new_cache(&dev, 1)?;
/// let prompt = Tensor::from_u32(&dev, &[1, 2], &[1, 2])?;
/// let logits = gpt.forward_with_cache(&prompt, &mut cache)?; // then one token at a time
/// assert_eq!((logits.shape(), cache.len()), (&[1, 2, 8][..], 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct GptCache {
    layers: Vec<KvCache>,
}

impl GptCache {
    /// Positions cached so far.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # use tang_nn::Tensor;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// let mut cache = gpt.new_cache(&dev, 1)?;
    /// gpt.forward_with_cache(&Tensor::from_u32(&dev, &[1, 2, 3], &[1, 3])?, &mut cache)?;
    /// assert_eq!(cache.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, KvCache::len)
    }

    /// Whether no position is cached.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// assert!(gpt.new_cache(&dev, 1)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every position, keeping the buffers.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # use tang_nn::Tensor;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// let mut cache = gpt.new_cache(&dev, 1)?;
    /// gpt.forward_with_cache(&Tensor::from_u32(&dev, &[1, 2, 3], &[1, 3])?, &mut cache)?;
    /// cache.clear(); // a new prompt
    /// assert!(cache.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&mut self) {
        self.layers.iter_mut().for_each(KvCache::clear);
    }
}

/// Overwrites `t` with normal values of standard deviation `std` drawn from `rng`.
fn normal_(t: &Tensor, std: f64, rng: &mut SplitMix64) -> Result<(), Error> {
    let values: Vec<f32> = (0..t.data().len())
        .map(|_| (rng.normal() * std) as f32)
        .collect();
    let src = RawTensor::from_slice(t.data().device(), &values, t.shape())?;
    no_grad(|| t.copy_(&Tensor::constant(src)))
}

impl Gpt {
    /// A GPT initialised as nanoGPT initialises one (weights normal with std 0.02, the
    /// residual projections `c_proj` with `0.02 / sqrt(2 n_layer)`, biases zero, norms
    /// one), from `seed`, with `lm_head.weight` and `transformer.wte.weight` one
    /// parameter.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// use tang_nn::Module;
    /// let gpt = Gpt::new(&dev, &config, 1337)?; // GPT(config) after torch.manual_seed(1337)
    /// assert!(gpt.state_dict().contains("transformer.h.0.attn.c_attn.weight"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when a size is 0, `n_head` does not divide `n_embd`, `n_kv_head`
    /// does not divide `n_head`, or the device fails.
    pub fn new(dev: &Device, config: &GptConfig, seed: u64) -> Result<Gpt, Error> {
        let c = config;
        if c.vocab_size == 0 || c.block_size == 0 || c.n_layer == 0 || c.n_embd == 0 {
            return Err(invalid(
                "Gpt::new",
                format!("vocab_size, block_size, n_layer and n_embd must be positive, got {c:?}"),
            ));
        }
        let mut rng = SplitMix64::new(seed);
        let e = c.n_embd;
        let wte = Embedding::new(dev, c.vocab_size, e, &mut rng)?;
        let wpe = Embedding::new(dev, c.block_size, e, &mut rng)?;
        let mut h = Vec::with_capacity(c.n_layer);
        for _ in 0..c.n_layer {
            h.push(Block {
                ln_1: LayerNorm::new(dev, e, c.layer_norm_epsilon, c.bias)?,
                attn: CausalSelfAttention::new(dev, &c.attention(), &mut rng)?,
                ln_2: LayerNorm::new(dev, e, c.layer_norm_epsilon, c.bias)?,
                mlp: Mlp {
                    c_fc: Linear::new(dev, e, 4 * e, c.bias, &mut rng)?,
                    c_proj: Linear::new(dev, 4 * e, e, c.bias, &mut rng)?,
                    gelu: GELU::new(c.gelu),
                    dropout: Dropout::new(c.dropout)?,
                },
            });
        }
        // The head shares the token embedding's leaf: one parameter, two names.
        let lm_head = Linear {
            weight: wte.weight.clone(),
            bias: None,
        };
        let gpt = Gpt {
            transformer: GptTransformer {
                wte,
                wpe,
                drop: Dropout::new(c.dropout)?,
                h,
                ln_f: LayerNorm::new(dev, e, c.layer_norm_epsilon, c.bias)?,
            },
            lm_head,
            config: *config,
        };
        gpt.init_weights(&mut rng)?;
        Ok(gpt)
    }

    /// nanoGPT's `_init_weights` and its scaled `c_proj` initialisation.
    fn init_weights(&self, rng: &mut SplitMix64) -> Result<(), Error> {
        let proj_std = 0.02 / (2.0 * self.config.n_layer as f64).sqrt();
        let mut result = Ok(());
        self.visit_parameters("", &mut |name, t| {
            if result.is_err() || name == "lm_head.weight" {
                return;
            }
            result = if name.ends_with("c_proj.weight") {
                normal_(t, proj_std, rng)
            } else if name.ends_with(".bias") {
                no_grad(|| t.fill_(0.0))
            } else if name.contains(".ln_") || name.contains("ln_f") {
                no_grad(|| t.fill_(1.0))
            } else {
                normal_(t, 0.02, rng)
            };
        });
        result
    }

    /// The model's configuration.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// assert_eq!(gpt.config(), &config);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> &GptConfig {
        &self.config
    }

    /// The residual stream after the blocks and `ln_f`, `[B, T, C]`, for tokens whose first
    /// position is `start`; `block` runs one block.
    fn trunk(
        &self,
        idx: &Tensor,
        start: usize,
        mut block: impl FnMut(usize, &Block, &Tensor) -> Result<Tensor, Error>,
    ) -> Result<Tensor, Error> {
        let &[_, t] = idx.shape() else {
            return Err(invalid(
                "Gpt::forward",
                format!("idx must be [B, T] token ids, got shape {:?}", idx.shape()),
            ));
        };
        let bs = self.config.block_size;
        if t == 0 || start + t > bs {
            return Err(invalid(
                "Gpt::forward",
                format!(
                    "cannot forward positions {start}..{}: the block size is only {bs}",
                    start + t
                ),
            ));
        }
        // `start + t <= block_size`, which fits in u32 because the position table has it.
        // Uploaded rather than made by `arange` on the GPU: the host then knows they are
        // in range, so the position embedding needs no id check launch.
        let positions: Vec<u32> = (start as u32..(start + t) as u32).collect();
        let pos = Tensor::from_u32(idx.data().device(), &positions, &[t])?;
        let tr = &self.transformer;
        let x = tr.wte.forward(idx)?.add(&tr.wpe.forward(&pos)?)?;
        let mut x = tr.drop.forward(&x)?;
        for (i, b) in tr.h.iter().enumerate() {
            x = block(i, b, &x)?;
        }
        tr.ln_f.forward(&x)
    }

    /// The logits `[B, T, vocab_size]` of token ids `idx` (u32 `[B, T]`, `T <=
    /// block_size`): nanoGPT's `forward` without targets, at every position. For the loss,
    /// pass the logits to `cross_entropy`.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # use tang_nn::Tensor;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// use tang_nn::nn::functional::cross_entropy;
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// let idx = Tensor::from_u32(&dev, &[1, 2, 3, 4, 5, 6], &[2, 3])?; // [B, T]
    /// let logits = gpt.forward(&idx)?; // [B, T, vocab_size]
    /// let targets = Tensor::from_u32(&dev, &[2, 3, 4, 5, 6, 7], &[6])?;
    /// let loss = cross_entropy(&logits.reshape(&[6, 8])?, &targets)?;
    /// assert!(loss.backward()?.get(&gpt.lm_head.weight).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `idx` is not `[B, T]` u32 with `1 <= T <= block_size` or an
    /// id is not below `vocab_size`.
    pub fn forward(&self, idx: &Tensor) -> Result<Tensor, Error> {
        let x = self.trunk(idx, 0, |_, b, x| {
            let x = x.add(&b.attn.forward(&b.ln_1.forward(x)?)?)?;
            x.add(&b.mlp_forward(&b.ln_2.forward(&x)?)?)
        })?;
        self.lm_head.forward(&x)
    }

    /// An empty cache for `batch` sequences of up to `block_size` positions.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// let cache = gpt.new_cache(&dev, 2)?; // two sequences, up to block_size positions
    /// assert!(cache.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `batch` is 0 or the device fails.
    pub fn new_cache(&self, dev: &Device, batch: usize) -> Result<GptCache, Error> {
        let layers = self
            .transformer
            .h
            .iter()
            .map(|b| b.attn.new_cache(dev, batch, self.config.block_size))
            .collect::<Result<_, _>>()?;
        Ok(GptCache { layers })
    }

    /// The logits `[B, T, vocab_size]` of `T` tokens `idx` that follow the `cache.len()`
    /// tokens already in `cache` (at positions `cache.len()..`), writing their keys and
    /// values into it: the prefix is not recomputed. Equal to the last `T` positions of
    /// [`forward`](Self::forward) over the whole sequence in evaluation mode. Records
    /// nothing.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # use tang_nn::tang_runtime::Device;
    /// # use tang_nn::Tensor;
    /// # let dev = Device::new()?;
    /// # let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: true, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// let mut cache = gpt.new_cache(&dev, 1)?;
    /// gpt.forward_with_cache(&Tensor::from_u32(&dev, &[1, 2], &[1, 2])?, &mut cache)?;
    /// let next = gpt.forward_with_cache(&Tensor::from_u32(&dev, &[3], &[1, 1])?, &mut cache)?;
    /// assert_eq!(next.shape(), &[1, 1, 8]); // logits of the new position only
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`forward`](Self::forward), and [`Error::Runtime`] when the tokens do not fit in
    /// the block (clear the cache and start again from the last positions).
    pub fn forward_with_cache(&self, idx: &Tensor, cache: &mut GptCache) -> Result<Tensor, Error> {
        if cache.layers.len() != self.transformer.h.len() {
            return Err(invalid(
                "Gpt::forward_with_cache",
                format!(
                    "the cache has {} layers, the model {}; make it with Gpt::new_cache",
                    cache.layers.len(),
                    self.transformer.h.len()
                ),
            ));
        }
        let start = cache.len();
        no_grad(|| {
            let x = self.trunk(idx, start, |i, b, x| {
                let a = b
                    .attn
                    .forward_with_cache(&b.ln_1.forward(x)?, &mut cache.layers[i])?;
                let x = x.add(&a)?;
                x.add(&b.mlp_forward(&b.ln_2.forward(&x)?)?)
            })?;
            self.lm_head.forward(&x)
        })
    }
}

impl Block {
    /// The MLP: `dropout(c_proj(gelu(c_fc(x))))`.
    fn mlp_forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let m = &self.mlp;
        m.dropout
            .forward(&m.c_proj.forward(&m.gelu.forward(&m.c_fc.forward(x)?)?)?)
    }
}
