//! The attention backward's entry points: [`attention_backward`] (both passes, or the
//! tensor-core kernels) and the passes apart, [`attention_backward_dq`] and
//! [`attention_backward_dkv`], with the checks of their inputs against the forward's
//! contract.

use super::coop;
use super::coop_bwd_launch;
use super::f16;
use super::layout::AttentionParams;
use super::{
    AttentionOptions, HEADS_TOKENS, Pass, check_same_length, launch, materialized, variant,
};
use crate::ops::check::mismatch;
use crate::{DType, Error, Tensor};

/// The passes apart read o and its gradient head-major only.
fn not_token_major(op: &str, options: &AttentionOptions) -> Result<(), Error> {
    if options.token_major {
        return Err(mismatch(
            op,
            "the passes apart take o and grad_out as [B, H, T, D]: pass token_major: false \
             (permute them with ops::permute(.., &[0, 2, 1, 3])), or use attention_backward"
                .into(),
        ));
    }
    Ok(())
}

/// Checks the backward's inputs against the forward's contract and builds its uniforms:
/// `like_q` are the tensors that must have q's shape (`o`, `grad_out`), `rows` those that must
/// be `[B, H, T]` (`lse`, `delta`).
fn check_backward(
    op: &str,
    [q, k, v]: [&Tensor; 3],
    like_q: &[(&str, &Tensor)],
    rows: &[(&str, &Tensor)],
    options: &AttentionOptions,
) -> Result<AttentionParams, Error> {
    let params = check_same_length(op, q, k, v, options)?;
    let (want, layout) = match *q.shape() {
        [b, h, t, d] if options.token_major => {
            (vec![b, t, h, d], "q's shape token-major, [B, T, H, D]")
        }
        _ => (q.shape().to_vec(), "q's shape"),
    };
    for &(name, t) in like_q {
        if t.shape() != want || t.dtype() != q.dtype() {
            return Err(mismatch(
                op,
                format!("{name} must have {layout} {want:?}, got {:?}", t.shape()),
            ));
        }
    }
    let bht = &q.shape()[..3];
    for &(name, t) in rows {
        if t.shape() != bht || t.dtype() != DType::F32 {
            return Err(mismatch(
                op,
                format!(
                    "{name} must be the forward's [B, H, T] = {bht:?}, got {:?}",
                    t.shape()
                ),
            ));
        }
    }
    variant(q.device(), op, params.d)?;
    Ok(params)
}

/// Backward of [`attention`](super::attention): from the forward's inputs, its outputs
/// `o` and `lse`, and the upstream gradient `grad_out` (`o`'s shape), returns `(dq, dk, dv)` with the shapes of
/// `q`, `k`, `v`. For grouped-query attention `dk` and `dv` sum over the query heads that
/// share each kv head. Deterministic: same inputs, same bits. `options` must be the
/// forward's (the dropout mask is regenerated from its stream). f16 tensors (and f32 ones
/// with [`AttentionOptions::f16_inputs`]) run on the tensor cores where the forward does
/// (`attention/coop_bwd.rs`, `dS` rounded to f16 for its products), and so do f32 tensors
/// without it, to f32 accuracy (`attention/split.rs`). Otherwise short
/// sequences (`T <= 256`, as many kv heads as heads, `T` and `D` multiples of 4) run the
/// backward with the `T x T` scores materialized (five matmuls and one row kernel,
/// `attention/materialized.rs`), which is faster there; the rest run the fused dq and
/// dk/dv passes. With f16 tensors (`lse` stays f32) the gradients are f16.
///
/// # Errors
/// [`Error::ShapeMismatch`] when a shape differs from the forward's contract (`o` and `grad_out`
/// like `q`, `lse` `[B, H, T]`); [`Error::TooLarge`], [`Error::InvalidArgument`] and
/// [`Error::DType`] as for [`super::attention`].
pub fn attention_backward(
    grad_out: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    options: &AttentionOptions,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let op = "attention_backward";
    let half = f16::is_f16(op, &[grad_out, q, k, v, o])?;
    let params = check_backward(
        op,
        [q, k, v],
        &[("o", o), ("grad_out", grad_out)],
        &[("lse", lse)],
        options,
    )?;
    let tm = options.token_major;
    // Ahead of the materialized backward too: at the GPT step's T = 256 the
    // tensor-core passes took 0.42 ms forward and backward where the materialized
    // backward (its products on the tensor cores as well) took 0.64 ms on an H200
    // (`attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16` and `_autocast`,
    // BENCHMARKS.md 2026-11-29); in f32 with dropout the split passes took 0.78 ms where
    // the FMA forward and materialized backward took 0.96
    // (`attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd`, 2026-11-30 (fourteenth session)).
    let d = params.d as usize;
    if let Some(kernels) = coop::Coop::pick(q.device(), d, half, options.f16_inputs, tm, false) {
        return coop_bwd_launch::backward(kernels, [q, k, v, o, grad_out], lse, &params);
    }
    if tm {
        // The other kernels read o and its gradient head-major.
        let heads = |t: &Tensor| crate::ops::permute(t, &HEADS_TOKENS);
        let options = AttentionOptions {
            token_major: false,
            ..*options
        };
        return attention_backward(&heads(grad_out)?, q, k, v, &heads(o)?, lse, &options);
    }
    if half {
        let w = f16::widen(&[grad_out, q, k, v, o])?;
        let (dq, dk, dv) = attention_backward(&w[0], &w[1], &w[2], &w[3], &w[4], lse, options)?;
        return Ok((f16::narrow(&dq)?, f16::narrow(&dk)?, f16::narrow(&dv)?));
    }
    if materialized::applies(&params) {
        return materialized::backward(&params, [q, k, v], o, lse, grad_out, options.f16_inputs);
    }
    let (dq, delta) = dq_pass(op, &params, [q, k, v, o, grad_out, lse])?;
    // The dk/dv pass reads the dq pass's `delta`, recorded before it on the same encoder,
    // so it sees it written.
    let (dk, dv) = dkv_pass(op, &params, [q, k, v, grad_out, lse, &delta])?;
    Ok((dq, dk, dv))
}

/// The first pass of [`attention_backward`] alone: returns `dq` and `delta`, the
/// `[B, H, T]` row sums of `grad_out * o` that [`attention_backward_dkv`] takes. For
/// benchmarks that time the passes apart.
///
/// # Errors
/// As [`attention_backward`].
#[doc(hidden)]
pub fn attention_backward_dq(
    grad_out: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
    lse: &Tensor,
    options: &AttentionOptions,
) -> Result<(Tensor, Tensor), Error> {
    let op = "attention_backward_dq";
    not_token_major(op, options)?;
    let like_q = [("o", o), ("grad_out", grad_out)];
    let params = check_backward(op, [q, k, v], &like_q, &[("lse", lse)], options)?;
    if let Some(split) = split_passes(q, &params, options) {
        return coop_bwd_launch::backward_dq(split, [q, k, v, o, grad_out], lse, &params);
    }
    dq_pass(op, &params, [q, k, v, o, grad_out, lse])
}

/// The second pass of [`attention_backward`] alone: returns `(dk, dv)` from the `delta`
/// of [`attention_backward_dq`]. For benchmarks that time the passes apart.
///
/// # Errors
/// As [`attention_backward`], and [`Error::ShapeMismatch`] when `delta` is not `[B, H, T]`.
#[doc(hidden)]
pub fn attention_backward_dkv(
    grad_out: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    lse: &Tensor,
    delta: &Tensor,
    options: &AttentionOptions,
) -> Result<(Tensor, Tensor), Error> {
    let op = "attention_backward_dkv";
    not_token_major(op, options)?;
    let rows = [("lse", lse), ("delta", delta)];
    let params = check_backward(op, [q, k, v], &[("grad_out", grad_out)], &rows, options)?;
    if let Some(split) = split_passes(q, &params, options) {
        return coop_bwd_launch::backward_dkv(split, [q, k, v, grad_out], [lse, delta], &params);
    }
    dkv_pass(op, &params, [q, k, v, grad_out, lse, delta])
}

/// The tensor-core variant the passes apart run for f32 tensors (the one
/// [`attention_backward`] runs for them), if the device takes it; f16 tensors and
/// autocast's `f16_inputs` run the FMA passes.
fn split_passes(
    q: &Tensor,
    params: &AttentionParams,
    options: &AttentionOptions,
) -> Option<coop::Coop> {
    let half = q.dtype() == DType::F16;
    let d = params.d as usize;
    coop::Coop::pick(q.device(), d, half, options.f16_inputs, false, false).filter(|v| v.split)
}

/// Records the dq pass on checked `[q, k, v, o, grad_out, lse]`: returns `dq` and
/// `delta = rowsum(grad_out * o)` `[B, H, T]`.
fn dq_pass(
    op: &str,
    params: &AttentionParams,
    inputs: [&Tensor; 6],
) -> Result<(Tensor, Tensor), Error> {
    let q = inputs[0].shape();
    launch(Pass::Dq, op, params, &inputs, [q, &q[..3]])
}

/// Records the dk/dv pass on checked `[q, k, v, grad_out, lse, delta]`: returns `dk` and
/// `dv`.
fn dkv_pass(
    op: &str,
    params: &AttentionParams,
    inputs: [&Tensor; 6],
) -> Result<(Tensor, Tensor), Error> {
    let out_shapes = [inputs[1].shape(), inputs[2].shape()];
    launch(Pass::Dkv, op, params, &inputs, out_shapes)
}
