//! Split-K for weight gradients: `Aᵀ·B` with a small output and a long reduction runs as
//! a batched product of slices of the reduction, then a column sum over the slices.

use super::{CoopTile, Dims, MatmulOptions, dims, matmul_with};
use crate::ops::check::invalid;
use crate::{Error, Tensor};

/// Workgroups of the 128×128 tile a split reduction aims for. More slices than a wave of
/// the GPU needs still pay: on an H200 the GPT's weight gradients (k = 16,384) ran
/// fastest at the most slices tried, 32 (1536x384: 0.488 ms against 0.599 at 8 slices
/// and 0.510 at 16; 1152x384: 0.381 against 0.407; BENCHMARKS.md, `..._TN_split<s>`),
/// so the split stops only at a large output, `SPLIT_K_MAX` or `SPLIT_K_MIN_LEN`.
const SPLIT_K_TARGET_BLOCKS: usize = 1024;
/// The shortest stretch of the reduction one split gets (shorter ones spend more on
/// writing and summing partial products than they gain).
const SPLIT_K_MIN_LEN: usize = 512;
/// The most splits.
const SPLIT_K_MAX: usize = 32;
/// The shortest slice of a product on the tensor cores. Their products run about four
/// times faster than the f32 tile's, so writing and summing the partial products weighs
/// more: on an H200 the GPT's f16 weight gradients (k = 16,384) ran fastest at 8-16
/// slices, not 32 (1152x384: 0.109 ms at 16 against 0.122 at 32; 384x384: 0.049 against
/// 0.057; 1536x384: 0.137 against 0.144; BENCHMARKS.md, `..._TN_split<s>_f16`).
const SPLIT_K_MIN_LEN_TENSOR_CORES: usize = 1024;

/// How many slices to cut the reduction (`k`) into, so that a product with a small
/// output and a long reduction (a weight gradient `dW = Gᵀ·X` over 16,384 tokens has
/// a 384×1152 output: 27 workgroups of 128×128) fills the GPU: each slice is one batch
/// of a batched matmul, and a column sum adds the slices. 1 when the product already
/// has enough workgroups, or is not of the form whose slices are contiguous batches:
/// `Aᵀ·B` with A stored `[k, m]` and B `[k, n]`, one batch, no bias, no epilogue.
///
/// Measured on an H200 at the GPT's weight gradients (k = 16,384; BENCHMARKS.md,
/// `matmul_gpt_*_TN`): unsplit, the best tile ran at 8-23 TFLOP/s; split, 24-35.
pub(super) fn split_k(d: &Dims, o: &MatmulOptions<'_>, tensor_cores: bool) -> usize {
    if !o.transpose_a
        || o.transpose_b
        || d.batch != 1
        || o.bias.is_some()
        || o.epilogue.is_some()
        || o.tile.is_some()
        || d.m == 0
        || d.n == 0
    {
        return 1;
    }
    // One batch: `m * n` is the output's length, checked against u32 by `dims`.
    let blocks = d.m.div_ceil(128) * d.n.div_ceil(128);
    let min_len = if tensor_cores {
        SPLIT_K_MIN_LEN_TENSOR_CORES
    } else {
        SPLIT_K_MIN_LEN
    };
    let mut s = 1;
    while s < SPLIT_K_MAX
        && blocks * s < SPLIT_K_TARGET_BLOCKS
        && d.k.is_multiple_of(2 * s)
        && d.k / (2 * s) >= min_len
    {
        s *= 2;
    }
    s
}

/// `Aᵀ·B` as `splits` batched partial products over slices of `k`, summed.
pub(super) fn matmul_split_k(
    a: &Tensor,
    b: &Tensor,
    d: &Dims,
    splits: usize,
    f16_inputs: bool,
    coop_tile: Option<CoopTile>,
) -> Result<Tensor, Error> {
    let len = d.k / splits;
    let a3 = a.reshape(&[splits, len, d.m])?;
    let b3 = b.reshape(&[splits, len, d.n])?;
    let o = MatmulOptions {
        transpose_a: true,
        f16_inputs,
        coop_tile,
        ..MatmulOptions::default()
    };
    let parts = matmul_with(&a3, &b3, &o)?;
    crate::ops::reduce::sum(&parts.reshape(&[splits, d.m * d.n])?, 0)?.reshape(&d.out_shape)
}

/// `Aᵀ·B` (A `[k, m]`, B `[k, n]`) cut into exactly `splits` slices of `k`, as
/// [`matmul_with`] cuts a weight gradient: for tuning the slice count (the bench's
/// `matmul_gpt_*_TN_split<s>` sweep measures this against the automatic choice).
///
/// # Errors
/// As [`matmul_with`]; [`Error::InvalidArgument`] unless `splits` divides `k` and both
/// operands are rank 2.
pub fn matmul_tn_split(a: &Tensor, b: &Tensor, splits: usize) -> Result<Tensor, Error> {
    let o = MatmulOptions {
        transpose_a: true,
        ..MatmulOptions::default()
    };
    let d = dims(a, b, &o)?;
    if splits == 0 || d.batch != 1 || a.shape().len() != 2 || !d.k.is_multiple_of(splits) {
        return Err(invalid(
            "matmul_tn_split",
            format!(
                "splits ({splits}) must divide k ({}) of two rank-2 operands, got {:?} and {:?}",
                d.k,
                a.shape(),
                b.shape()
            ),
        ));
    }
    matmul_split_k(a, b, &d, splits, false, None)
}
