//! `Flatten`: the reshape between a convolution stack and its linear head, as a layer so
//! that a CNN is one [`super::Sequential`].

use crate::autograd::{Error, Tensor};

/// Merges dimensions `start_dim..` into one (PyTorch's `nn.Flatten()`, whose default
/// `start_dim = 1` keeps the batch dimension); a view, no copy.
///
/// ```
/// use tang_nn::{Device, Tensor};
/// use tang_nn::nn::Flatten;
/// let dev = Device::new()?;
/// let x = Tensor::zeros(&dev, &[2, 3, 4, 4])?;
/// assert_eq!(Flatten::default().forward(&x)?.shape(), &[2, 48]); // nn.Flatten()(x)
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flatten {
    /// The first dimension merged (PyTorch's default 1).
    pub start_dim: usize,
}

impl Default for Flatten {
    fn default() -> Flatten {
        Flatten { start_dim: 1 }
    }
}

impl Flatten {
    /// `x` with dimensions `start_dim..` merged.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2, 3, 4])?;
    /// assert_eq!(tang_nn::nn::Flatten { start_dim: 0 }.forward(&x)?.shape(), &[24]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when `start_dim` is not below `x`'s rank.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.flatten(self.start_dim)
    }
}

stateless_layer!(Flatten);
