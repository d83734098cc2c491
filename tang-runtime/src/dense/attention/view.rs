//! Where an attention operand's heads sit in its tensor: [`HeadsView`], a `[B, H, T, D]`
//! view with a batch, head and row stride and an element offset (the head dim is always
//! contiguous), so the kernels can read q, k and v straight out of a packed q/k/v
//! projection and write o and the gradients in token-major layout, with no copies.

use crate::ops::check::mismatch;
use crate::{DType, Error, Tensor};

/// The largest element count of a tensor the kernels index (32-bit indices with room for
/// the sums of a row's offsets).
const MAX_ELEMENTS: usize = u32::MAX as usize / 2;

/// A `[B, H, T, D]` view of attention heads inside an f32 tensor, PyTorch's
/// `as_strided(size, stride, storage_offset)` with the head dim contiguous: element
/// `(b, h, t, c)` is element `storage_offset + b * stride[0] + h * stride[1] +
/// t * stride[2] + c` of the tensor. Made by [`HeadsView::contiguous`] (a `[B, H, T, D]`
/// tensor itself) or [`HeadsView::packed`] (heads side by side in a `[B, T, N]`
/// projection); both check that every element lies inside the tensor.
#[derive(Clone, Copy, Debug)]
pub struct HeadsView<'a> {
    tensor: &'a Tensor,
    size: [usize; 4],
    stride: [usize; 3],
    storage_offset: usize,
    /// For a packed view: its first head and the heads of the whole `[B, T, N]`.
    packed: Option<(usize, usize)>,
}

/// Checks that `t` is f32 with at most [`MAX_ELEMENTS`] elements.
fn check_tensor(op: &str, name: &str, t: &Tensor) -> Result<(), Error> {
    t.expect_dtype(op, DType::F32)?;
    if t.len() > MAX_ELEMENTS {
        return Err(Error::TooLarge {
            what: format!("{op}: elements of {name} (indices are 32-bit)"),
            requested: t.len() as u64,
            limit: MAX_ELEMENTS as u64,
        });
    }
    Ok(())
}

impl<'a> HeadsView<'a> {
    /// The view of a `[B, H, T, D]` tensor as itself.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] unless `t` is a non-empty rank-4 tensor, [`Error::DType`]
    /// unless it is f32, [`Error::TooLarge`] past 2^31 - 1 elements.
    pub fn contiguous(t: &'a Tensor) -> Result<Self, Error> {
        Self::dense(
            "HeadsView::contiguous",
            "the tensor",
            t,
            "[B, H, T, D] tensor",
        )
    }

    /// [`HeadsView::contiguous`] with the caller's names in its errors.
    pub(super) fn dense(op: &str, name: &str, t: &'a Tensor, what: &str) -> Result<Self, Error> {
        t.expect_dtype(op, DType::F32)?;
        let [b, h, tt, d] = match *t.shape() {
            [a, b, c, d] if a > 0 && b > 0 && c > 0 && d > 0 => [a, b, c, d],
            _ => {
                return Err(mismatch(
                    op,
                    format!(
                        "{name} must be a non-empty {what}, got shape {:?}",
                        t.shape()
                    ),
                ));
            }
        };
        check_tensor(op, name, t)?;
        Ok(HeadsView {
            tensor: t,
            size: [b, h, tt, d],
            // Products of the dims of a tensor whose length fits (checked above).
            stride: [h * tt * d, tt * d, d],
            storage_offset: 0,
            packed: None,
        })
    }

    /// Heads `first_head .. first_head + heads` of `packed` `[B, T, N]` (each `head_dim`
    /// values wide, side by side in `N`, as a fused q/k/v projection writes them) viewed
    /// as `[B, heads, T, head_dim]`: PyTorch's
    /// `packed[..., f*D:(f+heads)*D].view(B, T, heads, D).transpose(1, 2)`, without the
    /// copy of `ops::split_heads`.
    ///
    /// ```
    /// use tang_runtime::dense::attention::HeadsView;
    /// use tang_runtime::{Device, Tensor};
    /// let dev = Device::new()?;
    /// let qkv = Tensor::zeros(&dev, &[2, 5, 3 * 2 * 8])?; // [B, T, 3 * H * D], H = 2, D = 8
    /// let k = HeadsView::packed(&qkv, 2, 2, 8)?;
    /// assert_eq!((k.size(), k.stride(), k.storage_offset()), ([2, 2, 5, 8], [240, 8, 48], 16));
    /// # Ok::<(), tang_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] unless `packed` is a non-empty `[B, T, N]` with `N` a
    /// multiple of `head_dim > 0` that holds at least one head from `first_head` on;
    /// [`Error::DType`] unless f32; [`Error::TooLarge`] past 2^31 - 1 elements.
    pub fn packed(
        packed: &'a Tensor,
        first_head: usize,
        heads: usize,
        head_dim: usize,
    ) -> Result<Self, Error> {
        let op = "HeadsView::packed";
        packed.expect_dtype(op, DType::F32)?;
        let &[b, t, n] = packed.shape() else {
            return Err(mismatch(
                op,
                format!("packed must be [B, T, N], got {:?}", packed.shape()),
            ));
        };
        let fits = b > 0
            && t > 0
            && heads > 0
            && head_dim > 0
            && n.is_multiple_of(head_dim)
            && first_head
                .checked_add(heads)
                .is_some_and(|end| end <= n / head_dim);
        if !fits {
            return Err(mismatch(
                op,
                format!(
                    "heads {first_head}..{first_head}+{heads} of {head_dim} values do not fit in \
                     [B, T, N] = {:?} (N must be a multiple of head_dim and hold every head \
                     asked for; no size may be 0)",
                    packed.shape()
                ),
            ));
        }
        check_tensor(op, "packed", packed)?;
        // Every element (b, h, t, c) is at most (B-1)TN + (T-1)N + N - 1 < BTN.
        Ok(HeadsView {
            tensor: packed,
            size: [b, heads, t, head_dim],
            stride: [t * n, head_dim, n],
            storage_offset: first_head * head_dim,
            packed: Some((first_head, n / head_dim)),
        })
    }

    /// The tensor the view reads.
    pub fn tensor(&self) -> &'a Tensor {
        self.tensor
    }

    /// `[B, H, T, D]`.
    pub fn size(&self) -> [usize; 4] {
        self.size
    }

    /// Elements between consecutive batches, heads and rows (the head dim's stride is 1).
    pub fn stride(&self) -> [usize; 3] {
        self.stride
    }

    /// Element of the tensor where `(0, 0, 0, 0)` sits.
    pub fn storage_offset(&self) -> usize {
        self.storage_offset
    }

    /// `(batch stride, head stride, row stride, offset)` for the kernels' params: each at
    /// most the tensor's length, which fits 32 bits (checked by the constructors).
    pub(super) fn layout(&self) -> [u32; 4] {
        let [b, h, r] = self.stride;
        [b, h, r, self.storage_offset].map(|x| x as u32)
    }

    /// Whether the view covers every element of its tensor (then a gradient written
    /// through it needs no zero fill).
    fn covers(&self) -> bool {
        self.size.iter().product::<usize>() == self.tensor.len()
    }
}

/// The gradient tensors of three views `q, k, v` (in this order): one new tensor per
/// distinct input tensor, of its shape, zero-filled where the views do not cover it;
/// views of one tensor share one gradient tensor (the packed projection's). Returns the
/// gradient tensor of each view.
///
/// # Errors
/// [`Error::ShapeMismatch`] when two views share a tensor without being packed views of
/// disjoint heads of it (their gradients would overlap).
pub(super) fn gradient_tensors(op: &str, views: [&HeadsView; 3]) -> Result<[Tensor; 3], Error> {
    let names = ["q", "k", "v"];
    let mut owner = [0, 1, 2];
    for i in 1..3 {
        for j in 0..i {
            if !views[i].tensor.same_buffer(views[j].tensor) {
                continue;
            }
            let (a, b) = (views[j], views[i]);
            let disjoint = match (a.packed, b.packed) {
                (Some((fa, _)), Some((fb, _))) => {
                    a.tensor.shape() == b.tensor.shape()
                        && a.size[3] == b.size[3]
                        && (fa + a.size[1] <= fb || fb + b.size[1] <= fa)
                }
                _ => false,
            };
            if !disjoint {
                return Err(mismatch(
                    op,
                    format!(
                        "{} and {} are views of one tensor whose gradients would overlap; \
                         give them as packed views of disjoint heads (HeadsView::packed) or \
                         as separate tensors",
                        names[j], names[i]
                    ),
                ));
            }
            // The first view of the tensor owns its gradient; later ones still check
            // against every earlier view.
            owner[i] = owner[i].min(owner[j]);
        }
    }
    let alloc = |i: usize| -> Result<Tensor, Error> {
        let t = views[i].tensor;
        let covered = match views[i].packed {
            // The heads of every view of this tensor together cover all of its heads.
            Some((_, all)) => {
                (0..3)
                    .filter(|&j| owner[j] == i)
                    .map(|j| views[j].size[1])
                    .sum::<usize>()
                    == all
            }
            None => views[i].covers(),
        };
        if covered {
            t.device().empty(t.shape(), DType::F32)
        } else {
            Tensor::zeros(t.device(), t.shape())
        }
    };
    let dq = alloc(0)?;
    let dk = if owner[1] == 0 { dq.clone() } else { alloc(1)? };
    let dv = match owner[2] {
        0 => dq.clone(),
        1 => dk.clone(),
        _ => alloc(2)?,
    };
    Ok([dq, dk, dv])
}
