//! Causal attention of heads read through [`HeadsView`]s: the same kernels as
//! [`attention`](super::attention) and [`attention_backward`](super::attention_backward),
//! addressing q, k, v, o and the gradients through strides instead of copying the heads
//! in and out of `[B, H, T, D]` (a fused q/k/v projection is read where it lies).

use super::view::{HeadsView, gradient_tensors};
use super::{
    OutputOrder, check_backward, check_same_length, check_views, launch_forward, record_dkv,
    record_dq,
};
use crate::ops::check::same_device;
use crate::{Error, Tensor};

/// Causal attention forward (as [`attention`](super::attention)) of heads read through
/// views: `q` `[B, H, T, D]`, `k` and `v` `[B, Hkv, T, D]` with `Hkv` dividing `H` and
/// `D <= 128`, e.g. [`HeadsView::packed`] views of one q/k/v projection `[B, T, N]`.
/// `scale` defaults to `1 / sqrt(D)`. Returns `(o, lse)`: `o` `[B, T, H, D]`, token-major
/// (the heads of each position side by side, as PyTorch's flash kernels write it;
/// `reshape` to `[B, T, H * D]` for the output projection) and the natural-log
/// logsumexp of each row `[B, H, T]`, which [`attention_backward_strided`] needs.
/// Bit for bit the values of [`attention`](super::attention) on the same heads.
///
/// ```
/// use tang_runtime::dense::attention::{HeadsView, attention_strided};
/// use tang_runtime::{Device, Tensor};
/// let dev = Device::new()?;
/// let (b, t, h, d) = (1, 4, 2, 8);
/// let qkv = Tensor::full(&dev, &[b, t, 3 * h * d], 0.5)?; // a fused projection's output
/// let view = |first| HeadsView::packed(&qkv, first, h, d);
/// let (o, lse) = attention_strided(&view(0)?, &view(h)?, &view(2 * h)?, None)?;
/// assert_eq!((o.shape(), lse.shape()), (&[b, t, h, d][..], &[b, h, t][..]));
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::ShapeMismatch`] for views that do not fit the contract above (k and v must
/// have q's `T`); [`Error::DeviceMismatch`] for tensors on different devices;
/// [`Error::TooLarge`] as for [`attention`](super::attention).
pub fn attention_strided(
    q: &HeadsView,
    k: &HeadsView,
    v: &HeadsView,
    scale: Option<f32>,
) -> Result<(Tensor, Tensor), Error> {
    let op = "attention_strided";
    let params = check_views(op, q, k, v, scale)?;
    check_same_length(op, &params)?;
    let qkv = [q.tensor(), k.tensor(), v.tensor()];
    same_device(op, qkv[0].device(), &[("k", qkv[1]), ("v", qkv[2])])?;
    launch_forward(qkv, &params, OutputOrder::TokenMajor, op)
}

/// Backward of [`attention_strided`]: from the forward's views, its outputs `o`
/// `[B, T, H, D]` and `lse` `[B, H, T]`, and the upstream gradient `d_o` (`o`'s shape),
/// returns `(dq, dk, dv)`: each a new tensor of its view's tensor's shape holding the
/// gradient at the view's elements and 0 elsewhere. Views of one tensor (packed views of
/// disjoint heads of one projection) share one gradient tensor: then `dq`, `dk` and `dv`
/// are the same tensor, the projection's gradient, written by the kernels with no copy
/// or sum. Grouped-query heads sum into `dk` and `dv` as in
/// [`attention_backward`](super::attention_backward), whose values these are bit for
/// bit. `scale` must be the forward's.
///
/// # Errors
/// [`Error::ShapeMismatch`] when a shape differs from the forward's contract, or when
/// two views of one tensor are not packed views of disjoint heads (their gradients
/// would overlap); [`Error::DeviceMismatch`]; [`Error::TooLarge`] as for
/// [`attention`](super::attention).
pub fn attention_backward_strided(
    q: &HeadsView,
    k: &HeadsView,
    v: &HeadsView,
    o: &Tensor,
    lse: &Tensor,
    d_o: &Tensor,
    scale: Option<f32>,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let op = "attention_backward_strided";
    let params = check_views(op, q, k, v, scale)?.with_o(OutputOrder::TokenMajor);
    let qkv = [q.tensor(), k.tensor(), v.tensor()];
    let dev = qkv[0].device();
    let others = [("k", qkv[1]), ("v", qkv[2]), ("o", o), ("lse", lse)];
    same_device(op, dev, &others)?;
    same_device(op, dev, &[("d_o", d_o)])?;
    let like_o = [("o", o), ("d_o", d_o)];
    check_backward(
        op,
        &params,
        OutputOrder::TokenMajor,
        &like_o,
        &[("lse", lse)],
        dev,
    )?;
    let [dq, dk, dv] = gradient_tensors(op, [q, k, v])?;
    let delta = record_dq(op, &params, qkv, [o, lse, d_o], &dq)?;
    record_dkv(op, &params, qkv, [lse, d_o, &delta], [&dk, &dv])?;
    Ok((dq, dk, dv))
}
