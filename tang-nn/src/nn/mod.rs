//! # Layers and losses with PyTorch's names, layouts, defaults and initialisation
//!
//! Every layer is a [`Module`] (its state dict has PyTorch's keys) with a
//! `forward(&self, ..) -> Result<Tensor>` over autograd tensors; layers of one input are
//! also [`Layer`]s, so [`Sequential`] can hold them. Losses are in [`functional`]
//! (PyTorch's `torch.nn.functional`).
//!
//! Initialisation follows PyTorch's distributions (Linear: uniform `±1/sqrt(in)` for
//! weight and bias; Embedding: `N(0, 1)`; norms: ones and zeros), drawn from a seeded
//! [`SplitMix64`](crate::rng::SplitMix64): the values differ from PyTorch's (another
//! generator) but not their distribution. Dropout draws from tang's GPU Philox generator
//! ([`manual_seed`]).
//!
//! ```
//! use tang_nn::Module;
//! use tang_nn::Tensor;
//! use tang_nn::nn::{Linear, functional::cross_entropy};
//!
//! #[derive(Module)]
//! struct Mlp { fc1: Linear, fc2: Linear }
//!
//! impl Mlp {
//!     fn forward(&self, x: &Tensor) -> Result<Tensor, tang_nn::autograd::Error> {
//!         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
//!     }
//! }
//!
//! let dev = tang_nn::tang_runtime::Device::new()?;
//! let mut rng = tang_nn::rng::SplitMix64::new(0);
//! let model = Mlp {
//!     fc1: Linear::new(&dev, 64, 128, true, &mut rng)?,
//!     fc2: Linear::new(&dev, 128, 10, true, &mut rng)?,
//! };
//! let x = Tensor::zeros(&dev, &[32, 64])?;
//! let y = Tensor::from_u32(&dev, &[3; 32], &[32])?;
//! let loss = cross_entropy(&model.forward(&x)?, &y)?;
//! let grads = loss.backward()?;
//! assert!(grads.get(&model.fc1.weight).is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// `Module` (nothing to list, no mode) and `Layer` (the inherent `forward`) for
/// parameter-free layers: they still take an index in a [`Sequential`], as in PyTorch.
macro_rules! stateless_layer {
    ($($name:ident),*) => {$(
        impl $crate::Module for $name {
            fn visit_parameters(
                &self,
                _prefix: &str,
                _f: &mut dyn FnMut(&str, &$crate::autograd::Tensor),
            ) {
            }
            fn set_training(&self, _training: bool) {}
        }

        impl $crate::nn::Layer for $name {
            fn forward(
                &self,
                x: &$crate::autograd::Tensor,
            ) -> Result<$crate::autograd::Tensor, $crate::autograd::Error> {
                $name::forward(self, x)
            }
        }
    )*};
}

mod activation;
mod attention;
mod attention_cache;
mod attention_multihead;
mod attention_sdpa;
mod conv;
mod dropout;
mod embedding;
mod flatten;
pub mod functional;
mod init;
mod linear;
mod norm;
mod seeded;
mod sequential;
mod transformer_encoder;

pub use activation::{Approximate, Fused, GELU, ReLU, SiLU, Sigmoid, Tanh};
pub use attention::{CausalSelfAttention, CausalSelfAttentionConfig};
pub use attention_cache::KvCache;
pub use attention_multihead::MultiheadAttention;
pub use attention_sdpa::{AttnMask, scaled_dot_product_attention};
pub use conv::{AvgPool2d, Conv2d, Conv2dOptions, MaxPool2d};
pub use dropout::{DEFAULT_SEED, Dropout, manual_seed};
pub use embedding::Embedding;
pub use flatten::Flatten;
pub use linear::Linear;
pub use norm::{LayerNorm, LayerNormOptions, RMSNorm};
pub use seeded::Seeded;
pub use sequential::Sequential;
pub use transformer_encoder::{Activation, TransformerEncoderLayer, TransformerEncoderLayerConfig};

use crate::Module;
use crate::autograd::{Error, Tensor};

/// A module with a forward pass of one tensor to one tensor: what [`Sequential`] chains.
///
/// ```
/// use tang_nn::nn::{Layer, ReLU};
/// let layers: Vec<Box<dyn Layer>> = vec![Box::new(ReLU)];
/// assert_eq!(layers.len(), 1);
/// ```
pub trait Layer: Module {
    /// The layer applied to `x`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{Layer, ReLU, Tanh};
    /// let layers: Vec<Box<dyn Layer>> = vec![Box::new(ReLU), Box::new(Tanh)];
    /// let mut h = Tensor::from_slice(&dev, &[-1.0, 0.0], &[2])?;
    /// for layer in &layers {
    ///     h = layer.forward(&h)?;
    /// }
    /// assert_eq!(h.to_vec()?, [0.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The layer's own (shapes, devices, kernels).
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error>;
}

/// A boxed layer is a layer (so `Box<dyn Layer>` nests).
impl<L: Layer + ?Sized> Layer for Box<L> {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        (**self).forward(x)
    }
}

/// A layer's invalid configuration, as the runtime's `InvalidArgument` names it.
/// A shape error that names the layer (`Conv2d(1 -> 16, kernel [3, 3])`), as PyTorch's
/// module repr does, rather than the kernel inside it.
pub(crate) fn layer_shape_error(layer: String, detail: String) -> Error {
    Error::Runtime(tang_runtime::Error::ShapeMismatch { op: layer, detail })
}

pub(crate) fn invalid(layer: &str, detail: String) -> Error {
    Error::Runtime(tang_runtime::Error::InvalidArgument {
        op: layer.to_string(),
        detail,
    })
}
