//! `std::ops` operators on tensor references, returning `Result` as candle's do:
//! `(&a + &b)?`, `(&x * 2.0)?`, `(-&x)?`. Each is the method of the same name
//! ([`Tensor::add`], [`Tensor::mul_scalar`], ...), recorded for autograd the same way; a
//! shape that does not broadcast is the `Err`, never a panic.
//!
//! ```
//! # use tang_nn::{Device, Tensor};
//! # let dev = Device::new()?;
//! let a = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
//! let b = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?;
//! let c = ((&a + &b)? * 2.0)?; // torch: (a + b) * 2
//! assert_eq!(c.to_vec()?, [8.0, 12.0]);
//! assert!((&a + &Tensor::zeros(&dev, &[3])?).is_err()); // [2] and [3] do not broadcast
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{Error, Tensor};

macro_rules! operators {
    ($($trait:ident $method:ident $tensor_op:ident $scalar_op:ident;)*) => {$(
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: &Tensor) -> Self::Output {
                Tensor::$tensor_op(self, rhs)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: Tensor) -> Self::Output {
                Tensor::$tensor_op(self, &rhs)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: &Tensor) -> Self::Output {
                Tensor::$tensor_op(&self, rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: Tensor) -> Self::Output {
                Tensor::$tensor_op(&self, &rhs)
            }
        }
        impl $trait<f32> for &Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: f32) -> Self::Output {
                Tensor::$scalar_op(self, rhs)
            }
        }
        impl $trait<f32> for Tensor {
            type Output = Result<Tensor, Error>;
            fn $method(self, rhs: f32) -> Self::Output {
                Tensor::$scalar_op(&self, rhs)
            }
        }
    )*};
}

operators! {
    Add add add add_scalar;
    Sub sub sub sub_scalar;
    Mul mul mul mul_scalar;
    Div div div div_scalar;
}

impl Neg for &Tensor {
    type Output = Result<Tensor, Error>;
    fn neg(self) -> Self::Output {
        Tensor::neg(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor, Error>;
    fn neg(self) -> Self::Output {
        Tensor::neg(&self)
    }
}
