//! # Modules: parameters with PyTorch's names
//!
//! A [`Module`] is anything that holds parameters: a layer, a model made of layers, a
//! `Vec` of blocks. It lists its parameters with their full PyTorch names
//! ([`Module::visit_parameters`]) and switches train/eval mode ([`Module::set_training`]);
//! everything else (`named_parameters`, `state_dict`, `load_state_dict`, `num_params`,
//! freezing) is provided on top. `#[derive(Module)]` writes the two required methods for a
//! struct with named fields: each field is a child named by the field, so the state dict
//! has exactly PyTorch's keys and checkpoints move between tang and PyTorch as they are.
//!
//! ```
//! use tang_nn::Module;
//! use tang_nn::autograd::Tensor;
//! use tang_nn::tang_runtime::Device;
//!
//! #[derive(Module)]
//! struct Affine {
//!     weight: Tensor,
//!     bias: Option<Tensor>,
//!     #[module(skip)]
//!     features: usize,
//! }
//!
//! #[derive(Module)]
//! struct Net {
//!     blocks: Vec<Affine>,
//!     #[module(name = "lm_head")]
//!     head: Affine,
//! }
//!
//! let dev = Device::new()?;
//! let affine = |n: usize| -> Result<Affine, tang_nn::autograd::Error> {
//!     Ok(Affine {
//!         weight: Tensor::zeros(&dev, &[n, n])?.into_parameter(),
//!         bias: Some(Tensor::zeros(&dev, &[n])?.into_parameter()),
//!         features: n,
//!     })
//! };
//! let net = Net { blocks: vec![affine(4)?, affine(4)?], head: affine(4)? };
//! let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
//!                    "blocks.1.bias", "lm_head.weight", "lm_head.bias"]);
//! assert_eq!(net.num_params(), 3 * (16 + 4));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Tied parameters
//!
//! One parameter in two places (nanoGPT's `lm_head.weight` and `transformer.wte.weight`)
//! is one leaf: the same [`Tensor`] (a clone) stored in both fields. Its gradient is the
//! sum of both uses (the autograd engine sums at the leaf), it counts once in
//! [`Module::num_params`] and is listed once (under its first name) by
//! [`Module::named_parameters`], as in PyTorch; [`Module::state_dict`] lists it under
//! every name, sharing one buffer, so the safetensors writer sees the tie.

mod error;
pub(crate) mod file;
pub(crate) mod host_tensor;
mod impls;
pub(crate) mod load;
pub(crate) mod state_dict;
pub(crate) mod strict;

use std::collections::HashSet;

pub use error::Error;

use crate::autograd::Tensor;
use crate::safetensors::{IncompatibleKeys, StateDict};

/// Something that holds parameters under PyTorch's names: implemented by
/// `#[derive(Module)]`, by every layer of [`crate::nn`], and for [`Tensor`] (a parameter),
/// `Vec<M>` (children `0`, `1`, ...), `Option<M>` and `Box<M>`.
///
/// Model code takes `&self`, so mode flags live in a `Cell<bool>` inside the layers that
/// need them (dropout).
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::Tensor;
/// use tang_nn::tang_runtime::Device;
/// let dev = Device::new()?;
/// let layers = vec![Tensor::zeros(&dev, &[2, 3])?.into_parameter()];
/// assert_eq!(layers.named_parameters()[0].0, "0");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Module {
    /// Calls `f` with every parameter and its full name (`prefix`, then a `.`, then the
    /// path inside this module; `prefix` alone for a bare tensor), in declaration order
    /// (PyTorch's registration order). A tied parameter is visited under each name.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let mut names = Vec::new();
    /// fc.visit_parameters("encoder", &mut |name, _tensor| names.push(name.to_string()));
    /// assert_eq!(names, ["encoder.weight", "encoder.bias"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor));

    /// Switches this module and every child to training (`true`) or evaluation mode.
    /// Only layers whose forward differs between the modes (dropout) keep the flag.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// use tang_nn::nn::Dropout;
    /// let drop = Dropout::new(0.1)?;
    /// drop.set_training(false); // what model.eval() calls on every child
    /// assert!(!drop.is_training());
    /// # let _ = fc;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn set_training(&self, training: bool);

    /// Every parameter with its full name, in declaration order; a tied parameter (the
    /// same leaf, one [`crate::autograd::TensorId`]) once, under its first name, as
    /// PyTorch's `named_parameters()`.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// for (name, p) in fc.named_parameters() { // model.named_parameters()
    ///     println!("{name} {:?}", p.shape()); // weight [2, 3], bias [2]
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        self.visit_parameters("", &mut |name, t| {
            if seen.insert(t.id()) {
                out.push((name.to_string(), t.clone()));
            }
        });
        out
    }

    /// Every parameter, tied ones once (PyTorch's `parameters()`): what an optimizer
    /// takes.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(fc.parameters().len(), 2); // list(model.parameters())
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// The number of scalar parameters, tied ones counted once.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(fc.num_params(), 3 * 2 + 2); // sum(p.numel() for p in model.parameters())
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn num_params(&self) -> usize {
        self.parameters().iter().map(|t| t.data().len()).sum()
    }

    /// Every parameter under every name, tied duplicates included (PyTorch's
    /// `state_dict()`): entries share the parameters' buffers (no copy), so tied entries
    /// are one buffer and [`crate::safetensors::save_file`] writes them once.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let sd = fc.state_dict(); // model.state_dict()
    /// assert_eq!(sd.shapes(), [("weight".to_string(), vec![2, 3]), ("bias".to_string(), vec![2])]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn state_dict(&self) -> StateDict {
        let mut sd = StateDict::new();
        self.visit_parameters("", &mut |name, t| {
            sd.insert(name, t.data().clone());
        });
        sd
    }

    /// Copies `state` into this module's parameters in place (under
    /// [`no_grad`](crate::autograd::no_grad)), so tied parameters stay tied and optimizers
    /// holding the parameters see the new values. As PyTorch: `strict` makes any missing
    /// or unexpected key an error; a shape mismatch is always one; every problem is
    /// reported at once. Host tensors (F32, F16, BF16 as read from a file) are uploaded.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let other = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(1))?;
    /// let missing = fc.load_state_dict(&other.state_dict(), true)?; // fc.load_state_dict(other.state_dict())
    /// assert!(missing.is_empty() && fc.weight.to_vec()? == other.weight.to_vec()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Keys`] listing every missing, unexpected and mismatched key, or
    /// [`Error::Safetensors`] when an entry is not a float tensor (nothing is copied in
    /// either case); [`Error::Autograd`] when a copy fails on the device (a u32 device
    /// tensor under a parameter's name, say).
    fn load_state_dict(&self, state: &StateDict, strict: bool) -> Result<IncompatibleKeys, Error> {
        load::stage(self, state, strict, load::Ties::EveryName)?.apply()
    }

    /// Training mode (PyTorch's `train()`): dropout is on.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// use tang_nn::nn::{Dropout, Sequential};
    /// let model = Sequential::new().append(fc).append(Dropout::new(0.1)?);
    /// model.eval();
    /// model.train(); // model.train(): dropout on again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn train(&self) {
        self.set_training(true);
    }

    /// Evaluation mode (PyTorch's `eval()`): dropout is off.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// use tang_nn::autograd::{Tensor, no_grad};
    /// fc.eval(); // model.eval()
    /// let x = Tensor::zeros(&dev, &[1, 3])?;
    /// let y = no_grad(|| fc.forward(&x))?; // with torch.no_grad(): fc(x)
    /// assert!(!y.requires_grad());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn eval(&self) {
        self.set_training(false);
    }

    /// Freezes (`false`) or unfreezes (`true`) every parameter (PyTorch's
    /// `requires_grad_`): a frozen parameter gets no gradient and ops on it record
    /// nothing.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::Linear;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let fc = Linear::new(&dev, 3, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// fc.requires_grad_(false)?; // freeze: for p in fc.parameters(): p.requires_grad_(False)
    /// assert!(fc.parameters().iter().all(|p| !p.requires_grad()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Autograd`] ([`crate::autograd::Error::NotLeaf`]) when the module lists a
    /// tensor that is an op's result rather than a parameter; the parameters before it
    /// have been changed.
    fn requires_grad_(&self, requires_grad: bool) -> Result<(), Error> {
        let mut result = Ok(());
        self.visit_parameters("", &mut |_, t| {
            if result.is_ok() {
                result = t.requires_grad_(requires_grad);
            }
        });
        Ok(result?)
    }
}

/// `a::b::Mlp<c::D>` as `Mlp`: how PyTorch names a model in a load error (its class).
fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// `prefix.name`, or `name` at the top level: how PyTorch joins module names.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// What `#[derive(Module)]` expands to calls: kept here so generated code stays one line
/// per field.
#[doc(hidden)]
pub mod derive_support {
    use super::{Module, Tensor, join};

    /// Visits `child`'s parameters under `prefix.name`.
    pub fn visit_child<M: Module + ?Sized>(
        child: &M,
        prefix: &str,
        name: &str,
        f: &mut dyn FnMut(&str, &Tensor),
    ) {
        child.visit_parameters(&join(prefix, name), f);
    }

    /// Sets `child`'s mode.
    pub fn set_training<M: Module + ?Sized>(child: &M, training: bool) {
        child.set_training(training);
    }
}
