//! Cross-entropy over logits `[rows, classes]` with u32 targets and an ignore index:
//! loss and gradient together ([`cross_entropy`]) or the losses
//! alone ([`cross_entropy_forward`], whose gradient `cross_entropy_backward.rs` recomputes
//! later: the autograd's path), in three dispatches, with nothing read back to the CPU.
//!
//! 1. one workgroup counts the rows whose target is not ignored;
//! 2. a subgroup team per row ([`crate::ops::rows::team`]) or, for long rows and adapters
//!    without subgroups, one workgroup per row (2-D grid) keeps the row in registers
//!    (`vec4` when `classes` is a multiple of 4), computes log-sum-exp, the row's loss,
//!    and (unless the params' `grad` is 0) the gradient of the mean loss
//!    `(softmax - onehot) / count`: logits are read once;
//! 3. one workgroup sums the per-row losses (fixed tree order: deterministic) / count.
//!
//! A target `>= classes` that is not the ignore index gives that row a NaN loss (so the
//! mean is NaN, visibly) and a zero gradient row; it is never read out of bounds.
//!
//! f16 logits are read through the f16 form of the main kernel
//! ([`crate::ops::rows::half`]): log-sum-exp, the losses and the gradient in f32; then
//! [`cross_entropy`] rounds the losses and the gradient to f16, as PyTorch returns them for
//! `torch.float16` logits.

use crate::ops::check::{by_unit, mismatch, want_float, want_shape, want_u32};
use crate::ops::rows::half;
use crate::ops::rows::layout::{CROSS_ENTROPY_LOSS, CROSS_ENTROPY_SLOTS, CrossEntropyParams};
use crate::ops::rows::team::{Kind, team_kernel};
use crate::ops::to_dtype;
use crate::size::Size;
use crate::spec::{Slot, Source, Spec, grid};
use crate::wgsl::{lowest, row_math, row_max_sumexp, unit_specs, wg_common, wg_main};
use crate::{DType, Error, Tensor};

const COUNT_SLOTS: &[Slot] = &[
    Slot::Read("targets", "array<u32>"),
    Slot::ReadWrite("cnt", "array<f32>"),
];

const COUNT_BODY: &str = "var<workgroup> red: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var c = 0u;
    for (var i = lid; i < p.rows; i = i + 256u) { c = c + select(1u, 0u, targets[i] == p.ignore); }
    red[lid] = c;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u) { cnt[0] = f32(red[0]); }
}
";

const MAIN_BODY: &str = concat!(
    wg_main!(row),
    "    let live = row < p.rows;
    let n = select(0u, p.n, live);
    let base = row * p.n;
    var t = p.ignore;
    if (live) { t = targets[row]; }
    let ignored = t == p.ignore;
    let valid = !ignored && t < p.classes;
    let total = cnt[0];
    // Ignored and invalid rows get a zero gradient.
    let scale = select(0.0, 1.0 / max(total, 1.0), valid);
    var c: array<T, K>;
    let r = row_max_sumexp(&c, base, n, lid);
    let mx = r.x;
    let inv = 1.0 / r.y;
    if (p.grad != 0u) {
        for (var k = 0u; k < K; k = k + 1u) {
            let u = lid + k * WG;
            if (u < n) { dx[base + u] = cross_entropy_dx(exp(c[k] - T(mx)), inv, u, t, scale); }
        }
        for (var u = lid + K * WG; u < n; u = u + WG) {
            dx[base + u] = cross_entropy_dx(exp(x[base + u] - T(mx)), inv, u, t, scale);
        }
    }
    if (lid == 0u && live) { loss[row] = cross_entropy_loss(mx + log(r.y), base, t, valid, ignored); }
}
");

const MEAN_SLOTS: &[Slot] = &[
    Slot::Read("loss", "array<f32>"),
    Slot::Read("cnt", "array<f32>"),
    Slot::ReadWrite("mean", "array<f32>"),
];

const MEAN_BODY: &str = "
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < p.rows; i = i + WG) { s = s + loss[i]; }
    let total = wg_sum(s, lid);
    // 0 / 0 = NaN when every row is ignored, as PyTorch.
    if (lid == 0u) { mean[0] = total / cnt[0]; }
}
";

static K_COUNT: Spec<CrossEntropyParams> =
    Spec::new("cross_entropy_count", &[], COUNT_SLOTS, COUNT_BODY);
unit_specs!(K_MAIN_V4, K_MAIN_F1: CrossEntropyParams = "cross_entropy", [wg_common!(), lowest!(), row_math!(), row_max_sumexp!(), CROSS_ENTROPY_LOSS], CROSS_ENTROPY_SLOTS, MAIN_BODY);
static K_MEAN: Spec<CrossEntropyParams> =
    Spec::new("cross_entropy_mean", &[wg_common!()], MEAN_SLOTS, MEAN_BODY);

/// Every kernel of this file, for the registry of `rows/mod.rs` (the team variant is
/// listed by `rows_team`).
pub(crate) fn kernels() -> Vec<Source> {
    let mut all: Vec<Source> = [&K_COUNT, &K_MAIN_V4, &K_MAIN_F1, &K_MEAN]
        .iter()
        .map(|k| k.source())
        .collect();
    all.extend([&K_MAIN_V4, &K_MAIN_F1].map(|k| half::registry_form(k.source())));
    all
}

/// What [`cross_entropy`] computes in one call: `loss`, `row_loss` and `grad` in the
/// logits' dtype (f16 logits give f16 values, computed in f32 and rounded once, as
/// PyTorch's `cross_entropy` of `torch.float16` logits), `count` in f32.
#[derive(Clone, Debug)]
pub struct CrossEntropy {
    /// `[1]`: the mean loss over rows whose target is not ignored (NaN if there are none).
    pub loss: Tensor,
    /// `[rows]`: each row's loss (0 for ignored rows).
    pub row_loss: Tensor,
    /// `[rows, classes]`: the gradient of `loss` w.r.t. the logits,
    /// `(softmax(logits) - onehot(target)) / count`, zero for ignored rows.
    pub grad: Tensor,
    /// `[1]`: the number of rows not ignored, as f32.
    pub count: Tensor,
}

/// Cross-entropy of `logits [..., classes]` against class indices `targets [...]` (u32),
/// mean over the rows whose target is not `ignore_index` (PyTorch's `reduction="mean"`;
/// pass `None` to use every row), with the gradient w.r.t. the logits from the same pass.
///
/// # Errors
/// [`Error::ShapeMismatch`] unless `targets.shape()` is `logits.shape()` without its last
/// axis, [`Error::DType`] unless logits are f32 or f16 and targets u32, [`Error::TooLarge`];
/// [`Error::IndexOutOfRange`] for a target `>= classes` other than the ignore index (at
/// once for uploaded targets, else at the next read or sync).
pub fn cross_entropy(
    logits: &Tensor,
    targets: &Tensor,
    ignore_index: Option<u32>,
) -> Result<CrossEntropy, Error> {
    let (f, grad) = forward(logits, targets, ignore_index, logits.dtype(), true)?;
    Ok(CrossEntropy {
        loss: f.loss,
        row_loss: f.row_loss,
        grad: to_dtype(&grad, logits.dtype())?,
        count: f.count,
    })
}

/// What [`cross_entropy_forward`] computes: the losses, and what
/// [`crate::ops::cross_entropy_backward`] reads to make the gradient later.
#[derive(Clone, Debug)]
pub struct CrossEntropyForward {
    /// `[1]`: the mean loss over rows whose target is not ignored (NaN if there are none),
    /// in the `loss_dtype` asked for.
    pub loss: Tensor,
    /// `[rows]`: each row's loss (0 for ignored rows), in the `loss_dtype` asked for.
    pub row_loss: Tensor,
    /// `[rows]`: each row's loss in f32 (log-sum-exp minus the target's logit), for the
    /// backward (the same tensor as `row_loss` when that is f32).
    pub row_loss_f32: Tensor,
    /// `[1]`: the number of rows not ignored, as f32.
    pub count: Tensor,
}

/// [`cross_entropy`] without the gradient, with `loss` and `row_loss` in `loss_dtype` (f32
/// or f16) whatever the logits' dtype (autocast keeps the loss of f16 logits in f32, as
/// PyTorch's autocast runs `cross_entropy` in f32): the losses alone, reading the logits once
/// and writing nothing of their size. The gradient comes later from
/// [`crate::ops::cross_entropy_backward`], which recomputes the softmax from the logits and
/// the row losses, already multiplied by the upstream gradient and in the logits' dtype.
/// At GPT-2's 8,192 rows of 50,257 classes that leaves out a 1.65 GB f32 gradient, its
/// write and two passes over it.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let logits = Tensor::from_slice(&dev, &[0.0, 0.0, 1.0, 3.0], &[2, 2])?;
/// let targets = Tensor::from_u32(&dev, &[1, 0], &[2])?;
/// let f = ops::cross_entropy_forward(&logits, &targets, None, tang_runtime::DType::F32)?;
/// let g = Tensor::from_slice(&dev, &[1.0], &[1])?; // d(whatever) / d(loss)
/// let grad = ops::cross_entropy_backward(&logits, &targets, None, &f.row_loss_f32, &f.count, &g)?;
/// let want = ops::cross_entropy(&logits, &targets, None)?.grad.to_vec()?;
/// for (a, b) in grad.to_vec()?.iter().zip(&want) {
///     assert!((a - b).abs() < 1e-6);
/// }
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// As [`cross_entropy`]; [`Error::DType`] for a `loss_dtype` of u32.
pub fn cross_entropy_forward(
    logits: &Tensor,
    targets: &Tensor,
    ignore_index: Option<u32>,
    loss_dtype: DType,
) -> Result<CrossEntropyForward, Error> {
    Ok(forward(logits, targets, ignore_index, loss_dtype, false)?.0)
}

/// The class count of `logits [..., classes]` (f32 or f16) against `targets [...]` (u32),
/// after checking both, for the forward and the backward.
pub(super) fn classes_of(op: &str, logits: &Tensor, targets: &Tensor) -> Result<usize, Error> {
    want_float(op, logits)?;
    want_u32(op, targets)?;
    let ls = logits.shape();
    let Some((&classes, lead)) = ls.split_last() else {
        return Err(mismatch(
            op,
            "logits is a scalar; expected [..., classes]".into(),
        ));
    };
    want_shape(
        op,
        "targets",
        targets.shape(),
        lead,
        format_args!("logits {ls:?} without the class axis"),
    )?;
    Ok(classes)
}

/// The checks and launches of both forms, with the gradient tensor: f32, written when
/// `write_grad`, else a one-element placeholder the kernels bind and do not write.
fn forward(
    logits: &Tensor,
    targets: &Tensor,
    ignore_index: Option<u32>,
    loss_dtype: DType,
    write_grad: bool,
) -> Result<(CrossEntropyForward, Tensor), Error> {
    let op = "cross_entropy";
    if loss_dtype == DType::U32 {
        return Err(Error::DType {
            op: op.into(),
            expected: DType::F32,
            got: loss_dtype,
        });
    }
    let classes = classes_of(op, logits, targets)?;
    let ls = logits.shape();
    // The kernels index with 32 bits: each count must fit, and the error names the one
    // that does not (a `[0, 2^40]` batch has no elements but too many classes).
    let limit = u64::from(u32::MAX);
    for (what, n) in [("elements of logits", logits.len()), ("classes", classes)] {
        Size::of(n).at_most(limit, || format!("{op}: {what} (logits {ls:?})"))?;
    }
    crate::ops::index::bounds::check_ids_except(op, targets, classes, ignore_index)?;
    let rows = targets.len();
    let dev = logits.device();
    let ignore = ignore_index.unwrap_or(u32::MAX);
    let count = dev.empty(&[1], DType::F32)?;
    let row_loss = dev.empty(&[rows.max(1)], DType::F32)?;
    // Without the gradient the kernels still bind something there (and write nothing).
    let grad = dev.empty(if write_grad { ls } else { &[1] }, DType::F32)?;
    let loss = dev.empty(&[1], DType::F32)?;
    let (spec, n) = by_unit(classes, [&K_MAIN_V4, &K_MAIN_F1]);
    let params = CrossEntropyParams {
        rows: rows as u32,
        n: n as u32,
        classes: classes as u32,
        ignore,
        grad: u32::from(write_grad),
    };
    K_COUNT.dispatch(&[], &params, &[targets, &count], [1, 1, 1])?;
    if rows > 0 {
        // With 0 classes every target is out of range: the fallback kernel (with no
        // columns to read) still writes each row's loss, NaN or 0 for an ignored row, so
        // no result shows uninitialised memory (PyTorch rejects such targets; tang's rule
        // for an out-of-range target is a NaN loss).
        let (k, g) = match team_kernel(dev, Kind::CrossEntropy, classes)? {
            Some((k, rpg)) => (k, grid(dev, op, rows.div_ceil(rpg as usize) as u64)?),
            None => (spec.kernel()?, grid(dev, op, rows as u64)?),
        };
        let tensors = [logits, targets, &count, &row_loss, &grad];
        half::dispatch(spec.layout(), k, &[], &params, &tensors, g)?;
    }
    let rl = if rows > 0 {
        row_loss
    } else {
        Tensor::zeros(dev, &[1])?
    };
    K_MEAN.dispatch(&[], &params, &[&rl, &count, &loss], [1, 1, 1])?;
    let row_loss_f32 = rl.reshape(&[rows.max(1)])?;
    let f = CrossEntropyForward {
        loss: to_dtype(&loss, loss_dtype)?,
        row_loss: to_dtype(&row_loss_f32, loss_dtype)?,
        row_loss_f32,
        count,
    };
    Ok((f, grad))
}
