//! The recording ops layers and losses are built from: `linear` (one matmul with the
//! bias fused), `dropout` (mask regenerated in backward), `gather`, elementwise
//! activations and the elementwise parts of losses. PyTorch's names.

use tang_runtime::DType;
use tang_runtime::ops::{self, Generator, MatmulOptions};

use super::Error;
use super::layer_kernels::{bce_with_logits, mul_by, square};
use super::op::Op;
use super::tensor::{RawTensor, Tensor};

impl Tensor {
    /// `self · weightᵀ + bias` for `self [.., in]`, `weight [out, in]`, `bias [out]`
    /// (PyTorch's `F.linear`): one matmul reading the weight transposed in place, with
    /// the bias added as C is stored. Under [`autocast`](crate::amp::autocast) `self` and
    /// `weight` are rounded to f16 and multiplied with f32 accumulation, the bias added in
    /// f32, and the result is f16 (PyTorch's autocast returns f16 from `linear`); the
    /// backward multiplies the same way, and each gradient has its input's dtype. An f32
    /// parameter is cast to f16 once per autocast region, and every product reading it
    /// there reuses the copy, as PyTorch's autocast does; an f32 input is cast once per
    /// call and the copy kept for the weight's gradient (PyTorch saves its f16 cast too).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::Device;
    /// let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[1, 2])?;
    /// let w = Tensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2])?.into_parameter();
    /// assert_eq!(x.linear(&w, None)?.to_vec()?, vec![1.0, 2.0, 3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the inner sizes differ or `bias` is not `[out]`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, Error> {
        let f16_inputs = crate::amp::is_autocast_enabled();
        let options = MatmulOptions {
            transpose_b: true,
            bias: bias.map(Tensor::data),
            f16_inputs,
            out_dtype: crate::amp::autocast_out_dtype(),
            ..MatmulOptions::default()
        };
        let weight_cast = crate::amp::cast_parameter(weight)?;
        let w = weight_cast.as_ref().unwrap_or(weight.data());
        // An f32 input is cast to f16 once, as PyTorch's autocast casts it: the forward
        // and the weight's gradient then read two f16 operands, where both rounded the
        // f32 input as their tiles loaded it (the f32 loads cost the char GPT's AMP
        // step's input products about a quarter of their speed on an H200,
        // BENCHMARKS.md 2026-11-29 (seventh session)).
        let input_cast = if f16_inputs && self.data().dtype() == DType::F32 {
            Some(self.data().to_dtype(DType::F16)?)
        } else {
            None
        };
        let x = input_cast.as_ref().unwrap_or(self.data());
        let out = ops::matmul_with(x, w, &options)?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        let op = Op::Linear {
            f16_inputs,
            weight_cast,
            input_cast,
        };
        Ok(Tensor::record(out, op, &inputs, true, false))
    }

    /// Zeroes each element with probability `p` and scales the rest by `1 / (1 - p)`,
    /// drawing the mask from `generator` (PyTorch's `F.dropout(x, p, training=True)`).
    /// Backward regenerates the mask from the generator's `(seed, offset)`: nothing is
    /// stored but the stream.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::{Device, Tensor as RawTensor, ops::Generator};
    /// let dev = Device::new()?;
    /// let x = Tensor::full(&dev, &[8], 1.0)?.into_parameter();
    /// let y = x.dropout(0.5, &mut Generator::new(0))?;   // each element 0 or 2
    /// assert!(y.to_vec()?.iter().all(|&v| v == 0.0 || v == 2.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `0 <= p <= 1`, or for a u32 tensor.
    pub fn dropout(&self, p: f32, generator: &mut Generator) -> Result<Tensor, Error> {
        let (out, state) = ops::dropout(self.data(), p, generator)?;
        Ok(Tensor::record(
            out,
            Op::Dropout(state),
            &[self],
            false,
            false,
        ))
    }

    /// `out[c] = self[c with c[dim] replaced by index[c]]` over `index`'s shape
    /// (PyTorch's `torch.gather`); an index `>= self.shape()[dim]` reads 0 and passes no
    /// gradient.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::Device;
    /// let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?.into_parameter();
    /// let index = Tensor::from_u32(&dev, &[1, 0], &[2, 1])?;
    /// assert_eq!(x.gather(1, &index)?.to_vec()?, vec![2.0, 3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `index` is u32 of `self`'s rank and fits it.
    pub fn gather(&self, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
        let out = ops::gather(self.data(), dim, index.data())?;
        let op = Op::Gather {
            dim,
            index: index.data().clone(),
        };
        Ok(Tensor::record(out, op, &[self], false, false))
    }

    /// `self * m` elementwise with `m` a constant (no gradient), same shape, one element
    /// or a trailing row (a mask, a scale that stays on the GPU).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::{Device, Tensor as RawTensor};
    /// let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
    /// let mask = RawTensor::from_slice(&dev, &[0.0, 1.0], &[2])?;
    /// assert_eq!(x.mul_constant(&mask)?.to_vec()?, vec![0.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes do not fit.
    pub fn mul_constant(&self, m: &RawTensor) -> Result<Tensor, Error> {
        let out = mul_by::launch(self.data().device(), self.data(), m)?;
        Ok(Tensor::record(
            out,
            Op::MulBy(m.clone()),
            &[self],
            false,
            false,
        ))
    }

    /// `x²`, elementwise (PyTorch's `torch.square`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[-2.0, 3.0], &[2])?;
    /// assert_eq!(x.square()?.to_vec()?, [4.0, 9.0]); // torch.square(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn square(&self) -> Result<Tensor, Error> {
        let out = square::launch(self.data().device(), self.data())?;
        Ok(Tensor::record(out, Op::Square, &[self], true, false))
    }

    /// Elementwise binary cross-entropy of logits `self` against `target` (same shape),
    /// unreduced: `softplus(x) - x y`. Both inputs get gradients, as in PyTorch.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let logits = Tensor::zeros(&dev, &[2])?.into_parameter();
    /// let target = Tensor::from_slice(&dev, &[1.0, 0.0], &[2])?;
    /// let loss = logits.bce_with_logits(&target)?.to_vec()?; // softplus(0) = ln 2 per element
    /// assert!((loss[0] - std::f32::consts::LN_2).abs() < 1e-6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes differ.
    pub fn bce_with_logits(&self, target: &Tensor) -> Result<Tensor, Error> {
        if self.shape() != target.shape() {
            return Err(tang_runtime::Error::ShapeMismatch {
                op: "binary_cross_entropy_with_logits".into(),
                detail: format!(
                    "the target has shape {:?}, the input {:?}; they must be equal",
                    target.shape(),
                    self.shape()
                ),
            }
            .into());
        }
        let dev = self.data().device();
        let out = bce_with_logits::launch(dev, self.data(), target.data())?;
        Ok(Tensor::record(
            out,
            Op::BceWithLogits,
            &[self, target],
            true,
            false,
        ))
    }
}
