//! `LayerNorm` and `RMSNorm` over the last dimension.

use crate::Module;
use crate::autograd::{Error, RawTensor, Tensor};
use tang_runtime::Device;

/// Layer normalisation over the last dimension (PyTorch's `nn.LayerNorm(n, eps, bias)`
/// with `elementwise_affine=True`): `weight [n]` ones and `bias [n]` zeros, as PyTorch
/// initialises them; PyTorch's default `eps` is `1e-5`. Without a bias
/// (`bias = false`, nanoGPT's `bias=False`) the state dict holds `weight` alone.
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::nn::LayerNorm;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let ln = LayerNorm::new(&dev, 64, 1e-5, false)?;
/// assert_eq!(ln.state_dict().names().collect::<Vec<_>>(), ["weight"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct LayerNorm {
    /// `[n]`, ones.
    pub weight: Tensor,
    /// `[n]`, zeros; absent for `bias = false`.
    pub bias: Option<Tensor>,
    /// Zeros standing in for an absent bias (the kernel takes one); never trained.
    #[module(skip)]
    zero_bias: Tensor,
    /// Added to the variance.
    #[module(skip)]
    pub eps: f32,
}

/// `nn.LayerNorm`'s keyword arguments with PyTorch's defaults: `eps` 1e-5 and a bias
/// (`elementwise_affine=True` is the only mode: the weight is always there).
///
/// ```
/// use tang_nn::nn::{LayerNorm, LayerNormOptions};
/// let dev = tang_nn::Device::new()?;
/// // nn.LayerNorm(64, bias=False)
/// let ln = LayerNorm::with_options(&dev, 64, LayerNormOptions::default().bias(false))?;
/// assert!(ln.bias.is_none() && ln.eps == 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNormOptions {
    /// Added to the variance (default `1e-5`).
    pub eps: f32,
    /// Whether the layer has a bias (default true).
    pub bias: bool,
}

impl Default for LayerNormOptions {
    fn default() -> LayerNormOptions {
        LayerNormOptions {
            eps: 1e-5,
            bias: true,
        }
    }
}

// `nn.LayerNorm(.., eps=1e-6)` is `LayerNormOptions::default().eps(1e-6)`; `bias=False`
// is `.bias(false)`.
crate::macros::setters!(LayerNormOptions in nn { eps: f32, bias: bool });

impl LayerNorm {
    /// A layer norm over a last dimension of `normalized_shape` values with the given
    /// options (`nn.LayerNorm(normalized_shape, eps=.., bias=..)`).
    ///
    /// ```
    /// use tang_nn::nn::{LayerNorm, LayerNormOptions};
    /// let dev = tang_nn::Device::new()?;
    /// let ln = LayerNorm::with_options(&dev, 8, LayerNormOptions::default())?; // nn.LayerNorm(8)
    /// assert!(ln.bias.is_some() && ln.eps == 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`LayerNorm::new`].
    pub fn with_options(
        dev: &Device,
        normalized_shape: usize,
        options: LayerNormOptions,
    ) -> Result<LayerNorm, Error> {
        LayerNorm::new(dev, normalized_shape, options.eps, options.bias)
    }

    /// A layer norm over a last dimension of `normalized_shape` values.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::LayerNorm;
    /// let ln = LayerNorm::new(&dev, 8, 1e-5, false)?; // nn.LayerNorm(8, bias=False)
    /// assert!(ln.bias.is_none() && ln.weight.to_vec()? == [1.0; 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `eps` is negative or not finite, or the device cannot
    /// allocate the parameters.
    pub fn new(
        dev: &Device,
        normalized_shape: usize,
        eps: f32,
        bias: bool,
    ) -> Result<LayerNorm, Error> {
        check_eps("LayerNorm", eps)?;
        let shape = [normalized_shape];
        let weight = Tensor::parameter(RawTensor::full(dev, &shape, 1.0)?);
        let bias = if bias {
            Some(Tensor::parameter(RawTensor::zeros(dev, &shape)?))
        } else {
            None
        };
        Ok(LayerNorm {
            weight,
            bias,
            zero_bias: Tensor::constant(RawTensor::zeros(dev, &shape)?),
            eps,
        })
    }

    /// `x [.., n]` normalised over its last dimension, scaled and shifted.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let ln = tang_nn::nn::LayerNorm::new(&dev, 2, 1e-5, true)?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 3.0], &[1, 2])?;
    /// let y = ln.forward(&x)?.to_vec()?;
    /// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] naming the layer (`LayerNorm(8)`) when `x`'s last dimension is
    /// not `n`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        check_last("LayerNorm", x, self.weight.shape()[0])?;
        let bias = self.bias.as_ref().unwrap_or(&self.zero_bias);
        x.layer_norm(&self.weight, bias, self.eps)
    }
}

impl super::Layer for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        LayerNorm::forward(self, x)
    }
}

/// Root-mean-square normalisation over the last dimension (PyTorch's `nn.RMSNorm(n, eps)`
/// with `elementwise_affine=True`): `x / sqrt(mean(x²) + eps) * weight`, `weight [n]`
/// ones. `eps = None` is PyTorch's default, the f32 machine epsilon
/// (`torch.finfo(torch.float32).eps`, [`f32::EPSILON`]).
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::nn::RMSNorm;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let norm = RMSNorm::new(&dev, 64, None)?;
/// assert_eq!(norm.eps, f32::EPSILON);
/// assert_eq!(norm.num_params(), 64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct RMSNorm {
    /// `[n]`, ones.
    pub weight: Tensor,
    /// Added to the mean square.
    #[module(skip)]
    pub eps: f32,
}

impl RMSNorm {
    /// An RMS norm over a last dimension of `normalized_shape` values.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let norm = tang_nn::nn::RMSNorm::new(&dev, 8, Some(1e-6))?; // nn.RMSNorm(8, eps=1e-6)
    /// assert_eq!(norm.eps, 1e-6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `eps` is negative or not finite, or the device cannot
    /// allocate the weight.
    pub fn new(dev: &Device, normalized_shape: usize, eps: Option<f32>) -> Result<RMSNorm, Error> {
        let eps = eps.unwrap_or(f32::EPSILON);
        check_eps("RMSNorm", eps)?;
        let weight = RawTensor::full(dev, &[normalized_shape], 1.0)?;
        Ok(RMSNorm {
            weight: Tensor::parameter(weight),
            eps,
        })
    }

    /// `x [.., n]` normalised over its last dimension and scaled.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let norm = tang_nn::nn::RMSNorm::new(&dev, 2, Some(0.0))?;
    /// let x = Tensor::from_slice(&dev, &[3.0, 3.0], &[1, 2])?;
    /// let y = norm.forward(&x)?.to_vec()?; // x / sqrt(mean(x²))
    /// assert!((y[0] - 1.0).abs() < 1e-6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] naming the layer (`RMSNorm(8)`) when `x`'s last dimension is not
    /// `n`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        check_last("RMSNorm", x, self.weight.shape()[0])?;
        x.rms_norm(&self.weight, self.eps)
    }
}

impl super::Layer for RMSNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        RMSNorm::forward(self, x)
    }
}

/// The shape error of a norm over a last dimension of `n`, naming the layer.
fn check_last(layer: &str, x: &Tensor, n: usize) -> Result<(), Error> {
    if x.shape().last() == Some(&n) {
        return Ok(());
    }
    Err(super::layer_shape_error(
        format!("{layer}({n})"),
        format!(
            "the input has shape {:?}; its last dimension must be {n} (normalized_shape)",
            x.shape()
        ),
    ))
}

fn check_eps(layer: &str, eps: f32) -> Result<(), Error> {
    if eps.is_finite() && eps >= 0.0 {
        return Ok(());
    }
    Err(super::invalid(
        layer,
        format!("eps must be a finite number >= 0, got {eps}"),
    ))
}
