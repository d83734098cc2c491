//! `Sequential`: layers applied in order, named by position.

use super::Layer;
use crate::Module;
use crate::autograd::{Error, Tensor};

/// Layers applied one after the other (PyTorch's `nn.Sequential`), named `0`, `1`, ...
/// by position; parameter-free layers take their index too, so
/// `Sequential(Linear, ReLU, Linear)` has `0.weight` and `2.weight`, as in PyTorch.
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::nn::{Linear, ReLU, Sequential};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let mut rng = tang_nn::rng::SplitMix64::new(0);
/// let mlp = Sequential::new()
///     .append(Linear::new(&dev, 64, 128, true, &mut rng)?)
///     .append(ReLU)
///     .append(Linear::new(&dev, 128, 10, true, &mut rng)?);
/// let names: Vec<String> = mlp.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Layer>>,
}

impl Sequential {
    /// An empty sequence (its forward is the identity).
    ///
    /// ```
    /// use tang_nn::nn::{ReLU, Sequential};
    /// let seq = Sequential::new().append(ReLU); // nn.Sequential(); seq.append(nn.ReLU())
    /// assert_eq!(seq.len(), 1);
    /// ```
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// The sequence of the given boxed layers.
    ///
    /// ```
    /// use tang_nn::nn::{Layer, ReLU, Sequential, Tanh};
    /// let seq = Sequential::from_layers(vec![Box::new(ReLU), Box::new(Tanh)]);
    /// assert_eq!(seq.len(), 2);
    /// assert!(seq.get(2).is_none());
    /// ```
    pub fn from_layers(layers: Vec<Box<dyn Layer>>) -> Sequential {
        Sequential { layers }
    }

    /// Appends `layer` (PyTorch's `append`), builder style; a `Box<dyn Layer>` works too.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::Module;
    /// use tang_nn::nn::{Linear, ReLU, Sequential};
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// let mlp = Sequential::new()
    ///     .append(Linear::new(&dev, 4, 8, true, &mut rng)?)
    ///     .append(ReLU)
    ///     .append(Linear::new(&dev, 8, 2, true, &mut rng)?);
    /// let names: Vec<String> = mlp.state_dict().names().map(str::to_string).collect();
    /// assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]); // torch's keys
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn append(mut self, layer: impl Layer + 'static) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }

    /// The number of layers.
    ///
    /// ```
    /// use tang_nn::nn::{ReLU, Sequential, Tanh};
    /// assert_eq!(Sequential::new().append(ReLU).append(Tanh).len(), 2); // len(seq)
    /// ```
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there are no layers.
    ///
    /// ```
    /// assert!(tang_nn::nn::Sequential::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Layer `i`.
    ///
    /// ```
    /// use tang_nn::nn::{ReLU, Sequential};
    /// let seq = Sequential::new().append(ReLU);
    /// assert!(seq.get(0).is_some() && seq.get(1).is_none()); // seq[0]
    /// ```
    pub fn get(&self, i: usize) -> Option<&dyn Layer> {
        self.layers.get(i).map(|l| &**l)
    }

    /// Each layer applied to the previous one's output.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{ReLU, Sequential, Tanh};
    /// let seq = Sequential::new().append(ReLU).append(Tanh);
    /// let x = Tensor::from_slice(&dev, &[-1.0, 0.0], &[2])?;
    /// assert_eq!(seq.forward(&x)?.to_vec()?, [0.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The first error of a layer.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        Ok(h)
    }
}

impl Module for Sequential {
    // Named and switched exactly as a `Vec` of children.
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor)) {
        self.layers.visit_parameters(prefix, f);
    }

    fn set_training(&self, training: bool) {
        self.layers.set_training(training);
    }
}

impl Layer for Sequential {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        Sequential::forward(self, x)
    }
}

/// A [`Sequential`] of the given layers, in order (PyTorch's `nn.Sequential(a, b, c)`):
/// shorthand for `Sequential::new().append(a).append(b).append(c)`.
///
/// ```
/// use tang_nn::nn::{Linear, ReLU};
/// use tang_nn::{Module, sequential};
/// let dev = tang_nn::Device::new()?;
/// let mut rng = tang_nn::rng::SplitMix64::new(0);
/// let mlp = sequential![Linear::new(&dev, 4, 8, true, &mut rng)?, ReLU];
/// assert_eq!(mlp.len(), 2);
/// assert_eq!(mlp.named_parameters().len(), 2); // 0.weight, 0.bias
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! sequential {
    ($($layer:expr),* $(,)?) => {
        $crate::nn::Sequential::new()$(.append($layer))*
    };
}
