//! The elementwise methods of [`Tensor`], each [`apply`] of the runtime's fused function
//! of the same name (`tang_runtime::ops::kernels`): broadcasting as PyTorch does, the
//! backward generated from the forward.

use tang_runtime::ops::kernels;

use super::Error;
use super::fused::apply;
use super::tensor::{RawTensor, Tensor};

/// Declares methods `name(&self, other: &Tensor)` over a two-input fused function.
macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        impl Tensor {$(
            $(#[$doc])*
            /// Shapes broadcast as in PyTorch.
            ///
            /// # Errors
            /// [`Error::Runtime`] when the shapes do not broadcast or the devices differ.
            pub fn $name(&self, other: &Tensor) -> Result<Tensor, Error> {
                apply(&kernels::$name::FUSED, &[self, other], &[])
            }
        )*}
    };
}

/// Declares methods `name(&self, uniforms..)` over a one-input fused function.
macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident($($u:ident),*);)*) => {
        impl Tensor {$(
            $(#[$doc])*
            ///
            /// # Errors
            /// [`Error::Runtime`] for a u32 tensor.
            pub fn $name(&self $(, $u: f32)*) -> Result<Tensor, Error> {
                apply(&kernels::$name::FUSED, &[self], &[$($u),*])
            }
        )*}
    };
}

binary! {
    /// `self + other` (PyTorch's `torch.add`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[1.0, 2.0], &[2, 1])?;
    /// let b = Tensor::from_slice(&dev, &[10.0, 20.0], &[1, 2])?;
    /// assert_eq!(a.add(&b)?.to_vec()?, [11.0, 21.0, 12.0, 22.0]); // a + b, broadcast to [2, 2]
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    add;
    /// `self - other` (PyTorch's `torch.sub`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[3.0, 5.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[1.0], &[1])?;
    /// assert_eq!(a.sub(&b)?.to_vec()?, [2.0, 4.0]); // a - b
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    sub;
    /// `self * other` (PyTorch's `torch.mul`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[3.0, 5.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[2.0, -1.0], &[2])?;
    /// assert_eq!(a.mul(&b)?.to_vec()?, [6.0, -5.0]); // a * b
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    mul;
    /// `self / other` (PyTorch's `torch.div`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[3.0, 5.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[2.0, 4.0], &[2])?;
    /// assert_eq!(a.div(&b)?.to_vec()?, [1.5, 1.25]); // a / b
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    div;
    /// `self^other` elementwise (PyTorch's `torch.pow` with a tensor exponent).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[2.0, 9.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[3.0, 0.5], &[2])?;
    /// let y = a.pow(&b)?.to_vec()?; // a ** b
    /// assert!((y[0] - 8.0).abs() < 1e-5 && (y[1] - 3.0).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pow;
    /// The larger element (PyTorch's `torch.maximum`; equal elements share the gradient).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[1.0, 5.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[3.0, 2.0], &[2])?;
    /// assert_eq!(a.maximum(&b)?.to_vec()?, [3.0, 5.0]); // torch.maximum(a, b)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    maximum;
    /// The smaller element (PyTorch's `torch.minimum`; equal elements share the gradient).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::from_slice(&dev, &[1.0, 5.0], &[2])?;
    /// let b = Tensor::from_slice(&dev, &[3.0, 2.0], &[2])?;
    /// assert_eq!(a.minimum(&b)?.to_vec()?, [1.0, 2.0]); // torch.minimum(a, b)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    minimum;
}

unary! {
    /// `self + other` for a number.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// assert_eq!(x.add_scalar(0.5)?.to_vec()?, [1.5, 2.5]); // x + 0.5
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    add_scalar(other);
    /// `self - other` for a number.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// assert_eq!(x.sub_scalar(0.5)?.to_vec()?, [0.5, 1.5]); // x - 0.5
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    sub_scalar(other);
    /// `self * other` for a number.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// assert_eq!(x.mul_scalar(3.0)?.to_vec()?, [3.0, 6.0]); // x * 3
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    mul_scalar(other);
    /// `self / other` for a number.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// assert_eq!(x.div_scalar(4.0)?.to_vec()?, [0.25, 0.5]); // x / 4
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    div_scalar(other);
    /// `self^exponent` for a number (PyTorch's `torch.pow(x, 2.0)`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?;
    /// let y = x.pow_scalar(2.0)?.to_vec()?; // x ** 2
    /// assert!((y[0] - 9.0).abs() < 1e-5 && (y[1] - 16.0).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pow_scalar(exponent);
    /// `-self`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, -2.0], &[2])?;
    /// assert_eq!(x.neg()?.to_vec()?, [-1.0, 2.0]); // -x
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    neg();
    /// `|self|` (gradient 0 at 0).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, -2.0], &[2])?;
    /// assert_eq!(x.abs()?.to_vec()?, [1.0, 2.0]); // x.abs()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    abs();
    /// `e^self`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 1.0], &[2])?;
    /// let y = x.exp()?.to_vec()?; // x.exp()
    /// assert!(y[0] == 1.0 && (y[1] - std::f32::consts::E).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    exp();
    /// The natural logarithm.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 4.0], &[2])?;
    /// let y = x.log()?.to_vec()?; // x.log()
    /// assert!(y[0] == 0.0 && (y[1] - 4f32.ln()).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    log();
    /// The square root.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[4.0, 9.0], &[2])?;
    /// assert_eq!(x.sqrt()?.to_vec()?, [2.0, 3.0]); // x.sqrt()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    sqrt();
    /// `1 / √self`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[4.0, 16.0], &[2])?;
    /// let y = x.rsqrt()?.to_vec()?; // x.rsqrt()
    /// assert!((y[0] - 0.5).abs() < 1e-6 && (y[1] - 0.25).abs() < 1e-6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    rsqrt();
    /// `min(max(self, min), max)` (PyTorch's `torch.clamp`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[-2.0, 0.5, 3.0], &[3])?;
    /// assert_eq!(x.clamp(0.0, 1.0)?.to_vec()?, [0.0, 0.5, 1.0]); // x.clamp(0, 1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    clamp(min, max);
    /// `max(self, 0)` (PyTorch's `F.relu`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[-1.0, 2.0], &[2])?;
    /// assert_eq!(x.relu()?.to_vec()?, [0.0, 2.0]); // F.relu(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    relu();
    /// Leaky ReLU (PyTorch's `F.leaky_relu`; its default slope is 0.01).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[-1.0, 2.0], &[2])?;
    /// assert_eq!(x.leaky_relu(0.01)?.to_vec()?, [-0.01, 2.0]); // F.leaky_relu(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    leaky_relu(negative_slope);
    /// ELU (PyTorch's `F.elu`; its default alpha is 1).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 2.0], &[2])?;
    /// assert_eq!(x.elu(1.0)?.to_vec()?, [0.0, 2.0]); // F.elu(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    elu(alpha);
    /// The logistic sigmoid.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(x.sigmoid()?.to_vec()?, [0.5]); // x.sigmoid()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    sigmoid();
    /// The hyperbolic tangent.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(x.tanh()?.to_vec()?, [0.0]); // x.tanh()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    tanh();
    /// `self * sigmoid(self)` (PyTorch's `F.silu`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0], &[1])?;
    /// assert_eq!(x.silu()?.to_vec()?, [0.0]); // F.silu(x)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    silu();
    /// Softplus (PyTorch's `F.softplus`; its defaults are beta 1, threshold 20).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 30.0], &[2])?;
    /// let y = x.softplus(1.0, 20.0)?.to_vec()?; // F.softplus(x)
    /// assert!((y[0] - std::f32::consts::LN_2).abs() < 1e-6 && y[1] == 30.0); // linear past the threshold
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    softplus(beta, threshold);
    /// GELU, tanh form (PyTorch's `F.gelu(x, approximate="tanh")`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 10.0], &[2])?;
    /// let y = x.gelu()?.to_vec()?; // F.gelu(x, approximate="tanh")
    /// assert!(y[0] == 0.0 && (y[1] - 10.0).abs() < 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    gelu();
    /// GELU, exact form (PyTorch's `F.gelu(x)`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[0.0, 10.0], &[2])?;
    /// let y = x.gelu_erf()?.to_vec()?; // F.gelu(x)
    /// assert!(y[0] == 0.0 && (y[1] - 10.0).abs() < 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    gelu_erf();
}

impl Tensor {
    /// `a` where `mask` (a u32 mask, as the comparisons give, or f32 0/1) is nonzero,
    /// else `b` (PyTorch's `torch.where(mask, a, b)`); the three shapes broadcast.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let mask = RawTensor::from_u32(&dev, &[1, 0], &[2])?;
    /// let a = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// let b = Tensor::zeros(&dev, &[2])?;
    /// assert_eq!(Tensor::where_cond(&mask, &a, &b)?.to_vec()?, [1.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes do not broadcast or the devices differ.
    pub fn where_cond(mask: &RawTensor, a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
        let mask = match mask.dtype() {
            tang_runtime::DType::U32 | tang_runtime::DType::F16 => {
                tang_runtime::ops::to_dtype(mask, tang_runtime::DType::F32)?
            }
            tang_runtime::DType::F32 => mask.clone(),
        };
        apply(
            &kernels::where_cond::FUSED,
            &[&Tensor::constant(mask), a, b],
            &[],
        )
    }
}
