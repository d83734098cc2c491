//! Activation functions as modules (parameter-free: they list nothing but still take an
//! index in a [`super::Sequential`], as in PyTorch).

use crate::autograd::{Error, Tensor};

/// `max(x, 0)` (PyTorch's `nn.ReLU`).
///
/// ```
/// use tang_nn::autograd::Tensor;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[-1.0, 2.0], &[2])?;
/// assert_eq!(tang_nn::nn::ReLU.forward(&x)?.to_vec()?, vec![0.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ReLU;

impl ReLU {
    /// `max(x, 0)` elementwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[-1.0, 2.0], &[2])?;
    /// assert_eq!(tang_nn::nn::ReLU.forward(&x)?.to_vec()?, [0.0, 2.0]); // nn.ReLU()(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.relu()
    }
}

/// Which GELU (PyTorch's `approximate` argument).
///
/// ```
/// use tang_nn::nn::{Approximate, GELU};
/// let gelu = GELU::new("tanh".parse::<Approximate>()?); // nn.GELU(approximate="tanh")
/// assert_eq!(gelu.approximate, Approximate::Tanh);
/// assert!("cubic".parse::<Approximate>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approximate {
    /// `"none"`, PyTorch's default: the exact `x Φ(x)` with the error function.
    #[default]
    None,
    /// `"tanh"`: `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))`.
    Tanh,
}

impl std::str::FromStr for Approximate {
    type Err = Error;

    /// PyTorch's strings, `"none"` and `"tanh"`.
    fn from_str(s: &str) -> Result<Approximate, Error> {
        match s {
            "none" => Ok(Approximate::None),
            "tanh" => Ok(Approximate::Tanh),
            other => Err(super::invalid(
                "GELU",
                format!("approximate must be \"none\" or \"tanh\", got {other:?}"),
            )),
        }
    }
}

/// GELU (PyTorch's `nn.GELU(approximate)`; the default is the exact form).
///
/// ```
/// use tang_nn::nn::{Approximate, GELU};
/// let exact = GELU::default();
/// let fast = GELU::new("tanh".parse()?);
/// assert_eq!((exact.approximate, fast.approximate), (Approximate::None, Approximate::Tanh));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::upper_case_acronyms)] // PyTorch's name.
#[derive(Clone, Copy, Debug, Default)]
pub struct GELU {
    /// Exact or tanh form.
    pub approximate: Approximate,
}

impl GELU {
    /// A GELU of the given form.
    ///
    /// ```
    /// use tang_nn::nn::{Approximate, GELU};
    /// let gelu = GELU::new(Approximate::Tanh); // nn.GELU(approximate="tanh")
    /// assert_eq!(gelu.approximate, Approximate::Tanh);
    /// ```
    pub fn new(approximate: Approximate) -> GELU {
        GELU { approximate }
    }

    /// GELU elementwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 10.0], &[2])?;
    /// let y = tang_nn::nn::GELU::default().forward(&x)?.to_vec()?; // nn.GELU()(x)
    /// assert!(y[0] == 0.0 && (y[1] - 10.0).abs() < 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        match self.approximate {
            Approximate::None => x.gelu_erf(),
            Approximate::Tanh => x.gelu(),
        }
    }
}

/// `x * sigmoid(x)` (PyTorch's `nn.SiLU`).
///
/// ```
/// use tang_nn::autograd::Tensor;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
/// assert_eq!(tang_nn::nn::SiLU.forward(&x)?.to_vec()?, vec![0.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SiLU;

impl SiLU {
    /// SiLU elementwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(tang_nn::nn::SiLU.forward(&x)?.to_vec()?, [0.0]); // nn.SiLU()(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.silu()
    }
}

/// `1 / (1 + e^-x)` (PyTorch's `nn.Sigmoid`).
///
/// ```
/// use tang_nn::autograd::Tensor;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
/// assert_eq!(tang_nn::nn::Sigmoid.forward(&x)?.to_vec()?, vec![0.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Sigmoid;

impl Sigmoid {
    /// The sigmoid elementwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(tang_nn::nn::Sigmoid.forward(&x)?.to_vec()?, [0.5]); // nn.Sigmoid()(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.sigmoid()
    }
}

/// The hyperbolic tangent (PyTorch's `nn.Tanh`).
///
/// ```
/// use tang_nn::autograd::Tensor;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
/// assert_eq!(tang_nn::nn::Tanh.forward(&x)?.to_vec()?, vec![0.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

impl Tanh {
    /// tanh elementwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(tang_nn::nn::Tanh.forward(&x)?.to_vec()?, [0.0]); // nn.Tanh()(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.tanh()
    }
}

stateless_layer!(ReLU, GELU, SiLU, Sigmoid, Tanh);

/// A one-input `#[fused_grad]` function as a layer (PyTorch's `nn.Module` wrapping a
/// custom `autograd.Function`): forward is the function's kernel, backward its generated
/// VJP, recorded through [`crate::autograd::apply`]. Parameter-free, so it takes a place
/// in a [`super::Sequential`] like [`ReLU`].
///
/// ```
/// use tang_nn::prelude::*;
/// use tang_nn::nn::Fused;
///
/// #[fused_grad]
/// fn soft_relu(x: f32) -> f32 {
///     (4.0 * x).softplus() / 4.0
/// }
///
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
/// let y = Fused(soft_relu::FUSED).forward(&x)?;
/// assert!((y.item()? - soft_relu(0.0)).abs() < 1e-6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Fused(pub tang_runtime::ops::FusedFn);

impl Fused {
    /// The function applied to `x` elementwise.
    ///
    /// ```
    /// # use tang_nn::prelude::*;
    /// # #[fused_grad]
    /// # fn square(x: f32) -> f32 { x * x }
    /// # let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[3.0], &[1])?.into_parameter();
    /// let y = tang_nn::nn::Fused(square::FUSED).forward(&x)?;
    /// assert_eq!(y.backward()?.get(&x).ok_or("no gradient")?.to_vec()?, [6.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the function takes more than one input or uniforms, or
    /// for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        crate::autograd::apply(&self.0, &[x], &[])
    }
}

stateless_layer!(Fused);
