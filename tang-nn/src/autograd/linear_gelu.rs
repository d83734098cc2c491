//! `gelu(x · Wᵀ + b)` and the layer after it with the GELU fused into the matmuls on both
//! sides of the graph, the MLP of a transformer block in two launches forward and with
//! no elementwise GELU pass backward:
//!
//! - forward, [`Tensor::linear_gelu`]: one matmul stores both the pre-activation `h` and
//!   `gelu(h)` ([`matmul_with_pre`]); `h` is recorded as a plain `linear`;
//! - backward of the next layer, [`LinearGelu::linear`]: the matmul producing `dY · W2`
//!   multiplies by `gelu'(h)` as it stores ([`MatmulOptions::aux`] with the GELU's
//!   generated [`Epilogue::vjp`]), so it yields `dH` directly, which the `linear` node
//!   of `h` turns into the gradients of `x`, `W` and `b`.
//!
//! The gradients equal those of `linear(gelu(linear(x, W, b)), W2, b2)` written out.

use std::sync::OnceLock;

use tang_runtime::dense::matmul::{self, Epilogue, MatmulOptions, matmul_with_pre};
use tang_runtime::ops::kernels;
use tang_runtime::tang_expr::trace;

use super::Error;
use super::op::Op;
use super::tensor::{RawTensor, Tensor};
use crate::nn::Approximate;

/// GELU as a matmul epilogue, and its backward epilogue `x · gelu'(aux)`.
pub(crate) struct GeluEpilogues {
    /// `gelu(x)`.
    forward: Epilogue,
    /// `x · gelu'(aux)`.
    pub(crate) backward: Epilogue,
}

/// The epilogues of `approximate`'s GELU, built once per process.
pub(crate) fn gelu_epilogues(approximate: Approximate) -> Result<&'static GeluEpilogues, Error> {
    static EXACT: OnceLock<GeluEpilogues> = OnceLock::new();
    static TANH: OnceLock<GeluEpilogues> = OnceLock::new();
    let cell = match approximate {
        Approximate::None => &EXACT,
        Approximate::Tanh => &TANH,
    };
    if let Some(e) = cell.get() {
        return Ok(e);
    }
    let forward = Epilogue::from_traced(&trace(1, |v| match approximate {
        Approximate::None => v[0].gelu_erf(),
        Approximate::Tanh => v[0].gelu_tanh(),
    }))?;
    let backward = forward.vjp()?;
    Ok(cell.get_or_init(|| GeluEpilogues { forward, backward }))
}

/// The result of [`Tensor::linear_gelu`]: the pre-activation `h = x · Wᵀ + b` (recorded
/// for backward) and `gelu(h)`, both computed by one launch. Feed it to the next layer
/// with [`LinearGelu::linear`] (the fused backward), or take `gelu(h)` as a tensor with
/// [`LinearGelu::activation`].
#[derive(Clone)]
pub struct LinearGelu {
    pre: Tensor,
    out: RawTensor,
    approximate: Approximate,
}

impl Tensor {
    /// `gelu(self · weightᵀ + bias)` (PyTorch's `F.gelu(F.linear(x, weight, bias),
    /// approximate=...)`) as one matmul that also keeps the pre-activation for backward.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # use tang_nn::nn::Approximate;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, -2.0], &[1, 2])?);
    /// let w = Tensor::parameter(RawTensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0], &[2, 2])?);
    /// let h = x.linear_gelu(&w, None, Approximate::None)?;
    /// let y = h.activation()?.to_vec()?; // F.gelu(F.linear(x, w))
    /// assert!((y[0] - 0.841_344_7).abs() < 1e-5 && (y[1] + 0.045_500_26).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the inner sizes differ or `bias` is not `[out]`.
    pub fn linear_gelu(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        approximate: Approximate,
    ) -> Result<LinearGelu, Error> {
        let epi = gelu_epilogues(approximate)?;
        let options = MatmulOptions {
            transpose_b: true,
            bias: bias.map(Tensor::data),
            epilogue: Some(&epi.forward),
            ..MatmulOptions::default()
        };
        let r = matmul_with_pre(self.data(), weight.data(), &options)?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        Ok(LinearGelu {
            pre: Tensor::record(r.pre, Op::Linear, &inputs, true, false),
            out: r.out,
            approximate,
        })
    }
}

impl LinearGelu {
    /// The pre-activation `h = x · Wᵀ + b`.
    pub fn pre_activation(&self) -> &Tensor {
        &self.pre
    }

    /// Which GELU was applied.
    pub fn approximate(&self) -> Approximate {
        self.approximate
    }

    /// `gelu(h)` as a tensor of the graph (its value was stored by the forward launch;
    /// its backward is GELU's generated VJP), for uses other than a following linear
    /// layer (dropout, a residual).
    ///
    /// # Errors
    /// None today; a `Result` as every op.
    pub fn activation(&self) -> Result<Tensor, Error> {
        let f = match self.approximate {
            Approximate::None => kernels::gelu_erf::FUSED,
            Approximate::Tanh => kernels::gelu::FUSED,
        };
        let op = Op::Fused {
            f,
            uniforms: Vec::new(),
        };
        Ok(Tensor::record(
            self.out.clone(),
            op,
            &[&self.pre],
            true,
            false,
        ))
    }

    /// `gelu(h) · weightᵀ + bias` (the layer after the GELU, PyTorch's
    /// `F.linear(F.gelu(h), weight, bias)`), whose backward produces the gradient of `h`
    /// in the matmul that computes `dY · weight` (no separate GELU backward pass).
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # use tang_nn::nn::Approximate;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, -2.0], &[1, 2])?);
    /// let w1 = Tensor::parameter(RawTensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0], &[2, 2])?);
    /// let w2 = Tensor::parameter(RawTensor::from_slice(&dev, &[1.0, 1.0], &[1, 2])?);
    /// let y = x.linear_gelu(&w1, None, Approximate::Tanh)?.linear(&w2, None)?;
    /// let grads = y.sum_all()?.backward()?;
    /// assert_eq!(grads.get(&w1).unwrap().shape(), &[2, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `weight` is not `[out, in]` for `h`'s last size `in`, or
    /// `bias` is not `[out]`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, Error> {
        let options = MatmulOptions {
            transpose_b: true,
            bias: bias.map(Tensor::data),
            ..MatmulOptions::default()
        };
        let y = matmul::matmul_with(&self.out, weight.data(), &options)?;
        let op = Op::GeluLinear {
            out: self.out.clone(),
            approximate: self.approximate,
        };
        let mut inputs = vec![&self.pre, weight];
        inputs.extend(bias);
        Ok(Tensor::record(y, op, &inputs, true, false))
    }
}

/// The gradients of inputs `h, W2[, b2]` of `gelu(h) · W2ᵀ + b2` from `grad`, given
/// `gelu(h)` (`out`): `dH = (grad · W2) ⊙ gelu'(h)` in one matmul, `dW2 = gradᵀ ·
/// gelu(h)`, `db2` the column sums of `grad`.
pub(crate) fn gelu_linear_backward(
    grad: &RawTensor,
    inputs: &[&RawTensor],
    out: &RawTensor,
    approximate: Approximate,
) -> Result<Vec<RawTensor>, Error> {
    let (h, w) = (inputs[0], inputs[1]);
    let epi = gelu_epilogues(approximate)?;
    let dh = matmul::matmul_with(
        grad,
        w,
        &MatmulOptions {
            epilogue: Some(&epi.backward),
            aux: Some(h),
            ..MatmulOptions::default()
        },
    )?;
    // Fold the leading dimensions into rows: dW2 is one `Gᵀ · A` over every token.
    let (n_out, n_in) = (w.shape()[0], w.shape()[1]);
    let lead = &h.shape()[..h.shape().len().saturating_sub(1)];
    let rows: usize = lead.iter().product();
    let dw = matmul::matmul_with(
        &grad.reshape(&[rows, n_out])?,
        &out.reshape(&[rows, n_in])?,
        &MatmulOptions {
            transpose_a: true,
            ..MatmulOptions::default()
        },
    )?;
    let mut grads = vec![dh, dw];
    if inputs.len() == 3 {
        grads.push(matmul::bias_backward(grad)?);
    }
    Ok(grads)
}
