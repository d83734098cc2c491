//! # tang-nn: training on the GPU with tang
//!
//! What is here today: safetensors files that round-trip with PyTorch ([`safetensors`]),
//! learning-rate schedules as pure functions of the step ([`schedule`]), a seeded,
//! resumable data loader and nanoGPT-style token windows ([`data`]), checkpoints written
//! atomically as directories ([`checkpoint`]), the training loop's plain pieces (metrics,
//! progress, loss-curve PNG, Ctrl-C; [`train`]), the host random generator ([`rng`]), and
//! PyTorch's optimizers with gradient clipping that stays on the GPU ([`optim`]).
//! Reverse-mode autograd over `tang_runtime::Tensor`s ([`autograd`]: write the forward,
//! `loss.backward()?` gives every parameter's gradient on the GPU); modules with
//! PyTorch's names and layouts build on it.
//!
//! It re-exports the runtime so that examples and tests can depend on one crate.

pub mod autograd;
pub mod checkpoint;
pub mod data;
pub mod nn;
pub mod optim;
pub mod rng;
pub mod safetensors;
pub mod schedule;
pub mod train;

pub use tang_runtime;
