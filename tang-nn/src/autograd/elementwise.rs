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
    add;
    /// `self - other` (PyTorch's `torch.sub`).
    sub;
    /// `self * other` (PyTorch's `torch.mul`).
    mul;
    /// `self / other` (PyTorch's `torch.div`).
    div;
    /// `self^other` elementwise (PyTorch's `torch.pow` with a tensor exponent).
    pow;
    /// The larger element (PyTorch's `torch.maximum`; equal elements share the gradient).
    maximum;
    /// The smaller element (PyTorch's `torch.minimum`; equal elements share the gradient).
    minimum;
}

unary! {
    /// `self + other` for a number.
    add_scalar(other);
    /// `self - other` for a number.
    sub_scalar(other);
    /// `self * other` for a number.
    mul_scalar(other);
    /// `self / other` for a number.
    div_scalar(other);
    /// `self^exponent` for a number (PyTorch's `torch.pow(x, 2.0)`).
    pow_scalar(exponent);
    /// `-self`.
    neg();
    /// `|self|` (gradient 0 at 0).
    abs();
    /// `e^self`.
    exp();
    /// The natural logarithm.
    log();
    /// The square root.
    sqrt();
    /// `1 / √self`.
    rsqrt();
    /// `min(max(self, min), max)` (PyTorch's `torch.clamp`).
    clamp(min, max);
    /// `max(self, 0)` (PyTorch's `F.relu`).
    relu();
    /// Leaky ReLU (PyTorch's `F.leaky_relu`; its default slope is 0.01).
    leaky_relu(negative_slope);
    /// ELU (PyTorch's `F.elu`; its default alpha is 1).
    elu(alpha);
    /// The logistic sigmoid.
    sigmoid();
    /// The hyperbolic tangent.
    tanh();
    /// `self * sigmoid(self)` (PyTorch's `F.silu`).
    silu();
    /// Softplus (PyTorch's `F.softplus`; its defaults are beta 1, threshold 20).
    softplus(beta, threshold);
    /// GELU, tanh form (PyTorch's `F.gelu(x, approximate="tanh")`).
    gelu();
    /// GELU, exact form (PyTorch's `F.gelu(x)`).
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
    /// let a = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 2.0], &[2])?);
    /// let b = Tensor::constant(RawTensor::zeros(&dev, &[2])?);
    /// assert_eq!(Tensor::where_cond(&mask, &a, &b)?.to_vec()?, [1.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the shapes do not broadcast or the devices differ.
    pub fn where_cond(mask: &RawTensor, a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
        let mask = match mask.dtype() {
            tang_runtime::DType::U32 => {
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
