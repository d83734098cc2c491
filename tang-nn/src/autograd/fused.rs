//! Any `#[fused_grad]` function as an autograd op: [`apply`]. The forward is the
//! function's kernel over the broadcast of the inputs; the backward is the kernel's
//! generated VJP plus a sum over the dimensions each input was broadcast along
//! ([`FusedFn::backward`]), so the function needs no backward code. The elementwise
//! methods of [`Tensor`] (`add`, `exp`, `relu`, ...) are this call on the runtime's own
//! fused functions.

use tang_runtime::FusedFn;

use super::Error;
use super::op::Op;
use super::tensor::{RawTensor, Tensor};

/// Applies the `#[fused_grad]` function `f` (its `f::FUSED`) to `inputs`, broadcasting
/// their shapes (NumPy/PyTorch rules), with `uniforms` in the function's declared order,
/// and records it for backward when an input requires grad.
///
/// ```
/// use tang_nn::autograd::{Tensor, apply};
/// use tang_nn::tang_runtime::{Device, Tensor as RawTensor, prelude::*};
///
/// /// `alpha * tanh(x * w)`: no backward code anywhere.
/// #[fused_grad]
/// fn scaled_tanh(x: f32, w: f32, #[uniform] alpha: f32) -> f32 {
///     alpha * (x * w).tanh()
/// }
///
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.5, -1.0, 2.0, 0.0], &[2, 2])?;
/// let w = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?.into_parameter();
/// let loss = apply(&scaled_tanh::FUSED, &[&x, &w], &[0.5])?.sum_all()?;
/// let grads = loss.backward()?;
/// assert_eq!(grads.get(&w).unwrap().shape(), &[2]); // summed over the broadcast rows
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] when the shapes do not broadcast, the counts of inputs or uniforms
/// differ from the function's, a tensor is u32 or on another device.
pub fn apply(f: &FusedFn, inputs: &[&Tensor], uniforms: &[f32]) -> Result<Tensor, Error> {
    let raw: Vec<&RawTensor> = inputs.iter().map(|t| t.data()).collect();
    let out = f.forward(&raw, uniforms)?;
    let op = Op::Fused {
        f: *f,
        uniforms: uniforms.to_vec(),
    };
    Ok(Tensor::record(out, op, inputs, true, false))
}
