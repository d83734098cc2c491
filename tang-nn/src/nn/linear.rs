//! `Linear`: `y = x Wᵀ + b` with PyTorch's layout and initialisation.

use super::{Layer, init};
use crate::Module;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;
use tang_runtime::Device;

/// A fully connected layer (PyTorch's `nn.Linear`): `weight [out_features, in_features]`,
/// `bias [out_features]` (optional), both uniform on `±1/sqrt(in_features)` as PyTorch
/// initialises them (`kaiming_uniform_(a=sqrt(5))` for the weight); the draws come from
/// `rng`, so they differ from PyTorch's bits but not its distribution.
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::Linear;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let fc = Linear::new(&dev, 64, 10, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// let x = Tensor::zeros(&dev, &[32, 64])?;
/// assert_eq!(fc.forward(&x)?.shape(), &[32, 10]);
/// assert_eq!(fc.state_dict().names().collect::<Vec<_>>(), ["weight", "bias"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Tensor,
    /// `[out_features]`, absent for `bias = false`.
    pub bias: Option<Tensor>,
}

impl Linear {
    /// A layer of `in_features` inputs and `out_features` outputs, with a bias when
    /// `bias` (PyTorch's default is `true`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Linear;
    /// let fc = Linear::new(&dev, 4, 3, false, &mut tang_nn::rng::SplitMix64::new(0))?; // nn.Linear(4, 3, bias=False)
    /// assert!(fc.bias.is_none() && fc.weight.shape() == [3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the sizes overflow or the device cannot allocate them.
    pub fn new(
        dev: &Device,
        in_features: usize,
        out_features: usize,
        bias: bool,
        rng: &mut SplitMix64,
    ) -> Result<Linear, Error> {
        let shape = [out_features, in_features];
        let (weight, bias) = init::weight_and_bias(dev, "Linear", &shape, bias, rng)?;
        Ok(Linear { weight, bias })
    }

    /// `in_features`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let fc = tang_nn::nn::Linear::new(&dev, 4, 3, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(fc.in_features(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_features(&self) -> usize {
        self.weight.shape()[1]
    }

    /// `out_features`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let fc = tang_nn::nn::Linear::new(&dev, 4, 3, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(fc.out_features(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }

    /// `x [.., in_features]` to `[.., out_features]`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let fc = tang_nn::nn::Linear::new(&dev, 4, 3, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let x = Tensor::zeros(&dev, &[2, 5, 4])?;
    /// assert_eq!(fc.forward(&x)?.shape(), &[2, 5, 3]); // any leading dimensions
    /// let e = fc.forward(&Tensor::zeros(&dev, &[2, 5])?).unwrap_err();
    /// assert!(e.to_string().contains("Linear(4 -> 3)")); // the layer names itself
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x`'s last dimension is not `in_features`, naming the layer
    /// (`Linear(4 -> 3)`) rather than the matmul inside it.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let (inputs, outputs) = (self.in_features(), self.out_features());
        if x.shape().last() != Some(&inputs) {
            return Err(Error::Runtime(tang_runtime::Error::ShapeMismatch {
                op: format!("Linear({inputs} -> {outputs})"),
                detail: format!(
                    "the input has shape {:?}; its last dimension must be {inputs} \
                     (in_features)",
                    x.shape()
                ),
            }));
        }
        x.linear(&self.weight, self.bias.as_ref())
    }
}

impl Layer for Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        Linear::forward(self, x)
    }
}
