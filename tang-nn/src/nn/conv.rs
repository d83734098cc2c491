//! `Conv2d`, `MaxPool2d` and `AvgPool2d` over NCHW tensors.

use tang_runtime::Device;
use tang_runtime::ops::{Conv2d as Conv2dOptions, Pool2d};

use super::{Layer, init};
use crate::Module;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;

/// A 2-D convolution (PyTorch's `nn.Conv2d`): `weight [out_channels, in_channels /
/// groups, kh, kw]` and `bias [out_channels]` (optional), both uniform on
/// `±1/sqrt(fan_in)` with `fan_in = in_channels / groups · kh · kw`, as PyTorch
/// initialises them (`kaiming_uniform_(a=sqrt(5))`); draws from `rng` (PyTorch's
/// distribution, not its bits). Stride, padding, dilation and groups are the runtime's
/// [`Conv2dOptions`] (PyTorch's defaults: 1, 0, 1, 1).
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::{RawTensor, Tensor};
/// use tang_nn::nn::Conv2d;
/// use tang_nn::tang_runtime::ops::Conv2d as Conv2dOptions;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let opts = Conv2dOptions { padding: [1, 1], ..Conv2dOptions::default() };
/// let conv = Conv2d::new(&dev, 3, 8, [3, 3], opts, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// let x = Tensor::constant(RawTensor::zeros(&dev, &[2, 3, 16, 16])?);
/// assert_eq!(conv.forward(&x)?.shape(), &[2, 8, 16, 16]);
/// assert_eq!(conv.state_dict().get("weight").unwrap().shape(), &[8, 3, 3, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Module)]
pub struct Conv2d {
    /// `[out_channels, in_channels / groups, kh, kw]`.
    pub weight: Tensor,
    /// `[out_channels]`, absent for `bias = false`.
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation, groups.
    #[module(skip)]
    pub options: Conv2dOptions,
}

impl Conv2d {
    /// A convolution of `in_channels` to `out_channels` with a `kernel_size` window.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Conv2d;
    /// use tang_nn::tang_runtime::ops::Conv2d as Conv2dOptions;
    /// // nn.Conv2d(1, 2, 3, stride=2)
    /// let opts = Conv2dOptions { stride: [2, 2], ..Conv2dOptions::default() };
    /// let conv = Conv2d::new(&dev, 1, 2, [3, 3], opts, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// assert_eq!(conv.weight.shape(), &[2, 1, 3, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `groups` is 0 or does not divide both channel counts, or
    /// the device cannot allocate the parameters.
    pub fn new(
        dev: &Device,
        in_channels: usize,
        out_channels: usize,
        kernel_size: [usize; 2],
        options: Conv2dOptions,
        bias: bool,
        rng: &mut SplitMix64,
    ) -> Result<Conv2d, Error> {
        let groups = options.groups;
        if groups == 0
            || !in_channels.is_multiple_of(groups)
            || !out_channels.is_multiple_of(groups)
        {
            return Err(super::invalid(
                "Conv2d",
                format!(
                    "groups ({groups}) must be positive and divide in_channels ({in_channels}) \
                     and out_channels ({out_channels})"
                ),
            ));
        }
        let shape = [
            out_channels,
            in_channels / groups,
            kernel_size[0],
            kernel_size[1],
        ];
        let fan_in = shape[1].saturating_mul(shape[2]).saturating_mul(shape[3]);
        let bound = init::linear_bound(fan_in);
        let weight = init::uniform(dev, "Conv2d", &shape, bound, rng)?;
        let bias = if bias {
            let b = init::uniform(dev, "Conv2d", &[out_channels], bound, rng)?;
            Some(Tensor::parameter(b))
        } else {
            None
        };
        Ok(Conv2d {
            weight: Tensor::parameter(weight),
            bias,
            options,
        })
    }

    /// `x [N, in_channels, H, W]` to `[N, out_channels, H', W']`.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Conv2d;
    /// let conv = Conv2d::new(&dev, 1, 2, [3, 3], Default::default(), false, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let x = Tensor::constant(RawTensor::zeros(&dev, &[1, 1, 5, 5])?);
    /// assert_eq!(conv.forward(&x)?.shape(), &[1, 2, 3, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x` is not NCHW with `in_channels` channels or the window
    /// does not fit.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.conv2d(&self.weight, self.bias.as_ref(), &self.options)
    }
}

impl Layer for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        Conv2d::forward(self, x)
    }
}

/// Max pooling over windows of NCHW planes (PyTorch's `nn.MaxPool2d`; stride defaults to
/// the kernel size: [`Pool2d::new`]). No parameters.
///
/// ```
/// use tang_nn::autograd::{RawTensor, Tensor};
/// use tang_nn::nn::MaxPool2d;
/// use tang_nn::tang_runtime::ops::Pool2d;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::constant(RawTensor::zeros(&dev, &[1, 2, 8, 8])?);
/// assert_eq!(MaxPool2d(Pool2d::new([2, 2])).forward(&x)?.shape(), &[1, 2, 4, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d(pub Pool2d);

impl MaxPool2d {
    /// The maximum of each window.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::MaxPool2d;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 5.0, 2.0, 3.0], &[1, 1, 2, 2])?);
    /// assert_eq!(MaxPool2d(Pool2d::new([2, 2])).forward(&x)?.to_vec()?, [5.0]); // nn.MaxPool2d(2)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `x` is NCHW and the window fits.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.max_pool2d(&self.0)
    }
}

/// Average pooling over windows of NCHW planes (PyTorch's `nn.AvgPool2d`; stride
/// defaults to the kernel size, `count_include_pad` to `true`). No parameters.
///
/// ```
/// use tang_nn::autograd::{RawTensor, Tensor};
/// use tang_nn::nn::AvgPool2d;
/// use tang_nn::tang_runtime::ops::Pool2d;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::constant(RawTensor::full(&dev, &[1, 1, 4, 4], 2.0)?);
/// let pool = AvgPool2d { pool: Pool2d::new([2, 2]), count_include_pad: true };
/// assert_eq!(pool.forward(&x)?.to_vec()?, vec![2.0; 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2d {
    /// The window.
    pub pool: Pool2d,
    /// Whether padding counts in the divisor (PyTorch's default `true`).
    pub count_include_pad: bool,
}

impl AvgPool2d {
    /// The mean of each window.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::AvgPool2d;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 5.0, 2.0, 4.0], &[1, 1, 2, 2])?);
    /// let pool = AvgPool2d { pool: Pool2d::new([2, 2]), count_include_pad: true }; // nn.AvgPool2d(2)
    /// assert_eq!(pool.forward(&x)?.to_vec()?, [3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `x` is NCHW and the window fits, or for a dilation.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.avg_pool2d(&self.pool, self.count_include_pad)
    }
}

stateless_layer!(MaxPool2d, AvgPool2d);
