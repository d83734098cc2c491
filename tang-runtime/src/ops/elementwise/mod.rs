//! Elementwise math with NumPy/PyTorch broadcasting: `add(&a, &b)`, `exp(&x)`,
//! `clamp(&x, min, max)`, ... and their backwards. Each op is a `#[fused_grad]` function
//! of [`crate::ops::elementwise::kernels`]: the forward is its kernel over the broadcast shape, the backward
//! its generated VJP kernel plus [`crate::ops::sum_to_shape`] for broadcast inputs
//! ([`crate::FusedFn`]). Backwards take `grad_out` first, then the forward's arguments, and
//! return one gradient per differentiable input in the input's shape.
//!
//! f16 tensors run the kernels' f16 variants: f16 storage, f32 arithmetic, f16 results
//! and gradients; an f16 input beside an f32 one is read as f32 and the result is f32
//! (PyTorch's type promotion); each gradient has its input's dtype.

pub(super) mod compare;
pub(super) mod fused;
pub(super) mod inplace;
pub(super) mod int;
pub mod kernels;

crate::spec::kernel_modules! { "ops/elementwise": compare, inplace, int }

use crate::ops::to_dtype;
use crate::{DType, Error, Tensor};

/// The gradients of a one-input op: the VJP gave exactly one.
fn one(mut grads: Vec<Option<Tensor>>) -> Tensor {
    grads
        .pop()
        .flatten()
        .expect("a one-input fused function differentiates its input")
}

/// The gradients of a two-input op, in input order.
fn two(grads: Vec<Option<Tensor>>) -> (Tensor, Tensor) {
    let mut it = grads.into_iter().flatten();
    match (it.next(), it.next()) {
        (Some(a), Some(b)) => (a, b),
        _ => unreachable!("a two-input fused function differentiates both inputs"),
    }
}

/// Declares `op(x, uniforms..)` and `op_backward(grad_out, x, uniforms..)` over the kernel
/// of the same name.
macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident / $back:ident ($($u:ident),*);)*) => {$(
        $(#[$doc])*
        ///
        /// # Errors
        /// [`Error::DType`] for a u32 tensor, [`Error::TooLarge`] past 2^32 - 1 elements.
        pub fn $name(x: &Tensor $(, $u: f32)*) -> Result<Tensor, Error> {
            kernels::$name::FUSED.forward(&[x], &[$($u),*])
        }

        #[doc = concat!("The gradient of [`", stringify!($name), "`] with respect to `x`.")]
        ///
        /// # Errors
        /// As the forward; [`Error::ShapeMismatch`] when `grad_out` is not `x`'s shape.
        pub fn $back(grad_out: &Tensor, x: &Tensor $(, $u: f32)*) -> Result<Tensor, Error> {
            Ok(one(kernels::$name::FUSED.backward(grad_out, &[x], &[$($u),*])?))
        }
    )*};
}

/// Declares `op(a, b)` and `op_backward(grad_out, a, b) -> (grad_a, grad_b)`, broadcasting.
macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident / $back:ident;)*) => {$(
        $(#[$doc])*
        /// The shapes broadcast (NumPy/PyTorch rules).
        ///
        /// # Errors
        /// [`Error::ShapeMismatch`] when the shapes do not broadcast, [`Error::DType`] for
        /// u32 tensors, [`Error::DeviceMismatch`] across devices.
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
            kernels::$name::FUSED.forward(&[a, b], &[])
        }

        #[doc = concat!("The gradients of [`", stringify!($name), "`] with respect to `a` and `b`, each summed back to its input's shape.")]
        ///
        /// # Errors
        /// As the forward; [`Error::ShapeMismatch`] when `grad_out` is not the output's
        /// shape.
        pub fn $back(grad_out: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor), Error> {
            Ok(two(kernels::$name::FUSED.backward(grad_out, &[a, b], &[])?))
        }
    )*};
}

binary! {
    /// `a + b` (PyTorch's `torch.add`).
    add / add_backward;
    /// `a - b` (PyTorch's `torch.sub`).
    sub / sub_backward;
    /// `a * b` (PyTorch's `torch.mul`).
    mul / mul_backward;
    /// `a / b` (PyTorch's `torch.div`).
    div / div_backward;
    /// `a^b` with a tensor exponent (PyTorch's `torch.pow`); a negative base gives NaN
    /// unless the exponent is an integer, as in PyTorch.
    pow / pow_backward;
    /// The larger element (PyTorch's `torch.maximum`): NaN if either is NaN; equal
    /// elements share the gradient evenly.
    maximum / maximum_backward;
    /// The smaller element (PyTorch's `torch.minimum`): NaN if either is NaN; equal
    /// elements share the gradient evenly.
    minimum / minimum_backward;
}

unary! {
    /// `x + other` for a number (PyTorch's `x + 2.0`).
    add_scalar / add_scalar_backward(other);
    /// `x - other` for a number.
    sub_scalar / sub_scalar_backward(other);
    /// `x * other` for a number.
    mul_scalar / mul_scalar_backward(other);
    /// `x / other` for a number.
    div_scalar / div_scalar_backward(other);
    /// `x^exponent` for a number (PyTorch's `torch.pow(x, 2.0)`).
    pow_scalar / pow_scalar_backward(exponent);
    /// `-x` (PyTorch's `torch.neg`).
    neg / neg_backward();
    /// `|x|` (PyTorch's `torch.abs`; its gradient at 0 is 0).
    abs / abs_backward();
    /// `e^x` (PyTorch's `torch.exp`).
    exp / exp_backward();
    /// The natural logarithm (PyTorch's `torch.log`).
    log / log_backward();
    /// The square root (PyTorch's `torch.sqrt`).
    sqrt / sqrt_backward();
    /// `1 / √x` (PyTorch's `torch.rsqrt`).
    rsqrt / rsqrt_backward();
    /// `min(max(x, min), max)` (PyTorch's `torch.clamp`; `max` wins when `min > max`; the
    /// gradient passes where `min <= x <= max`).
    clamp / clamp_backward(min, max);
    /// `max(x, 0)` (PyTorch's `F.relu`; gradient 0 at 0).
    relu / relu_backward();
    /// `x` for `x > 0`, else `negative_slope * x` (PyTorch's `F.leaky_relu`, default
    /// slope 0.01).
    leaky_relu / leaky_relu_backward(negative_slope);
    /// `x` for `x > 0`, else `alpha * (e^x - 1)` (PyTorch's `F.elu`, default alpha 1).
    elu / elu_backward(alpha);
    /// `1 / (1 + e^-x)` (PyTorch's `torch.sigmoid`).
    sigmoid / sigmoid_backward();
    /// The hyperbolic tangent (PyTorch's `torch.tanh`).
    tanh / tanh_backward();
    /// `x * sigmoid(x)` (PyTorch's `F.silu`).
    silu / silu_backward();
    /// `ln(1 + e^(beta x)) / beta`, linear where `beta x > threshold` (PyTorch's
    /// `F.softplus`, defaults beta 1, threshold 20).
    softplus / softplus_backward(beta, threshold);
    /// GELU, tanh form (PyTorch's `F.gelu(x, approximate="tanh")`).
    gelu / gelu_backward();
    /// GELU, exact form with the error function (PyTorch's `F.gelu(x)`).
    gelu_erf / gelu_erf_backward();
}

/// `a` where `mask` is nonzero, else `b` (PyTorch's `torch.where(mask, a, b)`; `where` is
/// a Rust keyword). `mask` is a u32 mask as the comparisons give (or a float one); the
/// three shapes broadcast.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the shapes do not broadcast, [`Error::DType`] when `a` or
/// `b` is u32, [`Error::DeviceMismatch`] across devices.
pub fn where_cond(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    let mask = float_mask(mask, a, b)?;
    kernels::where_cond::FUSED.forward(&[&mask, a, b], &[])
}

/// The gradients of [`where_cond`] with respect to `a` and `b`: `grad_out` where the mask
/// picked each, summed back to its shape.
///
/// # Errors
/// As [`where_cond`]; [`Error::ShapeMismatch`] when `grad_out` is not the output's shape.
pub fn where_cond_backward(
    grad_out: &Tensor,
    mask: &Tensor,
    a: &Tensor,
    b: &Tensor,
) -> Result<(Tensor, Tensor), Error> {
    let mask = float_mask(mask, a, b)?;
    Ok(two(kernels::where_cond::FUSED.backward(
        grad_out,
        &[&mask, a, b],
        &[],
    )?))
}

/// A mask as 0.0 / 1.0 in the values' float type: f16 when `a` and `b` are both f16 (so
/// the launch stays f16, as PyTorch's `where` keeps their dtype), else f32.
fn float_mask(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    let f16 = a.dtype() == DType::F16 && b.dtype() == DType::F16;
    to_dtype(mask, if f16 { DType::F16 } else { DType::F32 })
}
