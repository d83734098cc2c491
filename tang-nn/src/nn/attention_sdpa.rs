//! Scaled dot-product attention as PyTorch's `F.scaled_dot_product_attention`: one
//! function that every attention layer calls. Self-attention lengths (equal query and key
//! lengths) with the causal mask or none, with or without dropout on the weights, run the
//! fused flash-attention kernel of `tang_runtime::ops::attention`, whose backward is its
//! own kernels and which draws the dropout mask as the composed path does (the same seed,
//! the same mask); everything else (an additive mask, different lengths) is composed from
//! recording ops, so every case has a gradient.

use tang_runtime::Tensor as RawTensor;
use tang_runtime::ops::{AttentionOptions, MAX_HEAD_DIM};

use super::Dropout;
use crate::autograd::{Error, Tensor};

/// Which scores may be attended.
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::{AttnMask, scaled_dot_product_attention};
/// let q = Tensor::zeros(&dev, &[1, 1, 2, 4])?;
/// let no_peek = Tensor::from_slice(&dev, &[0.0, f32::NEG_INFINITY, 0.0, 0.0], &[2, 2])?;
/// let a = scaled_dot_product_attention(&q, &q, &q, AttnMask::Additive(&no_peek), None)?;
/// let b = scaled_dot_product_attention(&q, &q, &q, AttnMask::Causal, None)?; // the same mask
/// assert_eq!(a.to_vec()?, b.to_vec()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub enum AttnMask<'a> {
    /// Every query attends every key (PyTorch's `attn_mask=None, is_causal=False`).
    #[default]
    None,
    /// Query `i` attends keys `0..=i` (PyTorch's `is_causal=True`: the mask is the lower
    /// triangle of an `[L, S]` matrix of ones, aligned at the top left).
    Causal,
    /// A float mask added to the scaled scores before the softmax (`-inf` removes a
    /// score): any shape that broadcasts to `[B, H, L, S]`, usually `[L, S]` (PyTorch's
    /// float `attn_mask`).
    Additive(&'a Tensor),
}

/// The problem sizes of `q [B, H, L, D]` against `k, v [B, Hkv, S, D]`.
struct Sizes {
    h: usize,
    hkv: usize,
    l: usize,
    s: usize,
    d: usize,
}

fn invalid(detail: String) -> Error {
    super::invalid("scaled_dot_product_attention", detail)
}

fn sizes(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Sizes, Error> {
    let (&[b, h, l, d], &[kb, hkv, s, kd]) = (q.shape(), k.shape()) else {
        return Err(invalid(format!(
            "q must be [B, H, L, D] and k, v [B, Hkv, S, D]; got q {:?}, k {:?}",
            q.shape(),
            k.shape()
        )));
    };
    if v.shape() != k.shape() || kb != b || kd != d || hkv == 0 || !h.is_multiple_of(hkv) {
        return Err(invalid(format!(
            "k and v must both be [B={b}, Hkv, S, D={d}] with Hkv dividing H={h} \
             (grouped-query heads); got k {:?}, v {:?}",
            k.shape(),
            v.shape()
        )));
    }
    Ok(Sizes { h, hkv, l, s, d })
}

/// `softmax(q kᵀ / sqrt(D) + mask) v` per head, for `q [B, H, L, D]` and `k, v
/// [B, Hkv, S, D]` where `Hkv` divides `H` (grouped-query attention: query head `h` reads
/// kv head `h / (H / Hkv)`, PyTorch's `enable_gqa=True`). `dropout`, when given, is
/// applied to the attention weights as its `forward` would (PyTorch's `dropout_p`: nothing
/// in evaluation mode). Returns `[B, H, L, D]`.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::{AttnMask, scaled_dot_product_attention};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let q = Tensor::from_slice(&dev, &[0.1; 2 * 4 * 3], &[1, 2, 4, 3])?.into_parameter();
/// let kv = Tensor::from_slice(&dev, &[0.2; 4 * 3], &[1, 1, 4, 3])?;
/// let y = scaled_dot_product_attention(&q, &kv, &kv, AttnMask::Causal, None)?;
/// assert_eq!(y.shape(), &[1, 2, 4, 3]);
/// let drop = tang_nn::nn::Dropout::new(0.1)?; // dropout_p=0.1, in training
/// let y = scaled_dot_product_attention(&q, &kv, &kv, AttnMask::Causal, Some(&drop))?;
/// assert_eq!(y.shape(), &[1, 2, 4, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] when the shapes do not fit the contract above or the mask does not
/// broadcast to the scores.
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: AttnMask<'_>,
    dropout: Option<&Dropout>,
) -> Result<Tensor, Error> {
    let n = sizes(q, k, v)?;
    // The fused kernel covers self-attention lengths with the causal mask or none,
    // dropout and grouped heads included, for head dims up to `MAX_HEAD_DIM`.
    let fused_mask = match mask {
        AttnMask::None => Some(false),
        AttnMask::Causal => Some(true),
        AttnMask::Additive(_) => None,
    };
    if let Some(is_causal) = fused_mask
        && n.l == n.s
        && n.d <= MAX_HEAD_DIM
    {
        let state = dropout.and_then(Dropout::next_state);
        let options = AttentionOptions {
            scale: None,
            is_causal,
            dropout: state.as_ref(),
            // `Tensor::attention` adds autocast's setting.
            f16_inputs: false,
            token_major: false,
        };
        return q.attention(k, v, &options);
    }
    let (k, v) = if n.hkv == n.h {
        (k.clone(), v.clone())
    } else {
        let group = (n.h / n.hkv) as u32;
        let heads: Vec<u32> = (0..n.h as u32).map(|h| h / group).collect();
        let index = Tensor::from_u32(q.data().device(), &heads, &[n.h])?;
        (k.index_select(1, &index)?, v.index_select(1, &index)?)
    };
    let scale = 1.0 / (n.d as f32).sqrt();
    let mut scores = q.matmul(&k.permute(&[0, 1, 3, 2])?)?.mul_scalar(scale)?;
    match mask {
        AttnMask::None => {}
        AttnMask::Causal => {
            let tril = causal_mask(q.data().device(), n.l, n.s)?;
            scores = scores.add(&tril)?;
        }
        AttnMask::Additive(m) => scores = scores.add(m)?,
    }
    let mut weights = scores.softmax()?;
    if let Some(drop) = dropout {
        weights = drop.forward(&weights)?;
    }
    weights.matmul(&v)
}

/// The additive causal mask `[L, S]`: 0 where key `j <= i`, `-inf` above the diagonal.
fn causal_mask(dev: &tang_runtime::Device, l: usize, s: usize) -> Result<Tensor, Error> {
    let values: Vec<f32> = (0..l)
        .flat_map(|i| (0..s).map(move |j| if j <= i { 0.0 } else { f32::NEG_INFINITY }))
        .collect();
    Ok(Tensor::constant(RawTensor::from_slice(
        dev,
        &values,
        &[l, s],
    )?))
}
