//! The interface of the row kernels, shared by each op's workgroup kernels and the
//! subgroup team kernels generated in `team/codegen.rs`: the params structs, the bindings
//! and the loss of a cross-entropy row. A leaf, so the ops and the team generator import it
//! and not each other.

use crate::spec::{Slot, params};

params! {
    /// `rows` rows of `n` units (`T`: `vec4` or `f32`), forward and backward.
    struct SoftmaxParams { rows: u32, n: u32 }
}

/// The forward's bindings; the subgroup team kernels of `rows_team` declare the same.
pub(crate) const SOFTMAX_FWD_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::ReadWrite("y", "array<T>"),
];

/// The backward's bindings; the subgroup team kernels of `rows_team` declare the same.
pub(crate) const SOFTMAX_BWD_SLOTS: &[Slot] = &[
    Slot::Read("y", "array<T>"),
    Slot::ReadWrite("dx", "array<T>"),
    Slot::Read("dy", "array<T>"),
];

params! {
    /// The forward: `rows` rows of `n` units (`T`), `eps` added to the variance.
    struct NormParams { rows: u32, n: u32, eps: f32 }
}

params! {
    /// The backward: `rows` rows of `n` units, `rpt` rows per team (or per fallback workgroup).
    struct NormBackwardParams { rows: u32, n: u32, rpt: u32 }
}

/// The forward's bindings; the subgroup team kernels of `rows_team` declare the same.
pub(crate) const NORM_FWD_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::ReadWrite("y", "array<T>"),
    Slot::Read("w", "array<T>"),
    Slot::Read("b", "array<T>"),
    // Per row: mean (0 for RMS norm), reciprocal standard deviation (or RMS).
    Slot::ReadWrite("stats", "array<f32>"),
];

/// The backward's bindings; the subgroup team kernels of `rows_team` declare the same.
pub(crate) const NORM_BWD_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::Read("w", "array<T>"),
    Slot::Read("stats", "array<f32>"),
    Slot::Read("dy", "array<T>"),
    Slot::ReadWrite("dx", "array<T>"),
    // Per workgroup partial sums [groups, n] of grad_out * xhat (weight) and grad_out (bias).
    Slot::ReadWrite("pw", "array<T>"),
    Slot::ReadWrite("pb", "array<T>"),
];

params! {
    /// `rows` rows of `n` units (`T`) holding `classes` logits; targets equal to `ignore`
    /// are skipped; `grad` 1 writes the gradient `dx`, 0 leaves it (a backward recomputes
    /// it from the row losses: `cross_entropy_backward`).
    struct CrossEntropyParams { rows: u32, n: u32, classes: u32, ignore: u32, grad: u32 }
}

/// The loss of one row, for the fallback and the subgroup team kernel of `rows_team`
/// (the gradient is `cross_entropy_dx` of `wgsl::row_math`).
pub(crate) const CROSS_ENTROPY_LOSS: &str =
    "// A row's loss: log-sum-exp minus the target's logit (the row starts at unit `rbase` of
// `x`); NaN for a target out of range, 0 for an ignored row. `x` is read only for a
// valid target.
fn cross_entropy_loss(lse: f32, rbase: u32, t: u32, valid: bool, ignored: bool) -> f32 {
    if (valid) { return lse - elem(x[rbase + t / W], t % W); }
    if (ignored) { return 0.0; }
    // Or-ed with a run-time zero: Chrome's WGSL compiler rejects a non-finite constant.
    return bitcast<f32>(0x7fc00000u | (t & 0u));
}

";

/// The main pass's bindings; the subgroup team kernel of `rows_team` declares the same.
pub(crate) const CROSS_ENTROPY_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::Read("targets", "array<u32>"),
    Slot::Read("cnt", "array<f32>"),
    Slot::ReadWrite("loss", "array<f32>"),
    Slot::ReadWrite("dx", "array<T>"),
];
