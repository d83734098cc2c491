//! Recording the tensor-core attention backward (the kernels' WGSL: `coop_bwd.rs`): the
//! dq pass, then the dk/dv pass reading its `delta`, into three gradients or a packed
//! projection's one; for the split variants, the tensors' largest magnitudes first.

use super::coop::{Coop, ROWS};
use super::coop_bwd::{dkv_layout, dq_layout, generate_dkv, generate_dq};
use super::coop_fwd::kernel_name;
use super::dropout;
use super::layout::AttentionParams;
use super::split::maxima_for;
use crate::spec::Variants;
use crate::{DType, Error, Tensor};

/// The generated kernels, by variant and pass (false: dq, true: dk/dv).
static KERNELS: Variants<(Coop, bool)> = Variants::new();

/// Where the backward writes its gradients: three tensors, or (a variant that reads a
/// packed projection) one packed gradient (see `coop_bwd.rs`'s `dq_binding`).
enum Grads<'a> {
    Split([&'a Tensor; 3]),
    Packed(&'a Tensor),
}

/// Records the backward of checked `params` on the tensor cores from `[q, k, v, o,
/// grad_out]` (all of the variant's dtype) and the forward's `lse`: returns `(dq, dk, dv)`
/// in that dtype.
pub(super) fn backward(
    v: Coop,
    inputs: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let [b, h, hkv, t, tk, d] = sizes(params);
    let dev = inputs[0].device();
    let dq = dev.empty(&[b, h, t, d], v.dtype())?;
    let dk = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    let dv = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    record(v, inputs, lse, params, Grads::Split([&dq, &dk, &dv]))?;
    Ok((dq, dk, dv))
}

/// [`backward`] of a variant that reads a packed projection (q, k and v all that tensor),
/// returning the projection's gradient, `[B, T, (H + 2 Hkv) D]`.
pub(super) fn backward_packed(
    v: Coop,
    inputs: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
) -> Result<Tensor, Error> {
    let [b, h, hkv, t, _, d] = sizes(params);
    let dqkv = inputs[0]
        .device()
        .empty(&[b, t, (h + 2 * hkv) * d], v.dtype())?;
    record(v, inputs, lse, params, Grads::Packed(&dqkv))?;
    Ok(dqkv)
}

/// `[B, H, Hkv, T, Tk, D]` of `params`.
fn sizes(params: &AttentionParams) -> [usize; 6] {
    [
        params.batch,
        params.heads,
        params.kv_heads,
        params.tq,
        params.tk_stride,
        params.d,
    ]
    .map(|x| x as usize)
}

/// The two passes of the backward, into `grads`.
fn record(
    v: Coop,
    [q, k, vt, o, go]: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
    grads: Grads<'_>,
) -> Result<(), Error> {
    debug_assert_eq!(v.packed, matches!(grads, Grads::Packed(_)));
    let amax = maxima_for(&v, [q, k, vt], Some(go))?;
    let dq = match grads {
        Grads::Split([dq, _, _]) => dq,
        Grads::Packed(dqkv) => dqkv,
    };
    let delta = record_dq(v, [q, k, vt, o, go], lse, params, dq, amax.as_ref())?;
    // Recorded after the dq pass on the same encoder, so it reads its `delta`.
    record_dkv(
        v,
        [q, k, vt, go],
        [lse, &delta],
        params,
        grads,
        amax.as_ref(),
    )
}

/// The dq pass into `dq` (or the packed gradient's q heads); returns `delta`. `amax`:
/// a split variant's [`maxima_for`].
fn record_dq(
    v: Coop,
    [q, k, vt, o, go]: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
    dq: &Tensor,
    amax: Option<&Tensor>,
) -> Result<Tensor, Error> {
    let [b, h, _, t, _, _] = sizes(params);
    let delta = q.device().empty(&[b, h, t], DType::F32)?;
    let kernel = KERNELS.get(&(v, false), || (kernel_name("bwd_dq", &v), generate_dq(&v)))?;
    let grid = [params.tq.div_ceil(ROWS), params.heads, params.batch];
    let mut bindings = vec![q, k, vt, o, go, lse, dq, &delta];
    bindings.extend(amax);
    let constants = dropout::constants(params);
    dq_layout(&v).dispatch(kernel, constants, params, &bindings, grid)?;
    Ok(delta)
}

/// The dk/dv pass into `grads` (the packed gradient's k and v heads) from the dq pass's
/// `delta`. `amax`: a split variant's [`maxima_for`].
fn record_dkv(
    v: Coop,
    [q, k, vt, go]: [&Tensor; 4],
    [lse, delta]: [&Tensor; 2],
    params: &AttentionParams,
    grads: Grads<'_>,
    amax: Option<&Tensor>,
) -> Result<(), Error> {
    let kernel = KERNELS.get(&(v, true), || {
        (kernel_name("bwd_dkv", &v), generate_dkv(&v))
    })?;
    let grid = [
        params.tk_stride.div_ceil(ROWS),
        params.kv_heads,
        params.batch,
    ];
    let mut bindings = vec![q, k, vt, go, lse, delta];
    match grads {
        Grads::Split([_, dk, dv]) => bindings.extend([dk, dv]),
        Grads::Packed(dqkv) => bindings.push(dqkv),
    }
    bindings.extend(amax);
    let constants = dropout::constants(params);
    dkv_layout(&v).dispatch(kernel, constants, params, &bindings, grid)
}

/// The dq pass of [`backward`] alone (`[B, H, T, D]` tensors): returns `(dq, delta)`.
pub(super) fn backward_dq(
    v: Coop,
    inputs: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
) -> Result<(Tensor, Tensor), Error> {
    let [b, h, _, t, _, d] = sizes(params);
    let [q, k, vt, _, go] = inputs;
    let dq = q.device().empty(&[b, h, t, d], v.dtype())?;
    let amax = maxima_for(&v, [q, k, vt], Some(go))?;
    let delta = record_dq(v, inputs, lse, params, &dq, amax.as_ref())?;
    Ok((dq, delta))
}

/// The dk/dv pass of [`backward`] alone, from [`backward_dq`]'s `delta`: returns
/// `(dk, dv)`.
pub(super) fn backward_dkv(
    v: Coop,
    inputs: [&Tensor; 4],
    [lse, delta]: [&Tensor; 2],
    params: &AttentionParams,
) -> Result<(Tensor, Tensor), Error> {
    let [b, _, hkv, _, tk, d] = sizes(params);
    let dev = inputs[0].device();
    let dk = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    let dv = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    let [q, k, vt, go] = inputs;
    let amax = maxima_for(&v, [q, k, vt], Some(go))?;
    // The dk/dv pass reads no dq: its slot holds dk again.
    let grads = Grads::Split([&dk, &dk, &dv]);
    record_dkv(v, inputs, [lse, delta], params, grads, amax.as_ref())?;
    Ok((dk, dv))
}
