//! # Automatic mixed precision (PyTorch's `torch.amp`)
//!
//! A [`GradScaler`] with PyTorch's semantics and defaults: the loss scaled before
//! backward so that small gradients survive f16, the gradients unscaled (and checked for
//! inf/NaN on the GPU) before clipping and the optimizer step, a step with an overflow
//! skipped, and the scale adapted. Parameters and optimizer state stay f32 (master
//! weights). PyTorch's recipe, line for line:
//!
//! ```text
//! scaler.scale(loss).backward()      let grads = scaler.scale(&loss)?.backward()?;
//! scaler.unscale_(opt)               scaler.unscale_(&opt, &grads)?;
//! clip_grad_norm_(params, 1.0)       let norm = grad_norm(tensors, 1.0)?;
//! scaler.step(opt)                   scaler.step_with_clip_coef(&mut opt, &grads, &norm.clip_coef)?;
//! scaler.update()                    scaler.update()?;
//! ```

pub(crate) mod autocast;
mod error;
mod scaler;
mod unscale;

pub use autocast::{AutocastGuard, autocast_disabled, is_autocast_enabled};
pub use error::AmpError;
pub use scaler::{GradScaler, GradScalerOptions, GradScalerState};
pub use unscale::unscale_and_check;
