//! The op table: one entry per differentiable op, holding what its backward needs beyond
//! the inputs (which the node keeps), and its backward as GPU kernels of
//! `tang_runtime::ops` (micrograd's and tinygrad's shape: the
//! forward records an entry, backward matches on it).

use tang_runtime::ops;

use super::Error;
use super::layer_kernels::{bce_with_logits, mul_by, square};
use super::tensor::{RawTensor, Tensor};

/// One recorded op. Input tensors live in the node; this holds attributes and state the
/// forward produced.
pub(crate) enum Op {
    /// A `#[fused_grad]` function (every elementwise op) and its uniforms; its backward
    /// is the generated VJP kernel.
    Fused {
        f: tang_runtime::FusedFn,
        uniforms: Vec<f32>,
    },
    /// `a · b` (batched); `f16_inputs`: recorded under autocast, the operands rounded to
    /// f16 in forward and backward.
    Matmul { f16_inputs: bool },
    /// A reshape (a view).
    Reshape,
    /// A permutation of the dimensions.
    Permute(Vec<usize>),
    /// `narrow(dim, start, _)`.
    Narrow { dim: usize, start: usize },
    /// `cat(inputs, dim)`.
    Cat(usize),
    /// `index_select(dim, index)`.
    IndexSelect { dim: usize, index: RawTensor },
    /// Sum along a dimension.
    Sum(usize),
    /// Mean along a dimension.
    Mean(usize),
    /// Sum of every element.
    SumAll,
    /// Mean of every element.
    MeanAll,
    /// Softmax over the last dimension; its output.
    Softmax(RawTensor),
    /// Log-softmax over the last dimension; its output.
    LogSoftmax(RawTensor),
    /// Layer norm of inputs `x, weight, bias`; the per-row statistics.
    LayerNorm(RawTensor),
    /// RMS norm of inputs `x, weight`; the per-row statistics.
    RmsNorm(RawTensor),
    /// Embedding lookup of the input `weight`; the ids.
    Embedding(RawTensor),
    /// Mean cross-entropy of the input logits against `targets`; what the backward
    /// recomputes the gradient from (`ops::cross_entropy_backward`): the f32 row losses
    /// and the count of rows not ignored.
    CrossEntropy {
        targets: RawTensor,
        ignore_index: Option<u32>,
        row_loss: RawTensor,
        count: RawTensor,
    },
    /// Attention of inputs `q, k, v`; its output, row logsumexps, scale, mask and the
    /// dropout on its weights (the mask is regenerated from it).
    Attention {
        o: RawTensor,
        lse: RawTensor,
        scale: Option<f32>,
        is_causal: bool,
        dropout: Option<ops::DropoutState>,
        /// Recorded under autocast: the backward's products in f16.
        f16_inputs: bool,
        /// The output is token-major (`AttentionOptions::token_major`).
        token_major: bool,
    },
    /// Causal attention of the heads packed side by side in the input `[B, T, N]` (a
    /// fused q/k/v projection's output): the heads split out of it, the output, and the
    /// row logsumexps. Backward writes the heads' gradients straight into one
    /// `[B, T, N]` gradient (no zero fills, no sum of three full-size gradients).
    PackedAttention {
        q: RawTensor,
        k: RawTensor,
        v: RawTensor,
        o: RawTensor,
        lse: RawTensor,
        dropout: Option<ops::DropoutState>,
        /// Recorded under autocast: the backward's products in f16.
        f16_inputs: bool,
    },
    /// [`Op::PackedAttention`] where the kernels read the packed input and write the
    /// output token-major themselves (`ops::attention_packed`): no split heads are kept,
    /// the backward reads the input.
    PackedAttentionDirect {
        heads: usize,
        kv_heads: usize,
        o: RawTensor,
        lse: RawTensor,
        dropout: Option<ops::DropoutState>,
        f16_inputs: bool,
    },
    /// `x · wᵀ (+ b)` of inputs `x, w[, b]`; `f16_inputs` as [`Op::Matmul`]'s.
    Linear {
        f16_inputs: bool,
        /// The f16 copy of an f32 weight the forward multiplied (autocast's cast of a
        /// parameter): the backward's `x` gradient multiplies it too.
        weight_cast: Option<RawTensor>,
        /// The f16 copy of an f32 input the forward multiplied (autocast): the weight's
        /// gradient multiplies it too.
        input_cast: Option<RawTensor>,
    },
    /// Dropout; the stream its mask came from (regenerated in backward).
    Dropout(ops::DropoutState),
    /// `gather(dim, index)`.
    Gather { dim: usize, index: RawTensor },
    /// `x * m` for a constant `m`.
    MulBy(RawTensor),
    /// Elementwise square.
    Square,
    /// Elementwise binary cross-entropy of inputs `logits, target`.
    BceWithLogits,
    /// 2-D convolution of inputs `x, weight[, bias]`.
    Conv2d(ops::Conv2d),
    /// Max pooling; the index of each window's maximum.
    MaxPool2d {
        indices: RawTensor,
        pool: ops::Pool2d,
    },
    /// Average pooling.
    AvgPool2d {
        pool: ops::Pool2d,
        count_include_pad: bool,
    },
}

impl Op {
    /// The op's name, for errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Fused { f, .. } => f.name(),
            Op::Matmul { .. } => "matmul",
            Op::Reshape => "reshape",
            Op::Permute(_) => "permute",
            Op::Narrow { .. } => "narrow",
            Op::Cat(_) => "cat",
            Op::IndexSelect { .. } => "index_select",
            Op::Sum(_) => "sum",
            Op::Mean(_) => "mean",
            Op::SumAll => "sum_all",
            Op::MeanAll => "mean_all",
            Op::Softmax(_) => "softmax",
            Op::LogSoftmax(_) => "log_softmax",
            Op::LayerNorm(_) => "layer_norm",
            Op::RmsNorm(_) => "rms_norm",
            Op::Embedding(_) => "embedding",
            Op::CrossEntropy { .. } => "cross_entropy",
            Op::Attention { .. } => "attention",
            Op::PackedAttention { .. } | Op::PackedAttentionDirect { .. } => "packed_attention",
            Op::Linear { .. } => "linear",
            Op::Dropout(_) => "dropout",
            Op::Gather { .. } => "gather",
            Op::MulBy(_) => "mul",
            Op::Square => "square",
            Op::BceWithLogits => "binary_cross_entropy_with_logits",
            Op::Conv2d(_) => "conv2d",
            Op::MaxPool2d { .. } => "max_pool2d",
            Op::AvgPool2d { .. } => "avg_pool2d",
        }
    }

    /// The gradient of each input from the gradient of the output, `grad_out`, which the
    /// caller hands over (it is this op's alone, so a backward may return views of it or
    /// write it in place). `None` for an input with no gradient.
    pub(crate) fn backward(
        &self,
        grad_out: RawTensor,
        inputs: &[Tensor],
    ) -> Result<Vec<Option<RawTensor>>, Error> {
        let g = &grad_out;
        let x = |i: usize| inputs[i].data();
        let grads = match self {
            Op::Fused { f, uniforms } => {
                let raw: Vec<&RawTensor> = inputs.iter().map(|t| t.data()).collect();
                return Ok(f.backward(g, &raw, uniforms)?);
            }
            Op::Matmul { f16_inputs } => {
                let options = ops::MatmulOptions {
                    f16_inputs: *f16_inputs,
                    ..ops::MatmulOptions::default()
                };
                let (ga, gb) = ops::matmul_backward_with(g, x(0), x(1), &options)?;
                vec![ga, gb]
            }
            Op::Reshape => vec![g.reshape(inputs[0].shape())?],
            Op::Permute(dims) => vec![ops::permute_backward(g, dims)?],
            Op::Narrow { dim, start } => {
                vec![ops::narrow_backward(g, inputs[0].shape(), *dim, *start)?]
            }
            Op::Cat(dim) => {
                let sizes: Vec<usize> = inputs.iter().map(|t| t.shape()[*dim]).collect();
                ops::cat_backward(g, &sizes, *dim)?
            }
            Op::IndexSelect { dim, index } => {
                vec![ops::index_select_backward(
                    g,
                    inputs[0].shape(),
                    *dim,
                    index,
                )?]
            }
            Op::Sum(dim) => vec![ops::sum_backward(g, inputs[0].shape(), *dim)?],
            Op::Mean(dim) => vec![ops::mean_backward(g, inputs[0].shape(), *dim)?],
            Op::SumAll => vec![ops::sum_all_backward(g, inputs[0].shape())?],
            Op::MeanAll => vec![ops::mean_all_backward(g, inputs[0].shape())?],
            Op::Softmax(y) => vec![ops::softmax_backward(g, y)?],
            Op::LogSoftmax(y) => vec![ops::log_softmax_backward(g, y)?],
            Op::LayerNorm(stats) => {
                let gr = ops::layer_norm_backward(g, x(0), x(1), stats)?;
                vec![gr.grad_x, gr.grad_weight, gr.grad_bias]
            }
            Op::RmsNorm(stats) => {
                let gr = ops::rms_norm_backward(g, x(0), x(1), stats)?;
                vec![gr.grad_x, gr.grad_weight]
            }
            Op::Embedding(ids) => {
                let vocab = inputs[0].shape()[0];
                vec![ops::embedding_backward(g, ids, vocab)?]
            }
            Op::CrossEntropy {
                targets,
                ignore_index,
                row_loss,
                count,
            } => {
                // (softmax - onehot) / count times the upstream gradient (on the GPU, no
                // read back), rounded once to the logits' dtype: a GradScaler's scale
                // reaches it before f16 does.
                // (The loss of f16 logits outside autocast is f16, and so is `g`.)
                let g = ops::to_dtype(g, tang_runtime::DType::F32)?;
                vec![ops::cross_entropy_backward(
                    x(0),
                    targets,
                    *ignore_index,
                    row_loss,
                    count,
                    &g,
                )?]
            }
            Op::Attention {
                o,
                lse,
                scale,
                is_causal,
                dropout,
                f16_inputs,
                token_major,
            } => {
                let options = ops::AttentionOptions {
                    scale: *scale,
                    is_causal: *is_causal,
                    dropout: dropout.as_ref(),
                    f16_inputs: *f16_inputs,
                    token_major: *token_major,
                };
                let (q, k, v) = (x(0), x(1), x(2));
                let (dq, dk, dv) = ops::attention_backward(g, q, k, v, o, lse, &options)?;
                vec![dq, dk, dv]
            }
            Op::PackedAttention {
                q,
                k,
                v,
                o,
                lse,
                dropout,
                f16_inputs,
            } => {
                let options = causal(dropout, *f16_inputs, false);
                let (dq, dk, dv) = ops::attention_backward(g, q, k, v, o, lse, &options)?;
                vec![ops::merge_heads(&[&dq, &dk, &dv])?]
            }
            Op::PackedAttentionDirect {
                heads,
                kv_heads,
                o,
                lse,
                dropout,
                f16_inputs,
            } => {
                let options = causal(dropout, *f16_inputs, true);
                vec![ops::attention_backward_packed(
                    g,
                    x(0),
                    *heads,
                    *kv_heads,
                    o,
                    lse,
                    &options,
                )?]
            }
            Op::Linear {
                f16_inputs,
                weight_cast,
                input_cast,
            } => {
                let options = ops::MatmulOptions {
                    transpose_b: true,
                    f16_inputs: *f16_inputs,
                    ..ops::MatmulOptions::default()
                };
                // Each gradient multiplies the other operand as the forward multiplied it.
                let w = weight_cast.as_ref().unwrap_or(x(1));
                let xc = input_cast.as_ref().unwrap_or(x(0));
                let (gx, gw) = ops::matmul_backward_cast(g, x(0), xc, x(1), w, &options)?;
                let mut grads = vec![gx, gw];
                if inputs.len() == 3 {
                    grads.push(ops::bias_backward(g)?);
                }
                grads
            }
            Op::Dropout(state) => vec![ops::dropout_backward(g, state)?],
            Op::Gather { dim, index } => {
                vec![ops::gather_backward(g, inputs[0].shape(), *dim, index)?]
            }
            Op::MulBy(m) => {
                let [gx] = mul_by::launch_vjp(g.device(), x(0), m, g)?;
                vec![gx]
            }
            Op::Square => vec![square::launch_vjp(g.device(), x(0), g)?[0].clone()],
            Op::BceWithLogits => {
                let [gx, gy] = bce_with_logits::launch_vjp(g.device(), x(0), x(1), g)?;
                vec![gx, gy]
            }
            Op::Conv2d(conv) => {
                let bias = inputs.get(2).map(Tensor::data);
                let gr = ops::conv2d_backward(g, x(0), x(1), bias, conv)?;
                let mut grads = vec![gr.grad_input, gr.grad_weight];
                grads.extend(gr.grad_bias);
                grads
            }
            Op::MaxPool2d { indices, pool } => {
                vec![ops::max_pool2d_backward(
                    g,
                    indices,
                    inputs[0].shape(),
                    pool,
                )?]
            }
            Op::AvgPool2d {
                pool,
                count_include_pad,
            } => vec![ops::avg_pool2d_backward(
                g,
                inputs[0].shape(),
                pool,
                *count_include_pad,
            )?],
        };
        Ok(grads.into_iter().map(Some).collect())
    }
}

/// The causal attention options of a packed attention's backward: its forward's dropout
/// stream, autocast flag and output layout.
fn causal(
    dropout: &Option<ops::DropoutState>,
    f16_inputs: bool,
    token_major: bool,
) -> ops::AttentionOptions<'_> {
    ops::AttentionOptions {
        dropout: dropout.as_ref(),
        f16_inputs,
        token_major,
        ..ops::AttentionOptions::CAUSAL
    }
}
