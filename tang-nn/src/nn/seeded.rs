//! `Seeded`: one device and one seed for a program's layers and random inputs, as
//! `torch.manual_seed(seed)` is for PyTorch's.

use super::Linear;
use crate::autograd::{Error, Tensor};
use crate::rng::SplitMix64;
use tang_runtime::Device;
use tang_runtime::ops::Generator;

/// A device with seeded random streams (tang's `torch.manual_seed(seed)` plus PyTorch's
/// default device): layers built through it draw their initial weights from one
/// [`SplitMix64`], random tensors from one GPU [`Generator`], both fixed by `seed`, so a
/// program is reproducible without passing generators around.
///
/// ```
/// use tang_nn::nn::{ReLU, Seeded};
/// use tang_nn::{Device, Module, sequential};
/// let dev = Device::new()?;
/// let mut s = Seeded::new(&dev, 0); // torch.manual_seed(0)
/// let model = sequential![s.linear(4, 8)?, ReLU, s.linear(8, 2)?];
/// let x = s.randn(&[3, 4])?; // torch.randn(3, 4)
/// assert_eq!(model.forward(&x)?.shape(), [3, 2]);
/// assert_eq!(model.named_parameters().len(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Seeded {
    dev: Device,
    rng: SplitMix64,
    generator: Generator,
}

impl Seeded {
    /// Streams on `dev` fixed by `seed`.
    ///
    /// ```
    /// # use tang_nn::{Device, nn::Seeded};
    /// # let dev = Device::new()?;
    /// let a = Seeded::new(&dev, 7).randn(&[4])?.to_vec()?;
    /// let b = Seeded::new(&dev, 7).randn(&[4])?.to_vec()?;
    /// assert_eq!(a, b); // same seed, same values
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(dev: &Device, seed: u64) -> Seeded {
        Seeded {
            dev: dev.clone(),
            rng: SplitMix64::new(seed),
            generator: Generator::new(seed),
        }
    }

    /// The device everything is created on.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor, nn::Seeded};
    /// # let dev = Device::new()?;
    /// let s = Seeded::new(&dev, 0);
    /// let z = Tensor::zeros(s.device(), &[2])?;
    /// assert_eq!(z.to_vec()?, [0.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The weight-initialisation stream, for constructors that take one (`Conv2d::new`,
    /// `Embedding::new`, ..).
    ///
    /// ```
    /// # use tang_nn::{Device, nn::{Linear, Seeded}};
    /// # let dev = Device::new()?;
    /// let mut s = Seeded::new(&dev, 0);
    /// let fc = Linear::new(&dev, 4, 3, false, s.rng())?; // nn.Linear(4, 3, bias=False)
    /// assert!(fc.bias.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rng(&mut self) -> &mut SplitMix64 {
        &mut self.rng
    }

    /// The GPU random stream, for [`Tensor::randn`] and its kin.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor, nn::Seeded};
    /// # let dev = Device::new()?;
    /// let mut s = Seeded::new(&dev, 0);
    /// let u = Tensor::rand(&dev, &[8], s.generator())?;
    /// assert!(u.to_vec()?.iter().all(|v| (0.0..1.0).contains(v)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generator(&mut self) -> &mut Generator {
        &mut self.generator
    }

    /// A [`Linear`] layer with a bias, as `nn.Linear(in_features, out_features)` builds
    /// it ([`Linear::new`] takes `bias: false`).
    ///
    /// ```
    /// # use tang_nn::{Device, nn::Seeded};
    /// # let dev = Device::new()?;
    /// let fc = Seeded::new(&dev, 0).linear(4, 3)?;
    /// assert_eq!(fc.weight.shape(), [3, 4]);
    /// assert!(fc.bias.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Linear::new`].
    pub fn linear(&mut self, in_features: usize, out_features: usize) -> Result<Linear, Error> {
        Linear::new(&self.dev, in_features, out_features, true, &mut self.rng)
    }

    /// Standard-normal values of `shape` (`torch.randn(*shape)`), as a constant.
    ///
    /// ```
    /// # use tang_nn::{Device, nn::Seeded};
    /// # let dev = Device::new()?;
    /// let x = Seeded::new(&dev, 0).randn(&[32, 16])?;
    /// assert_eq!(x.shape(), [32, 16]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::randn`].
    pub fn randn(&mut self, shape: &[usize]) -> Result<Tensor, Error> {
        Tensor::randn(&self.dev, shape, &mut self.generator)
    }
}
