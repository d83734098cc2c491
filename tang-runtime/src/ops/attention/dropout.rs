//! Dropout on the attention weights inside the fused kernels: each kernel regenerates the
//! keep/drop decision of every weight it touches from the Philox stream of a
//! [`DropoutState`], so the mask is never stored and the backward sees the forward's.
//!
//! The weight of key `j` in score row `row = (b * H + h) * T + i` is element
//! `row * T + j` of the `[B, H, T, T]` weights, numbered as [`crate::ops::dropout`]
//! numbers the elements of the materialized weights: one seed gives the same mask on the
//! fused path and on the explicit one (scores, softmax, `dropout`), so the two are
//! interchangeable. The index is 64-bit (two words), so any `T` has its own counter per
//! weight.
//!
//! With dropout the output is `o = (P * M / (1 - p)) V` for the softmax `P` and the mask
//! `M`; the logsumexp stays that of `P`, and in the backward `dV = (P * M / (1 - p))^T dO`
//! and `dS = P * (M / (1 - p) * dP - delta)` where `delta = rowsum(dO * o)` is unchanged.

use super::layout::AttentionParams;
use crate::Error;
use crate::ops::DropoutState;
use crate::ops::check;
use crate::ops::random::philox::dropout_threshold;

/// The WGSL of the dropout factors (after [`crate::ops::random::PHILOX_WGSL`]): `drop1`
/// for one weight, `drop4` for four consecutive keys of one row (one Philox block when
/// they share it, two otherwise). Both are 1 without dropout (`drop_threshold` 0), a
/// uniform branch.
pub(super) const DROPOUT_WGSL: &str = "
// 0 in the pipelines of calls without dropout (see `constants`): the dropout code then
// folds away; a uniform branch on `drop_threshold` alone kept its registers live and cost
// the dq pass 5% at T = 1024 on an H200.
override DROPOUT: u32 = 1u;
fn dropping() -> bool {
    return DROPOUT != 0u && p.drop_threshold != 0u;
}
// Block (low, high) of the Philox counter and word of weight row * T + j.
fn drop_at(row: u32, j: u32) -> vec3<u32> {
    let m = mulhilo(row, p.tq);
    let lo = m.y + j;
    let hi = m.x + select(0u, 1u, lo < j);
    return vec3<u32>((lo >> 2u) | (hi << 30u), hi >> 2u, lo & 3u);
}

fn drop_words(blo: u32, bhi: u32) -> vec4<u32> {
    let key = vec2<u32>(p.drop_seed_lo, p.drop_seed_hi);
    return philox(vec4<u32>(blo, bhi, p.drop_offset_lo, p.drop_offset_hi), key);
}

// 0 for a dropped weight, 1 / (1 - p) for a kept one (as `dropout`: the top 24 bits).
fn drop_factor(w: vec4<u32>) -> vec4<f32> {
    let keep = (w >> vec4<u32>(8u)) >= vec4<u32>(p.drop_threshold);
    return select(vec4<f32>(0.0), vec4<f32>(p.drop_scale), keep);
}

// The dropout factor of key j in score row `row`.
fn drop1(row: u32, j: u32) -> f32 {
    if (!dropping()) {
        return 1.0;
    }
    let at = drop_at(row, j);
    return drop_factor(drop_words(at.x, at.y))[at.z];
}

// The dropout factors of keys j .. j + 3 in score row `row`.
fn drop4(row: u32, j: u32) -> vec4<f32> {
    if (!dropping()) {
        return vec4<f32>(1.0);
    }
    let at = drop_at(row, j);
    let w0 = drop_words(at.x, at.y);
    if (at.z == 0u) {
        return drop_factor(w0);
    }
    let next = at.x + 1u;
    let w1 = drop_words(next, at.y + select(0u, 1u, next == 0u));
    var w = vec4<u32>(w0.w, w1.xyz);
    if (at.z == 1u) {
        w = vec4<u32>(w0.yzw, w1.x);
    } else if (at.z == 2u) {
        w = vec4<u32>(w0.zw, w1.xy);
    }
    return drop_factor(w);
}
";

/// Sets the dropout fields of `params` from `state` (none: no dropout).
///
/// # Errors
/// [`Error::InvalidArgument`] unless `0 <= p <= 1`.
pub(super) fn set(
    op: &str,
    params: &mut AttentionParams,
    state: Option<&DropoutState>,
) -> Result<(), Error> {
    let Some(state) = state else {
        params.drop_threshold = 0;
        params.drop_scale = 1.0;
        return Ok(());
    };
    if !(0.0..=1.0).contains(&state.p) {
        return Err(check::invalid(
            op,
            format!("the dropout probability must be in [0, 1], got {}", state.p),
        ));
    }
    let s = state.stream;
    params.drop_threshold = dropout_threshold(state.p);
    params.drop_scale = state.scale();
    params.drop_seed_lo = s.seed as u32;
    params.drop_seed_hi = (s.seed >> 32) as u32;
    params.drop_offset_lo = s.offset as u32;
    params.drop_offset_hi = (s.offset >> 32) as u32;
    Ok(())
}

/// The pipeline constants of an attention kernel for `params`: without dropout the
/// dropout code is compiled out.
pub(super) fn constants(params: &AttentionParams) -> &'static [(&'static str, f64)] {
    if params.drop_threshold == 0 {
        &[("DROPOUT", 0.0)]
    } else {
        &[]
    }
}

/// Emits, inside a register-blocked kernel, the dropout of a thread's 4 rows x 4 keys of
/// weights: `vars[k]` (a WGSL `vec4` over the four rows) holds key `{key} + k`, the rows
/// are score rows `{row} + 0 .. 3` (WGSL expressions). A uniform branch skips it without
/// dropout.
pub(super) fn emit_rows_by_keys(w: &mut String, ind: &str, vars: [&str; 4], row: &str, key: &str) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "{ind}if (dropping()) {{");
    for r in 0..4 {
        let _ = writeln!(w, "{ind}    let dm{r} = drop4({row} + {r}u, {key});");
    }
    for (v, comp) in vars.iter().zip(["x", "y", "z", "w"]) {
        let _ = writeln!(
            w,
            "{ind}    {v} *= vec4<f32>(dm0.{comp}, dm1.{comp}, dm2.{comp}, dm3.{comp});"
        );
    }
    let _ = writeln!(w, "{ind}}}");
}

/// Emits the WGSL functions of the dropout factors (Philox and [`DROPOUT_WGSL`]) into a
/// generated kernel, after its declarations.
pub(super) fn emit_functions(w: &mut String) {
    w.push_str(crate::ops::random::PHILOX_WGSL);
    w.push_str(DROPOUT_WGSL);
}
