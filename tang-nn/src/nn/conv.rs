//! `Conv2d`, `MaxPool2d` and `AvgPool2d` over NCHW tensors.

use tang_runtime::Device;
use tang_runtime::ops::{Conv2d as Window, Pool2d};

use super::{Layer, init};
use crate::Module;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;

/// A 2-D convolution (PyTorch's `nn.Conv2d`): `weight [out_channels, in_channels /
/// groups, kh, kw]` and `bias [out_channels]` (optional), both uniform on
/// `±1/sqrt(fan_in)` with `fan_in = in_channels / groups · kh · kw`, as PyTorch
/// initialises them (`kaiming_uniform_(a=sqrt(5))`); draws from `rng` (PyTorch's
/// distribution, not its bits). Stride, padding, dilation, groups and bias are the
/// [`Conv2dOptions`] (PyTorch's keyword arguments and defaults: 1, 0, 1, 1, true).
///
/// ```
/// use tang_nn::{Device, Module, Tensor};
/// use tang_nn::nn::{Conv2d, Conv2dOptions};
/// let dev = Device::new()?;
/// let opts = Conv2dOptions { padding: [1, 1], ..Conv2dOptions::default() }; // padding=1
/// let conv = Conv2d::new(&dev, 3, 8, [3, 3], opts, &mut tang_nn::rng::SplitMix64::new(0))?;
/// let x = Tensor::zeros(&dev, &[2, 3, 16, 16])?;
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
    /// Stride, padding, dilation, groups (and whether it was built with a bias).
    #[module(skip)]
    pub options: Conv2dOptions,
}

/// `nn.Conv2d`'s keyword arguments with PyTorch's defaults: stride 1, no padding, no
/// dilation, one group, a bias.
///
/// ```
/// use tang_nn::nn::Conv2dOptions;
/// // nn.Conv2d(.., stride=2, bias=False)
/// let opts = Conv2dOptions { stride: [2, 2], bias: false, ..Conv2dOptions::default() };
/// assert_eq!((opts.padding, opts.groups), ([0, 0], 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dOptions {
    /// Step between windows (default `[1, 1]`).
    pub stride: [usize; 2],
    /// Implicit zero padding on each side (default `[0, 0]`).
    pub padding: [usize; 2],
    /// Spacing between kernel elements (default `[1, 1]`).
    pub dilation: [usize; 2],
    /// Channels split into this many independent groups (default 1; `in_channels` is a
    /// depthwise convolution).
    pub groups: usize,
    /// Whether the layer has a bias (default true).
    pub bias: bool,
}

impl Default for Conv2dOptions {
    fn default() -> Conv2dOptions {
        Conv2dOptions {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
            bias: true,
        }
    }
}

// `nn.Conv2d(.., padding=1)` is `Conv2dOptions::default().padding([1, 1])`; `stride=2`
// is `.stride([2, 2])`, `bias=False` is `.bias(false)`.
crate::macros::setters!(Conv2dOptions in nn {
    padding: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
    bias: bool,
});

impl Conv2dOptions {
    /// The window the runtime's `conv2d` takes.
    fn window(&self) -> Window {
        Window {
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: self.groups,
        }
    }
}

impl Conv2d {
    /// A convolution of `in_channels` to `out_channels` with a `kernel_size` window.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{Conv2d, Conv2dOptions};
    /// // nn.Conv2d(1, 2, 3, stride=2)
    /// let opts = Conv2dOptions { stride: [2, 2], ..Conv2dOptions::default() };
    /// let conv = Conv2d::new(&dev, 1, 2, [3, 3], opts, &mut tang_nn::rng::SplitMix64::new(0))?;
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
        let (weight, bias) = init::weight_and_bias(dev, "Conv2d", &shape, options.bias, rng)?;
        Ok(Conv2d {
            weight,
            bias,
            options,
        })
    }

    /// `x [N, in_channels, H, W]` to `[N, out_channels, H', W']`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::Conv2d;
    /// let opts = tang_nn::nn::Conv2dOptions { bias: false, ..Default::default() };
    /// let conv = Conv2d::new(&dev, 1, 2, [3, 3], opts, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let x = Tensor::zeros(&dev, &[1, 1, 5, 5])?;
    /// assert_eq!(conv.forward(&x)?.shape(), &[1, 2, 3, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A wrong input is an error naming the layer:
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::{Conv2d, Conv2dOptions};
    /// let conv = Conv2d::new(&dev, 3, 8, [3, 3], Conv2dOptions::default(), &mut tang_nn::rng::SplitMix64::new(0))?;
    /// let e = conv.forward(&Tensor::zeros(&dev, &[1, 1, 5, 5])?).unwrap_err();
    /// assert!(e.to_string().contains("Conv2d(3 -> 8, kernel [3, 3])"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] naming the layer (`Conv2d(3 -> 8, kernel [3, 3])`) when `x` is
    /// not NCHW with `in_channels` channels; [`Error::Runtime`] when the window does not
    /// fit.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let w = self.weight.shape();
        let in_channels = w[1].saturating_mul(self.options.groups);
        if x.shape().len() != 4 || x.shape()[1] != in_channels {
            return Err(super::layer_shape_error(
                format!(
                    "Conv2d({in_channels} -> {}, kernel [{}, {}])",
                    w[0], w[2], w[3]
                ),
                format!(
                    "the input has shape {:?}; it must be [N, {in_channels}, H, W] (NCHW with \
                     in_channels channels; unsqueeze a single image to [1, C, H, W])",
                    x.shape()
                ),
            ));
        }
        x.conv2d(&self.weight, self.bias.as_ref(), &self.options.window())
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
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::MaxPool2d;
/// use tang_nn::tang_runtime::ops::Pool2d;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::zeros(&dev, &[1, 2, 8, 8])?;
/// assert_eq!(MaxPool2d(Pool2d::new([2, 2])).forward(&x)?.shape(), &[1, 2, 4, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d(pub Pool2d);

impl MaxPool2d {
    /// Max pooling over `kernel_size` windows with PyTorch's defaults (stride the kernel
    /// size, no padding): `nn.MaxPool2d(2)` is `MaxPool2d::new([2, 2])`.
    ///
    /// ```
    /// use tang_nn::nn::MaxPool2d;
    /// assert_eq!(MaxPool2d::new([2, 2]).0.stride, [2, 2]);
    /// ```
    pub fn new(kernel_size: [usize; 2]) -> MaxPool2d {
        MaxPool2d(Pool2d::new(kernel_size))
    }

    /// The maximum of each window.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::MaxPool2d;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::from_slice(&dev, &[1.0, 5.0, 2.0, 3.0], &[1, 1, 2, 2])?;
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
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::AvgPool2d;
/// use tang_nn::tang_runtime::ops::Pool2d;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::full(&dev, &[1, 1, 4, 4], 2.0)?;
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
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::nn::AvgPool2d;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::from_slice(&dev, &[1.0, 5.0, 2.0, 4.0], &[1, 1, 2, 2])?;
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
