//! Attention read straight from a packed q/k/v projection `[B, T, (H + 2 Hkv) D]` (q's
//! heads, then k's, then v's: what a fused `c_attn` Linear writes), with the output
//! token-major `[B, T, H, D]` (what the output projection reads as `[B, T, H·D]`). The
//! tensor-core kernels address both layouts directly ([`super::coop::Coop::packed`]), so
//! neither the heads' split nor the output's permute is copied; elsewhere the heads are
//! split out and [`attention`] / [`attention_backward`] run with
//! [`AttentionOptions::token_major`]. On an H200 the character GPT's AMP step went from
//! 12.63 / 12.54 to 12.48 / 12.42 ms (the split and the permutes, 0.35 ms, gone; the dq
//! pass 10% slower on these layouts, not yet understood: BENCHMARKS.md, 2026-11-29
//! (eighth session)).

use super::{
    AttentionOptions, attention, attention_backward, coop, coop_bwd_launch, coop_fwd, dims4, f16,
    sizes_params, with_options,
};
use crate::ops::check::mismatch;
use crate::ops::{merge_heads, split_qkv_heads};
use crate::{Error, Tensor};

/// The sizes of `qkv [B, T, (heads + 2 kv_heads) D]`: `[B, H, Hkv, T, T, D]`.
fn packed_sizes(
    op: &str,
    qkv: &Tensor,
    heads: usize,
    kv_heads: usize,
) -> Result<[usize; 6], Error> {
    let shape = qkv.shape();
    let (&[b, t, n], true) = (
        shape,
        heads > 0 && kv_heads > 0 && heads.is_multiple_of(kv_heads),
    ) else {
        return Err(mismatch(
            op,
            format!(
                "qkv must be [B, T, (heads + 2 * kv_heads) * D] with kv_heads dividing heads > 0, got {shape:?} with heads {heads}, kv_heads {kv_heads}"
            ),
        ));
    };
    let parts = heads + 2 * kv_heads;
    if b == 0 || t == 0 || n == 0 || !n.is_multiple_of(parts) {
        return Err(mismatch(
            op,
            format!(
                "qkv's last dimension {n} must be a positive multiple of heads + 2 * kv_heads = {parts}"
            ),
        ));
    }
    Ok([b, heads, kv_heads, t, t, n / parts])
}

/// Causal-or-not attention of the heads packed in `qkv` `[B, T, (heads + 2 kv_heads) D]`:
/// returns `o` token-major `[B, T, heads, D]` and `lse` `[B, heads, T]`, equal to
/// splitting the heads out ([`split_qkv_heads`]) and calling [`attention`] with
/// [`AttentionOptions::token_major`] (set or not in `options`: the output is token-major
/// either way).
///
/// # Errors
/// [`Error::ShapeMismatch`] unless `qkv` is `[B, T, N]` with `N` a multiple of
/// `heads + 2 kv_heads` and `kv_heads` dividing `heads`; otherwise as [`attention`].
pub fn attention_packed(
    qkv: &Tensor,
    heads: usize,
    kv_heads: usize,
    options: &AttentionOptions,
) -> Result<(Tensor, Tensor), Error> {
    let op = "attention_packed";
    let sizes = packed_sizes(op, qkv, heads, kv_heads)?;
    let half = f16::is_f16(op, &[qkv])?;
    let options = AttentionOptions {
        token_major: true,
        ..*options
    };
    let d = sizes[5];
    if let Some(v) = coop::Coop::pick(qkv.device(), d, half, options.f16_inputs, true, true) {
        let params = packed_params(op, qkv, sizes, &options)?;
        return coop_fwd::forward(v, qkv, qkv, qkv, &params);
    }
    let (q, k, v) = split_qkv_heads(qkv, heads, kv_heads, d)?;
    attention(&q, &k, &v, &options)
}

/// The backward of [`attention_packed`]: from `qkv`, its `o` (token-major) and `lse`, and
/// the upstream gradient `grad_out` (`o`'s shape), returns the gradient of `qkv`
/// (`[B, T, (heads + 2 kv_heads) D]`, its shape and dtype). The tensor-core kernels write
/// it in place; elsewhere the heads' gradients are merged ([`crate::ops::merge_heads`]).
///
/// # Errors
/// As [`attention_packed`] and [`attention_backward`].
pub fn attention_backward_packed(
    grad_out: &Tensor,
    qkv: &Tensor,
    heads: usize,
    kv_heads: usize,
    o: &Tensor,
    lse: &Tensor,
    options: &AttentionOptions,
) -> Result<Tensor, Error> {
    let op = "attention_backward_packed";
    let sizes = packed_sizes(op, qkv, heads, kv_heads)?;
    let half = f16::is_f16(op, &[grad_out, qkv, o])?;
    let options = AttentionOptions {
        token_major: true,
        ..*options
    };
    let [b, h, _, t, _, d] = sizes;
    if let Some(v) = coop::Coop::pick(qkv.device(), d, half, options.f16_inputs, true, true) {
        let params = packed_params(op, qkv, sizes, &options)?;
        for (name, x) in [("o", o), ("grad_out", grad_out)] {
            let [xb, xt, xh, xd] = dims4(op, name, x, "[B, T, H, D] tensor")?;
            if [xb, xt, xh, xd] != [b, t, h, d] || x.dtype() != qkv.dtype() {
                return Err(mismatch(
                    op,
                    format!(
                        "{name} must be [B, T, H, D] = {:?} of qkv's dtype, got {:?}",
                        [b, t, h, d],
                        x.shape()
                    ),
                ));
            }
        }
        let rows = [b, h, t];
        if lse.shape() != rows || lse.dtype() != crate::DType::F32 {
            return Err(mismatch(
                op,
                format!(
                    "lse must be the forward's [B, H, T] = {rows:?}, got {:?}",
                    lse.shape()
                ),
            ));
        }
        return coop_bwd_launch::backward_packed(v, [qkv, qkv, qkv, o, grad_out], lse, &params);
    }
    let (q, k, v) = split_qkv_heads(qkv, heads, kv_heads, d)?;
    let (dq, dk, dv) = attention_backward(grad_out, &q, &k, &v, o, lse, &options)?;
    merge_heads(&[&dq, &dk, &dv])
}

/// The params of a packed call: the sizes' limits and `options`.
fn packed_params(
    op: &str,
    qkv: &Tensor,
    sizes: [usize; 6],
    options: &AttentionOptions,
) -> Result<super::layout::AttentionParams, Error> {
    let params = sizes_params(op, sizes, &[("qkv", qkv.len())], options.scale)?;
    with_options(op, params, options)
}
