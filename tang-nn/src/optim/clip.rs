//! Gradient clipping by global L2 norm (PyTorch's `torch.nn.utils.clip_grad_norm_`),
//! entirely on the device: the norm and the clip coefficient are one-element tensors,
//! so `backward -> clip -> step` reads nothing back to the host.
//!
//! PyTorch computes, for gradients `g_i`:
//! ```text
//! norms = [vector_norm(g_i) for each i]          (sqrt of the sum of squares)
//! total_norm = vector_norm(stack(norms))
//! clip_coef = min(max_norm / (total_norm + 1e-6), 1)
//! g_i *= clip_coef                               (in place, even when clip_coef is 1)
//! ```
//! tang does the same in the same order: each tensor's sum of squares
//! (`ops::foreach_sum_of_squares`: a few launches for up to 64 tensors, as PyTorch's
//! `_foreach_norm` is one multi-tensor kernel), their square roots, the list of norms
//! squared, summed and rooted again, the coefficient by a kernel (kernels in `gpu.rs`;
//! roots and the division correctly rounded, as PyTorch's are). [`clip_grad_norm_`] then scales in place;
//! [`grad_norm`] stops before, so the optimizer can take the coefficient inside its
//! update kernels ([`super::Optimizer::step_with_clip_coef`]). A NaN or infinite norm is
//! not an error (PyTorch's `error_if_nonfinite=False`, its default): checking it would
//! need a host read; read `total_norm` when you want to look.

use tang_runtime::Tensor;
use tang_runtime::ops::{foreach_sum_of_squares, sum_all};
use tang_runtime::{DType, Device};

use super::algorithm::require;
use super::error::OptimError;
use super::gpu::kernels::{clip_coefficient, norm_from_sum_of_squares, scale_in_place, square};
use super::optimizer::check_scalar;

/// The global norm of a set of gradients and the coefficient that clips it, both
/// one-element tensors on the device.
///
/// ```
/// use tang_nn::optim::grad_norm;
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let g = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?;
/// let norm = grad_norm([&g], 10.0)?;
/// assert_eq!(norm.total_norm.to_vec()?, [5.0]);
/// assert_eq!(norm.clip_coef.to_vec()?, [1.0]); // under max_norm: no clipping
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct GradNorm {
    /// The L2 norm of all gradients taken together (what `clip_grad_norm_` returns).
    pub total_norm: Tensor,
    /// `min(max_norm / (total_norm + 1e-6), 1)`: multiply the gradients by it to clip.
    pub clip_coef: Tensor,
}

/// The L2 norm of `x` as a `[1]` tensor: the square root of the sum of squares.
fn l2_norm(x: &Tensor) -> Result<Tensor, OptimError> {
    let dev = x.device();
    let squares = square::launch(dev, x)?;
    let sum = sum_all(&squares)?;
    Ok(norm_from_sum_of_squares::launch(dev, &sum, 1.0)?)
}

/// The global L2 norm of `grads` and the coefficient that clips it to `max_norm`,
/// computed on the device without a host read.
///
/// ```
/// use tang_nn::optim::{grad_norm, scale_grads_};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let (g1, g2) = (Tensor::from_slice(&dev, &[3.0], &[1])?, Tensor::from_slice(&dev, &[4.0], &[1])?);
/// let norm = grad_norm([&g1, &g2], 1.0)?; // the norm, nothing changed yet
/// scale_grads_([&g1, &g2], &norm.clip_coef)?; // what clip_grad_norm_ does next
/// assert!((g1.to_vec()?[0] - 0.6).abs() < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`OptimError::InvalidOption`] for a negative or NaN `max_norm`,
/// [`OptimError::NoGradients`] with no gradients (see [`clip_grad_norm_`]),
/// [`OptimError::NotF32`],
/// [`OptimError::DeviceMismatch`], [`OptimError::Runtime`] when the device fails.
pub fn grad_norm<'a>(
    grads: impl IntoIterator<Item = &'a Tensor>,
    max_norm: f64,
) -> Result<GradNorm, OptimError> {
    require(
        max_norm >= 0.0,
        "clip_grad_norm_",
        "max_norm",
        max_norm,
        "at least 0",
    )?;
    let grads: Vec<&Tensor> = grads.into_iter().collect();
    let dev = checked_device("grad_norm", &grads)?;
    let sums = foreach_sum_of_squares(&grads)?;
    let norms = norm_from_sum_of_squares::launch(&dev, &sums, 1.0)?;
    let total_norm = l2_norm(&norms)?;
    let clip_coef = clip_coefficient::launch(&dev, &total_norm, max_norm as f32, 1.0)?;
    Ok(GradNorm {
        total_norm,
        clip_coef,
    })
}

/// PyTorch's `clip_grad_norm_(grads, max_norm)` (L2 norm): scales every gradient in
/// place by `min(max_norm / (total_norm + 1e-6), 1)` and returns the total norm as a
/// one-element device tensor. Nothing is read back to the host.
///
/// ```
/// use tang_nn::optim::clip_grad_norm_;
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let g = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?;
/// let total = clip_grad_norm_([&g], 1.0)?; // torch.nn.utils.clip_grad_norm_(params, 1.0)
/// assert_eq!(total.to_vec()?, [5.0]);
/// let clipped = g.to_vec()?;
/// assert!((clipped[0] - 0.6).abs() < 1e-5 && (clipped[1] - 0.8).abs() < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// With no gradients at all (every parameter frozen, or none reached by the loss)
/// PyTorch returns a zero norm on the CPU; tang returns [`OptimError::NoGradients`]
/// instead, because its norm is a tensor on the gradients' device and an empty list names
/// no device: check that the list is not empty first, as the
/// [`Trainer`](crate::train::Trainer) does (it skips the step).
///
/// # Errors
/// As [`grad_norm`].
pub fn clip_grad_norm_<'a>(
    grads: impl IntoIterator<Item = &'a Tensor>,
    max_norm: f64,
) -> Result<Tensor, OptimError> {
    let grads: Vec<&Tensor> = grads.into_iter().collect();
    if grads.is_empty() {
        return Err(OptimError::NoGradients {
            function: "clip_grad_norm_",
        });
    }
    let norm = grad_norm(grads.iter().copied(), max_norm)?;
    scale_grads_(grads, &norm.clip_coef)?;
    Ok(norm.total_norm)
}

/// Multiplies every gradient in place by `coef`, a one-element device tensor (e.g.
/// [`GradNorm::clip_coef`]).
///
/// ```
/// use tang_nn::optim::scale_grads_;
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let g = Tensor::from_slice(&dev, &[2.0, 4.0], &[2])?;
/// scale_grads_([&g], &Tensor::from_slice(&dev, &[0.5], &[1])?)?;
/// assert_eq!(g.to_vec()?, [1.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`OptimError::NotScalar`] when `coef` has more than one element; as [`grad_norm`].
pub fn scale_grads_<'a>(
    grads: impl IntoIterator<Item = &'a Tensor>,
    coef: &Tensor,
) -> Result<(), OptimError> {
    let grads: Vec<&Tensor> = grads.into_iter().collect();
    let dev = checked_device("scale_grads_", &grads)?;
    check_scalar(coef, &dev, "clip coefficient")?;
    for g in grads {
        scale_in_place::launch(&dev, g, coef)?;
    }
    Ok(())
}

/// The device every gradient lives on, after checking that they are f32 and that there
/// is at least one.
fn checked_device(function: &'static str, grads: &[&Tensor]) -> Result<Device, OptimError> {
    let Some(first) = grads.first() else {
        return Err(OptimError::NoGradients { function });
    };
    let dev = first.device().clone();
    for (i, g) in grads.iter().enumerate() {
        let name = || format!("gradient {i}");
        if g.dtype() != DType::F32 {
            return Err(OptimError::NotF32 {
                name: name(),
                what: "gradient",
            });
        }
        if !g.device().same(&dev) {
            return Err(OptimError::DeviceMismatch { name: name() });
        }
    }
    Ok(dev)
}
