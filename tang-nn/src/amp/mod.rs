//! # Automatic mixed precision (PyTorch's `torch.amp`)
//!
//! [`autocast`] runs the matmul-like ops (`linear`, `matmul` and the layers built on them)
//! on f16-rounded operands with f32 accumulation, on the tensor cores where the adapter
//! has them, while everything numerically sensitive stays f32 (see [`autocast`] for the
//! lists); attention's forward stays f32 and its backward's products (the materialized
//! backward, `T <= 256`) run in f16. Unlike PyTorch's autocast, a product's result stays
//! f32 (the rounding is of the operands only): activations keep f32 storage, and the
//! next op reads them without a cast. A [`GradScaler`] with PyTorch's semantics and
//! defaults scales the loss before backward so that small gradients survive f16,
//! unscales the gradients (and checks them for inf/NaN on the GPU) before clipping and
//! the optimizer step, skips a step with an overflow, and adapts the scale. Parameters
//! and optimizer state stay f32 (master weights). PyTorch's recipe, line for line:
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
pub use error::AmpError;
pub use scaler::{GradScaler, GradScalerOptions, GradScalerState};
pub use unscale::unscale_and_check;
