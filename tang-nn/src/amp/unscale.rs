//! The GPU half of [`super::GradScaler::unscale_`]: every gradient multiplied by the
//! inverse scale in place, and one count of the non-finite elements among them, as
//! PyTorch's `_amp_foreach_non_finite_check_and_unscale_` does (it checks each element
//! before it is unscaled).
//!
//! The gradients are checked and unscaled where they lie, up to 64 of them per launch, and
//! counted in one more ([`tang_runtime::ops::foreach_unscale_count_non_finite`]): a
//! handful of launches for a whole model, where a kernel and a reduction per gradient
//! would be two per parameter (and packing them into one flat tensor and back, as this did
//! before, moved every gradient twice more). Nothing is read back here;
//! [`super::GradScaler::step`] reads the count.

use tang_runtime::ops::foreach_unscale_count_non_finite;
use tang_runtime::{DType, Tensor};

use super::AmpError;
use crate::optim::OptimError;

/// Multiplies each of `grads` by `inv_scale` in place and returns the number of their
/// elements that were infinite or NaN, as a one-element tensor left on the device.
/// `None` for no gradients (nothing to check: PyTorch's `found_inf` stays 0).
pub(super) fn unscale_grads(grads: &[&Tensor], inv_scale: f32) -> Result<Option<Tensor>, AmpError> {
    let Some(first) = grads.first() else {
        return Ok(None);
    };
    let dev = first.device();
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
        total += g.len();
    }
    if total == 0 {
        return Ok(None);
    }
    Ok(Some(foreach_unscale_count_non_finite(grads, inv_scale)?))
}
