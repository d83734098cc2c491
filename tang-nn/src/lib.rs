//! # tang-nn: training on the GPU with tang
//!
//! This crate will hold reverse-mode autograd over `tang_runtime::Tensor`s (a tape whose
//! backward passes are GPU kernels; a `#[fused_grad]` kernel's `VJP` is its backward),
//! modules with PyTorch's names and layouts, losses, optimizers (SGD with momentum, Adam,
//! AdamW as in-place `#[kernel]` updates), learning-rate schedules, gradient clipping, a
//! seeded shuffling data loader, a trainer with progress and metrics, and safetensors
//! load/save that round-trips with PyTorch.
//!
//! Today it re-exports the runtime so that examples and tests can depend on one crate.

pub mod autograd;

pub use tang_runtime;
