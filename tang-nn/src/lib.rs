//! # tang-nn: training on the GPU with tang
//!
//! What is here today: safetensors files that round-trip with PyTorch ([`safetensors`]),
//! learning-rate schedules as pure functions of the step ([`schedule`]), a seeded,
//! resumable data loader and nanoGPT-style token windows gathered on the GPU ([`data`]),
//! evaluation metrics on the GPU ([`metrics`]),
//! checkpoints written atomically as directories ([`checkpoint`]), the training loop
//! ([`train::Trainer`]) and its plain pieces (metrics, progress, loss-curve PNG, Ctrl-C;
//! [`train`]), the host random generator ([`rng`]), and
//! PyTorch's optimizers with gradient clipping that stays on the GPU ([`optim`]).
//! Reverse-mode autograd over `tang_runtime::Tensor`s ([`autograd`]: write the forward,
//! `loss.backward()?` gives every parameter's gradient on the GPU); modules with
//! PyTorch's names ([`Module`], `#[derive(Module)]`), and layers and losses with
//! PyTorch's layouts, defaults and initialisation ([`nn`]) build on it; whole models
//! whose checkpoints load as PyTorch wrote them are in [`models`] (nanoGPT's GPT), and
//! GPT-2's tokenizer is in [`tokenizer`].
//!
//! It re-exports the runtime so that examples and tests can depend on one crate.

// On WebAssembly the runtime's tensors are neither Send nor Sync (wgpu's handles there; a
// page has one thread), so the Arcs shared with native code hold non-Send data.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

// `#[derive(Module)]` expands to `::tang_nn::...` paths; this makes them resolve inside
// the crate too.
extern crate self as tang_nn;

mod macros;

pub mod amp;
pub mod autograd;
pub mod checkpoint;
pub mod data;
pub mod distributed;
pub mod metrics;
pub mod models;
pub mod module;
pub mod nn;
pub mod optim;
pub mod rng;
pub mod safetensors;
pub mod schedule;
pub mod tokenizer;
pub mod train;

pub use autograd::{Gradients, Tensor, no_grad};
pub use module::Module;
/// `#[derive(Module)]`: see [`module`].
pub use tang_macros::Module;
pub use tang_runtime;
pub use tang_runtime::ops::Generator;
pub use tang_runtime::{Device, fused_grad, kernel, kernels, uniform};

/// What a training program needs in scope, one glob as in `use torch.nn as nn`:
/// `use tang_nn::prelude::*;`. The kernel macros are here too, so that a crate depending
/// only on tang-nn writes its own `#[fused_grad]` activation.
pub mod prelude {
    pub use crate::Module;
    pub use crate::autograd::{Gradients, Tensor, apply, no_grad};
    pub use crate::nn::functional as F;
    pub use crate::nn::{self, Layer};
    pub use crate::optim;
    pub use crate::sequential;
    pub use tang_runtime::ops::Generator;
    pub use tang_runtime::{Device, StableExt, fused_grad, kernel, kernels, uniform};
}

/// What `#[derive(Module)]` generates names; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::module::derive_support::{set_training, visit_child};
}

/// The repository README's Rust samples, compiled and run as this crate's doc tests so
/// that the README cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeSamples;
