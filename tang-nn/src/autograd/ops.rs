//! The recording ops: each runs the runtime's forward kernel and, when an input requires
//! grad, records its entry of the op table. PyTorch's names; `dim` as in PyTorch.

use std::sync::Arc;

use tang_runtime::ops;

use super::Error;
use super::op::Op;
use super::tensor::{RawTensor, Tensor};

impl Tensor {
    /// `self · other` for `[.., m, k] · [.., k, n]` (PyTorch's `matmul` for rank >= 2).
    /// Under [`autocast`](crate::amp::autocast) both operands are rounded to f16 and
    /// multiplied with f32 accumulation, and the result is f16 (as PyTorch's autocast
    /// returns), in backward too.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[1, 2])?;
    /// let w = Tensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0], &[2, 2])?.into_parameter();
    /// assert_eq!(x.matmul(&w)?.to_vec()?, [1.0, 2.0]); // torch: x @ w
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the inner sizes differ.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor, Error> {
        let f16_inputs = crate::amp::is_autocast_enabled();
        let options = ops::MatmulOptions {
            f16_inputs,
            out_dtype: crate::amp::autocast_out_dtype(),
            ..ops::MatmulOptions::default()
        };
        let out = ops::matmul_with(self.data(), other.data(), &options)?;
        let op = Op::Matmul { f16_inputs };
        Ok(Tensor::record(out, op, &[self, other], true, false))
    }

    /// The same values in another shape of as many elements (shares the buffer); one
    /// dimension may be `-1`, inferred from the others (see [`Dims`](super::Dims)).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2, 3])?;
    /// assert_eq!(x.reshape(&[3, 2])?.shape(), &[3, 2]); // torch: x.reshape(3, 2)
    /// assert_eq!(x.reshape(&[-1])?.shape(), &[6]); // torch: x.reshape(-1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the element counts differ, or with more than one `-1`.
    pub fn reshape<D: super::create::Dims + ?Sized>(&self, shape: &D) -> Result<Tensor, Error> {
        let shape = super::create::infer_shape(self.shape(), &shape.dims())?;
        let out = ops::reshape(self.data(), &shape)?;
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
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2, 3, 4])?;
    /// assert_eq!(x.permute(&[2, 0, 1])?.shape(), &[4, 2, 3]); // torch: x.permute(2, 0, 1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[4])?;
    /// assert_eq!(x.narrow(0, 1, 2)?.to_vec()?, [2.0, 3.0]); // torch: x.narrow(0, 1, 2)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Splits the tensor into `chunks` views along `dim` (PyTorch's `torch.chunk`): each
    /// `ceil(size / chunks)` long, the last one shorter when the size does not divide
    /// (so fewer than `chunks` pieces can come back, as in PyTorch). Gradients flow back
    /// through every piece.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0], &[5])?;
    /// let parts = x.chunk(2, 0)?; // torch: x.chunk(2, 0)
    /// assert_eq!(parts[0].to_vec()?, [1.0, 2.0, 3.0]);
    /// assert_eq!(parts[1].to_vec()?, [4.0, 5.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `chunks` is 0 or `dim` is not a dimension of the tensor.
    pub fn chunk(&self, chunks: usize, dim: usize) -> Result<Vec<Tensor>, Error> {
        let Some(&size) = self.shape().get(dim) else {
            return Err(Error::Runtime(tang_runtime::Error::ShapeMismatch {
                op: "chunk".into(),
                detail: format!(
                    "dim {dim} is not a dimension of shape {:?}; pass a dim below {}",
                    self.shape(),
                    self.shape().len()
                ),
            }));
        };
        if chunks == 0 {
            return Err(Error::Runtime(tang_runtime::Error::ShapeMismatch {
                op: "chunk".into(),
                detail: "chunks must be at least 1".into(),
            }));
        }
        let step = size.div_ceil(chunks).max(1);
        (0..size)
            .step_by(step)
            .map(|start| self.narrow(dim, start, step.min(size - start)))
            .collect()
    }

    /// The tensors joined along `dim` (PyTorch's `torch.cat`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[1.0], &[1])?;
    /// let b = Tensor::from_slice(&dev, &[2.0, 3.0], &[2])?;
    /// assert_eq!(Tensor::cat(&[&a, &b], 0)?.to_vec()?, [1.0, 2.0, 3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[10.0, 20.0, 30.0], &[3])?;
    /// let idx = Tensor::from_u32(&dev, &[2, 0], &[2])?;
    /// assert_eq!(x.index_select(0, &idx)?.to_vec()?, [30.0, 10.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `index` is not 1-D u32 or `dim` is out of range.
    pub fn index_select(&self, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
        let out = ops::index_select(self.data(), dim, index.data())?;
        let op = Op::IndexSelect {
            dim,
            index: index.data().clone(),
        };
        Ok(Tensor::record(out, op, &[self], false, false))
    }

    /// Sum along `dim`, which is removed (a 1-D input gives `[1]`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(x.sum(1)?.to_vec()?, [3.0, 7.0]); // torch: x.sum(dim=1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `dim >= rank`.
    pub fn sum(&self, dim: usize) -> Result<Tensor, Error> {
        let out = ops::sum(self.data(), dim)?;
        Ok(Tensor::record(out, Op::Sum(dim), &[self], false, false))
    }

    /// Mean along `dim`, which is removed (a 1-D input gives `[1]`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(x.mean(0)?.to_vec()?, [2.0, 3.0]); // torch: x.mean(dim=0)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `dim >= rank` or the dimension is empty.
    pub fn mean(&self, dim: usize) -> Result<Tensor, Error> {
        let out = ops::mean(self.data(), dim)?;
        Ok(Tensor::record(out, Op::Mean(dim), &[self], false, false))
    }

    /// Sum of every element, shape `[1]`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3])?;
    /// assert_eq!(x.sum_all()?.to_vec()?, [6.0]); // torch: x.sum()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn sum_all(&self) -> Result<Tensor, Error> {
        let out = ops::sum_all(self.data())?;
        Ok(Tensor::record(out, Op::SumAll, &[self], false, false))
    }

    /// Mean of every element, shape `[1]`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3])?;
    /// assert_eq!(x.mean_all()?.to_vec()?, [2.0]); // torch: x.mean()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for an empty or u32 tensor.
    pub fn mean_all(&self) -> Result<Tensor, Error> {
        let out = ops::mean_all(self.data())?;
        Ok(Tensor::record(out, Op::MeanAll, &[self], false, false))
    }

    /// Softmax over the last dimension.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 0.0], &[1, 2])?;
    /// assert_eq!(x.softmax()?.to_vec()?, [0.5, 0.5]); // torch: x.softmax(-1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a scalar or u32 tensor.
    pub fn softmax(&self) -> Result<Tensor, Error> {
        let out = ops::softmax(self.data())?;
        let op = Op::Softmax(out.clone());
        Ok(Tensor::record(out, op, &[self], false, true))
    }

    /// Log-softmax over the last dimension.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 1.0], &[1, 2])?;
    /// let y = x.log_softmax()?.to_vec()?; // torch: x.log_softmax(-1)
    /// assert!((y[0] + std::f32::consts::LN_2).abs() < 1e-6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::softmax`].
    pub fn log_softmax(&self) -> Result<Tensor, Error> {
        let out = ops::log_softmax(self.data())?;
        let op = Op::LogSoftmax(out.clone());
        Ok(Tensor::record(out, op, &[self], false, true))
    }

    /// Layer norm over the last dimension with `weight [n]` and `bias [n]` (PyTorch's
    /// `F.layer_norm(x, (n,), weight, bias, eps)`; PyTorch's default `eps` is 1e-5).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 3.0], &[1, 2])?;
    /// let w = Tensor::full(&dev, &[2], 1.0)?.into_parameter();
    /// let b = Tensor::zeros(&dev, &[2])?.into_parameter();
    /// let y = x.layer_norm(&w, &b, 1e-5)?.to_vec()?;
    /// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `weight`/`bias` are not `[n]`.
    pub fn layer_norm(&self, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor, Error> {
        let out = ops::layer_norm(self.data(), weight.data(), bias.data(), eps)?;
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
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[3.0, 4.0], &[1, 2])?;
    /// let w = Tensor::full(&dev, &[2], 1.0)?.into_parameter();
    /// assert_eq!(x.rms_norm(&w, 1e-6)?.shape(), &[1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `weight` is not `[n]`.
    pub fn rms_norm(&self, weight: &Tensor, eps: f32) -> Result<Tensor, Error> {
        let out = ops::rms_norm(self.data(), weight.data(), eps)?;
        let op = Op::RmsNorm(out.stats);
        Ok(Tensor::record(out.y, op, &[self, weight], true, false))
    }

    /// Rows of `weight [vocab, dim]` picked by `ids` (u32, any shape): `[..., dim]`
    /// (PyTorch's `F.embedding(ids, weight)`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let table = Tensor::from_slice(&dev, &[0.0, 1.0, 2.0, 3.0], &[2, 2])?.into_parameter();
    /// let ids = Tensor::from_u32(&dev, &[1, 1, 0], &[3])?;
    /// assert_eq!(Tensor::embedding(&ids, &table)?.to_vec()?, [2.0, 3.0, 2.0, 3.0, 0.0, 1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `ids` is u32 and `weight` 2-D f32.
    pub fn embedding(ids: &Tensor, weight: &Tensor) -> Result<Tensor, Error> {
        let out = ops::embedding(ids.data(), weight.data())?;
        let op = Op::Embedding(ids.data().clone());
        Ok(Tensor::record(out, op, &[weight], false, false))
    }

    /// Mean cross-entropy of `self` (logits `[..., classes]`) against class indices
    /// `targets` (u32, `[...]`), over rows whose target is not `ignore_index` (PyTorch's
    /// `F.cross_entropy(logits, targets, ignore_index=..)`, `reduction="mean"`). Shape `[1]`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let logits = Tensor::zeros(&dev, &[2, 4])?.into_parameter();
    /// let targets = Tensor::from_u32(&dev, &[3, 0], &[2])?;
    /// let loss = logits.cross_entropy(&targets, None)?; // torch: F.cross_entropy(logits, targets)
    /// assert!((loss.to_vec()?[0] - 4f32.ln()).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `targets` is not `logits`' shape without its last dimension.
    pub fn cross_entropy(
        &self,
        targets: &Tensor,
        ignore_index: Option<u32>,
    ) -> Result<Tensor, Error> {
        // Under autocast the loss of f16 logits stays f32 (PyTorch's autocast runs
        // cross-entropy in f32). The forward computes the losses alone; the backward
        // recomputes the gradient from the logits and the row losses, scaled by the
        // upstream gradient and then rounded to the logits' dtype (a GradScaler's scale
        // reaches it before f16 does), in one pass.
        let loss_dtype = if crate::amp::is_autocast_enabled() {
            tang_runtime::DType::F32
        } else {
            self.dtype()
        };
        let ce = ops::cross_entropy_forward(self.data(), targets.data(), ignore_index, loss_dtype)?;
        let op = Op::CrossEntropy {
            targets: targets.data().clone(),
            ignore_index,
            row_loss: ce.row_loss_f32,
            count: ce.count,
        };
        Ok(Tensor::record(ce.loss, op, &[self], true, false))
    }

    /// Scaled dot-product attention, `dropout(softmax(scale * q kᵀ [+ causal mask])) v` per
    /// head in one fused kernel (PyTorch's
    /// `F.scaled_dot_product_attention(q, k, v, dropout_p=.., is_causal=.., scale=..)`):
    /// `self` is `q [B, H, T, D]`, `k` and `v` are `[B, Hkv, T, D]` with `Hkv` dividing `H`
    /// (grouped-query heads), `D <= 128`. `options` give the scale (default `1 / sqrt(D)`),
    /// the causal mask and the dropout (in training), whose mask backward regenerates.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::tang_runtime::ops::{AttentionOptions, DropoutState, Generator};
    /// let q = Tensor::zeros(&dev, &[1, 2, 3, 4])?; // [B, H, T, D]
    /// let kv = Tensor::zeros(&dev, &[1, 1, 3, 4])?; // one shared KV head
    /// assert_eq!(q.attention(&kv, &kv, &AttentionOptions::CAUSAL)?.shape(), &[1, 2, 3, 4]);
    /// let drop = DropoutState { stream: Generator::new(0).next_stream(), p: 0.2 };
    /// let options = AttentionOptions { dropout: Some(&drop), ..AttentionOptions::CAUSAL };
    /// assert_eq!(q.attention(&kv, &kv, &options)?.shape(), &[1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes do not fit, `D > 128`, or the dropout
    /// probability is outside `[0, 1]`.
    pub fn attention(
        &self,
        k: &Tensor,
        v: &Tensor,
        options: &ops::AttentionOptions,
    ) -> Result<Tensor, Error> {
        // Under autocast q, k and v are rounded to f16 for the products (on the tensor
        // cores where the device has them), as PyTorch's autocast runs attention in f16.
        let options = ops::AttentionOptions {
            f16_inputs: options.f16_inputs || crate::amp::is_autocast_enabled(),
            ..*options
        };
        let (o, lse) = ops::attention(self.data(), k.data(), v.data(), &options)?;
        let op = Op::Attention {
            o: o.clone(),
            lse,
            scale: options.scale,
            is_causal: options.is_causal,
            dropout: options.dropout.copied(),
            f16_inputs: options.f16_inputs,
            token_major: options.token_major,
        };
        Ok(Tensor::record(o, op, &[self, k, v], true, true))
    }

    /// Causal attention of the heads packed in `self` `[B, T, (heads + 2·kv_heads)·D]` (a
    /// fused q/k/v projection: q's heads, then k's, then v's): `[B, T, heads, D]` (token
    /// by token, as an output projection reads it), equal to splitting the heads out,
    /// calling [`Tensor::attention`] (with `dropout`) and permuting its result, with fewer
    /// copies forward and backward.
    pub(crate) fn packed_causal_attention(
        &self,
        heads: usize,
        kv_heads: usize,
        head_dim: usize,
        dropout: Option<ops::DropoutState>,
    ) -> Result<Tensor, Error> {
        let x = self.data();
        let n = x.shape().last().copied().unwrap_or(0);
        if Some(n) != (heads + 2 * kv_heads).checked_mul(head_dim) {
            return Err(Error::Runtime(tang_runtime::Error::ShapeMismatch {
                op: "packed_causal_attention".into(),
                detail: format!(
                    "the packed input's last dimension is {n}, expected ({heads} + 2 * {kv_heads}) * {head_dim}"
                ),
            }));
        }
        let f16_inputs = crate::amp::is_autocast_enabled();
        let half = f16_inputs || x.dtype() == tang_runtime::DType::F16;
        if ops::attention_token_major_is_free(x.device(), head_dim, half) {
            // The kernels read the packed heads and write the output token-major: no
            // split, no permute, forward or backward.
            let options = ops::AttentionOptions {
                dropout: dropout.as_ref(),
                f16_inputs,
                token_major: true,
                ..ops::AttentionOptions::CAUSAL
            };
            let (o, lse) = ops::attention_packed(x, heads, kv_heads, &options)?;
            let op = Op::PackedAttentionDirect {
                heads,
                kv_heads,
                o: o.clone(),
                lse,
                dropout,
                f16_inputs,
            };
            return Ok(Tensor::record(o, op, &[self], true, true));
        }
        let (q, k, v) = ops::split_qkv_heads(x, heads, kv_heads, head_dim)?;
        let options = ops::AttentionOptions {
            dropout: dropout.as_ref(),
            f16_inputs,
            ..ops::AttentionOptions::CAUSAL
        };
        let (o, lse) = ops::attention(&q, &k, &v, &options)?;
        let op = Op::PackedAttention {
            q,
            k,
            v,
            o: o.clone(),
            lse,
            dropout,
            f16_inputs,
        };
        Tensor::record(o, op, &[self], false, true).permute(&[0, 2, 1, 3])
    }
}
