//! PyTorch's `nn.MultiheadAttention`: its parameter names and layouts (`in_proj_weight
//! [3E, E]`, `in_proj_bias [3E]`, `out_proj.weight`, `out_proj.bias`), its
//! initialisation, `batch_first`, dropout on the attention weights.

use tang_runtime::Device;

use super::attention_sdpa::{AttnMask, scaled_dot_product_attention};
use super::{Dropout, Linear};
use crate::Module;
use crate::autograd::{Error, RawTensor, Tensor};
use crate::rng::SplitMix64;

/// Multi-head attention over `query`, `key`, `value` (PyTorch's `nn.MultiheadAttention`
/// with `kdim = vdim = embed_dim`, no `add_bias_kv`, no `add_zero_attn`).
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::{AttnMask, MultiheadAttention};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let mha = MultiheadAttention::new(&dev, 64, 4, 0.0, true, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// assert_eq!(mha.state_dict().names().collect::<Vec<_>>(),
///            ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]);
/// let x = Tensor::zeros(&dev, &[2, 5, 64])?; // batch_first
/// assert_eq!(mha.forward(&x, &x, &x, AttnMask::None)?.shape(), &[2, 5, 64]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct MultiheadAttention {
    /// Query, key and value projections stacked, `[3E, E]`.
    pub in_proj_weight: Tensor,
    /// Their biases, `[3E]` (absent with `bias = false`).
    pub in_proj_bias: Option<Tensor>,
    /// The output projection `[E, E]`.
    pub out_proj: Linear,
    /// Dropout on the attention weights (training only).
    pub dropout: Dropout,
    #[module(skip)]
    num_heads: usize,
    #[module(skip)]
    batch_first: bool,
}

impl MultiheadAttention {
    /// `embed_dim` split over `num_heads` heads, attention-weight `dropout`, biases when
    /// `bias`, inputs `[N, L, E]` when `batch_first` (else `[L, N, E]`), as
    /// `nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first=...)`.
    /// Initialised as PyTorch: `in_proj_weight` Xavier-uniform, biases zero, `out_proj`
    /// as a `Linear`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::Module;
    /// use tang_nn::nn::MultiheadAttention;
    /// // nn.MultiheadAttention(8, 2, batch_first=True)
    /// let mha = MultiheadAttention::new(&dev, 8, 2, 0.0, true, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let names: Vec<String> = mha.state_dict().names().map(str::to_string).collect();
    /// assert_eq!(names, ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `num_heads` does not divide `embed_dim`, `dropout` is
    /// outside `[0, 1]`, or the device fails.
    pub fn new(
        dev: &Device,
        embed_dim: usize,
        num_heads: usize,
        dropout: f32,
        bias: bool,
        batch_first: bool,
        rng: &mut SplitMix64,
    ) -> Result<MultiheadAttention, Error> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(super::invalid(
                "MultiheadAttention",
                format!(
                    "embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}"
                ),
            ));
        }
        // PyTorch's `xavier_uniform_`: uniform in ±sqrt(6 / (fan_in + fan_out)).
        let shape = [3 * embed_dim, embed_dim];
        let bound = (6.0 / (4 * embed_dim) as f64).sqrt();
        let in_proj_weight = Tensor::parameter(super::init::uniform(
            dev,
            "MultiheadAttention",
            &shape,
            bound,
            rng,
        )?);
        let in_proj_bias = if bias {
            Some(Tensor::parameter(RawTensor::zeros(dev, &[3 * embed_dim])?))
        } else {
            None
        };
        let out_proj = Linear::new(dev, embed_dim, embed_dim, bias, rng)?;
        if let Some(b) = &out_proj.bias {
            crate::autograd::no_grad(|| b.fill_(0.0))?;
        }
        Ok(MultiheadAttention {
            in_proj_weight,
            in_proj_bias,
            out_proj,
            dropout: Dropout::new(dropout)?,
            num_heads,
            batch_first,
        })
    }

    /// `x [N, L, E]` (or `[L, N, E]`) projected by rows `part·E..(part+1)·E` of the
    /// stacked projection, as heads `[N, H, L, D]`.
    fn project(&self, x: &Tensor, part: usize) -> Result<Tensor, Error> {
        let e = self.in_proj_weight.shape()[1];
        let x = if self.batch_first {
            x.clone()
        } else {
            x.permute(&[1, 0, 2])?
        };
        let [n, l, xe] = *x.shape() else {
            return Err(input_error(x.shape(), e));
        };
        if xe != e {
            return Err(input_error(x.shape(), e));
        }
        let w = self.in_proj_weight.narrow(0, part * e, e)?;
        let mut y = x.matmul(&w.permute(&[1, 0])?)?;
        if let Some(b) = &self.in_proj_bias {
            y = y.add(&b.narrow(0, part * e, e)?)?;
        }
        let d = e / self.num_heads;
        y.reshape(&[n, l, self.num_heads, d])?
            .permute(&[0, 2, 1, 3])
    }

    /// Attention of `query` over `key` and `value`, each `[N, L, E]` with `batch_first`
    /// (else `[L, N, E]`), `key` and `value` of one length `S`; `mask` as PyTorch's
    /// `attn_mask` (additive, `[L, S]`) or `is_causal`. Returns the attention output
    /// only (PyTorch's first result; call with `need_weights=False` there to compare).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{AttnMask, MultiheadAttention};
    /// let mha = MultiheadAttention::new(&dev, 8, 2, 0.0, true, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let x = Tensor::zeros(&dev, &[1, 3, 8])?; // [N, L, E]
    /// assert_eq!(mha.forward(&x, &x, &x, AttnMask::Causal)?.shape(), &[1, 3, 8]); // mha(x, x, x, is_causal=True)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the inputs do not have `embed_dim` features, their batch or
    /// key/value lengths differ, or the mask does not broadcast to `[L, S]`.
    pub fn forward(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        mask: AttnMask<'_>,
    ) -> Result<Tensor, Error> {
        let (q, k, v) = (
            self.project(query, 0)?,
            self.project(key, 1)?,
            self.project(value, 2)?,
        );
        let y = scaled_dot_product_attention(&q, &k, &v, mask, Some(&self.dropout))?;
        let [n, _, l, _] = *y.shape() else {
            return Err(input_error(y.shape(), self.in_proj_weight.shape()[1]));
        };
        let e = self.in_proj_weight.shape()[1];
        let y = y.permute(&[0, 2, 1, 3])?.reshape(&[n, l, e])?;
        let y = self.out_proj.forward(&y)?;
        if self.batch_first {
            Ok(y)
        } else {
            y.permute(&[1, 0, 2])
        }
    }
}

fn input_error(shape: &[usize], e: usize) -> Error {
    Error::Runtime(tang_runtime::Error::ShapeMismatch {
        op: format!("MultiheadAttention(embed_dim {e})"),
        detail: format!("inputs must be 3-D with embed_dim = {e} features, got {shape:?}"),
    })
}
