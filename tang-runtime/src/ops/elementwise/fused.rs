//! A `#[fused_grad]` function as a tensor op: [`FusedFn`], what the macro emits as
//! `f::FUSED` for a function of one output. Its forward is the function's kernel over the
//! broadcast of its inputs; its backward is the generated VJP kernel, then
//! [`sum_to_shape`](crate::ops::sum_to_shape) for each input that was broadcast. The elementwise
//! ops of [`crate::ops`] are all defined this way, and so is any user function: tang-nn
//! records one as an autograd op with no backward code.

use tang_expr::KernelDesc;

use crate::ops::{sum_to_shape, to_dtype};
use crate::{DType, Error, Tensor};

/// The gradient of `input` from `g` (of the launch shape): summed over the dimensions
/// `input` was broadcast along (in f32, rounded once for an f16 `g`), in `input`'s dtype
/// (PyTorch's rule: a gradient has its input's dtype, so `f16 + f32` gives the f16 input
/// an f16 gradient).
fn input_grad(g: &Tensor, input: &Tensor) -> Result<Tensor, Error> {
    to_dtype(&sum_to_shape(g, input.shape())?, input.dtype())
}

/// A single-output `#[fused_grad]` function as a differentiable tensor op (emitted by the
/// macro as `f::FUSED`).
///
/// ```no_run
/// use tang_runtime::prelude::*;
/// #[fused_grad]
/// fn scaled_tanh(x: f32, w: f32, #[uniform] alpha: f32) -> f32 {
///     alpha * (x * w).tanh()
/// }
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.5, -1.0, 2.0, 0.0], &[2, 2])?;
/// let w = Tensor::from_slice(&dev, &[3.0, 4.0], &[2, 1])?; // broadcast over the rows
/// let y = scaled_tanh::FUSED.forward(&[&x, &w], &[0.5])?;
/// let g = Tensor::from_slice(&dev, &[1.0; 4], &[2, 2])?;
/// let grads = scaled_tanh::FUSED.backward(&g, &[&x, &w], &[0.5])?;
/// assert_eq!(grads[1].as_ref().unwrap().shape(), &[2, 1]); // summed over the broadcast
/// # Ok::<(), tang_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedFn {
    value: KernelDesc,
    vjp: KernelDesc,
    wrt: &'static [usize],
    /// Per `wrt` input: its gradient is the upstream gradient itself.
    passthrough: &'static [bool],
}

impl FusedFn {
    /// The op from the function's value kernel, its VJP kernel, the positions of the
    /// inputs it differentiates (in the VJP's output order) and, for each, whether its
    /// gradient is the upstream gradient itself. Called by the code `#[fused_grad]`
    /// generates.
    #[doc(hidden)]
    pub const fn new(
        value: KernelDesc,
        vjp: KernelDesc,
        wrt: &'static [usize],
        passthrough: &'static [bool],
    ) -> FusedFn {
        FusedFn {
            value,
            vjp,
            wrt,
            passthrough,
        }
    }

    /// The function's name.
    pub fn name(&self) -> &'static str {
        self.value.name()
    }

    /// Names of the per-element inputs, in order.
    pub fn inputs(&self) -> &'static [&'static str] {
        self.value.inputs()
    }

    /// Names of the uniforms, in order.
    pub fn uniforms(&self) -> &'static [&'static str] {
        self.value.uniforms()
    }

    /// Positions (among [`FusedFn::inputs`]) of the inputs that get a gradient.
    pub fn wrt(&self) -> &'static [usize] {
        self.wrt
    }

    /// The function applied elementwise over the broadcast of `inputs`' shapes, with
    /// `uniforms` in declared order.
    ///
    /// f16 inputs give an f16 result, computed in f32; f16 beside f32 inputs gives f32
    /// (PyTorch's type promotion).
    ///
    /// # Errors
    /// As [`crate::Device::launch`]: [`Error::Arity`] on wrong counts,
    /// [`Error::ShapeMismatch`] for shapes that do not broadcast, [`Error::DType`] for u32
    /// tensors, [`Error::DeviceMismatch`] across devices.
    pub fn forward(&self, inputs: &[&Tensor], uniforms: &[f32]) -> Result<Tensor, Error> {
        let dev = self.device(inputs)?;
        let mut outs = dev.launch(&self.value, inputs, &[], uniforms)?;
        // The macro emits `FUSED` for single-output functions only.
        outs.pop().ok_or_else(|| Error::Arity {
            op: self.name().into(),
            what: "outputs",
            expected: 1,
            got: 0,
        })
    }

    /// The backward of [`FusedFn::forward`]: the gradient of each input from the
    /// upstream gradient `grad_out` (of the output's shape), each of its input's shape
    /// (summed over the dimensions it was broadcast along); `None` for inputs the
    /// function does not differentiate. Each gradient has its input's dtype (f16 for an
    /// f16 input, computed in f32).
    ///
    /// # Errors
    /// As [`FusedFn::forward`]; [`Error::ShapeMismatch`] when `grad_out` does not have
    /// the output's shape.
    pub fn backward(
        &self,
        grad_out: &Tensor,
        inputs: &[&Tensor],
        uniforms: &[f32],
    ) -> Result<Vec<Option<Tensor>>, Error> {
        let dev = self.device(inputs)?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let out_shape = crate::ops::broadcast_shapes(&shapes)?;
        if grad_out.shape() != out_shape.as_slice() {
            return Err(Error::ShapeMismatch {
                op: format!("{}_backward", self.name()),
                detail: format!(
                    "grad_out has shape {:?}, the output {out_shape:?}; pass the gradient of \
                     the forward's result",
                    grad_out.shape()
                ),
            });
        }
        // The passthrough below launches nothing, so check the dtypes a launch refuses
        // (and `input_grad` would otherwise cast to).
        for t in inputs.iter().chain([&grad_out]) {
            if t.dtype() == DType::U32 {
                t.expect_dtype(&format!("{}_backward", self.name()), DType::F32)?;
            }
        }
        let mut out: Vec<Option<Tensor>> = vec![None; inputs.len()];
        // Every gradient is `grad_out` itself (an add): no launch, only the sums over
        // broadcast dimensions. The gradients then share `grad_out`'s buffer; autograd
        // sums into a shared gradient out of place.
        if self.passthrough.len() == self.wrt.len() && self.passthrough.iter().all(|&p| p) {
            for &k in self.wrt {
                out[k] = Some(input_grad(grad_out, inputs[k])?);
            }
            return Ok(out);
        }
        let mut with_grad: Vec<&Tensor> = inputs.to_vec();
        with_grad.push(grad_out);
        let grads = dev.launch(&self.vjp, &with_grad, &[], uniforms)?;
        for (&k, g) in self.wrt.iter().zip(grads) {
            out[k] = Some(input_grad(&g, inputs[k])?);
        }
        Ok(out)
    }

    fn device<'a>(&self, inputs: &[&'a Tensor]) -> Result<&'a crate::Device, Error> {
        inputs
            .first()
            .map(|t| t.device())
            .ok_or_else(|| Error::Arity {
                op: self.name().into(),
                what: "inputs",
                expected: self.inputs().len(),
                got: 0,
            })
    }
}
