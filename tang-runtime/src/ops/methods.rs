//! `Tensor` methods: each is the [`crate::ops`] function of the same name with the tensor
//! as its first argument (`x.permute(&[1, 0])?` is `ops::permute(&x, &[1, 0])?`), so the
//! errors are the function's; and `Tensor::full`, the one constructor that runs a kernel.

use crate::{DType, Device, Error, Tensor};

/// Declares thin methods that forward to `super::<name>(self, args...)`.
macro_rules! forward {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                ///
                /// # Errors
                #[doc = concat!("As [`super::", stringify!($name), "`].")]
                pub fn $name(&self $(, $arg: $ty)*) -> Result<$ret, Error> {
                    super::$name(self $(, $arg)*)
                }
            )*
        }
    };
}

forward! {
    /// The same data with another shape ([`super::view`]).
    fn view(&self, shape: &[usize]) -> Tensor;
    /// Reordered dimensions ([`super::permute`]).
    fn permute(&self, dims: &[usize]) -> Tensor;
    /// Broadcast to `shape` ([`super::expand`]).
    fn expand(&self, shape: &[usize]) -> Tensor;
    /// A broadcast gradient summed back to `shape` ([`super::sum_to_shape`]).
    fn sum_to_shape(&self, shape: &[usize]) -> Tensor;
    /// Elements `start..start + length` of `dim` ([`super::narrow`]).
    fn narrow(&self, dim: usize, start: usize, length: usize) -> Tensor;
    /// In place: `src` written at `start..` of `dim` ([`super::slice_scatter_`]).
    fn slice_scatter_(&self, src: &Tensor, dim: usize, start: usize) -> ();
    /// Entries at `index` along `dim` ([`super::index_select`]).
    fn index_select(&self, dim: usize, index: &Tensor) -> Tensor;
    /// Entries picked along `dim` by `index` ([`super::gather`]).
    fn gather(&self, dim: usize, index: &Tensor) -> Tensor;
    /// In place: slices of `src` written at `index` along `dim` ([`super::index_copy_`]).
    fn index_copy_(&self, dim: usize, index: &Tensor, src: &Tensor) -> ();
    /// In place: `self += alpha * other` ([`super::add_`]).
    fn add_(&self, other: &Tensor, alpha: f32) -> ();
    /// In place: `self *= s` ([`super::mul_`]).
    fn mul_(&self, s: f32) -> ();
    /// In place: `src`'s elements copied in ([`super::copy_`]).
    fn copy_(&self, src: &Tensor) -> ();
    /// In place: every element set to `value` ([`super::fill_`]).
    fn fill_(&self, value: f32) -> ();
    /// In place: every element set to zero ([`super::zero_`]).
    fn zero_(&self) -> ();
    /// Index of the largest element along `dim` ([`super::argmax`]).
    fn argmax(&self, dim: usize) -> Tensor;
    /// Index of the smallest element along `dim` ([`super::argmin`]).
    fn argmin(&self, dim: usize) -> Tensor;
    /// `self + other`, broadcasting ([`super::add`]).
    fn add(&self, other: &Tensor) -> Tensor;
    /// `self - other`, broadcasting ([`super::sub`]).
    fn sub(&self, other: &Tensor) -> Tensor;
    /// `self * other`, broadcasting ([`super::mul`]).
    fn mul(&self, other: &Tensor) -> Tensor;
    /// `self / other`, broadcasting ([`super::div`]).
    fn div(&self, other: &Tensor) -> Tensor;
    /// `self^exponent` elementwise, broadcasting ([`super::pow`]).
    fn pow(&self, exponent: &Tensor) -> Tensor;
    /// The larger element, broadcasting ([`super::maximum`]).
    fn maximum(&self, other: &Tensor) -> Tensor;
    /// The smaller element, broadcasting ([`super::minimum`]).
    fn minimum(&self, other: &Tensor) -> Tensor;
    /// `self + other` for a number ([`super::add_scalar`]).
    fn add_scalar(&self, other: f32) -> Tensor;
    /// `self - other` for a number ([`super::sub_scalar`]).
    fn sub_scalar(&self, other: f32) -> Tensor;
    /// `self * other` for a number ([`super::mul_scalar`]).
    fn mul_scalar(&self, other: f32) -> Tensor;
    /// `self / other` for a number ([`super::div_scalar`]).
    fn div_scalar(&self, other: f32) -> Tensor;
    /// `self^exponent` for a number ([`super::pow_scalar`]).
    fn pow_scalar(&self, exponent: f32) -> Tensor;
    /// `-self` ([`super::neg`]).
    fn neg(&self) -> Tensor;
    /// `|self|` ([`super::abs`]).
    fn abs(&self) -> Tensor;
    /// `e^self` ([`super::exp`]).
    fn exp(&self) -> Tensor;
    /// The natural logarithm ([`super::log`]).
    fn log(&self) -> Tensor;
    /// The square root ([`super::sqrt`]).
    fn sqrt(&self) -> Tensor;
    /// `1 / √self` ([`super::rsqrt`]).
    fn rsqrt(&self) -> Tensor;
    /// Clamped to `[min, max]` ([`super::clamp`]).
    fn clamp(&self, min: f32, max: f32) -> Tensor;
    /// `max(self, 0)` ([`super::relu`]).
    fn relu(&self) -> Tensor;
    /// Leaky ReLU ([`super::leaky_relu`]).
    fn leaky_relu(&self, negative_slope: f32) -> Tensor;
    /// ELU ([`super::elu`]).
    fn elu(&self, alpha: f32) -> Tensor;
    /// The logistic sigmoid ([`super::sigmoid`]).
    fn sigmoid(&self) -> Tensor;
    /// The hyperbolic tangent ([`super::tanh`]).
    fn tanh(&self) -> Tensor;
    /// SiLU ([`super::silu`]).
    fn silu(&self) -> Tensor;
    /// Softplus ([`super::softplus`]).
    fn softplus(&self, beta: f32, threshold: f32) -> Tensor;
    /// GELU, tanh form ([`super::gelu`]).
    fn gelu(&self) -> Tensor;
    /// GELU, exact form ([`super::gelu_erf`]).
    fn gelu_erf(&self) -> Tensor;
    /// Mask of `self == other` ([`super::eq`]).
    fn eq(&self, other: &Tensor) -> Tensor;
    /// Mask of `self != other` ([`super::ne`]).
    fn ne(&self, other: &Tensor) -> Tensor;
    /// Mask of `self < other` ([`super::lt`]).
    fn lt(&self, other: &Tensor) -> Tensor;
    /// Mask of `self <= other` ([`super::le`]).
    fn le(&self, other: &Tensor) -> Tensor;
    /// Mask of `self > other` ([`super::gt`]).
    fn gt(&self, other: &Tensor) -> Tensor;
    /// Mask of `self >= other` ([`super::ge`]).
    fn ge(&self, other: &Tensor) -> Tensor;
    /// Converted to `dtype` ([`super::to_dtype`]).
    fn to_dtype(&self, dtype: DType) -> Tensor;
    /// Matrix product with `other` ([`super::matmul`]).
    fn matmul(&self, other: &Tensor) -> Tensor;
    /// Softmax over the last dimension ([`super::softmax`]).
    fn softmax(&self) -> Tensor;
    /// Log-softmax over the last dimension ([`super::log_softmax`]).
    fn log_softmax(&self) -> Tensor;
}

// A constructor that runs a kernel: here, with the ops, since the tensor core never
// imports them.
impl Tensor {
    /// An f32 tensor filled with `value` ([`super::full`]).
    ///
    /// # Errors
    /// [`Error::TooLarge`], [`Error::DeviceLost`].
    pub fn full(dev: &Device, shape: &[usize], value: f32) -> Result<Tensor, Error> {
        super::full(dev, shape, value)
    }
}
