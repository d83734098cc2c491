//! Tensor ops with PyTorch's names in one flat module: `ops::permute(&x, &[0, 2, 1, 3])?`,
//! or the same function as a method, `x.permute(&[0, 2, 1, 3])?`. The dense kernels
//! (matmul, softmax, norms, attention, reductions, ...) are reachable here too (their
//! backwards, for now, in [`crate::dense`]).
//!
//! Elementwise math (`add`, `mul`, `exp`, `clamp`, `relu`, `gelu_erf`, ...) broadcasts
//! as NumPy and PyTorch do; each op is a `#[fused_grad]` function of [`kernels`] run
//! through its [`FusedFn`], so its backward is the generated VJP kernel plus
//! [`sum_to_shape`] for broadcast inputs.
//!
//! Conventions every op follows:
//! - every op returns `Result` with a typed [`Error`](crate::Error): a tensor of another
//!   device is [`DeviceMismatch`](crate::Error::DeviceMismatch), a tensor of the wrong
//!   element type [`DType`](crate::Error::DType), shapes that do not fit
//!   [`ShapeMismatch`](crate::Error::ShapeMismatch), a number out of range
//!   [`InvalidArgument`](crate::Error::InvalidArgument);
//! - dimensions are `usize` (`dim`, as PyTorch names them); a result is always a new
//!   contiguous tensor, except [`reshape`]/[`view`], which share the buffer;
//! - in-place ops end in `_` and write the tensor's buffer (seen through every clone);
//! - the backward of `op` is `op_backward(grad_out, [saved], ...)`: the upstream gradient
//!   is named `grad_out` and comes first; then, for an op whose backward needs state the
//!   caller does not already hold, that state, which the forward returned as its second
//!   value ([`dropout`]'s [`DropoutState`], [`max_pool2d`]'s indices); then what the
//!   forward was given that the backward needs (input shapes for inputs, attributes), in
//!   the forward's order. It returns the gradient of each differentiable input (one
//!   `Tensor`, or a `Vec` for a list of inputs);
//! - masks (the result of comparisons) are u32 tensors of 0s and 1s (PyTorch's `bool`):
//!   cast with [`to_dtype`] to use one in f32 arithmetic;
//! - index tensors are u32; an index past the end of its dimension is
//!   [`IndexOutOfRange`](crate::Error::IndexOutOfRange): at once for ids uploaded from
//!   the host (their largest value is remembered), at the next read or sync for ids
//!   computed on the GPU (a flag set by a check kernel; see `bounds.rs`). The kernels
//!   never read or write out of bounds meanwhile: a gather-like op reads 0 there and a
//!   scatter-like op skips it.

pub(crate) mod bounds;
mod broadcast;
pub(crate) mod check;
mod compare;
mod conv;
mod elementwise;
mod fused;
mod heads;
mod index;
mod inplace;
mod int;
pub mod kernels;
mod methods;
mod philox;
mod pool;
mod random;
mod segments;
mod strided;
mod view;

pub use bounds::check_index;
pub use broadcast::{broadcast_shapes, expand, expand_backward, sum_to_shape};
pub use compare::{eq, ge, gt, le, lt, ne};
pub use conv::{Conv2d, Conv2dGrads, conv2d, conv2d_backward};
pub use elementwise::{
    abs, abs_backward, add, add_backward, add_scalar, add_scalar_backward, clamp, clamp_backward,
    div, div_backward, div_scalar, div_scalar_backward, elu, elu_backward, exp, exp_backward, gelu,
    gelu_backward, gelu_erf, gelu_erf_backward, leaky_relu, leaky_relu_backward, log, log_backward,
    maximum, maximum_backward, minimum, minimum_backward, mul, mul_backward, mul_scalar,
    mul_scalar_backward, neg, neg_backward, pow, pow_backward, pow_scalar, pow_scalar_backward,
    relu, relu_backward, rsqrt, rsqrt_backward, sigmoid, sigmoid_backward, silu, silu_backward,
    softplus, softplus_backward, sqrt, sqrt_backward, sub, sub_backward, sub_scalar,
    sub_scalar_backward, tanh, tanh_backward, where_cond, where_cond_backward,
};
pub use fused::FusedFn;
pub use heads::{merge_heads, split_heads, split_qkv_heads};
pub use index::{gather, gather_backward, index_copy_, index_select, index_select_backward};
pub use inplace::{add_, clone, copy_, fill_, fill_u32_, full, full_u32, mul_, zero_};
pub use int::{arange, argmax, argmin, to_dtype};
pub use philox::{PhiloxStream, dropout_threshold, philox4x32_10};
pub use pool::{Pool2d, avg_pool2d, avg_pool2d_backward, max_pool2d, max_pool2d_backward};
pub use random::{DropoutState, Generator, dropout, dropout_backward, rand, rand_bits, randn};
pub use segments::{pack, unpack};
pub use view::{
    cat, cat_backward, narrow, narrow_backward, permute, permute_backward, reshape, slice_scatter,
    slice_scatter_, stack, stack_backward, view,
};

// The dense kernels' forward passes. Their backwards stay in `crate::dense` until they
// take `grad_out` first like the ops above (today they name and place the upstream
// gradient in several ways).
pub use crate::dense::attention::attention;
pub use crate::dense::cross_entropy::cross_entropy;
pub use crate::dense::embedding::embedding;
pub use crate::dense::matmul::matmul;
pub use crate::dense::norm::{layer_norm, rms_norm};
pub use crate::dense::reduce::{max, max_all, mean, mean_all, sum, sum_all};
pub use crate::dense::shape::{split, transpose};
pub use crate::dense::softmax::{log_softmax, softmax};

// The submodules that hold kernels.
crate::spec::kernel_modules! { "ops": bounds, strided, inplace, index, int, compare, random, pool, heads, segments }
