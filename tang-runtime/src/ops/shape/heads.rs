//! Attention heads in and out of a packed projection: a fused q/k/v Linear writes
//! `[B, T, N]` with the heads of q, then k, then v side by side in `N`; attention kernels
//! want each as `[B, H, T, D]`. [`split_heads`] is one strided copy per part, where
//! `narrow`, `reshape` and `permute` (and, backward, their gradients: zero fills, scatters
//! and the sum of three full-size gradients) would be several. The three parts of q, k
//! and v move in one launch each way ([`split_qkv_heads`], and [`merge_heads`] of three
//! parts) when the head dimension is a multiple of 4: one thread per `vec4` of the packed
//! tensor, which reads or writes the part its head belongs to.

use crate::ops::check;
use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::strided::{Layout, gather_view, strided_copy};
use crate::wgsl::thread_main;
use crate::{DType, Error, Tensor};

params! {
    /// The packed `[B, T, N]` in `vec4`s: `total` of them, `row` per position, `t`
    /// positions, `d4` per head, q's `hq` heads then k's and v's `hkv` each.
    struct QkvParams { total: u32, row: u32, t: u32, d4: u32, hq: u32, hkv: u32 }
}

/// Thread `i`'s `vec4` of the packed tensor: its part (0 q, 1 k, 2 v) and its index in
/// that part's `[B, H, T, D]`.
macro_rules! qkv_index {
    () => {
        concat!(
            thread_main!(i < "p.total"),
            "    let c = i % p.row;
    let bt = i / p.row;
    let b = bt / p.t;
    let t = bt % p.t;
    let head = c / p.d4;
    var part = 0u;
    var h = head;
    var heads = p.hq;
    if (head >= p.hq + p.hkv) { part = 2u; h = head - p.hq - p.hkv; heads = p.hkv; }
    else if (head >= p.hq) { part = 1u; h = head - p.hq; heads = p.hkv; }
    let j = ((b * heads + h) * p.t + t) * p.d4 + c % p.d4;
",
        )
    };
}

/// A binding of the split or merge kernel, read or `written`: four values of `ty` each
/// (`vec4<f32>` for f32 tensors, `vec2<u32>`, four halves, for f16 ones).
const fn four_slot(name: &'static str, written: bool, ty: &'static str) -> Slot {
    if written {
        Slot::ReadWrite(name, ty)
    } else {
        Slot::Read(name, ty)
    }
}

/// The split kernel's bindings over elements of four values of `ty`.
const fn split_slots(ty: &'static str) -> [Slot; 4] {
    [
        four_slot("x", false, ty),
        four_slot("q", true, ty),
        four_slot("k", true, ty),
        four_slot("v", true, ty),
    ]
}

/// The merge kernel's bindings over elements of four values of `ty`.
const fn merge_slots(ty: &'static str) -> [Slot; 4] {
    [
        four_slot("q", false, ty),
        four_slot("k", false, ty),
        four_slot("v", false, ty),
        four_slot("x", true, ty),
    ]
}

const F32X4: &str = "array<vec4<f32>>";
const F16X4: &str = "array<vec2<u32>>";

const SPLIT_BODY: &str = concat!(
    qkv_index!(),
    "    let val = x[i];
    if (part == 0u) { q[j] = val; } else if (part == 1u) { k[j] = val; } else { v[j] = val; }
}
"
);

const MERGE_BODY: &str = concat!(
    qkv_index!(),
    "    if (part == 0u) { x[i] = q[j]; } else if (part == 1u) { x[i] = k[j]; } else { x[i] = v[j]; }
}
"
);

static K_SPLIT_QKV: Spec<QkvParams> =
    Spec::new("split_qkv_heads", &[], &split_slots(F32X4), SPLIT_BODY);
static K_MERGE_QKV: Spec<QkvParams> =
    Spec::new("merge_qkv_heads", &[], &merge_slots(F32X4), MERGE_BODY);
// The same copies of f16 tensors: four halves (two words) a thread.
static K_SPLIT_QKV_F16: Spec<QkvParams> =
    Spec::new("split_qkv_heads_f16", &[], &split_slots(F16X4), SPLIT_BODY);
static K_MERGE_QKV_F16: Spec<QkvParams> =
    Spec::new("merge_qkv_heads_f16", &[], &merge_slots(F16X4), MERGE_BODY);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        K_SPLIT_QKV.source(),
        K_MERGE_QKV.source(),
        K_SPLIT_QKV_F16.source(),
        K_MERGE_QKV_F16.source(),
    ]
}

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

/// q, k and v out of a fused projection `packed [B, T, (heads + 2·kv_heads)·head_dim]`
/// (q's heads, then k's, then v's): `[B, heads, T, D]` and twice `[B, kv_heads, T, D]`,
/// equal to three [`split_heads`] calls, in one launch when `head_dim` is a multiple of 4.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// // B = 1, T = 1, one head each of D = 4: [q q q q k k k k v v v v].
/// let packed = Tensor::from_slice(&dev, &(0..12).map(|i| i as f32).collect::<Vec<_>>(), &[1, 1, 12])?;
/// let (q, k, v) = ops::split_qkv_heads(&packed, 1, 1, 4)?;
/// assert_eq!((q.to_vec()?, v.to_vec()?), (vec![0.0, 1.0, 2.0, 3.0], vec![8.0, 9.0, 10.0, 11.0]));
/// assert_eq!(k.shape(), &[1, 1, 1, 4]);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// As [`split_heads`]: [`Error::ShapeMismatch`] unless `packed` is `[B, T, N]` with
/// `N = (heads + 2·kv_heads)·head_dim`; [`Error::DType`] for a u32 tensor (f32 and f16
/// tensors split alike).
pub fn split_qkv_heads(
    packed: &Tensor,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let op = "split_qkv_heads";
    let parts = heads + 2 * kv_heads;
    let n = packed.shape().last().copied().unwrap_or(0);
    if packed.shape().len() != 3 || Some(n) != parts.checked_mul(head_dim) {
        return Err(check::mismatch(
            op,
            format!(
                "packed must be [B, T, (heads + 2 * kv_heads) * head_dim] = [B, T, ({heads} + 2 * {kv_heads}) * {head_dim}], got {:?}",
                packed.shape()
            ),
        ));
    }
    check::want_float(op, packed)?;
    if !head_dim.is_multiple_of(4) {
        return Ok((
            split_heads(packed, 0, heads, head_dim)?,
            split_heads(packed, heads, kv_heads, head_dim)?,
            split_heads(packed, heads + kv_heads, kv_heads, head_dim)?,
        ));
    }
    let (b, t) = (packed.shape()[0], packed.shape()[1]);
    let dev = packed.device();
    let dtype = packed.dtype();
    let q = dev.empty(&[b, heads, t, head_dim], dtype)?;
    let k = dev.empty(&[b, kv_heads, t, head_dim], dtype)?;
    let v = dev.empty(&[b, kv_heads, t, head_dim], dtype)?;
    let params = qkv_params(op, packed.len(), n, t, head_dim, heads, kv_heads)?;
    let kernel = if dtype == DType::F16 {
        &K_SPLIT_QKV_F16
    } else {
        &K_SPLIT_QKV
    };
    launch_threads(
        op,
        dev,
        kernel,
        &[],
        &params,
        params.total,
        &[packed, &q, &k, &v],
    )?;
    Ok((q, k, v))
}

/// The uniforms of the q/k/v kernels for a packed tensor of `len` floats, `n` per
/// position.
fn qkv_params(
    op: &str,
    len: usize,
    n: usize,
    t: usize,
    head_dim: usize,
    heads: usize,
    kv_heads: usize,
) -> Result<QkvParams, Error> {
    crate::size::fits_u32(op, "elements", len)?;
    Ok(QkvParams {
        total: (len / 4) as u32,
        row: (n / 4) as u32,
        t: t as u32,
        d4: (head_dim / 4) as u32,
        hq: heads as u32,
        hkv: kv_heads as u32,
    })
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
    // q, k and v (k's and v's heads alike): one launch.
    if let [q, k, v] = parts
        && k.shape() == v.shape()
        && d.is_multiple_of(4)
        && first.dtype() != DType::U32
    {
        let params = qkv_params(op, out.len(), n, t, d, q.shape()[1], k.shape()[1])?;
        let kernel = if first.dtype() == DType::F16 {
            &K_MERGE_QKV_F16
        } else {
            &K_MERGE_QKV
        };
        launch_threads(
            op,
            first.device(),
            kernel,
            &[],
            &params,
            params.total,
            &[q, k, v, &out],
        )?;
        return Ok(out);
    }
    if first.dtype() == DType::F16 && !d.is_multiple_of(2) {
        // An odd head width puts a head's values in halves of words that other heads share,
        // which the f16 strided copy cannot write: merge in f32 (exact both ways).
        let wide: Vec<Tensor> = parts
            .iter()
            .map(|p| crate::ops::to_dtype(p, DType::F32))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&Tensor> = wide.iter().collect();
        return crate::ops::to_dtype(&merge_heads(&refs)?, DType::F16);
    }
    let mut first_head = 0;
    for p in parts {
        let shape = p.shape();
        let dst = packed_head_layout(t, n, d, first_head);
        strided_copy(op, p, &Layout::contiguous(shape), &out, &dst, shape)?;
        first_head += shape[1];
    }
    Ok(out)
}
