//! Tensor ops with PyTorch's names in one flat module: `ops::permute(&x, &[0, 2, 1, 3])?`,
//! or the same function as a method, `x.permute(&[0, 2, 1, 3])?`. Every op and its
//! backward is reachable here, whatever family folder holds it.
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

//!
//! Where a new kernel goes: the code is organised by family, one folder each
//! (`elementwise/`: math, comparisons, fills and casts; `matmul/`; `attention/`; `rows/`:
//! the kernels that reduce and rewrite one row at a time, softmax, the norms,
//! cross-entropy, and the subgroup team path they share; `reduce/`: sums, means and
//! maxima along a dim; `shape/`: views, permutes, copies, broadcasting, heads, packing;
//! `index/`: gathers, scatters, embeddings and the id checks; `conv/`: convolution and
//! pooling; `random/`). A new op joins the family whose kernels it resembles, in a file of
//! its own when it brings its own kernels; an elementwise op is a `#[fused_grad]` function
//! in `elementwise/kernels.rs`, and any other hand-written kernel is a
//! `spec::Spec` whose module has a `kernels()` listed in its family's `kernel_modules!` (the
//! family is listed below), so the naga test validates it. Its public functions are
//! re-exported here by name, never as a path through the family; argument checks shared
//! by several families live in `check.rs`, WGSL pieces in the core's `wgsl.rs`. Nothing outside
//! `ops` imports it except `lib.rs` (the core below never does).

pub(crate) mod check;
mod methods;

mod attention;
mod conv;
mod elementwise;
mod index;
mod matmul;
mod random;
mod reduce;
mod rows;
mod shape;

pub use attention::{
    AttentionOptions, MAX_HEAD_DIM, attention, attention_backward, attention_backward_dkv,
    attention_backward_dq, attention_backward_packed, attention_decode, attention_packed,
    attention_token_major_is_free, backward_tiles, forward_tiles,
};
pub use conv::pool::{Pool2d, avg_pool2d, avg_pool2d_backward, max_pool2d, max_pool2d_backward};
pub use conv::{Conv2d, Conv2dGrads, conv2d, conv2d_backward};
// The tile override of the implicit-GEMM convolution: a hook for benchmarks and tuning,
// not part of the API.
pub use crate::cast::to_dtype;
#[doc(hidden)]
pub use conv::gemm as conv_gemm;
pub use elementwise::compare::{eq, ge, gt, le, lt, ne};
pub use elementwise::fused::FusedFn;
pub use elementwise::inplace::{add_, clone, copy_, fill_, fill_u32_, full, full_u32, mul_, zero_};
pub use elementwise::int::{arange, argmax, argmin};
pub use elementwise::kernels;
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
pub use index::bounds::check_index;
pub use index::embedding::{embedding, embedding_backward};
pub use index::gather::{
    gather, gather_backward, index_copy_, index_select, index_select_backward,
};
pub use matmul::{
    CoopTile, Epilogue, MatmulOptions, TileConfig, bias_backward, matmul, matmul_backward,
    matmul_backward_cast, matmul_backward_with, matmul_tn_split, matmul_with,
};
pub use random::philox::{PhiloxStream, dropout_block, dropout_threshold, philox4x32_10};
pub use random::{DropoutState, Generator, dropout, dropout_backward, rand, rand_bits, randn};
pub use reduce::{
    foreach_sum_of_squares, foreach_unscale_count_non_finite, max, max_all, max_all_backward,
    max_backward, mean, mean_all, mean_all_backward, mean_backward, sum, sum_all, sum_all_backward,
    sum_backward,
};
pub use rows::cross_entropy::{
    CrossEntropy, CrossEntropyForward, cross_entropy, cross_entropy_forward,
};
pub use rows::cross_entropy_backward::cross_entropy_backward;
pub use rows::norm::{
    LayerNormGrads, NormOutput, RmsNormGrads, layer_norm, layer_norm_backward, rms_norm,
    rms_norm_backward,
};
pub use rows::softmax::{log_softmax, log_softmax_backward, softmax, softmax_backward};
// The choice between the subgroup team path and the workgroup fallback of the row
// kernels: hooks for tests and benchmarks, not part of the API.
pub use crate::size::broadcast_shapes;
#[doc(hidden)]
pub use rows::team as rows_team;
pub use shape::broadcast::{expand, expand_backward, sum_to_shape};
pub use shape::copy::{cat, split, split_backward};
pub use shape::heads::{merge_heads, split_heads, split_qkv_heads};
pub use shape::segments::{pack, unpack};
pub use shape::view::{
    cat_backward, narrow, narrow_backward, permute, permute_backward, reshape, slice_scatter,
    slice_scatter_, stack, stack_backward, view,
};

// The families that hold kernels (declared above, outside any macro, so that `cargo fmt`
// reaches their files).
crate::spec::kernel_modules! {
    fn registry, "ops": attention, conv, elementwise, index, matmul, random, reduce, rows, shape
}
