//! # Automatic mixed precision (PyTorch's `torch.amp`)
//!
//! [`autocast`] runs the matmul-like ops (`linear`, `matmul` and the layers built on them)
//! on f16-rounded operands with f32 accumulation, on the tensor cores where the adapter
//! has them, and returns their results in f16, as PyTorch's autocast does: the
//! activations between products (attention's heads, GELU, dropout) are f16, half the
//! memory and traffic, while everything numerically sensitive computes in f32 (see
//! [`autocast`] for the lists) and an f16 value added to an f32 one (a residual stream)
//! gives f32. Attention on f16 heads runs on the tensor cores, forward and backward.
//! (A changed decision: products returned f32 before; BENCHMARKS.md, 2026-11-29, has
//! what the f16 activations changed.) A [`GradScaler`] with PyTorch's semantics and defaults
//! scales the loss before backward so that small gradients survive f16, unscales the
//! gradients (and checks them for inf/NaN on the GPU) before clipping and the optimizer
//! step, skips a step with an overflow, and adapts the scale. Parameters and optimizer
//! state stay f32 (master weights); `linear` reads an f16 copy of its weight made once
//! per autocast region, as PyTorch's autocast caches it. PyTorch's recipe, line for
//! line:
//!
//! ```text
//! with torch.autocast("cuda", dtype=torch.float16):
//!     loss = model(x)                let loss = { let _ac = autocast(DType::F16)?; model.forward(&x)? };
//! scaler.scale(loss).backward()      let grads = scaler.scale(&loss)?.backward()?;
//! scaler.unscale_(opt)               scaler.unscale_(&opt, &grads)?;
//! clip_grad_norm_(params, 1.0)       let norm = grad_norm(tensors, 1.0)?;
//! scaler.step(opt)                   scaler.step_with_clip_coef(&mut opt, &grads, &norm.clip_coef)?;
//! scaler.update()                    scaler.update()?;
//! ```
//!
//! The [`Trainer`](crate::train::Trainer) runs this recipe with
//! [`TrainerOptions::amp`](crate::train::TrainerOptions::amp).

pub(crate) mod autocast;
mod error;
mod scaler;
mod unscale;

pub use autocast::{AutocastGuard, autocast, autocast_disabled, is_autocast_enabled};
pub(crate) use autocast::{autocast_out_dtype, cast_parameter, forget_casts};
pub use error::AmpError;
pub use scaler::{GradScaler, GradScalerOptions, GradScalerState};
