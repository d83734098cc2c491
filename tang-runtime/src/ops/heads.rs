//! Attention heads in and out of a packed projection: a fused q/k/v Linear writes
//! `[B, T, N]` with the heads of q, then k, then v side by side in `N`; attention kernels
//! want each as `[B, H, T, D]`. Each direction is one strided copy per part, where
//! `narrow`, `reshape` and `permute` (and, backward, their gradients: zero fills, scatters
//! and the sum of three full-size gradients) would be several.

use super::check;
use super::strided::{Layout, gather_view, strided_copy};
use crate::{Error, Tensor};

/// `[B, T, N]` viewed as `[B, N / D, T, D]`: the strides of head `h`, position `t`.
fn packed_head_layout(t: usize, n: usize, head_dim: usize, first_head: usize) -> Layout {
    Layout {
        strides: vec![t * n, head_dim, n, 1],
        offset: first_head * head_dim,
    }
}

/// Heads `first_head..first_head + heads` of `packed [B, T, N]` (each `head_dim` values
/// wide, side by side in `N`) as a new `[B, heads, T, head_dim]` tensor: PyTorch's
/// `packed[..., f*D:(f+heads)*D].view(B, T, heads, D).transpose(1, 2).contiguous()` in
/// one copy.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// // B = 1, T = 2, two heads of D = 2 packed as [q0 q0 q1 q1] per position.
/// let packed = Tensor::from_slice(&dev, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], &[1, 2, 4])?;
/// let head1 = ops::split_heads(&packed, 1, 1, 2)?;
/// assert_eq!(head1.shape(), &[1, 1, 2, 2]);
/// assert_eq!(head1.to_vec()?, vec![2.0, 3.0, 6.0, 7.0]);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::ShapeMismatch`] unless `packed` is `[B, T, N]` with `N` a multiple of
/// `head_dim > 0` and the heads inside it; [`Error::TooLarge`] past 2^32 - 1 elements.
pub fn split_heads(
    packed: &Tensor,
    first_head: usize,
    heads: usize,
    head_dim: usize,
) -> Result<Tensor, Error> {
    let op = "split_heads";
    let &[b, t, n] = packed.shape() else {
        return Err(check::mismatch(
            op,
            format!("packed must be [B, T, N], got {:?}", packed.shape()),
        ));
    };
    let fits = head_dim > 0
        && n.is_multiple_of(head_dim)
        && first_head
            .checked_add(heads)
            .is_some_and(|end| end <= n / head_dim);
    if !fits {
        return Err(check::mismatch(
            op,
            format!(
                "heads {first_head}..{first_head}+{heads} of {head_dim} values do not fit in N = {n} \
                 (N must be a multiple of head_dim and hold every head asked for)"
            ),
        ));
    }
    let layout = packed_head_layout(t, n, head_dim, first_head);
    gather_view(op, packed, &layout, &[b, heads, t, head_dim])
}

/// The inverse of [`split_heads`] over a whole packed tensor: `parts[i]` `[B, H_i, T, D]`
/// written side by side into a new `[B, T, (H_0 + H_1 + ...) * D]`, as PyTorch's
/// `torch.cat([p.transpose(1, 2).reshape(B, T, -1) for p in parts], dim=2)`; one copy per
/// part. The gradient of a packed q/k/v projection from the gradients of its heads.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let packed = Tensor::from_slice(&dev, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], &[1, 2, 4])?;
/// let (q, k) = (ops::split_heads(&packed, 0, 1, 2)?, ops::split_heads(&packed, 1, 1, 2)?);
/// assert_eq!(ops::merge_heads(&[&q, &k])?.to_vec()?, packed.to_vec()?);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::Arity`] for no parts; [`Error::ShapeMismatch`] unless every part is
/// `[B, H_i, T, D]` with the same `B`, `T` and `D`; [`Error::DType`] or
/// [`Error::DeviceMismatch`] when parts differ in those; [`Error::TooLarge`].
pub fn merge_heads(parts: &[&Tensor]) -> Result<Tensor, Error> {
    let op = "merge_heads";
    let Some(first) = parts.first() else {
        return Err(Error::Arity {
            op: op.into(),
            what: "parts",
            expected: 1,
            got: 0,
        });
    };
    let &[b, _, t, d] = first.shape() else {
        return Err(check::mismatch(
            op,
            format!("parts must be [B, H, T, D], got {:?}", first.shape()),
        ));
    };
    let mut heads = 0usize;
    for (i, p) in parts.iter().enumerate() {
        check::same_device(op, first.device(), &[("part", p)])?;
        check::same_dtype(op, first, p)?;
        match *p.shape() {
            [pb, h, pt, pd] if (pb, pt, pd) == (b, t, d) => heads += h,
            _ => {
                return Err(check::mismatch(
                    op,
                    format!(
                        "part {i} has shape {:?}; every part must be [B = {b}, H, T = {t}, D = {d}]",
                        p.shape()
                    ),
                ));
            }
        }
    }
    let n = heads * d;
    let out = first.device().empty(&[b, t, n], first.dtype())?;
    let mut first_head = 0;
    for p in parts {
        let shape = p.shape();
        let dst = packed_head_layout(t, n, d, first_head);
        strided_copy(op, p, &Layout::contiguous(shape), &out, &dst, shape)?;
        first_head += shape[1];
    }
    Ok(out)
}
