//! The recording ops of convolution and pooling layers (NCHW), over the runtime's
//! `conv2d`, `max_pool2d` and `avg_pool2d` and their backwards. PyTorch's names.

use tang_runtime::ops::{self, Conv2d, Pool2d};

use super::Error;
use super::op::Op;
use super::tensor::Tensor;

impl Tensor {
    /// 2-D convolution of `self [N, C_in, H, W]` with `weight [C_out, C_in / groups, kh,
    /// kw]` and an optional `bias [C_out]` (PyTorch's `F.conv2d`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::{Device, Tensor as RawTensor, ops::Conv2d};
    /// let dev = Device::new()?;
    /// let x = Tensor::zeros(&dev, &[1, 3, 8, 8])?;
    /// let w = Tensor::zeros(&dev, &[4, 3, 3, 3])?.into_parameter();
    /// let conv = Conv2d { padding: [1, 1], ..Conv2d::default() };
    /// assert_eq!(x.conv2d(&w, None, &conv)?.shape(), &[1, 4, 8, 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes, groups or window do not fit.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        conv: &Conv2d,
    ) -> Result<Tensor, Error> {
        let out = ops::conv2d(self.data(), weight.data(), bias.map(Tensor::data), conv)?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        Ok(Tensor::record(out, Op::Conv2d(*conv), &inputs, true, false))
    }

    /// The maximum of each window of `self [N, C, H, W]` (PyTorch's `F.max_pool2d`); the
    /// gradient goes to the first maximum of each window.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::from_slice(&dev, &[1.0, 4.0, 2.0, 3.0], &[1, 1, 2, 2])?;
    /// assert_eq!(x.max_pool2d(&Pool2d::new([2, 2]))?.to_vec()?, [4.0]); // F.max_pool2d(x, 2)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `self` is NCHW and the window fits.
    pub fn max_pool2d(&self, pool: &Pool2d) -> Result<Tensor, Error> {
        let (out, indices) = ops::max_pool2d(self.data(), pool)?;
        let op = Op::MaxPool2d {
            indices,
            pool: *pool,
        };
        Ok(Tensor::record(out, op, &[self], false, false))
    }

    /// The mean of each window of `self [N, C, H, W]` (PyTorch's `F.avg_pool2d`; PyTorch's
    /// default `count_include_pad` is `true`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::tang_runtime::ops::Pool2d;
    /// let x = Tensor::from_slice(&dev, &[1.0, 4.0, 2.0, 3.0], &[1, 1, 2, 2])?;
    /// assert_eq!(x.avg_pool2d(&Pool2d::new([2, 2]), true)?.to_vec()?, [2.5]); // F.avg_pool2d(x, 2)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `self` is NCHW and the window fits, or for a dilation.
    pub fn avg_pool2d(&self, pool: &Pool2d, count_include_pad: bool) -> Result<Tensor, Error> {
        let out = ops::avg_pool2d(self.data(), pool, count_include_pad)?;
        let op = Op::AvgPool2d {
            pool: *pool,
            count_include_pad,
        };
        Ok(Tensor::record(out, op, &[self], false, false))
    }
}
