//! Making and reading the one tensor a tang-nn user handles: PyTorch's constructors
//! (`torch.tensor`, `zeros`, `ones`, `full`, `rand`, `randn`, `arange`) as constructors of
//! the autograd [`Tensor`], so that a program never names the runtime's tensor; and the
//! host reads (`item`, `to_vec_u32`) and shape helpers (`flatten`, `reshape` with `-1`).
//!
//! Every constructor gives a constant leaf (PyTorch's default `requires_grad=False`):
//! call [`Tensor::requires_grad_`] or [`Tensor::into_parameter`] to train it.

use tang_runtime::ops::Generator;
use tang_runtime::{Device, ops};

use super::{Error, RawTensor, Tensor};

impl Tensor {
    /// An f32 tensor of `shape` holding `data` (row-major), on `dev`: PyTorch's
    /// `torch.tensor(data).reshape(shape)`.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(x.shape(), &[2, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A shape error when `data.len()` is not the product of `shape`.
    pub fn from_slice(dev: &Device, data: &[f32], shape: &[usize]) -> Result<Tensor, Error> {
        Ok(Tensor::constant(RawTensor::from_slice(dev, data, shape)?))
    }

    /// A u32 tensor (token ids, class labels, indices): PyTorch's `torch.tensor(data)` of
    /// integers. The largest value is remembered, so an op given an id past its table
    /// reports it at once (no host read later).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// let dev = Device::new()?;
    /// let y = Tensor::from_u32(&dev, &[3, 0, 1], &[3])?;
    /// assert_eq!(y.to_vec_u32()?, [3, 0, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::from_slice`].
    pub fn from_u32(dev: &Device, data: &[u32], shape: &[usize]) -> Result<Tensor, Error> {
        Ok(Tensor::constant(RawTensor::from_u32(dev, data, shape)?))
    }

    /// Zeros (`torch.zeros(shape)`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// assert_eq!(Tensor::zeros(&dev, &[2])?.to_vec()?, [0.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Over the device's buffer size limit.
    pub fn zeros(dev: &Device, shape: &[usize]) -> Result<Tensor, Error> {
        Ok(Tensor::constant(RawTensor::zeros(dev, shape)?))
    }

    /// Ones (`torch.ones(shape)`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// assert_eq!(Tensor::ones(&dev, &[2])?.to_vec()?, [1.0, 1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn ones(dev: &Device, shape: &[usize]) -> Result<Tensor, Error> {
        Tensor::full(dev, shape, 1.0)
    }

    /// Every element `value` (`torch.full(shape, value)`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// assert_eq!(Tensor::full(&dev, &[2], 7.0)?.to_vec()?, [7.0, 7.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn full(dev: &Device, shape: &[usize], value: f32) -> Result<Tensor, Error> {
        Ok(Tensor::constant(RawTensor::full(dev, shape, value)?))
    }

    /// Uniform in `[0, 1)` from the seeded generator (`torch.rand(shape, generator=g)`),
    /// drawn on the GPU.
    ///
    /// ```
    /// # use tang_nn::{Device, Generator, Tensor};
    /// # let dev = Device::new()?;
    /// let mut g = Generator::new(0); // torch.Generator().manual_seed(0)
    /// let u = Tensor::rand(&dev, &[4], &mut g)?.to_vec()?;
    /// assert!(u.iter().all(|v| (0.0..1.0).contains(v)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn rand(dev: &Device, shape: &[usize], generator: &mut Generator) -> Result<Tensor, Error> {
        Ok(Tensor::constant(ops::rand(dev, shape, generator)?))
    }

    /// Standard normal from the seeded generator (`torch.randn(shape, generator=g)`).
    ///
    /// ```
    /// # use tang_nn::{Device, Generator, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::randn(&dev, &[2, 3], &mut Generator::new(0))?;
    /// assert_eq!(x.shape(), &[2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn randn(
        dev: &Device,
        shape: &[usize],
        generator: &mut Generator,
    ) -> Result<Tensor, Error> {
        Ok(Tensor::constant(ops::randn(dev, shape, generator)?))
    }

    /// The u32 ids `0, 1, .., end - 1` (`torch.arange(end)`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// assert_eq!(Tensor::arange(&dev, 3)?.to_vec_u32()?, [0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn arange(dev: &Device, end: u32) -> Result<Tensor, Error> {
        Ok(Tensor::constant(ops::arange(dev, 0, end, 1)?))
    }

    /// This tensor as a trainable leaf (`nn.Parameter(t)`): same buffer, a new identity.
    ///
    /// ```
    /// # use tang_nn::{Device, Generator, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::randn(&dev, &[3], &mut Generator::new(0))?.into_parameter();
    /// assert!(w.requires_grad() && w.is_leaf());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_parameter(self) -> Tensor {
        Tensor::parameter(self.data().clone())
    }

    /// The element type: f32 for values, u32 for ids and labels (`t.dtype`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let y = Tensor::from_u32(&dev, &[1], &[1])?;
    /// assert_eq!(y.dtype(), tang_nn::tang_runtime::DType::U32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtype(&self) -> tang_runtime::DType {
        self.data().dtype()
    }

    /// The number of elements (`t.numel()`).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// assert_eq!(Tensor::zeros(&dev, &[2, 3])?.numel(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn numel(&self) -> usize {
        self.data().len()
    }

    /// The value of a one-element tensor (`loss.item()`): a read, so a sync point.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let loss = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.sum_all()?;
    /// assert_eq!(loss.item()?, 3.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A shape error unless the tensor has exactly one element; a device error from
    /// the read (among them an out-of-range id that an earlier op found on the GPU).
    pub fn item(&self) -> Result<f32, Error> {
        Ok(self.data().item()?)
    }

    /// The values of a u32 tensor (ids, labels, predictions), read back to the host.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.1, 0.9, 0.8, 0.2], &[2, 2])?;
    /// assert_eq!(x.argmax(1)?.to_vec_u32()?, [1, 0]); // torch: x.argmax(1).tolist()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A dtype error on an f32 tensor (use [`Tensor::to_vec`]); as [`Tensor::item`].
    pub fn to_vec_u32(&self) -> Result<Vec<u32>, Error> {
        Ok(self.data().to_vec_u32()?)
    }

    /// The indices of the largest values along `dim` (`x.argmax(dim)`), a u32 tensor
    /// without `dim`; not differentiable (the result requires no grad).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.1, 0.9, 0.8, 0.2], &[2, 2])?;
    /// assert_eq!(x.argmax(1)?.shape(), &[2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A shape error for `dim` out of range.
    pub fn argmax(&self, dim: usize) -> Result<Tensor, Error> {
        Ok(Tensor::constant(ops::argmax(self.data(), dim)?))
    }

    /// Dimensions `start_dim..` merged into one (`x.flatten(start_dim)`; `flatten(0)` is
    /// `torch.flatten(x)`), a view sharing the buffer.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2, 3, 4])?;
    /// assert_eq!(x.flatten(1)?.shape(), &[2, 12]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A shape error when `start_dim` is not below the rank.
    pub fn flatten(&self, start_dim: usize) -> Result<Tensor, Error> {
        let shape = self.shape();
        if start_dim >= shape.len().max(1) {
            return Err(tang_runtime::Error::ShapeMismatch {
                op: "flatten".into(),
                detail: format!(
                    "start_dim {start_dim} is past the last dimension of shape {shape:?}; \
                     pass a dimension below {}",
                    shape.len().max(1)
                ),
            }
            .into());
        }
        let mut out: Vec<usize> = shape.iter().take(start_dim).copied().collect();
        out.push(shape.iter().skip(start_dim).product());
        self.reshape(&out)
    }
}

/// A shape for [`Tensor::reshape`]: `usize` dimensions, or signed ones where one `-1` is
/// inferred from the element count, as in PyTorch (`x.reshape([2, -1])`). Literals need
/// no suffix; a `usize` variable beside `-1` is written `n as i64`.
pub trait Dims {
    /// The dimensions, with a `-1` left as `None`.
    fn dims(&self) -> Vec<Option<usize>>;
}

macro_rules! dims {
    (unsigned: $($t:ty),*; signed: $($s:ty),*) => {
        $(
            impl Dims for [$t] {
                fn dims(&self) -> Vec<Option<usize>> { self.iter().map(|&d| Some(d as usize)).collect() }
            }
        )*
        $(
            impl Dims for [$s] {
                fn dims(&self) -> Vec<Option<usize>> {
                    // A negative other than -1 becomes a dimension no tensor fits
                    // (usize::MAX), which the element-count check reports.
                    self.iter()
                        .map(|&d| match d {
                            -1 => None,
                            d if d < 0 => Some(usize::MAX),
                            d => Some(d as usize),
                        })
                        .collect()
                }
            }
        )*
        $(
            impl<const N: usize> Dims for [$t; N] {
                fn dims(&self) -> Vec<Option<usize>> { self.as_slice().dims() }
            }
            impl Dims for Vec<$t> {
                fn dims(&self) -> Vec<Option<usize>> { self.as_slice().dims() }
            }
        )*
        $(
            impl<const N: usize> Dims for [$s; N] {
                fn dims(&self) -> Vec<Option<usize>> { self.as_slice().dims() }
            }
            impl Dims for Vec<$s> {
                fn dims(&self) -> Vec<Option<usize>> { self.as_slice().dims() }
            }
        )*
    };
}

dims!(unsigned: usize; signed: i32, i64, isize);

/// `dims` with its one `-1` inferred so that the shape holds `numel` elements.
pub(crate) fn infer_shape(from: &[usize], dims: &[Option<usize>]) -> Result<Vec<usize>, Error> {
    let numel: usize = from.iter().product();
    let holes = dims.iter().filter(|d| d.is_none()).count();
    let known = dims
        .iter()
        .flatten()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let fail = |why: &str| -> Error {
        let shown: Vec<String> = dims
            .iter()
            .map(|d| d.map_or("-1".into(), |d| d.to_string()))
            .collect();
        tang_runtime::Error::ShapeMismatch {
            op: "reshape".into(),
            detail: format!(
                "cannot reshape {from:?} ({numel} elements) to [{}]: {why}",
                shown.join(", ")
            ),
        }
        .into()
    };
    match (holes, known) {
        (0, _) => Ok(dims.iter().flatten().copied().collect()),
        (1, Some(k)) if k > 0 && numel.is_multiple_of(k) => {
            Ok(dims.iter().map(|d| d.unwrap_or(numel / k)).collect())
        }
        (1, _) => Err(fail("the other dimensions do not divide the element count")),
        _ => Err(fail("only one dimension can be -1")),
    }
}
