//! The gradient of [`crate::ops::cross_entropy_forward`]'s mean loss with respect to the
//! logits, recomputed from the logits and the row losses in one elementwise pass:
//! `(softmax(x) - onehot(t)) * g / count`, with the row's log-sum-exp taken as its loss
//! plus the target's logit, zero for ignored rows and rows whose target is out of range.
//!
//! It reads the logits (f16 or f32) and writes the gradient in their dtype, already
//! multiplied by the upstream gradient `g` (a `[1]` tensor on the GPU: a `GradScaler`'s
//! scale reaches it before f16 rounds it, so nothing underflows that f32 would keep), and
//! rounded once. The forward then writes nothing of the logits' size: for GPT-2's 8,192
//! rows of 50,257 f16 logits this replaces a 1.65 GB f32 gradient written by the forward,
//! scaled in a second pass and rounded in a third.
//!
//! A thread computes one f32 element, or a run of eight consecutive f16 elements (one
//! division into row and column for all of them; a run may cross rows). f16 tensors are
//! words of two halves: a run is four whole words (two elements of a word may lie in two
//! rows when the row length is odd), so every thread writes whole words.

use super::cross_entropy::classes_of;
use crate::cast::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};
use crate::ops::check::{same_device, want_shape};
use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::wgsl::thread_main;
use crate::{DType, Error, Tensor};

params! {
    /// `n` threads over `len` logits in `rows` rows of `classes`; targets equal to
    /// `ignore` are skipped.
    struct CrossEntropyBackwardParams { n: u32, len: u32, rows: u32, classes: u32, ignore: u32 }
}

const SLOTS: &[Slot] = &[
    Slot::Read("x", "array<u32>"),
    Slot::Read("targets", "array<u32>"),
    Slot::Read("row_loss", "array<f32>"),
    Slot::Read("cnt", "array<f32>"),
    Slot::Read("g", "array<f32>"),
    Slot::ReadWrite("dx", "array<u32>"),
];

/// f16 elements a thread computes: a run of them shares one division into row and column,
/// and the row's target and log-sum-exp, reloaded only where the run crosses a row (on an
/// H200, GPT-2's 8,192 x 50,257 f16 gradient 1.25 -> 0.96 ms against a word a thread).
const RUN: u32 = 8;

/// `HALF = 0`: f32 logits as words, thread `i` computes element `i`; `HALF = 1`: f16
/// logits, two to a word, thread `i` computes elements `RUN i ..` (`RUN / 2` whole words).
static BACKWARD: Spec<CrossEntropyBackwardParams> = Spec::new(
    "cross_entropy_backward",
    &[F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL],
    SLOTS,
    concat!(
        "override HALF: u32 = 0u;
const RUN: u32 = 8u;

fn logit(e: u32) -> f32 {
    if (HALF == 1u) {
        return bitcast<f32>(f16_bits_to_f32((x[e >> 1u] >> (16u * (e & 1u))) & 0xffffu));
    }
    return bitcast<f32>(x[e]);
}

// A row's target and log-sum-exp (its loss plus the target's logit); `t` is `classes`
// for a row without gradient (ignored, or a target out of range).
struct RowStats { t: u32, lse: f32 }

fn row_stats(row: u32) -> RowStats {
    var t = targets[row];
    if (t == p.ignore || t >= p.classes) { return RowStats(p.classes, 0.0); }
    return RowStats(t, row_loss[row] + logit(row * p.classes + t));
}

",
        thread_main!(i < "p.n"),
        "    let scale = g[0] / max(cnt[0], 1.0);
    if (HALF == 0u) {
        // One f32 element a thread: runs of eight made the threads' loads and stores
        // eight words apart, and ran twice as slow.
        let row = i / p.classes;
        let st = row_stats(row);
        var v = 0.0;
        if (st.t != p.classes) {
            v = (exp(logit(i) - st.lse) - select(0.0, 1.0, i - row * p.classes == st.t)) * scale;
        }
        dx[i] = bitcast<u32>(v);
        return;
    }
    let e0 = i * RUN;
    var row = e0 / p.classes;
    var c = e0 - row * p.classes;
    var st = row_stats(row);
    var v: array<f32, RUN>;
    for (var k = 0u; k < RUN; k = k + 1u) {
        let e = e0 + k;
        if (e >= p.len) { v[k] = 0.0; continue; }
        if (st.t == p.classes) {
            v[k] = 0.0;
        } else {
            v[k] = (exp(logit(e) - st.lse) - select(0.0, 1.0, c == st.t)) * scale;
        }
        c = c + 1u;
        if (c == p.classes) {
            c = 0u;
            row = row + 1u;
            if (row < p.rows) { st = row_stats(row); }
        }
    }
    for (var k = 0u; k < RUN; k = k + 2u) {
        let w = (e0 + k) / 2u;
        if (e0 + k < p.len) {
            dx[w] = f32_to_f16_bits(bitcast<u32>(v[k])) | (f32_to_f16_bits(bitcast<u32>(v[k + 1u])) << 16u);
        }
    }
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![BACKWARD.source()]
}

/// The gradient of [`crate::ops::cross_entropy_forward`]'s mean loss w.r.t. `logits`,
/// times `grad_loss` (`[1]`, f32: the upstream gradient of the loss), in the logits'
/// dtype: `(softmax(logits) - onehot(targets)) * grad_loss / count`, zero for rows whose
/// target is `ignore_index` or out of range. `targets` and `ignore_index` are the
/// forward's; `row_loss_f32` and `count` its [`crate::ops::CrossEntropyForward`] fields.
/// f16 logits give an f16 gradient computed in f32 and rounded once, after the product
/// with `grad_loss`. See [`crate::ops::cross_entropy_forward`] for an example.
///
/// # Errors
/// [`Error::ShapeMismatch`] unless `targets` is `logits` without the class axis,
/// `row_loss_f32` has a value per row and `count` and `grad_loss` one value;
/// [`Error::DType`] unless logits are f32 or f16, targets u32 and the rest f32;
/// [`Error::DeviceMismatch`]; [`Error::TooLarge`] past 2^32 - 1 logits.
pub fn cross_entropy_backward(
    logits: &Tensor,
    targets: &Tensor,
    ignore_index: Option<u32>,
    row_loss_f32: &Tensor,
    count: &Tensor,
    grad_loss: &Tensor,
) -> Result<Tensor, Error> {
    let op = "cross_entropy_backward";
    let classes = classes_of(op, logits, targets)?;
    let dev = logits.device();
    same_device(
        op,
        dev,
        &[
            ("targets", targets),
            ("row_loss_f32", row_loss_f32),
            ("count", count),
            ("grad_loss", grad_loss),
        ],
    )?;
    let ls = logits.shape();
    let rows = targets.len();
    want_shape(
        op,
        "row_loss_f32",
        row_loss_f32.shape(),
        &[rows.max(1)],
        "one loss per row, as cross_entropy_forward returns it",
    )?;
    for (name, t) in [("count", count), ("grad_loss", grad_loss)] {
        want_shape(op, name, t.shape(), &[1], "one value")?;
    }
    for (name, t) in [
        ("row_loss_f32", row_loss_f32),
        ("count", count),
        ("grad_loss", grad_loss),
    ] {
        if t.dtype() != DType::F32 {
            return Err(Error::DType {
                op: format!("{op} ({name})"),
                expected: DType::F32,
                got: t.dtype(),
            });
        }
    }
    let len = logits.len();
    if len > u32::MAX as usize {
        return Err(Error::TooLarge {
            what: format!("{op}: elements of logits {ls:?}"),
            requested: len as u64,
            limit: u64::from(u32::MAX),
        });
    }
    let dtype = logits.dtype();
    let dx = dev.empty(ls, dtype)?;
    let half = dtype == DType::F16;
    let threads = if half {
        len.div_ceil(RUN as usize)
    } else {
        len
    };
    let params = CrossEntropyBackwardParams {
        n: threads as u32,
        len: len as u32,
        rows: rows as u32,
        classes: classes as u32,
        ignore: ignore_index.unwrap_or(u32::MAX),
    };
    let tensors = [logits, targets, row_loss_f32, count, grad_loss, &dx];
    let constants = [("HALF", if half { 1.0 } else { 0.0 })];
    launch_threads(
        op,
        dev,
        &BACKWARD,
        &constants,
        &params,
        threads as u32,
        &tensors,
    )?;
    Ok(dx)
}
