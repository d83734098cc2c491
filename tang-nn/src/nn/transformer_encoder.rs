//! PyTorch's `nn.TransformerEncoderLayer`: self-attention and a feed-forward block, each
//! with a residual connection and a layer norm, before (`norm_first`) or after the block,
//! with PyTorch's key names (`self_attn.*`, `linear1`, `linear2`, `norm1`, `norm2`).

use tang_runtime::Device;

use super::attention_multihead::MultiheadAttention;
use super::attention_sdpa::AttnMask;
use super::{Dropout, LayerNorm, Linear};
use crate::Module;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;

/// The feed-forward activation of a [`TransformerEncoderLayer`] (PyTorch's `activation`
/// argument, `"relu"` or `"gelu"`).
///
/// ```
/// use tang_nn::nn::{Activation, TransformerEncoderLayerConfig};
/// // nn.TransformerEncoderLayer(32, 4, activation="gelu")
/// let cfg = TransformerEncoderLayerConfig { activation: Activation::Gelu, ..TransformerEncoderLayerConfig::new(32, 4) };
/// assert_eq!(TransformerEncoderLayerConfig::new(32, 4).activation, Activation::Relu);
/// # let _ = cfg;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    /// `max(x, 0)` (PyTorch's default).
    #[default]
    Relu,
    /// Exact GELU, `x Φ(x)` (PyTorch's `"gelu"`).
    Gelu,
}

/// The options of a [`TransformerEncoderLayer`], PyTorch's defaults from
/// [`TransformerEncoderLayerConfig::new`].
///
/// ```
/// use tang_nn::nn::TransformerEncoderLayerConfig;
/// // nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
/// let cfg = TransformerEncoderLayerConfig {
///     dim_feedforward: 64,
///     dropout: 0.0,
///     batch_first: true,
///     ..TransformerEncoderLayerConfig::new(32, 4)
/// };
/// assert!(!cfg.norm_first && cfg.layer_norm_eps == 1e-5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerEncoderLayerConfig {
    /// Features of the input, `E`.
    pub d_model: usize,
    /// Attention heads (divides `d_model`).
    pub nhead: usize,
    /// Width of the feed-forward block (PyTorch's default 2048).
    pub dim_feedforward: usize,
    /// Dropout probability everywhere (PyTorch's default 0.1; training only).
    pub dropout: f32,
    /// The feed-forward activation (default ReLU).
    pub activation: Activation,
    /// The layer norms' epsilon (default 1e-5).
    pub layer_norm_eps: f32,
    /// Inputs `[N, S, E]` rather than `[S, N, E]` (default false).
    pub batch_first: bool,
    /// Layer norm before each block (pre-norm) rather than after (default false).
    pub norm_first: bool,
    /// Biases in the linear layers and layer norms (default true).
    pub bias: bool,
}

impl TransformerEncoderLayerConfig {
    /// PyTorch's defaults for `nn.TransformerEncoderLayer(d_model, nhead)`.
    ///
    /// ```
    /// let cfg = tang_nn::nn::TransformerEncoderLayerConfig::new(512, 8);
    /// assert_eq!((cfg.dim_feedforward, cfg.dropout, cfg.batch_first), (2048, 0.1, false)); // torch's defaults
    /// ```
    pub fn new(d_model: usize, nhead: usize) -> TransformerEncoderLayerConfig {
        TransformerEncoderLayerConfig {
            d_model,
            nhead,
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: Activation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// One transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer`).
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::{AttnMask, TransformerEncoderLayer, TransformerEncoderLayerConfig};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let cfg = TransformerEncoderLayerConfig { dim_feedforward: 256, norm_first: true, batch_first: true,
///                                           ..TransformerEncoderLayerConfig::new(64, 4) };
/// let layer = TransformerEncoderLayer::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
/// assert_eq!(layer.num_params(), 4 * 64 * 64 + 4 * 64 + 2 * 64 * 256 + 256 + 64 + 4 * 64);
/// let x = Tensor::zeros(&dev, &[2, 7, 64])?;
/// assert_eq!(layer.forward(&x, AttnMask::None)?.shape(), &[2, 7, 64]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub self_attn: MultiheadAttention,
    /// Feed-forward in, `[dim_feedforward, d_model]`.
    pub linear1: Linear,
    /// Dropout after the activation.
    pub dropout: Dropout,
    /// Feed-forward out, `[d_model, dim_feedforward]`.
    pub linear2: Linear,
    /// The attention block's layer norm.
    pub norm1: LayerNorm,
    /// The feed-forward block's layer norm.
    pub norm2: LayerNorm,
    /// Dropout on the attention block's output.
    pub dropout1: Dropout,
    /// Dropout on the feed-forward block's output.
    pub dropout2: Dropout,
    #[module(skip)]
    config: TransformerEncoderLayerConfig,
}

impl TransformerEncoderLayer {
    /// A layer initialised as PyTorch initialises one.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::Module;
    /// use tang_nn::nn::{TransformerEncoderLayer, TransformerEncoderLayerConfig};
    /// let cfg = TransformerEncoderLayerConfig { dim_feedforward: 16, ..TransformerEncoderLayerConfig::new(8, 2) };
    /// let layer = TransformerEncoderLayer::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert!(layer.state_dict().contains("self_attn.in_proj_weight")); // torch's keys
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `nhead` does not divide `d_model`, `dropout` is outside
    /// `[0, 1]`, or the device fails.
    pub fn new(
        dev: &Device,
        config: &TransformerEncoderLayerConfig,
        rng: &mut SplitMix64,
    ) -> Result<TransformerEncoderLayer, Error> {
        let c = config;
        let (e, f) = (c.d_model, c.dim_feedforward);
        Ok(TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(
                dev,
                e,
                c.nhead,
                c.dropout,
                c.bias,
                c.batch_first,
                rng,
            )?,
            linear1: Linear::new(dev, e, f, c.bias, rng)?,
            dropout: Dropout::new(c.dropout)?,
            linear2: Linear::new(dev, f, e, c.bias, rng)?,
            norm1: LayerNorm::new(dev, e, c.layer_norm_eps, c.bias)?,
            norm2: LayerNorm::new(dev, e, c.layer_norm_eps, c.bias)?,
            dropout1: Dropout::new(c.dropout)?,
            dropout2: Dropout::new(c.dropout)?,
            config: *config,
        })
    }

    /// The layer's options.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{TransformerEncoderLayer, TransformerEncoderLayerConfig};
    /// let cfg = TransformerEncoderLayerConfig { dim_feedforward: 16, ..TransformerEncoderLayerConfig::new(8, 2) };
    /// let layer = TransformerEncoderLayer::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(layer.config().dim_feedforward, 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> &TransformerEncoderLayerConfig {
        &self.config
    }

    /// Self-attention block: attention of `x` over itself, then dropout.
    fn sa_block(&self, x: &Tensor, mask: AttnMask<'_>) -> Result<Tensor, Error> {
        self.dropout1
            .forward(&self.self_attn.forward(x, x, x, mask)?)
    }

    /// Feed-forward block: `linear2(dropout(activation(linear1(x))))`, then dropout.
    fn ff_block(&self, x: &Tensor) -> Result<Tensor, Error> {
        let h = self.linear1.forward(x)?;
        let h = match self.config.activation {
            Activation::Relu => h.relu()?,
            Activation::Gelu => h.gelu_erf()?,
        };
        let h = self.linear2.forward(&self.dropout.forward(&h)?)?;
        self.dropout2.forward(&h)
    }

    /// The layer applied to `src` (`[N, S, E]` with `batch_first`, else `[S, N, E]`), with
    /// `mask` as PyTorch's `src_mask` / `is_causal`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::Module;
    /// use tang_nn::nn::{AttnMask, TransformerEncoderLayer, TransformerEncoderLayerConfig};
    /// let cfg = TransformerEncoderLayerConfig { dim_feedforward: 16, ..TransformerEncoderLayerConfig::new(8, 2) };
    /// let layer = TransformerEncoderLayer::new(&dev, &cfg, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// layer.eval(); // no dropout
    /// let src = Tensor::zeros(&dev, &[3, 1, 8])?; // [S, N, E]
    /// assert_eq!(layer.forward(&src, AttnMask::None)?.shape(), &[3, 1, 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `src` does not have `d_model` features or the mask does
    /// not fit.
    pub fn forward(&self, src: &Tensor, mask: AttnMask<'_>) -> Result<Tensor, Error> {
        let x = src;
        if self.config.norm_first {
            let x = x.add(&self.sa_block(&self.norm1.forward(x)?, mask)?)?;
            x.add(&self.ff_block(&self.norm2.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&x.add(&self.sa_block(x, mask)?)?)?;
            self.norm2.forward(&x.add(&self.ff_block(&x)?)?)
        }
    }
}
