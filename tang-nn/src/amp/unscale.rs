//! The GPU half of [`super::GradScaler::unscale_`]: every gradient multiplied by the
//! inverse scale in place, and one count of the non-finite elements among them, as
//! PyTorch's `_amp_foreach_non_finite_check_and_unscale_` does (it checks each element
//! before it is unscaled).
//!
//! The gradients are packed into one flat tensor (one launch per 64 of them), checked and
//! unscaled there by one kernel, counted by one reduction and unpacked: a handful of
//! launches for a whole model, where a kernel and a reduction per gradient would be two
//! per parameter. Nothing is read back here; [`super::GradScaler::step`] reads the count.

use tang_runtime::ops::{pack, sum_all, unpack};
use tang_runtime::{DType, Tensor};

use super::AmpError;
use crate::optim::OptimError;

/// `g *= inv_scale` in place, returning 1 where `g` was infinite or NaN before it was
/// scaled (NaN fails the comparison) and 0 elsewhere.
///
/// ```
/// use tang_nn::amp::unscale_and_check;
/// let mut g = 1024.0;
/// assert_eq!(unscale_and_check(&mut g, 1.0 / 1024.0), 0.0);
/// assert_eq!(g, 1.0);
/// let mut bad = f32::NAN;
/// assert_eq!(unscale_and_check(&mut bad, 0.5), 1.0);
/// ```
#[tang_runtime::kernel]
pub fn unscale_and_check(g: &mut f32, #[uniform] inv_scale: f32) -> f32 {
    let non_finite = if (*g).abs() <= 3.402_823_5e38 {
        0.0
    } else {
        1.0
    };
    *g *= inv_scale;
    non_finite
}

/// Multiplies each of `grads` by `inv_scale` in place and returns the number of their
/// elements that were infinite or NaN, as a one-element tensor left on the device.
/// `None` for no gradients (nothing to check: PyTorch's `found_inf` stays 0).
pub(super) fn unscale_grads(grads: &[&Tensor], inv_scale: f32) -> Result<Option<Tensor>, AmpError> {
    let Some(first) = grads.first() else {
        return Ok(None);
    };
    let dev = first.device();
    let mut offsets = Vec::with_capacity(grads.len());
    let mut total = 0usize;
    for (i, g) in grads.iter().enumerate() {
        if g.dtype() != DType::F32 {
            return Err(OptimError::NotF32 {
                name: format!("gradient {i}"),
                what: "gradient",
            }
            .into());
        }
        if !g.device().same(dev) {
            return Err(OptimError::DeviceMismatch {
                name: format!("gradient {i}"),
            }
            .into());
        }
        offsets.push(total);
        total += g.len();
    }
    if total == 0 {
        return Ok(None);
    }
    let flat = dev.empty(&[total], DType::F32)?;
    pack(grads, &flat, &offsets)?;
    let non_finite = unscale_and_check::launch(dev, &flat, inv_scale)?;
    unpack(&flat, &offsets, grads)?;
    Ok(Some(sum_all(&non_finite)?))
}
