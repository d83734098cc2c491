//! The recording ops: each runs the runtime's forward kernel and, when an input requires
//! grad, records its entry of the op table. PyTorch's names; `dim` as in PyTorch.

use std::sync::Arc;

use tang_runtime::dense::{attention, cross_entropy, embedding, matmul, norm, reduce, softmax};
use tang_runtime::ops;

use super::Error;
use super::op::Op;
use super::tensor::{RawTensor, Tensor};

impl Tensor {
    /// `self · other` for `[.., m, k] · [.., k, n]` (PyTorch's `matmul` for rank >= 2).
    ///
    /// # Errors
    /// [`Error::Runtime`] when the inner sizes differ.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor, Error> {
        let out = matmul::matmul(self.data(), other.data())?;
        Ok(Tensor::record(out, Op::Matmul, &[self, other], true, false))
    }

    /// The same values in another shape of as many elements (shares the buffer).
    ///
    /// # Errors
    /// [`Error::Runtime`] when the element counts differ.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor, Error> {
        let out = ops::reshape(self.data(), shape)?;
        let version = Arc::clone(&self.node.version);
        Ok(Tensor::record_sharing(
            out,
            version,
            Op::Reshape,
            &[self],
            false,
            false,
        ))
    }

    /// The dimensions reordered: result dimension `i` is input dimension `dims[i]`.
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `dims` is a permutation of `0..rank`.
    pub fn permute(&self, dims: &[usize]) -> Result<Tensor, Error> {
        let out = ops::permute(self.data(), dims)?;
        let op = Op::Permute(dims.to_vec());
        Ok(Tensor::record(out, op, &[self], false, false))
    }

    /// `length` entries of dimension `dim` from `start`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when the range leaves the dimension.
    pub fn narrow(&self, dim: usize, start: usize, length: usize) -> Result<Tensor, Error> {
        let out = ops::narrow(self.data(), dim, start, length)?;
        Ok(Tensor::record(
            out,
            Op::Narrow { dim, start },
            &[self],
            false,
            false,
        ))
    }

    /// The tensors joined along `dim` (PyTorch's `torch.cat`).
    ///
    /// # Errors
    /// [`Error::Runtime`] when the other dimensions differ or the list is empty.
    pub fn cat(xs: &[&Tensor], dim: usize) -> Result<Tensor, Error> {
        let raw: Vec<&RawTensor> = xs.iter().map(|t| t.data()).collect();
        let out = ops::cat(&raw, dim)?;
        Ok(Tensor::record(out, Op::Cat(dim), xs, false, false))
    }

    /// The entries of `dim` listed by `index` (a 1-D u32 tensor).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `index` is not 1-D u32 or `dim` is out of range.
    pub fn index_select(&self, dim: usize, index: &RawTensor) -> Result<Tensor, Error> {
        let out = ops::index_select(self.data(), dim, index)?;
        let op = Op::IndexSelect {
            dim,
            index: index.clone(),
        };
        Ok(Tensor::record(out, op, &[self], false, false))
    }

    /// Sum along `dim`, which is removed (a 1-D input gives `[1]`).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `dim >= rank`.
    pub fn sum(&self, dim: usize) -> Result<Tensor, Error> {
        let out = reduce::sum(self.data(), dim)?;
        Ok(Tensor::record(out, Op::Sum(dim), &[self], false, false))
    }

    /// Mean along `dim`, which is removed (a 1-D input gives `[1]`).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `dim >= rank` or the dimension is empty.
    pub fn mean(&self, dim: usize) -> Result<Tensor, Error> {
        let out = reduce::mean(self.data(), dim)?;
        Ok(Tensor::record(out, Op::Mean(dim), &[self], false, false))
    }

    /// Sum of every element, shape `[1]`.
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn sum_all(&self) -> Result<Tensor, Error> {
        let out = reduce::sum_all(self.data())?;
        Ok(Tensor::record(out, Op::SumAll, &[self], false, false))
    }

    /// Mean of every element, shape `[1]`.
    ///
    /// # Errors
    /// [`Error::Runtime`] for an empty or u32 tensor.
    pub fn mean_all(&self) -> Result<Tensor, Error> {
        let out = reduce::mean_all(self.data())?;
        Ok(Tensor::record(out, Op::MeanAll, &[self], false, false))
    }

    /// Softmax over the last dimension.
    ///
    /// # Errors
    /// [`Error::Runtime`] for a scalar or u32 tensor.
    pub fn softmax(&self) -> Result<Tensor, Error> {
        let out = softmax::softmax(self.data())?;
        let op = Op::Softmax(out.clone());
        Ok(Tensor::record(out, op, &[self], false, true))
    }

    /// Log-softmax over the last dimension.
    ///
    /// # Errors
    /// As [`Tensor::softmax`].
    pub fn log_softmax(&self) -> Result<Tensor, Error> {
        let out = softmax::log_softmax(self.data())?;
        let op = Op::LogSoftmax(out.clone());
        Ok(Tensor::record(out, op, &[self], false, true))
    }

    /// Layer norm over the last dimension with `weight [n]` and `bias [n]` (PyTorch's
    /// `F.layer_norm(x, (n,), weight, bias, eps)`; PyTorch's default `eps` is 1e-5).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `weight`/`bias` are not `[n]`.
    pub fn layer_norm(&self, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor, Error> {
        let out = norm::layer_norm(self.data(), weight.data(), bias.data(), eps)?;
        let op = Op::LayerNorm(out.stats);
        Ok(Tensor::record(
            out.y,
            op,
            &[self, weight, bias],
            true,
            false,
        ))
    }

    /// RMS norm over the last dimension with `weight [n]`:
    /// `x / sqrt(mean(x^2) + eps) * weight` (PyTorch's `F.rms_norm(x, (n,), weight, eps)`).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `weight` is not `[n]`.
    pub fn rms_norm(&self, weight: &Tensor, eps: f32) -> Result<Tensor, Error> {
        let out = norm::rms_norm(self.data(), weight.data(), eps)?;
        let op = Op::RmsNorm(out.stats);
        Ok(Tensor::record(out.y, op, &[self, weight], true, false))
    }

    /// Rows of `weight [vocab, dim]` picked by `ids` (u32, any shape): `[..., dim]`
    /// (PyTorch's `F.embedding(ids, weight)`).
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `ids` is u32 and `weight` 2-D f32.
    pub fn embedding(ids: &RawTensor, weight: &Tensor) -> Result<Tensor, Error> {
        let out = embedding::embedding(ids, weight.data())?;
        let op = Op::Embedding(ids.clone());
        Ok(Tensor::record(out, op, &[weight], false, false))
    }

    /// Mean cross-entropy of `self` (logits `[..., classes]`) against class indices
    /// `targets` (u32, `[...]`), over rows whose target is not `ignore_index` (PyTorch's
    /// `F.cross_entropy(logits, targets, ignore_index=..)`, `reduction="mean"`). Shape `[1]`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when `targets` is not `logits`' shape without its last dimension.
    pub fn cross_entropy(
        &self,
        targets: &RawTensor,
        ignore_index: Option<u32>,
    ) -> Result<Tensor, Error> {
        let ce = cross_entropy::cross_entropy(self.data(), targets, ignore_index)?;
        let op = Op::CrossEntropy(ce.grad);
        Ok(Tensor::record(ce.loss, op, &[self], false, false))
    }

    /// Causal scaled dot-product attention, `softmax(scale * q kᵀ + causal mask) v` per
    /// head (PyTorch's `F.scaled_dot_product_attention(q, k, v, is_causal=True)`):
    /// `self` is `q [B, H, T, D]`, `k` and `v` are `[B, Hkv, T, D]` with `Hkv` dividing `H`
    /// (grouped-query heads), `D <= 128`; `scale` defaults to `1 / sqrt(D)`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes do not fit or `D > 128`.
    pub fn attention(&self, k: &Tensor, v: &Tensor, scale: Option<f32>) -> Result<Tensor, Error> {
        let (o, lse) = attention::attention(self.data(), k.data(), v.data(), scale)?;
        let op = Op::Attention {
            o: o.clone(),
            lse,
            scale,
        };
        Ok(Tensor::record(o, op, &[self, k, v], true, true))
    }
}
