//! Optimizers with PyTorch's formulas and defaults (SGD, Adam, AdamW), parameter groups,
//! optimizer state saved by parameter name, and gradient clipping by global norm, all on
//! the GPU.
//!
//! Each update is one `#[kernel]` function, launched once per parameter tensor, or for
//! Adam and AdamW once per group over flat tensors (the multi-tensor step: parameters and
//! gradients packed, one update, parameters unpacked; the moments are flat and each
//! parameter's are views of them); a step records its launches without reading anything
//! back, and clipping keeps the norm and its coefficient on the device, so `backward ->
//! clip -> step` performs no host read.
//!
//! ```
//! use tang_nn::optim::{AdamW, AdamWOptions, clip_grad_norm_, decay_groups};
//! use tang_nn::tang_runtime::{Device, Tensor};
//! let dev = Device::new()?;
//! let w = Tensor::from_slice(&dev, &[0.5; 6], &[2, 3])?;
//! let b = Tensor::zeros(&dev, &[2])?;
//! let groups = decay_groups([("fc.weight", w.clone()), ("fc.bias", b.clone())], 0.1);
//! let mut opt = AdamW::with_groups(groups.into(), AdamWOptions::default())?;
//! // Gradients from backward, by parameter name:
//! let gw = Tensor::from_slice(&dev, &[0.1; 6], &[2, 3])?;
//! let gb = Tensor::from_slice(&dev, &[0.2; 2], &[2])?;
//! clip_grad_norm_([&gw, &gb], 1.0)?;
//! opt.set_lr(6e-4); // a schedule's value for this step
//! opt.step(&[("fc.weight", &gw), ("fc.bias", &gb)])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adam;
mod adamw;
mod algorithm;
mod clip;
mod error;
mod flat;
mod gpu;
mod grads;
mod group;
mod optimizer;
mod param;
mod setters;
mod sgd;
mod state;

pub use adam::{Adam, AdamOptions};
pub use adamw::{AdamW, AdamWOptions};
pub use algorithm::Algorithm;
pub use clip::{GradNorm, clip_grad_norm_, grad_norm, scale_grads_};
pub use error::OptimError;
pub use gpu::kernels;
pub use grads::Gradients;
pub(crate) use grads::NamedGradients;
pub use group::{Group, IntoParam, ParamGroup, decay_groups};
pub use optimizer::Optimizer;
pub use param::{Hyper, ParamState};
pub use sgd::{Sgd, SgdOptions};
pub use state::OptimizerState;
